"""Training the speech model on a synthesized dataset: the speech task for the shared loop.

    grammar --(voice/synth.py)--> synthetic clips --> augmented (tasks/speech/data.py) --> MFCC
      --> SpeechTransformer: decoder cross-entropy + auxiliary CTC on the encoder --> the loop

Every checkpoint also holds the tokenizer and the grammar, so `transcribe`
(tasks/speech/inference.py) needs nothing else.

Fine-tuning (`init`: a pretrained name such as whisper-tiny.en, or any speech checkpoint)
runs the same loop from published weights: the clips become the model's own features
(Whisper's 30-s log-mel), the transcripts its own tokens after its own prompt, and only the
decoder learns (the grammar's words and how they are said); the encoder that hears stays
as it was, which also makes a step about three times cheaper.
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

from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.errors import CheckpointError, GlassformerError
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
from glassformer.textfiles import read_utf8
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.config import TrainConfig
from glassformer.train.loop import Batch, TrainResult
from glassformer.train.losses import token_cross_entropy
from glassformer.train.memory import check_model_fits

FRAME_BUCKET = 64  # batches are padded to a multiple of this many frames (0.64 s): CPU kernels
# (oneDNN convolutions) are planned once per input shape, so fewer shapes run faster


@dataclass(frozen=True)
class Targets:
    """How a transcript becomes the decoder's token sequence."""

    prompt: list[int]  # the tokens decoding starts from: [<bos>], or Whisper's task tokens
    eos: int  # ends every transcript
    pad: int  # fills short rows; never a target
    prefix: str = ""  # put before the text: Whisper's first word starts with a space

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer) -> Targets:
        """A model trained here: <bos> words <eos>, padded with <pad>."""
        pad, bos, eos = special_ids(tokenizer)
        return cls([bos], eos, pad)


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
        targets: Targets | None = None,
        decoding: dict | None = None,
    ) -> None:
        self.rows = {s: [r for r in rows if r["split"] == s] for s in ("train", "val")}
        if not self.rows["train"] or not self.rows["val"]:
            raise GlassformerError("the dataset needs clips in both the train and val splits")
        self.waveforms, self.tokenizer, self.features = waveforms, tokenizer, features
        self.data, self.batch_size, self.noises = data, batch_size, noises
        self.grammar_text = grammar_text
        self.targets = targets or Targets.from_tokenizer(tokenizer)
        self.pad, self.eos = self.targets.pad, self.targets.eos
        self.decoding = decoding  # a pretrained model's decoding rules, kept in checkpoints

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
            words = self.tokenizer.encode(self.targets.prefix + rows[index]["text"])
            targets.append([*self.targets.prompt, *words, self.eos])
        return self.collate(clips, targets)

    def collate(self, clips: list[torch.Tensor], targets: list[list[int]]) -> Batch:
        """Pad features with zeros and targets with <pad>.

        Shapes:
            returns: features (B, M, N), lengths (B,), tokens_in (B, T), tokens_out (B, T)
        """
        lengths = torch.tensor([c.size(-1) for c in clips])
        width = int(lengths.max())
        if not self.features.window_seconds:  # a fixed window (Whisper's 30 s) is one shape
            width = -(-width // FRAME_BUCKET) * FRAME_BUCKET  # few distinct shapes
        features = torch.zeros(len(clips), clips[0].size(0), width)
        for i, clip in enumerate(clips):
            features[i, :, : clip.size(-1)] = clip
        tokens = pad_sequences(targets, self.pad)  # (B, T + 1)
        tokens_out = tokens[:, 1:].clone()
        tokens_out[:, : len(self.targets.prompt) - 1] = self.pad  # the prompt is given, not learnt
        return features, lengths, tokens[:, :-1], tokens_out

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
        metadata = {
            "task": "speech",
            "tokenizer": TOKENIZER_FILE,
            "grammar": GRAMMAR_FILE,
            "features": self.features.__dict__,
            "data": self.data.__dict__,
        }
        return metadata | ({"decoding": self.decoding} if self.decoding else {})

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
    *,
    resume: bool = False,
    progress: bool = True,
    features: FeatureConfig | None = None,
    init: str | Path | None = None,
) -> TrainResult:
    """Train a speech Transformer on a synthesized dataset of `grammar_path`: from scratch
    (`model_overrides`), or fine-tuned from the model `init` names (see the module doc)."""
    from glassformer.audio.io import load_audio
    from glassformer.progress import progress_bar
    from glassformer.tokenizer.io import load_tokenizer
    from glassformer.train.loop import train
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import read_manifest

    grammar = Grammar.from_yaml(grammar_path)
    rows = read_manifest(data_dir)
    waveforms = {
        row["id"]: load_audio(Path(data_dir) / row["audio"])
        for row in progress_bar(progress, iterable=rows, desc="loading clips", unit="clip")
    }
    torch.manual_seed(train_config.seed)
    targets, decoding = None, None
    if init is not None:
        model, tokenizer, features, targets, decoding = pretrained_start(init)
        if data_config.ctc_weight > 0:
            raise GlassformerError("fine-tuning trains the decoder only: set ctc_weight to 0")
    else:
        features = features or FeatureConfig()
        if resume and (out / "last" / TOKENIZER_FILE).is_file():
            tokenizer = load_tokenizer(out / "last" / TOKENIZER_FILE)
        else:
            tokenizer = grammar_tokenizer(grammar, data_config.bpe_vocab_size, train_config.seed)
        derived = {
            "tgt_vocab_size": tokenizer.vocab_size,
            "n_features": features.n_features,
            "ctc_head": data_config.ctc_weight > 0,
        }
        config = SpeechConfig(**{**model_overrides, **derived})
        check_model_fits(lambda: SpeechTransformer(config), train_config.device)  # before it is
        model = SpeechTransformer(config)  # allocated: the kernel would end us without a word
    task = SpeechTask(
        rows,
        waveforms,
        tokenizer,
        features,
        data_config,
        train_config.batch_size,
        load_noises(data_config.noise_dir),
        read_utf8(grammar_path, "grammar"),  # kept in each checkpoint, read with the bounds
        targets,
        decoding,
    )
    return train(model, task, train_config, out, resume=resume, progress=progress)


