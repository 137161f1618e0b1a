"""Augmentation: make synthetic training speech sound like the real thing, clip by clip.

Real commands come from many microphones and rooms, with background noise and long silences
around them; synthesized clips are clean and tightly cut. Each function takes a waveform and
a random generator and returns a new waveform (numpy, 16 kHz); spec_augment works on features.

    add_noise        mix a random stretch of a noise recording at a signal-to-noise ratio
    change_speed     resample by a factor (tempo and pitch together, as in Kaldi's 3-way
                     speed perturbation)
    change_gain      louder or quieter
    telephone_band   8 kHz telephone band (300-3400 Hz) and back
    add_reverb       a synthetic room: exponentially decaying noise as impulse response
    pad_silence      silence (a quiet noise floor, or exact zeros) before and after
    spec_augment     SpecAugment (Park et al. 2019): zero random time and frequency bands
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import torch

from glassformer.audio.io import SAMPLE_RATE


def power(waveform: np.ndarray) -> float:
    return float(np.mean(waveform.astype(np.float64) ** 2)) + 1e-12


def add_noise(
    waveform: np.ndarray, noise: np.ndarray, snr_db: float, rng: random.Random
) -> np.ndarray:
    """Mix noise so that 10 log10(P_speech / P_noise) = snr_db."""
    if len(noise) < len(waveform):
        noise = np.tile(noise, len(waveform) // len(noise) + 1)
    start = rng.randrange(len(noise) - len(waveform) + 1)
    piece = noise[start : start + len(waveform)]
    scale = np.sqrt(power(waveform) / (power(piece) * 10 ** (snr_db / 10)))
    return (waveform + scale * piece).astype(np.float32)


def change_speed(waveform: np.ndarray, factor: float) -> np.ndarray:
    """Play `factor` times faster (shorter and higher for factor > 1)."""
    from scipy.signal import resample_poly

    if factor == 1.0:
        return waveform
    ratio = Fraction(factor).limit_denominator(20)
    return resample_poly(waveform, ratio.denominator, ratio.numerator).astype(np.float32)


def change_gain(waveform: np.ndarray, db: float) -> np.ndarray:
    return np.clip(waveform * 10 ** (db / 20), -1.0, 1.0).astype(np.float32)


def telephone_band(waveform: np.ndarray) -> np.ndarray:
    """Band-limit to 300-3400 Hz through an 8 kHz round trip, as a phone line would."""
    from scipy.signal import butter, resample_poly, sosfilt

    narrow = resample_poly(waveform, 1, 2)  # 16 kHz -> 8 kHz
    sos = butter(4, [300, 3400], btype="bandpass", fs=8000, output="sos")
    return resample_poly(sosfilt(sos, narrow), 2, 1).astype(np.float32)[: len(waveform)]


def add_reverb(waveform: np.ndarray, rng: random.Random, max_seconds: float = 0.4) -> np.ndarray:
    """Convolve with decaying noise: a crude room with reverberation time up to max_seconds."""
    from scipy.signal import fftconvolve

    length = int(rng.uniform(0.05, max_seconds) * SAMPLE_RATE)
    decay = np.exp(-6.9 * np.arange(length) / length)  # -60 dB over the tail
    impulse = np.random.default_rng(rng.randrange(1 << 30)).standard_normal(length) * decay
    impulse[0] = 1.0
    wet = fftconvolve(waveform, impulse)[: len(waveform)]
    return (wet * np.sqrt(power(waveform) / power(wet))).astype(np.float32)


def pad_silence(waveform: np.ndarray, rng: random.Random, max_seconds: float = 1.0) -> np.ndarray:
    """Random silence before and after: a faint noise floor, or exact digital zeros."""
    before = int(rng.uniform(0, max_seconds) * SAMPLE_RATE)
    after = int(rng.uniform(0, max_seconds) * SAMPLE_RATE)
    floor = 0.0 if rng.random() < 0.3 else 10 ** (rng.uniform(-70, -45) / 20)
    noise = np.random.default_rng(rng.randrange(1 << 30)).standard_normal(before + after) * floor
    return np.concatenate([noise[:before], waveform, noise[before:]]).astype(np.float32)


def spec_augment(
    features: torch.Tensor,
    generator: torch.Generator,
    time_masks: int = 2,
    time_width: int = 10,
    freq_masks: int = 2,
    freq_width: int = 3,
) -> torch.Tensor:
    """Zero `time_masks` bands of up to time_width frames and `freq_masks` bands of up to
    freq_width coefficients.

    Shapes:
        features: (M, N)   returns: (M, N)
    """
    features = features.clone()
    M, N = features.shape
    for count, width, size, axis in (
        (time_masks, time_width, N, 1),
        (freq_masks, freq_width, M, 0),
    ):
        for _ in range(count):
            w = int(torch.randint(0, width + 1, (1,), generator=generator))
            start = int(torch.randint(0, max(size - w, 1), (1,), generator=generator))
            if axis == 1:
                features[:, start : start + w] = 0.0
            else:
                features[start : start + w, :] = 0.0
    return features


def change_tempo(features: torch.Tensor, factor: float) -> torch.Tensor:
    """Speak `factor` times faster without changing pitch: resample the frame axis of the
    features (linear interpolation), which shortens or lengthens every sound alike.

    Shapes:
        features: (M, N)   returns: (M, round(N / factor))
    """
    frames = max(1, round(features.size(-1) / factor))
    return torch.nn.functional.interpolate(
        features[None], size=frames, mode="linear", align_corners=True
    )[0]
