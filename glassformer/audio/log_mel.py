"""Whisper's log-mel front end: the features its encoder was trained on.

    waveform (..., L) at 16 kHz
      -> power_spectrogram    25 ms periodic-Hann frames every 10 ms, mirror-padded ends,
                              |FFT|^2; the last frame is dropped (L // 160 frames)
      -> mel_filterbank @     80 (or 128) Slaney-scale, Slaney-normalized bands, 0-8 kHz
      -> log10(max(., 1e-10))
      -> max(., clip max - 8) a floor 80 dB below the loudest band of the clip
      -> (. + 4) / 4          roughly zero-centred, unit scale

The same numbers as openai-whisper's `log_mel_spectrogram` (tested against Hugging Face's
port, WhisperFeatureExtractor, within 1e-4). Unlike features.py's MFCC the floor is relative
to each clip's maximum, as Whisper was trained; in a batch each clip keeps its own maximum,
so a batched clip gives exactly what it gives alone. Not here: padding or cutting to 30 s
(the encoder runs on the clip's own length; see tasks/speech/).
"""

from __future__ import annotations

import torch

from glassformer.audio.features import (
    HOP_LENGTH,
    N_FFT,
    SAMPLE_RATE,
    mel_filterbank,
    power_spectrogram,
)

WHISPER_N_MELS = 80  # mel bands of Whisper tiny to large-v2 (large-v3: 128)
DYNAMIC_RANGE = 8.0  # log10 units kept below each clip's maximum: 80 dB
LOG_FLOOR = 1e-10  # power floor before the log


def whisper_log_mel(waveform: torch.Tensor, n_mels: int = WHISPER_N_MELS) -> torch.Tensor:
    """Whisper's input features for 16 kHz audio.

    Example: 2 s of audio (32,000 samples) -> (80, 200) features.

    Shapes:
        waveform: (..., L)   returns: (..., n_mels, L // 160)
    """
    power = power_spectrogram(waveform, N_FFT, HOP_LENGTH, pad_mode="reflect")[..., :-1]
    filters = mel_filterbank(n_mels, N_FFT, SAMPLE_RATE, 0.0, SAMPLE_RATE / 2, "slaney", "slaney")
    log_spec = torch.log10((filters.to(power) @ power).clamp(min=LOG_FLOOR))  # (..., M, N)
    peak = log_spec.amax(dim=(-2, -1), keepdim=True)  # each clip's loudest band and frame
    log_spec = torch.maximum(log_spec, peak - DYNAMIC_RANGE)
    return (log_spec + 4.0) / 4.0
