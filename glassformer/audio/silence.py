"""Finding the speech in a long recording, with numpy only (a simple voice-activity detector).

Real command recordings are mostly silence (often runs of exact digital zeros) around a
2-5 s command, sometimes with noise all the way through:

    loudest_level    the level of the loudest 20 ms, dB of full scale
    check_audible    a clip with nothing audible in it is one error, not a command
    trim_silence     cut the quiet stretches before and after the loudest part
    loudest_window   a clip longer than a model takes: the stretch with the most energy
"""

from __future__ import annotations

import numpy as np

from glassformer.audio.io import SAMPLE_RATE
from glassformer.errors import GlassformerError

LEVEL_FRAME = SAMPLE_RATE // 50  # samples: 20 ms, the endpointer's frame
# dB of full scale: the quietest real recordings here (speech_commands) have their loudest
# 20 ms at -59.5 dBFS, FSDD's at -47.9; 1-LSB dither of 16-bit audio sits at -95 dBFS
MIN_AUDIBLE_DB = -70.0


def loudest_level(waveform: np.ndarray) -> float:
    """The RMS level of the clip's loudest 20-ms frame, in dB of full scale (-inf: all zeros).

    Example: a full-scale square wave -> 0.0; 16-bit samples of +-1 -> about -90.3
    """
    frames = max(1, len(waveform) // LEVEL_FRAME)
    whole = waveform[: frames * LEVEL_FRAME].astype(np.float64)
    if len(whole) < frames * LEVEL_FRAME:  # shorter than one frame: the clip itself
        whole = np.pad(whole, (0, frames * LEVEL_FRAME - len(whole)))
    power = (whole.reshape(frames, LEVEL_FRAME) ** 2).mean(axis=1).max()
    return float(10 * np.log10(power)) if power > 0 else float("-inf")


def check_audible(waveform: np.ndarray) -> None:
    """Raise GlassformerError unless some 20 ms of the clip is louder than MIN_AUDIBLE_DB:
    near-silence (dither, a muted microphone, a float rounding residue) holds no words, and a
    model asked to hear words in it writes its likeliest command anyway."""
    level = loudest_level(waveform)
    if level < MIN_AUDIBLE_DB:
        shown = f"its loudest is {level:.0f} dBFS" if level > float("-inf") else "every sample is 0"
        raise GlassformerError(
            f"nothing audible ({shown}; speech is louder than {MIN_AUDIBLE_DB:.0f} dBFS)"
        )


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
