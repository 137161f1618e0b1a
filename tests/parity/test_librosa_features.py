"""Our MFCC pipeline against librosa (filterbank, mel spectrogram, MFCC) and scipy (DCT)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from glassformer.audio.features import (
    FeatureConfig,
    compute_features,
    log_energy,
    n_frames,
    power_spectrogram,
)
from glassformer.audio.mel import dct_matrix, mel_filterbank
from tests.installed import import_or_missing

librosa = import_or_missing("librosa")
scipy_fft = import_or_missing("scipy.fft")


def chirp(seconds: float = 1.3, rate: int = 16_000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * (200 + 1500 * t) * t) + 0.01 * np.random.randn(t.size)).astype(
        np.float32
    )


@pytest.mark.parametrize(
    ("scale", "norm"), [("slaney", "slaney"), ("htk", "none"), ("htk", "slaney")]
)
def test_filterbank_matches_librosa(scale: str, norm: str) -> None:
    ours = mel_filterbank(40, 400, 16_000, 20.0, 7600.0, scale, norm).numpy()
    theirs = librosa.filters.mel(
        sr=16_000,
        n_fft=400,
        n_mels=40,
        fmin=20.0,
        fmax=7600.0,
        htk=scale == "htk",
        norm="slaney" if norm == "slaney" else None,
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-7)


def test_power_spectrogram_and_frame_count_match_librosa() -> None:
    y = chirp()
    ours = power_spectrogram(torch.from_numpy(y)).numpy()
    theirs = (
        np.abs(
            librosa.stft(
                y, n_fft=400, hop_length=160, window="hann", center=True, pad_mode="constant"
            )
        )
        ** 2
    )
    assert ours.shape == theirs.shape == (201, n_frames(len(y)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-5)


def test_dct_matches_scipy_orthonormal_dct_ii() -> None:
    x = np.random.randn(40, 7)
    expected = scipy_fft.dct(x, type=2, norm="ortho", axis=0)[:13]
    ours = (dct_matrix(13, 40).double() @ torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-5)


def test_mfcc_matches_librosa_with_a_fixed_floor() -> None:
    y = chirp()
    config = FeatureConfig(normalize=False)
    ours = compute_features(torch.from_numpy(y), config).numpy()
    mel = librosa.feature.melspectrogram(
        y=y,
        sr=16_000,
        n_fft=400,
        hop_length=160,
        n_mels=40,
        fmin=20.0,
        fmax=7600.0,
        center=True,
        pad_mode="constant",
    )
    db = librosa.power_to_db(mel, ref=1.0, amin=1e-10, top_db=None)  # fixed floor, no top_db
    theirs = librosa.feature.mfcc(S=db, n_mfcc=13, dct_type=2, norm="ortho")
    assert ours.shape == theirs.shape == (13, n_frames(len(y)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=2e-3)


def test_a_pure_tone_peaks_in_the_mel_band_around_its_frequency() -> None:
    rate, hz = 16_000, 1000.0
    tone = torch.sin(2 * torch.pi * hz * torch.arange(rate) / rate)
    filters = mel_filterbank(40, 400, rate, 20.0, 7600.0)
    energy = log_energy(filters @ power_spectrogram(tone))  # (M, N)
    peak_band = energy.mean(dim=-1).argmax().item()
    centres = (filters * torch.linspace(0, rate / 2, 201)).sum(-1) / filters.sum(-1)  # (M,)
    assert peak_band == (centres - hz).abs().argmin().item()
