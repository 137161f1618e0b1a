"""Our Whisper log-mel against Hugging Face's WhisperFeatureExtractor (a port of openai-whisper's
log_mel_spectrogram), on synthesized audio: within 1e-4."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.installed import import_or_missing

transformers = import_or_missing("transformers")

from glassformer.audio.features import whisper_log_mel  # noqa: E402


def chirp_with_noise(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(16_000 * seconds)) / 16_000
    chirp = 0.3 * np.sin(2 * np.pi * (200 + 1500 * t) * t)
    return (chirp + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


@pytest.mark.parametrize("seconds", [0.7, 2.0, 3.33])
def test_log_mel_matches_whisper_feature_extractor(seconds: float) -> None:
    audio = chirp_with_noise(seconds, seed=int(seconds * 100))
    extractor = transformers.WhisperFeatureExtractor(feature_size=80)
    theirs = extractor(audio, sampling_rate=16_000, return_tensors="np", padding=False)
    theirs = torch.from_numpy(theirs["input_features"][0])  # (80, N)
    ours = whisper_log_mel(torch.from_numpy(audio))  # (80, N), float32 as Whisper computes
    assert ours.shape == theirs.shape == (80, len(audio) // 160)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0, msg="log-mel vs Whisper's")


def test_batched_clips_keep_their_own_floor() -> None:
    loud, quiet = chirp_with_noise(1.0, 1), 0.001 * chirp_with_noise(1.0, 2)
    batch = whisper_log_mel(torch.from_numpy(np.stack([loud, quiet])))  # (2, 80, N)
    alone = whisper_log_mel(torch.from_numpy(quiet))
    torch.testing.assert_close(batch[1], alone, atol=1e-6, rtol=0, msg="batched == alone")
