"""Audio: files to 16 kHz mono waveforms (io.py), waveforms to MFCC or log-mel (features.py)."""
