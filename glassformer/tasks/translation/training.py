"""Translation: the paper's own task, on the article's encoder stack and cross-attention.

    pairs (tasks/translation/data.py) --> BPE (shared by default) --> token-budget batches
      --> Seq2SeqTransformer (the paper's recipe) --> the shared training loop

Batches hold a token budget, not a sentence count (data.max_tokens): pairs of similar length go
together, so little of each batch is padding. Validation BLEU (sacrebleu, on detokenized text:
byte-level BPE decodes back to the original spelling) is computed at every evaluation from a
fixed set of validation sentences (tasks/translation/inference.py). Every checkpoint holds its
tokenizer(s), so a checkpoint directory is all `translate` and `evaluate` need.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.errors import GlassformerError
from glassformer.models.configs import Seq2SeqConfig
from glassformer.models.seq2seq import Seq2SeqTransformer
from glassformer.tasks.common import (
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    pad_sequences,
    special_ids,
)
from glassformer.tasks.translation.config import SOURCE_TOKENIZER_FILE, TranslationDataConfig
from glassformer.tasks.translation.data import split_pairs, token_batches
from glassformer.tasks.translation.inference import Translator, corpus_scores, translate
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.config import TrainConfig
from glassformer.train.loop import Batch, TrainResult, train
from glassformer.train.losses import token_cross_entropy
from glassformer.train.memory import check_model_fits


def translation_model_config(
    overrides: dict[str, Any], src_vocab: int, tgt_vocab: int, shared: bool
) -> Seq2SeqConfig:
    """A Seq2SeqConfig over token sources with the paper's defaults (post-norm, tied output)."""
    base = {
        "src_vocab_size": src_vocab,
        "tgt_vocab_size": tgt_vocab,
        "share_embeddings": shared,
        "max_src_len": 256,
        "max_tgt_len": 256,
    }
    return Seq2SeqConfig(**{**base, **overrides})