def check_learnable(init: str | Path) -> None:
    """Raise GlassformerError for a model that fine-tuning cannot start from, before anything
    is spoken or built: one `glassformer export` wrote (its graphs have no gradients; the
    model it came from learns, and is exported again), or one carrying a command encoder
    (`glassformer fit-window`: the decoder would learn from Whisper's own encoder alone and
    the second encoder would be dropped from the result)."""
    from glassformer.convert.whisper_sources import is_pretrained_source
    from glassformer.tasks.speech.onnx_runtime import is_exported
    from glassformer.train.checkpoint import read_header, resolve_checkpoint

    if is_exported(init):
        raise GlassformerError(
            f"{init}: an exported model cannot learn (its graphs have no gradients): fine-tune "
            "the model it was exported from, then export the result"
        )
    if is_pretrained_source(init) or not Path(init).is_dir():
        return  # a Whisper as published, or a name: the loader says what it is
    try:
        header = read_header(resolve_checkpoint(init))
    except CheckpointError:
        return  # not a checkpoint of ours: the loader's one line names the problem
    if "command_encoder" in header:
        raise GlassformerError(
            f"{init}: a model with a command encoder (glassformer fit-window) cannot learn "
            "yet (its second encoder would be dropped): fine-tune the Whisper it came from"
        )


def pretrained_start(
    init: str | Path,
) -> tuple[SpeechTransformer, Tokenizer, FeatureConfig, Targets, dict]:
    """The model `init` names, its encoder frozen, with its tokenizer, features, how its
    transcripts are written (Targets) and its decoding rules (kept in every checkpoint)."""
    from glassformer.tasks.speech.loading import load_speech_model

    check_learnable(init)
    speech = load_speech_model(init)
    model = speech.model
    for part in (model.frontend, model.src_positions, model.encoder):
        part.requires_grad_(False)  # the encoder that hears stays as published
    rules = speech.rules
    given = {*rules.prompt, rules.eos}
    pad = next((t for t in rules.suppress if t not in given), None)
    if pad is None:
        raise GlassformerError(f"{init}: no token to pad transcripts with")
    decoding = {**rules.to_json(), "context_token": None}  # it learns the grammar: no context
    return (
        model,
        speech.tokenizer,
        speech.features,
        Targets(list(rules.prompt), rules.eos, pad, rules.word_prefix),
        decoding,
    )
