"""Spoken commands to text, intent and slots: the article's running example, end to end.

    grammar --(voice/synth.py)--> synthetic clips --> MFCC --> encoder-decoder --> words
                                                             --> grammar.parse --> intent, slots

Training reads a synthesized dataset (manifest + 16 kHz clips), augments every training clip
on the fly (speed, gain, reverb, telephone band, background noise at a random SNR, silence
around the command), computes MFCCs (optionally with a random vocal-tract length and tempo),
masks them (SpecAugment), and teaches a Seq2SeqTransformer with a feature source to write the
command's words (a BPE tokenizer trained on the grammar's sentences). Every checkpoint also
holds the tokenizer and the grammar, so `transcribe` needs nothing else.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from glassformer.audio import augment
from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.configs import require_fraction, require_positive
from glassformer.errors import GlassformerError
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.loop import Batch
from glassformer.train.losses import token_cross_entropy

TOKENIZER_FILE = "tokenizer.json"
GRAMMAR_FILE = "grammar.yaml"
SPECIALS = ["<pad>", "<bos>", "<eos>"]
FRAME_BUCKET = 64  # batches are padded to a multiple of this many frames (0.64 s): CPU kernels
# (oneDNN convolutions) are planned once per input shape, so fewer shapes run faster


@dataclass(frozen=True)
class SpeechDataConfig:
    bpe_vocab_size: int = 512  # BPE vocabulary trained on grammar sentences (bytes + merges + 3)
    noise_dir: str = ""  # folder of WAV noise mixed into training clips ("" = none)
    noise_prob: float = 0.6  # share of training clips that get background noise
    snr_min: float = 5.0  # lowest signal-to-noise ratio mixed in, dB
    snr_max: float = 30.0  # highest, dB
    speed_range: float = 0.1  # speed factors (tempo and pitch together) drawn from 1 +- this
    tempo_range: float = 0.0  # tempo factors (duration only, pitch kept) from 1 +- this
    vtlp_range: float = 0.0  # vocal-tract-length warp factors from 1 +- this (0.1 is usual;
    # off by default: on real digits it did not help, see docs/benchmarks.md)
    augment_prob: float = 0.2  # chance of each of reverb and telephone band per clip
    pad_seconds: float = 0.5  # up to this much silence before and after each training clip
    spec_augment: bool = True  # SpecAugment time and frequency masks on training features
    ctc_weight: float = 0.3  # share of an auxiliary CTC loss on the encoder (0 = none)

    def __post_init__(self) -> None:
        require_positive(self, "bpe_vocab_size")
        require_fraction(self, "noise_prob")
        require_fraction(self, "augment_prob")


# Presets: (Seq2SeqConfig fields, TrainConfig fields). The feature source and vocabulary are
# filled in from the data.
SPEECH_PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "tiny": (  # tests: overfits a few clips in seconds
        {
            "d_model": 32,
            "n_heads": 2,
            "n_encoder_layers": 1,
            "n_decoder_layers": 1,
            "d_ff": 64,
            "dropout": 0.0,
        },
        {
            "steps": 60,
            "batch_size": 4,
            "lr": 3e-3,
            "warmup_steps": 5,
            "eval_every": 30,
            "eval_batches": 1,
            "min_lr": 3e-4,
        },
    ),
    "small": (  # make demo: about 7 minutes on 2 CPU cores
        {
            "d_model": 128,
            "n_heads": 4,
            "n_encoder_layers": 3,
            "n_decoder_layers": 2,
            "d_ff": 512,
            "dropout": 0.0,  # augmentation regularizes; dropout costs 30% of a CPU step
        },
        {
            "steps": 2000,
            "batch_size": 24,
            "lr": 1.5e-3,
            "min_lr": 1e-4,
            "warmup_steps": 150,
            "eval_every": 300,
            "eval_batches": 4,
            "label_smoothing": 0.1,
            "weight_decay": 0.05,
        },
    ),
}


def speech_model_config(overrides: dict[str, Any], vocab_size: int, features: FeatureConfig):
    """A Seq2SeqConfig for MFCC input: conv front end, pre-norm blocks, sinusoidal positions."""
    from glassformer.models.seq2seq import Seq2SeqConfig

    base = {
        "tgt_vocab_size": vocab_size,
        "src_vocab_size": 0,
        "source": "features",
        "n_features": features.n_features,
        "frontend": "conv",
        "max_src_len": 1024,
        "max_tgt_len": 64,
        "norm_first": True,
        "final_norm": True,
    }
    return Seq2SeqConfig(**{**base, **overrides})


def grammar_tokenizer(grammar, vocab_size: int, seed: int = 0) -> Tokenizer:  # noqa: ANN001
    """BPE trained on sentences sampled from the grammar (whole words become single tokens)."""
    import warnings

    from glassformer.tokenizer.training import train_bpe_tokenizer

    rng = random.Random(seed)
    sentences = [grammar.sample(rng).text for _ in range(5000)] + grammar.vocabulary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small grammar allows fewer merges: that is fine
        return train_bpe_tokenizer(["\n".join(sentences)], vocab_size, "gpt2", SPECIALS)


class SpeechTask:
    """Batches of augmented clips -> features, and target token sequences (the TrainTask)."""

    def __init__(
        self,
        rows: list[dict],
        waveforms: dict[str, np.ndarray],
        tokenizer: Tokenizer,
        features: FeatureConfig,
        data: SpeechDataConfig,
        batch_size: int,
        noises: list[np.ndarray],
        extra_files: dict[str, str],
    ) -> None:
        self.rows = {s: [r for r in rows if r["split"] == s] for s in ("train", "val")}
        if not self.rows["train"] or not self.rows["val"]:
            raise GlassformerError("the dataset needs clips in both the train and val splits")
        self.waveforms, self.tokenizer, self.features, self.data = (
            waveforms,
            tokenizer,
            features,
            data,
        )
        self.batch_size, self.noises, self.extra_files = batch_size, noises, extra_files
        self.pad, self.bos, self.eos = (tokenizer.special_tokens[s] for s in SPECIALS)

    def augmented(self, waveform: np.ndarray, rng: random.Random) -> np.ndarray:
        d = self.data
        waveform = augment.change_speed(
            waveform, round(rng.uniform(1 - d.speed_range, 1 + d.speed_range), 2)
        )
        if rng.random() < d.augment_prob:
            waveform = augment.add_reverb(waveform, rng)
        if rng.random() < d.augment_prob:
            waveform = augment.telephone_band(waveform)
        waveform = augment.pad_silence(waveform, rng, d.pad_seconds)
        if self.noises and rng.random() < d.noise_prob:
            waveform = augment.add_noise(
                waveform, rng.choice(self.noises), rng.uniform(d.snr_min, d.snr_max), rng
            )
        return augment.change_gain(waveform, rng.uniform(-12, 6))

    def augmented_features(
        self, waveform: np.ndarray, rng: random.Random, generator: torch.Generator
    ) -> torch.Tensor:
        """Features with a random vocal-tract length and tempo, then SpecAugment masks."""
        d = self.data
        warp = 1.0
        if d.vtlp_range > 0:
            warp = round(rng.uniform(1 - d.vtlp_range, 1 + d.vtlp_range), 2)  # few cached banks
        features = compute_features(torch.from_numpy(waveform), self.features, warp)  # (M, N)
        if d.tempo_range > 0:
            tempo = rng.uniform(1 - d.tempo_range, 1 + d.tempo_range)
            features = augment.change_tempo(features, tempo)
        return augment.spec_augment(features, generator) if d.spec_augment else features

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        rows = self.rows[split]
        picks = torch.randint(len(rows), (self.batch_size,), generator=generator).tolist()
        rng = random.Random(int(torch.randint(1 << 30, (1,), generator=generator)))
        clips, targets = [], []
        for index in picks:
            waveform = self.waveforms[rows[index]["id"]]
            if split == "train":
                features = self.augmented_features(self.augmented(waveform, rng), rng, generator)
            else:
                features = compute_features(torch.from_numpy(waveform), self.features)  # (M, N)
            clips.append(features)
            targets.append([self.bos, *self.tokenizer.encode(rows[index]["text"]), self.eos])
        return self.collate(clips, targets)

    def collate(self, clips: list[torch.Tensor], targets: list[list[int]]) -> Batch:
        """Pad features with zeros and targets with <pad>.

        Shapes:
            returns: features (B, M, N), lengths (B,), tokens_in (B, T), tokens_out (B, T)
        """
        lengths = torch.tensor([c.size(-1) for c in clips])
        width = -(-int(lengths.max()) // FRAME_BUCKET) * FRAME_BUCKET  # few distinct shapes
        features = torch.zeros(len(clips), clips[0].size(0), width)
        for i, clip in enumerate(clips):
            features[i, :, : clip.size(-1)] = clip
        width = max(len(t) for t in targets)
        tokens = torch.full((len(targets), width), self.pad, dtype=torch.long)
        for i, target in enumerate(targets):
            tokens[i, : len(target)] = torch.tensor(target)
        return features, lengths, tokens[:, :-1], tokens[:, 1:]

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        """Cross-entropy of the decoder, mixed with CTC on the encoder when ctc_weight > 0."""
        features, lengths, tokens_in, tokens_out = batch
        weight = self.data.ctc_weight
        if weight == 0:
            return self.decoder_loss(
                model(features, tokens_in, lengths), tokens_out, label_smoothing
            )
        logits, encoder_logits, padding = model(features, tokens_in, lengths, with_ctc=True)
        decoder_loss = self.decoder_loss(logits, tokens_out, label_smoothing)
        words = tokens_out != self.pad
        words &= tokens_out != self.eos  # CTC targets: the written tokens only
        log_probs = encoder_logits.float().log_softmax(-1).transpose(0, 1)  # (S', B, V)
        input_lengths = padding.sum(-1)  # encoder positions per clip (lengths are always given)
        ctc = F.ctc_loss(
            log_probs,
            tokens_out[words],
            input_lengths,
            words.sum(-1),
            blank=self.pad,
            zero_infinity=True,
        )  # <pad> doubles as the blank
        return (1 - weight) * decoder_loss + weight * ctc

    def decoder_loss(
        self, logits: torch.Tensor, tokens_out: torch.Tensor, label_smoothing: float
    ) -> torch.Tensor:
        return token_cross_entropy(logits, tokens_out, self.pad, label_smoothing)

    def count_tokens(self, batch: Batch) -> int:
        return int((batch[3] != self.pad).sum())

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {
            "task": "speech",
            "tokenizer": TOKENIZER_FILE,
            "grammar": GRAMMAR_FILE,
            "features": self.features.__dict__,
            "data": self.data.__dict__,
        }

    def write_files(self, directory: Path) -> None:
        self.tokenizer.save(directory / TOKENIZER_FILE)
        for name, text in self.extra_files.items():
            (directory / name).write_text(text)

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        return {}


def load_noises(noise_dir: str) -> list[np.ndarray]:
    from glassformer.audio.io import load_audio

    if not noise_dir:
        return []
    paths = sorted(Path(noise_dir).glob("*.wav"))
    if not paths:
        raise GlassformerError(f"{noise_dir}: no .wav noise files")
    return [load_audio(p) for p in paths]


def train_speech(
    grammar_path: Path,
    data_dir: Path,
    model_overrides: dict[str, Any],
    train_config,
    data_config: SpeechDataConfig,
    out: Path,  # noqa: ANN001
    resume: bool = False,
    progress: bool = True,
    features: FeatureConfig | None = None,
):  # noqa: ANN201 - TrainResult
    """Train a speech Transformer on a synthesized dataset of `grammar_path`."""
    from tqdm import tqdm

    from glassformer.audio.io import load_audio
    from glassformer.models.seq2seq import Seq2SeqTransformer
    from glassformer.tokenizer.io import load_tokenizer
    from glassformer.train.loop import train
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import read_manifest

    features = features or FeatureConfig()
    grammar = Grammar.from_yaml(grammar_path)
    rows = read_manifest(data_dir)
    if resume and (out / "last" / TOKENIZER_FILE).is_file():
        tokenizer = load_tokenizer(out / "last" / TOKENIZER_FILE)
    else:
        tokenizer = grammar_tokenizer(grammar, data_config.bpe_vocab_size, train_config.seed)
    waveforms = {
        row["id"]: load_audio(Path(data_dir) / row["audio"])
        for row in tqdm(rows, desc="loading clips", unit="clip", disable=not progress)
    }
    torch.manual_seed(train_config.seed)
    model_overrides = {"ctc_head": data_config.ctc_weight > 0, **model_overrides}
    config = speech_model_config(model_overrides, tokenizer.vocab_size, features)
    model = Seq2SeqTransformer(config)
    extra = {GRAMMAR_FILE: Path(grammar_path).read_text(encoding="utf-8")}
    task = SpeechTask(
        rows,
        waveforms,
        tokenizer,
        features,
        data_config,
        train_config.batch_size,
        load_noises(data_config.noise_dir),
        extra,
    )
    return train(model, task, train_config, out, resume=resume, progress=progress)
