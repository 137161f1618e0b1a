"""MFCC pipeline properties: shapes, batching, a fixed floor, deltas, normalization."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from glassformer.audio.features import (
    FeatureConfig,
    compute_features,
    deltas,
    n_frames,
    normalize_utterance,
    pre_emphasize,
)
from glassformer.audio.mel import warp_frequency


def test_shapes_batched_and_log_mel() -> None:
    waveform = torch.randn(3, 16_000)
    mfcc = compute_features(waveform)
    assert mfcc.shape == (3, 13, n_frames(16_000)) == (3, 13, 101)
    logmel = compute_features(waveform, FeatureConfig(kind="logmel", n_mels=80, deltas=True))
    assert logmel.shape == (3, 240, 101)
    torch.testing.assert_close(compute_features(waveform[1]), mfcc[1], atol=1e-4, rtol=1e-4)


def test_a_clip_and_its_piece_agree_where_they_overlap() -> None:
    """A fixed log floor (not relative to the clip's loudest frame) makes features local."""
    config = FeatureConfig(normalize=False)
    clip = torch.randn(32_000) * torch.linspace(0.01, 1.0, 32_000)  # loud only at the end
    whole = compute_features(clip, config)
    piece = compute_features(clip[:16_000], config)
    torch.testing.assert_close(piece[:, 2:90], whole[:, 2:90], atol=1e-3, rtol=1e-3)


def test_silence_stays_finite() -> None:
    features = compute_features(torch.zeros(8_000))
    assert torch.isfinite(features).all()


def test_deltas_of_a_ramp_are_its_slope() -> None:
    ramp = torch.arange(20.0).repeat(2, 1)  # (M=2, N=20), slope 1 per frame
    assert torch.allclose(deltas(ramp)[:, 3:-3], torch.ones(2, 14))


def test_normalization_and_pre_emphasis() -> None:
    x = torch.randn(4, 50) * 3 + 7
    y = normalize_utterance(x)
    assert torch.allclose(y.mean(-1), torch.zeros(4), atol=1e-5)
    assert torch.allclose(y.std(-1, unbiased=False), torch.ones(4), atol=1e-3)
    assert pre_emphasize(torch.tensor([1.0, 1.0, 1.0]), 0.97).tolist() == pytest.approx(
        [1, 0.03, 0.03]
    )


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="n_mfcc=50 exceeds n_mels=40"):
        FeatureConfig(n_mfcc=50)
    with pytest.raises(ValueError, match="f_max=9000"):
        FeatureConfig(f_max=9000)


def test_vocal_tract_warp_moves_a_tone_and_keeps_the_band_edges() -> None:
    from glassformer.audio.features import log_energy, power_spectrogram
    from glassformer.audio.mel import mel_filterbank

    hz = torch.tensor([0.0, 1000.0, 3000.0, 7600.0], dtype=torch.float64)
    assert torch.equal(warp_frequency(hz, 1.0, 7600.0), hz)
    for warp in (0.9, 1.1):
        warped = warp_frequency(torch.linspace(0, 7600, 500, dtype=torch.float64), warp, 7600.0)
        assert warped[0] == 0 and warped[-1] == pytest.approx(7600.0)  # edges stay
        assert bool((warped.diff() > 0).all())  # monotonic: filters keep their order
        assert warp_frequency(hz, warp, 7600.0)[1] == pytest.approx(1000.0 * warp)
    tone = torch.sin(2 * torch.pi * 1000.0 * torch.arange(16_000) / 16_000)
    power = power_spectrogram(tone)

    def peak_band(warp: float) -> int:
        filters = mel_filterbank(40, 400, 16_000, 20.0, 7600.0, warp=warp)
        return int(log_energy(filters @ power).mean(-1).argmax())

    # edges at h * warp: a longer tract (warp < 1) reads the tone in a higher band
    assert peak_band(0.9) > peak_band(1.0) > peak_band(1.1)
    assert compute_features(tone, warp=1.1).shape == compute_features(tone).shape


def test_whisper_pads_to_the_next_ten_seconds_not_always_thirty() -> None:
    from glassformer.audio.features import padded_length

    config = FeatureConfig.whisper()
    seconds = [padded_length(config, int(s * 16_000)) / 16_000 for s in (0.5, 10, 12, 29, 45)]
    assert seconds == [10, 10, 20, 30, 30]  # 45 s is not padded (nor cut: transcribe cuts)
    assert padded_length(FeatureConfig(), 16_000) == 0  # MFCC: no padding at all
    clip = torch.randn(16_000 * 2)
    assert compute_features(clip, config).shape == (80, 1000)  # 10 s of 10-ms frames
    full = dataclasses.replace(config, window_step=0.0)
    assert compute_features(clip, full).shape == (80, 3000)
    with pytest.raises(ValueError, match="window_step"):
        FeatureConfig(window_seconds=10, window_step=20)
