"""Training a GPT on text files: the language-model task for the shared training loop.

    files -> tokenizer (tasks/lm/data.py) -> cached token file -> random blocks -> the loop

The tokenizer is saved inside every checkpoint (tokenizer.json), so a checkpoint directory is
all `generate` and `evaluate` need (tasks/lm/inference.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.corpora import default_cache_root
from glassformer.errors import GlassformerError
from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT
from glassformer.tasks.common import TOKENIZER_FILE
from glassformer.tasks.lm.config import LMDataConfig
from glassformer.tasks.lm.data import load_or_train_tokenizer
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.config import TrainConfig
from glassformer.train.data import TokenData, prepare_token_data, sample_blocks
from glassformer.train.loop import Batch, TrainResult, train
from glassformer.train.losses import token_cross_entropy
from glassformer.train.memory import check_model_fits


class LanguageModelTask:
    """Next-token prediction on random blocks of a token file (the TrainTask for the loop)."""

    def __init__(
        self, data: TokenData, tokenizer: Tokenizer, data_config: LMDataConfig, batch_size: int
    ) -> None:
        self.data, self.tokenizer, self.data_config = data, tokenizer, data_config
        self.batch_size = batch_size

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        tokens = self.data.train if split == "train" else self.data.val
        return sample_blocks(tokens, self.batch_size, self.data_config.block_size, generator)

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        x, y = batch
        logits = model(x)  # (B, T, V)
        return token_cross_entropy(logits, y, None, label_smoothing)  # no padding in blocks

    def count_tokens(self, batch: Batch) -> int:
        return batch[0].numel()

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {"task": "lm", "tokenizer": TOKENIZER_FILE, "data": self.data_config.__dict__}

    def write_files(self, directory: Path) -> None:
        self.tokenizer.save(directory / TOKENIZER_FILE)

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        """Bits per byte: the loss in bits, spread over the bytes the tokens stand for."""
        bytes_per_token = self.data.val_bytes / len(self.data.val)
        return {"val_bits_per_byte": val_loss / math.log(2) / bytes_per_token}


def train_lm(
    files: list[Path],
    model_overrides: dict[str, Any],
    train_config: TrainConfig,
    data_config: LMDataConfig,
    out: Path,
    resume: bool = False,
    progress: bool = True,
    before_training: Callable[[], None] | None = None,
) -> TrainResult:
    """Prepare the data, build the GPT (seeded), and run the training loop.

    `before_training` runs once the data is ready and checked, just before the loop starts
    (the CLI prints the run's settings there, so a data error is the only thing printed).
    """
    from glassformer.textfiles import require_files
    from glassformer.tokenizer.io import load_tokenizer

    require_files(files)  # regular files: a FIFO or a device is one line, never a hang
    if resume:
        if not (out / "last" / TOKENIZER_FILE).is_file():
            raise GlassformerError(f"{out / 'last'}: no checkpoint to resume from")
        tokenizer = load_tokenizer(out / "last" / TOKENIZER_FILE)
    else:
        tokenizer = load_or_train_tokenizer(
            data_config.tokenizer, files, data_config.bpe_vocab_size
        )
    data = prepare_token_data(
        files, tokenizer, default_cache_root() / "lm", data_config.val_fraction
    )
    model_config = GPTConfig(vocab_size=tokenizer.vocab_size, **model_overrides)
    if data_config.block_size > model_config.max_len:
        raise GlassformerError(
            f"block_size={data_config.block_size} exceeds max_len={model_config.max_len}"
        )
    for split, tokens in (("training", data.train), ("validation", data.val)):
        if len(tokens) <= data_config.block_size:  # checked before the run writes anything
            raise GlassformerError(
                f"the {split} split has {len(tokens)} tokens, too few for one block of "
                f"block_size={data_config.block_size} + 1: give more text or a smaller block"
            )
    check_model_fits(lambda: GPT(model_config), train_config.device)  # before allocating it
    torch.manual_seed(train_config.seed)
    model = GPT(model_config)
    task = LanguageModelTask(data, tokenizer, data_config, train_config.batch_size)
    if before_training is not None:
        before_training()
    return train(model, task, train_config, out, resume=resume, progress=progress)
