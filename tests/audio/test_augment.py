"""Augmentations do what they say: SNR, speed, silence, band limits, masks, trimming."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from glassformer.audio import augment, silence


def tone(hz: float = 440.0, seconds: float = 1.0) -> np.ndarray:
    t = np.arange(int(16_000 * seconds)) / 16_000
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


@pytest.mark.parametrize("snr_db", [0.0, 10.0, 24.0])
def test_noise_is_mixed_at_the_requested_snr(snr_db: float) -> None:
    speech, noise = tone(), np.random.default_rng(1).standard_normal(40_000).astype(np.float32)
    mixed = augment.add_noise(speech, noise, snr_db, random.Random(0))
    added = mixed - speech
    measured = 10 * np.log10(augment.power(speech) / augment.power(added))
    assert measured == pytest.approx(snr_db, abs=0.01)


def test_speed_changes_length_and_pitch() -> None:
    faster = augment.change_speed(tone(440), 1.1)
    assert len(faster) == pytest.approx(16_000 / 1.1, abs=2)
    peak_hz = np.argmax(np.abs(np.fft.rfft(faster))) * 16_000 / len(faster)
    assert peak_hz == pytest.approx(484, abs=3)


def test_telephone_band_removes_high_frequencies() -> None:
    high = augment.telephone_band(tone(6000))
    low = augment.telephone_band(tone(1000))
    assert augment.power(high) < 1e-3 * augment.power(low)


def test_silence_padding_and_trimming_round_trip() -> None:
    speech = tone(seconds=0.5)
    padded = augment.pad_silence(speech, random.Random(3), max_seconds=1.0)
    assert len(padded) > len(speech)
    trimmed = silence.trim_silence(padded, margin=0.0)
    assert abs(len(trimmed) - len(speech)) <= 2 * 160  # within a 10 ms frame at each end


def test_spec_augment_zeroes_bands_and_keeps_the_input() -> None:
    features = torch.ones(13, 100)
    masked = augment.spec_augment(features, torch.Generator().manual_seed(0), 2, 10, 2, 3)
    assert features.min() == 1.0 and 0 < (masked == 0).sum() < features.numel()


def test_reverb_and_gain_keep_length() -> None:
    x = tone()
    assert len(augment.add_reverb(x, random.Random(0))) == len(x)
    assert np.allclose(augment.change_gain(x, -6.0), x * 10 ** (-6 / 20), atol=1e-6)


def test_tempo_changes_duration_but_not_the_spectrum() -> None:
    from glassformer.audio.features import compute_features

    features = compute_features(torch.from_numpy(tone(440.0)))  # (13, 101)
    faster = augment.change_tempo(features, 1.25)
    assert faster.shape == (13, round(101 / 1.25))
    middle = features[:, 10:90].mean(-1)
    assert torch.allclose(faster[:, 8:72].mean(-1), middle, atol=1e-3)  # same sound, shorter


def test_loudest_window_finds_the_command_in_a_long_noisy_clip() -> None:
    rng = np.random.default_rng(0)
    noise = (0.01 * rng.standard_normal(16_000 * 40)).astype(np.float32)  # 40 s of hiss
    noise[16_000 * 31 : 16_000 * 33] += tone(seconds=2.0)  # a 2-s "command" at 31 s
    window = silence.loudest_window(noise, 30.0)
    assert len(window) == 16_000 * 30
    assert np.abs(window).max() == np.abs(noise).max()  # the command is inside
    short = noise[:16_000]
    assert silence.loudest_window(short, 30.0) is short
