"""Training the speech model on a synthesized dataset: the speech task for the shared loop.

    grammar --(voice/synth.py)--> synthetic clips --> augmented (tasks/speech/data.py) --> MFCC
      --> SpeechTransformer: decoder cross-entropy + auxiliary CTC on the encoder --> the loop

Every checkpoint also holds the tokenizer and the grammar, so `transcribe`
(tasks/speech/inference.py) needs nothing else.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.errors import GlassformerError
from glassformer.models.configs import SpeechConfig
from glassformer.models.speech import SpeechTransformer
from glassformer.tasks.common import TOKENIZER_FILE, pad_sequences, special_ids
from glassformer.tasks.speech.config import GRAMMAR_FILE, SpeechDataConfig
from glassformer.tasks.speech.data import (
    augment_features,
    augment_waveform,
    grammar_tokenizer,
    load_noises,
)
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.config import TrainConfig
from glassformer.train.loop import Batch, TrainResult
from glassformer.train.losses import token_cross_entropy

FRAME_BUCKET = 64  # batches are padded to a multiple of this many frames (0.64 s): CPU kernels
# (oneDNN convolutions) are planned once per input shape, so fewer shapes run faster


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
        grammar_text: str,
    ) -> None:
        self.rows = {s: [r for r in rows if r["split"] == s] for s in ("train", "val")}
        if not self.rows["train"] or not self.rows["val"]:
            raise GlassformerError("the dataset needs clips in both the train and val splits")
        self.waveforms, self.tokenizer, self.features = waveforms, tokenizer, features
        self.data, self.batch_size, self.noises = data, batch_size, noises
        self.grammar_text = grammar_text
        self.pad, self.bos, self.eos = special_ids(tokenizer)

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        rows = self.rows[split]
        picks = torch.randint(len(rows), (self.batch_size,), generator=generator).tolist()
        rng = random.Random(int(torch.randint(1 << 30, (1,), generator=generator)))
        clips, targets = [], []
        for index in picks:
            waveform = self.waveforms[rows[index]["id"]]
            if split == "train":
                waveform = augment_waveform(waveform, self.data, self.noises, rng)
                features = augment_features(waveform, self.data, self.features, rng, generator)
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
        tokens = pad_sequences(targets, self.pad)  # (B, T + 1)
        return features, lengths, tokens[:, :-1], tokens[:, 1:]

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        """Cross-entropy of the decoder, mixed with CTC on the encoder when ctc_weight > 0."""
        features, lengths, tokens_in, tokens_out = batch
        weight = self.data.ctc_weight
        logits, encoder_logits, padding = model(features, tokens_in, lengths)
        if weight == 0:
            return self.decoder_loss(logits, tokens_out, label_smoothing)
        if encoder_logits is None:
            raise GlassformerError(f"ctc_weight={weight} needs a model built with ctc_head=True")
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
        (directory / GRAMMAR_FILE).write_text(self.grammar_text, encoding="utf-8")

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        return {}


def train_speech(
    grammar_path: Path,
    data_dir: Path,
    model_overrides: dict[str, Any],
    train_config: TrainConfig,
    data_config: SpeechDataConfig,
    out: Path,
    resume: bool = False,
    progress: bool = True,
    features: FeatureConfig | None = None,
) -> TrainResult:
    """Train a speech Transformer on a synthesized dataset of `grammar_path`."""
    from tqdm import tqdm

    from glassformer.audio.io import load_audio
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
    derived = {
        "tgt_vocab_size": tokenizer.vocab_size,
        "n_features": features.n_features,
        "ctc_head": data_config.ctc_weight > 0,
    }
    model = SpeechTransformer(SpeechConfig(**{**model_overrides, **derived}))
    task = SpeechTask(
        rows,
        waveforms,
        tokenizer,
        features,
        data_config,
        train_config.batch_size,
        load_noises(data_config.noise_dir),
        Path(grammar_path).read_text(encoding="utf-8"),
    )
    return train(model, task, train_config, out, resume=resume, progress=progress)
