"""TrainConfig: every setting of a training run, torch-free so that `--help` stays instant.

The loop (train/loop.py) reads it; `glassformer train ...` builds one flag per field from the
comments below; every checkpoint stores it (config.json's "train"), so `--resume` continues
with the same settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from glassformer.configs import (
    require_at_most,
    require_choice,
    require_finite,
    require_fraction,
    require_positive,
    require_seed,
)
from glassformer.devices import require_device_name
from glassformer.errors import ConfigError

# Sequences per optimizer step, at most: 40x GPT-3's 1536 (3.2 M tokens). Every step samples
# the whole batch at once, so `--batch-size 1000000000` would ask for hundreds of GB.
MAX_BATCH_SIZE = 65_536


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2000  # optimizer steps in the whole run
    batch_size: int = 12  # sequences per optimizer step, over all processes and micro-batches
    grad_accum: int = 1  # micro-batches per step (batch_size must divide evenly)
    lr: float = 1e-3  # peak learning rate (for inverse_sqrt: a multiplier of the paper's curve)
    min_lr: float = 1e-4  # learning rate at the end of the cosine decay
    schedule: str = "cosine"  # cosine | inverse_sqrt (the paper) | constant
    warmup_steps: int = 100  # linear warmup steps
    weight_decay: float = 0.1  # AdamW decoupled decay, on matrices and embeddings only
    beta1: float = 0.9  # AdamW first-moment decay
    beta2: float = 0.99  # AdamW second-moment decay; 0.98 in the paper, 0.999 torch default
    adam_eps: float = 1e-8  # AdamW epsilon; 1e-9 in the paper
    grad_clip: float = 1.0  # clip the global gradient norm to this; 0 turns clipping off
    label_smoothing: float = 0.0  # spread this much target probability uniformly; 0.1 paper
    eval_every: int = 250  # steps between validation evaluations
    eval_batches: int = 20  # batches per evaluation (the same batches every time)
    checkpoint_every: int = 500  # steps between checkpoints of OUT/last
    seed: int = 1337  # seeds weights, dropout and data sampling; 0 to 2**32 - 1
    device: str = "auto"  # auto (cuda if available) | cpu | cuda | cuda:N
    precision: str = "auto"  # auto (bf16 autocast on CUDA, fp32 on CPU) | fp32 | bf16
    compile: bool = False  # torch.compile the model: fused kernels, ~30 s to compile on a CPU
    max_minutes: float = 0.0  # stop (evaluate, checkpoint) after this much training; 0 = no limit
    # sums split over other threads round otherwise (docs/benchmarks.md, "Why a seeded run")
    adapt_threads: bool = True  # fewer threads while others use the cores; off: a seed repeats

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "steps", "batch_size", "grad_accum", "eval_every", "eval_batches")
        require_positive(self, "checkpoint_every")
        require_at_most(self, "batch_size", MAX_BATCH_SIZE, "sequences per step; 40x GPT-3's")
        require_seed(self)
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int):
            raise ConfigError(f"warmup_steps={self.warmup_steps!r} must be an integer")
        if self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps={self.warmup_steps} must be >= 0 (0: no warmup)")
        require_choice(self, "schedule", ["constant", "cosine", "inverse_sqrt"])
        require_choice(self, "precision", ["auto", "bf16", "fp32"])
        require_device_name(self)
        for name in ("lr", "min_lr", "weight_decay", "grad_clip", "max_minutes", "adam_eps"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"{name}={value!r} must be a finite number >= 0")
        # in [0, 1): a moment decay of 1 (or NaN) never forgets; label smoothing of 1 would
        # take all probability away from the target
        for name in ("beta1", "beta2", "label_smoothing"):
            require_fraction(self, name)
        if self.batch_size % self.grad_accum:
            raise ConfigError(
                f"batch_size={self.batch_size} is not divisible by grad_accum={self.grad_accum}"
            )
