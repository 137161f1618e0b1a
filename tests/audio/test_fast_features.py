"""The fast feature paths give the written-out references' values.

compute_features and whisper_log_mel against compute_features_reference and
whisper_log_mel_reference (stage by stage, torch.stft); compute_features_many against
compute_features on each clip alone.
"""

from __future__ import annotations

import pytest
import torch

from glassformer.audio.features import (
    FeatureConfig,
    compute_features,
    compute_features_many,
    compute_features_reference,
    n_frames,
    whisper_log_mel,
    whisper_log_mel_reference,
)
from glassformer.errors import ConfigError

CONFIGS = {
    "mfcc": FeatureConfig(normalize=False),
    "mfcc_normalized": FeatureConfig(),
    "logmel_deltas": FeatureConfig(kind="logmel", n_mels=80, deltas=True, normalize=False),
    "pre_emphasis_htk": FeatureConfig(pre_emphasis=0.97, mel_scale="htk", mel_norm="none"),
    "short_frames": FeatureConfig(n_fft=256, hop_length=100, n_mels=24, normalize=False),
    "whisper": FeatureConfig.whisper(),
}


def speech_like(n_samples: int, seed: int = 0) -> torch.Tensor:
    """Noise through a rising tone's envelope: energy in every band, silence at the start."""
    generator = torch.Generator().manual_seed(seed)
    t = torch.arange(n_samples) / 16_000
    tone = torch.sin(2 * torch.pi * (300 + 2000 * t) * t) * t.clamp(max=0.5)
    return (tone + 0.05 * torch.randn(n_samples, generator=generator)).float()


@pytest.mark.parametrize("name", CONFIGS)
def test_fast_equals_reference_float32(name: str) -> None:
    config = CONFIGS[name]
    for waveform in (speech_like(12_345), torch.stack([speech_like(9_000, s) for s in range(3)])):
        fast = compute_features(waveform, config)
        reference = compute_features_reference(waveform, config)
        assert fast.shape == reference.shape
        torch.testing.assert_close(fast, reference, atol=1e-4, rtol=1e-5, msg=name)


@pytest.mark.parametrize("name", ["mfcc", "logmel_deltas", "pre_emphasis_htk"])
def test_fast_equals_reference_float64(name: str) -> None:
    """The same arithmetic up to rounding: in float64 they agree to ~1e-10."""
    waveform = speech_like(8_000).double()[None].expand(2, -1)  # (2, L)
    fast = compute_features(waveform, CONFIGS[name], warp=1.05)
    reference = compute_features_reference(waveform, CONFIGS[name], warp=1.05)
    assert fast.dtype == torch.float64
    torch.testing.assert_close(fast, reference, atol=1e-9, rtol=1e-10, msg=name)


def test_fast_whisper_log_mel_equals_reference() -> None:
    waveform = torch.stack([speech_like(32_000), 0.01 * speech_like(32_000, 1)])  # (2, L)
    fast = whisper_log_mel(waveform)
    assert fast.shape == (2, 80, 200) and fast.is_contiguous()
    torch.testing.assert_close(fast, whisper_log_mel_reference(waveform), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", CONFIGS)
def test_many_clips_equal_each_clip_alone(name: str) -> None:
    config = CONFIGS[name]
    lengths = [1, 159, 160, 199, 200, 401, 3_000, 16_000, 7]  # around the hop and n_fft
    clips = [speech_like(n, seed) for seed, n in enumerate(lengths)]
    many = compute_features_many(clips, config)
    assert len(many) == len(clips)
    for clip, features in zip(clips, many, strict=True):
        alone = compute_features(clip, config)
        assert features.shape == alone.shape
        if config.kind != "whisper":
            assert features.shape[-1] == n_frames(len(clip), config.hop_length)
        torch.testing.assert_close(features, alone, atol=1e-4, rtol=1e-5, msg=f"{len(clip)}")


def test_many_clips_edge_cases() -> None:
    assert compute_features_many([]) == []
    with pytest.raises(ConfigError, match="1-D clips"):
        compute_features_many([torch.zeros(2, 100)])
