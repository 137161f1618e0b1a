"""The speech task's data: the grammar's tokenizer, noise recordings, and augmentation.

    grammar_tokenizer   BPE trained on sentences sampled from the grammar
    load_noises         a folder of noise WAVs, mixed into training clips
    augment_waveform    speed, reverb, telephone band, silence padding, noise, gain
    augment_features    vocal-tract-length warp and tempo on the features, then SpecAugment

The clips themselves come from a `voice synth` dataset (voice/synth.py reads its manifest);
the truth for evaluation is read by tasks/speech/evaluation.py (read_labels).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from glassformer.audio import augment
from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.errors import GlassformerError
from glassformer.tasks.common import SPECIAL_TOKENS
from glassformer.tasks.speech.config import SpeechDataConfig
from glassformer.tokenizer.base import Tokenizer


def grammar_tokenizer(grammar, vocab_size: int, seed: int = 0) -> Tokenizer:  # noqa: ANN001
    """BPE trained on sentences sampled from the grammar (whole words become single tokens)."""
    import warnings

    from glassformer.tokenizer.training import train_bpe_tokenizer

    rng = random.Random(seed)
    sentences = [grammar.sample(rng).text for _ in range(5000)] + grammar.vocabulary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small grammar allows fewer merges: that is fine
        return train_bpe_tokenizer(["\n".join(sentences)], vocab_size, "gpt2", list(SPECIAL_TOKENS))


def load_noises(noise_dir: str) -> list[np.ndarray]:
    from glassformer.audio.io import load_audio

    if not noise_dir:
        return []
    paths = sorted(Path(noise_dir).glob("*.wav"))
    if not paths:
        raise GlassformerError(f"{noise_dir}: no .wav noise files")
    return [load_audio(p) for p in paths]


def augment_waveform(
    waveform: np.ndarray,
    data: SpeechDataConfig,
    noises: list[np.ndarray],
    rng: random.Random,
) -> np.ndarray:
    """One training clip, changed as a different speaker, room and microphone would change it:
    speed, reverb, telephone band, silence around it, background noise, gain."""
    waveform = augment.change_speed(
        waveform, round(rng.uniform(1 - data.speed_range, 1 + data.speed_range), 2)
    )
    if rng.random() < data.augment_prob:
        waveform = augment.add_reverb(waveform, rng)
    if rng.random() < data.augment_prob:
        waveform = augment.telephone_band(waveform)
    waveform = augment.pad_silence(waveform, rng, data.pad_seconds)
    if noises and rng.random() < data.noise_prob:
        snr = rng.uniform(data.snr_min, data.snr_max)
        waveform = augment.add_noise(waveform, rng.choice(noises), snr, rng)
    return augment.change_gain(waveform, rng.uniform(-12, 6))


def augment_features(
    waveform: np.ndarray,
    data: SpeechDataConfig,
    features: FeatureConfig,
    rng: random.Random,
    generator: torch.Generator,
) -> torch.Tensor:
    """Features with a random vocal-tract length and tempo, then SpecAugment masks.

    Shapes:
        waveform: (L,)   returns: (M, N)
    """
    warp = 1.0
    if data.vtlp_range > 0:
        warp = round(rng.uniform(1 - data.vtlp_range, 1 + data.vtlp_range), 2)  # few banks
    result = compute_features(torch.from_numpy(waveform), features, warp)  # (M, N)
    if data.tempo_range > 0:
        result = augment.change_tempo(
            result, rng.uniform(1 - data.tempo_range, 1 + data.tempo_range)
        )
    return augment.spec_augment(result, generator) if data.spec_augment else result
