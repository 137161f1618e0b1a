"""Positional encodings: tell the model where in the sequence each vector sits.

Attention by itself ignores order. The paper adds to each embedded word a vector that depends
only on its position: sines and cosines of geometrically spaced frequencies,

    PE(pos, 2i)   = sin(pos / 10000^(2i / D))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / D)).

Each (sin, cos) pair is the article's "circular wiggle": as pos grows the pair walks around a
circle, fast for small i, slowly for large i. Because a rotation by a fixed angle is a fixed
linear map, PE(pos + k) is a linear function of PE(pos) for every k (tested).

LearnedPositions is GPT-2's alternative: a trainable (max_len, D) table.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """The paper's positional-encoding table.

    Shapes:
        returns: (max_len, D)
    """
    if d_model % 2:
        raise ValueError(f"sinusoidal positions need an even d_model, got d_model={d_model}")
    positions = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (D/2,)
    angular_frequency = torch.exp(-math.log(10000.0) * two_i / d_model)  # 1 / 10000^(2i/D)
    angles = positions * angular_frequency  # (max_len, D/2)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table.float()


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table (a non-persistent buffer: not saved, not trained).

    Shapes:
        x: (B, T, D)   returns: (B, T, D)
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.size(1)
        if offset + T > self.table.size(0):
            raise ValueError(f"position {offset + T - 1} is beyond max_len={self.table.size(0)}")
        return x + self.table[offset : offset + T].to(x.dtype)  # (T, D) broadcasts over B


class LearnedPositions(nn.Module):
    """Adds a trainable vector per position (GPT-2's wpe).

    Shapes:
        x: (B, T, D)   returns: (B, T, D)
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(max_len, d_model))

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.size(1)
        if offset + T > self.weight.size(0):
            raise ValueError(f"position {offset + T - 1} is beyond max_len={self.weight.size(0)}")
        return x + self.weight[offset : offset + T]  # (T, D) broadcasts over B


def make_positions(kind: str, max_len: int, d_model: int) -> nn.Module:
    """The position module named by a config's `positional` field."""
    if kind == "sinusoidal":
        return SinusoidalPositions(max_len, d_model)
    if kind == "learned":
        return LearnedPositions(max_len, d_model)
    raise ValueError(f"positional={kind!r} is not one of ['learned', 'sinusoidal']")
