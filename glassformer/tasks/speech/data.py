"""The speech task's data: the grammar's tokenizer, noise recordings, and augmentation.

    grammar_tokenizer   BPE trained on sentences sampled from the grammar
    load_noises         a folder of noise WAVs, mixed into training clips
    augment_waveform    speed, reverb, telephone band, silence padding, noise, gain
    augment_features    vocal-tract-length warp and tempo on the features, then SpecAugment
    read_labels         the truth for evaluation: a TSV of transcripts or a JSON of intents

The clips themselves come from a `voice synth` dataset (voice/synth.py reads its manifest).
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
from glassformer.textfiles import parse_json, read_utf8
from glassformer.tokenizer.base import Tokenizer
from glassformer.voice.grammar import Grammar


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


def read_labels(path: Path, grammar: Grammar) -> dict[str, dict]:
    """Labels: TSV `file<TAB>transcript` or JSON {file: {"intent": ..., "slots": {...}}}.

    Returns file -> {"text": str | None, "intent": str | None, "slots": dict}.

    Raises:
        GlassformerError: a missing, unreadable, malformed or empty file, naming the file.
    """
    text = read_utf8(path, "labels")
    if not text.strip():
        raise GlassformerError(f"{path}: empty file, no labels in it")
    if path.suffix == ".json":
        labels = read_json_labels(path, text)
    else:
        labels = read_tsv_labels(path, text, grammar)
    if not labels:
        raise GlassformerError(f"{path}: no labels in the file")
    return labels


def read_tsv_labels(path: Path, text: str, grammar: Grammar) -> dict[str, dict]:
    """`file<TAB>transcript` lines; the grammar turns each transcript into intent and slots."""
    labels = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise GlassformerError(f"{path}:{number}: expected file<TAB>transcript")
        name, transcript = line.split("\t", 1)
        command = grammar.parse(transcript)
        labels[name] = {
            "text": transcript,
            "intent": command.intent if command else None,
            "slots": command.slots if command else {},
        }
    return labels


def read_json_labels(path: Path, text: str) -> dict[str, dict]:
    """{file: {"intent": str | null, "slots": {name: value}, "transcript": str}}, checked."""
    document = parse_json(text, str(path))  # malformed, nested too deeply: one line
    if not isinstance(document, dict):
        raise GlassformerError(f"{path}: expected a JSON object {{file: {{intent, slots}}}}")
    labels = {}
    for name, value in document.items():
        if not isinstance(value, dict):
            raise GlassformerError(f"{path}: {name!r} should map to {{intent, slots}}")
        intent, slots = value.get("intent"), value.get("slots") or {}
        transcript = value.get("transcript")
        if intent is not None and not isinstance(intent, str):
            raise GlassformerError(f"{path}: {name!r}: intent must be a string or null")
        if not isinstance(slots, dict) or not all(isinstance(v, str) for v in slots.values()):
            raise GlassformerError(f"{path}: {name!r}: slots must map names to strings")
        if transcript is not None and not isinstance(transcript, str):
            raise GlassformerError(f"{path}: {name!r}: transcript must be a string")
        labels[name] = {"text": transcript, "intent": intent, "slots": slots}
    return labels
