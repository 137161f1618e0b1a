"""Finding the speech in a long recording, with numpy only (a simple voice-activity detector).

Real command recordings are mostly silence (often runs of exact digital zeros) around a
2-5 s command, sometimes with noise all the way through:

    trim_silence     cut the quiet stretches before and after the loudest part
    loudest_window   a clip longer than a model takes: the stretch with the most energy
"""

from __future__ import annotations

import numpy as np

from glassformer.audio.io import SAMPLE_RATE


def trim_silence(
    waveform: np.ndarray, threshold_db: float = -35.0, margin: float = 0.25
) -> np.ndarray:
    """Cut leading and trailing stretches quieter than threshold_db below the loudest 10 ms,
    keeping `margin` seconds around the speech (a simple voice-activity detector)."""
    hop = SAMPLE_RATE // 100
    frames = len(waveform) // hop
    if frames < 3:
        return waveform
    energy = (waveform[: frames * hop].reshape(frames, hop).astype(np.float64) ** 2).mean(axis=1)
    level = 10 * np.log10(energy + 1e-12)
    loud = np.flatnonzero(level > level.max() + threshold_db)
    pad = int(margin * SAMPLE_RATE)
    start = max(0, loud[0] * hop - pad)
    end = min(len(waveform), (loud[-1] + 1) * hop + pad)
    return waveform[start:end]


def loudest_window(waveform: np.ndarray, seconds: float) -> np.ndarray:
    """The `seconds`-long stretch with the most energy (a clip too long for the model: the
    command is the loudest part of a long real recording, noise or not). Shorter clips are
    returned whole.
    """
    length = int(seconds * SAMPLE_RATE)
    if len(waveform) <= length:
        return waveform
    hop = SAMPLE_RATE // 100
    frames = len(waveform) // hop
    energy = (waveform[: frames * hop].reshape(frames, hop).astype(np.float64) ** 2).sum(axis=1)
    width = length // hop  # the window in 10 ms frames
    sums = np.convolve(energy, np.ones(width), mode="valid")  # (frames - width + 1,)
    start = int(np.argmax(sums)) * hop
    return waveform[start : start + length]
