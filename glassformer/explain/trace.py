"""Look inside a running model without changing it: collect attention probabilities.

Attention modules compute their probabilities only when asked (need_weights=True), and the
blocks do not ask. `attention_probabilities` asks for them with a forward pre-hook that sets
need_weights on the call, and reads them with a forward hook; nothing is stored on the model
and the hooks are removed on exit. The outputs are unchanged (the explicit attention path is
tested equal to the fused one).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


@contextmanager
def attention_probabilities(module: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Within the block, every call of `module` (a MultiHeadAttention) appends its
    per-head probabilities (B, H, T, S) to the yielded list."""
    captured: list[torch.Tensor] = []

    def ask(_: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return args, {**kwargs, "need_weights": True}

    def keep(_: nn.Module, args: tuple, kwargs: dict, output: tuple) -> None:
        captured.append(output[1].detach())

    handles = [
        module.register_forward_pre_hook(ask, with_kwargs=True),
        module.register_forward_hook(keep, with_kwargs=True),
    ]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()
