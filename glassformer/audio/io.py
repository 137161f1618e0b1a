"""Audio files to 16 kHz mono float waveforms.

soundfile reads WAV, FLAC and OGG (no ffmpeg); several channels are averaged to mono; other
sample rates are converted with scipy's polyphase resampler (an anti-aliasing FIR filter
applied at the rational ratio target / source, e.g. 2/1 for 8 kHz telephone audio). Every
problem with a file is one GlassformerError naming the file.
"""

from __future__ import annotations

from math import gcd
from pathlib import Path

import numpy as np

from glassformer.errors import GlassformerError

SAMPLE_RATE = 16_000  # samples per second everywhere after loading
MAX_SECONDS = 600.0  # longer files are refused as not a spoken command (10 minutes)


def resample(waveform: np.ndarray, source_rate: int, target_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Polyphase resampling from `source_rate` to `target_rate`.

    Shapes:
        waveform: (L,)   returns: (L * target_rate / source_rate,)
    """
    if source_rate == target_rate:
        return waveform
    from scipy.signal import resample_poly

    divisor = gcd(source_rate, target_rate)
    up, down = target_rate // divisor, source_rate // divisor
    return resample_poly(waveform, up, down).astype(np.float32)


def load_audio(
    path: str | Path, sample_rate: int = SAMPLE_RATE, max_seconds: float = MAX_SECONDS
) -> np.ndarray:
    """Read an audio file as a mono float32 waveform at `sample_rate`, values in [-1, 1].

    Shapes:
        returns: (L,)
    """
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise GlassformerError(f"{path}: no such audio file")
    try:
        info = soundfile.info(str(path))
        if info.frames == 0:
            raise GlassformerError(f"{path}: empty audio (no samples)")
        if info.frames / info.samplerate > max_seconds:
            seconds = info.frames / info.samplerate
            raise GlassformerError(
                f"{path}: {seconds:.0f} s long, more than the {max_seconds:.0f} s a command may be"
            )
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError) as error:
        reason = str(error).splitlines()[0]
        raise GlassformerError(f"{path}: not a readable audio file ({reason})") from None
    waveform = data.mean(axis=1)  # (L, channels) -> (L,): mono
    if not np.isfinite(waveform).all():
        raise GlassformerError(f"{path}: audio contains NaN or infinite samples")
    return resample(waveform, rate, sample_rate)


def save_audio(path: str | Path, waveform: np.ndarray, sample_rate: int = SAMPLE_RATE) -> None:
    """Write a 16-bit PCM WAV through a temporary file, then rename (never half a file)."""
    import soundfile

    from glassformer.files import atomic_file

    with atomic_file(path, suffix=".wav") as tmp:
        soundfile.write(tmp, np.clip(waveform, -1.0, 1.0), sample_rate, subtype="PCM_16")
