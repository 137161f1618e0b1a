"""The language-model task's settings, torch-free: its data config and its presets.

A preset is a model and a training recipe that go together (configs.Preset); the data
settings keep their defaults unless a preset says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from glassformer.configs import (
    Preset,
    check_presets,
    require_finite,
    require_fraction,
    require_positive,
)
from glassformer.models.configs import GPTConfig
from glassformer.train.config import TrainConfig


@dataclass(frozen=True)
class LMDataConfig:
    block_size: int = 64  # tokens of context per training sequence (T); <= the model's max_len
    tokenizer: str = "char"  # char | bpe (trained on the data) | path to a TOK.json
    bpe_vocab_size: int = 4096  # vocabulary size when tokenizer=bpe trains a new one
    val_fraction: float = 0.1  # the last part of the token stream, held out for validation

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "block_size", "bpe_vocab_size")
        require_fraction(self, "val_fraction")


LM_PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        "seconds on a CPU: for tests and smoke runs",
        {"max_len": 64, "d_model": 32, "n_heads": 4, "n_layers": 2, "d_ff": 128},
        {"steps": 50, "batch_size": 8, "eval_every": 25, "eval_batches": 2, "warmup_steps": 5},
    ),
    "baby": Preset(
        "nanoGPT's CPU baby GPT on Shakespeare: about two minutes on 2 cores",
        {
            "max_len": 64,
            "d_model": 128,
            "n_heads": 4,
            "n_layers": 4,
            "d_ff": 512,
            "activation": "gelu",
        },
        {"steps": 2000, "batch_size": 12, "lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 100},
    ),
    "gpt2-small": Preset(
        "GPT-2 small's shape (124 M parameters): for a GPU",
        {
            "max_len": 1024,
            "d_model": 768,
            "n_heads": 12,
            "n_layers": 12,
            "d_ff": 3072,
            "dropout": 0.1,
        },
        {"steps": 5000, "batch_size": 32, "lr": 6e-4, "min_lr": 6e-5, "warmup_steps": 500},
    ),
}
check_presets(LM_PRESETS, GPTConfig, TrainConfig, LMDataConfig)