def train_tokenizers(
    pairs: list[tuple[str, str]], data: TranslationDataConfig
) -> tuple[Tokenizer, Tokenizer]:
    """(source, target) BPE tokenizers trained on the training pairs; one object if shared."""
    import warnings

    from glassformer.tokenizer.training import train_bpe_tokenizer

    specials = list(SPECIAL_TOKENS)
    sources = "\n".join(s for s, _ in pairs)
    targets = "\n".join(t for _, t in pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small corpus may allow fewer merges: that is fine
        if data.shared_vocab:
            shared = train_bpe_tokenizer(
                [sources, targets], data.bpe_vocab_size, "gpt2", list(SPECIAL_TOKENS)
            )
            return shared, shared
        return (
            train_bpe_tokenizer([sources], data.bpe_vocab_size, "gpt2", specials),
            train_bpe_tokenizer([targets], data.bpe_vocab_size, "gpt2", specials),
        )


class TranslationTask:
    """Token-budget batches of encoded pairs, the loss, and validation BLEU (the TrainTask)."""

    def __init__(
        self,
        train_pairs: list[tuple[str, str]],
        valid_pairs: list[tuple[str, str]],
        source_tokenizer: Tokenizer,
        target_tokenizer: Tokenizer,
        data: TranslationDataConfig,
        max_len: int,
    ) -> None:
        self.source_tokenizer, self.target_tokenizer, self.data = (
            source_tokenizer,
            target_tokenizer,
            data,
        )
        self.pad, self.bos, self.eos = special_ids(target_tokenizer)
        self.model: nn.Module | None = None  # set by train_translation, for validation BLEU
        self.valid_pairs = valid_pairs
        self.encoded, self.batches, self.dropped_long = {}, {}, 0
        for split, pairs in (("train", train_pairs), ("val", valid_pairs)):
            encoded = []
            for source, target in pairs:
                src = source_tokenizer.encode(source) + [self.eos]
                tgt = [self.bos, *target_tokenizer.encode(target), self.eos]
                if len(src) > max_len or len(tgt) > max_len + 1:
                    self.dropped_long += 1  # longer than the model's position table
                    continue
                encoded.append((src, tgt))
            if not encoded:
                raise GlassformerError(f"no {split} pairs left after tokenization")
            self.encoded[split] = encoded
            lengths = [len(s) for s, _ in encoded], [len(t) - 1 for _, t in encoded]
            longest = max(max(lengths[0]), max(lengths[1]))
            if longest > data.max_tokens:  # as fairseq: a pair over the budget is an error
                raise GlassformerError(
                    f"max_tokens={data.max_tokens} is less than the longest {split} pair "
                    f"({longest} tokens): a batch must hold at least one whole pair"
                )
            self.batches[split] = token_batches(*lengths, data.max_tokens, shuffle=True)

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        """One token-budget batch, chosen at random (the generator makes resume exact).

        Shapes:
            returns: source (B, S), source lengths (B,), tokens_in (B, T), tokens_out (B, T)
        """
        batches = self.batches[split]
        pick = int(torch.randint(len(batches), (1,), generator=generator))
        rows = [self.encoded[split][i] for i in batches[pick]]
        return self.collate([s for s, _ in rows], [t for _, t in rows])

    def collate(self, sources: list[list[int]], targets: list[list[int]]) -> Batch:
        lengths = torch.tensor([len(s) for s in sources])
        source = pad_sequences(sources, self.pad)  # (B, S)
        target = pad_sequences(targets, self.pad)  # (B, T + 1)
        return source, lengths, target[:, :-1], target[:, 1:]

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        source, lengths, tokens_in, tokens_out = batch
        logits = model(source, tokens_in, lengths)  # (B, T, V)
        return token_cross_entropy(logits, tokens_out, self.pad, label_smoothing)

    def count_tokens(self, batch: Batch) -> int:
        return int((batch[3] != self.pad).sum())

    def checkpoint_metadata(self) -> dict[str, Any]:
        shared = self.source_tokenizer is self.target_tokenizer
        return {
            "task": "translation",
            "tokenizer": TOKENIZER_FILE,
            "source_tokenizer": TOKENIZER_FILE if shared else SOURCE_TOKENIZER_FILE,
            "data": self.data.__dict__,
        }

    def write_files(self, directory: Path) -> None:
        self.target_tokenizer.save(directory / TOKENIZER_FILE)
        if self.source_tokenizer is not self.target_tokenizer:
            self.source_tokenizer.save(directory / SOURCE_TOKENIZER_FILE)

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        """BLEU of greedy translations of the first bleu_sentences validation pairs."""
        count = self.data.bleu_sentences
        if not count or self.model is None:
            return {}
        translator = Translator(self.model, self.source_tokenizer, self.target_tokenizer)
        sources, references = zip(*self.valid_pairs[:count], strict=True)
        was_training = self.model.training
        self.model.eval()
        hypotheses = translate(translator, list(sources), beam_size=1)
        self.model.train(was_training)
        return {"val_bleu": corpus_scores(hypotheses, list(references))["bleu"]}


def train_translation(
    train_pairs: list[tuple[str, str]],
    valid_pairs: list[tuple[str, str]] | None,
    model_overrides: dict[str, Any],
    train_config: TrainConfig,
    data_config: TranslationDataConfig,
    out: Path,
    resume: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Train an encoder-decoder on sentence pairs; validation pairs are split off if not given."""
    from glassformer.tokenizer.io import load_tokenizer

    if valid_pairs is None:
        train_pairs, valid_pairs = split_pairs(
            train_pairs, data_config.valid_size, train_config.seed
        )
    if resume and (out / "last" / TOKENIZER_FILE).is_file():
        target = load_tokenizer(out / "last" / TOKENIZER_FILE)
        source_file = out / "last" / SOURCE_TOKENIZER_FILE
        source = load_tokenizer(source_file) if source_file.is_file() else target
    else:
        source, target = train_tokenizers(train_pairs, data_config)
    torch.manual_seed(train_config.seed)
    config = translation_model_config(
        model_overrides, source.vocab_size, target.vocab_size, source is target
    )
    check_model_fits(lambda: Seq2SeqTransformer(config), train_config.device)  # before building
    model = Seq2SeqTransformer(config)
    task = TranslationTask(
        train_pairs,
        valid_pairs,
        source,
        target,
        data_config,
        min(config.max_src_len, config.max_tgt_len - 1),
    )
    task.model = model
    return train(model, task, train_config, out, resume=resume, progress=progress)
