"""Positional encodings: tell the model where in the sequence each vector sits.

Attention by itself ignores order. The paper adds to each embedded word a vector that depends
only on its position: sines and cosines of geometrically spaced frequencies,

    PE(pos, 2i)   = sin(pos / 10000^(2i / D))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / D)).

Each (sin, cos) pair is the article's "circular wiggle": as pos grows the pair walks around a
circle, fast for small i, slowly for large i. Because a rotation by a fixed angle is a fixed
linear map, PE(pos + k) is a linear function of PE(pos) for every k (tested).

LearnedPositions is GPT-2's alternative: a trainable (max_len, D) table. Whisper's encoder uses
a third layout ("sinusoidal_concat"): all sines, then all cosines, with frequencies spaced
from 1 to 1/10000 over D/2 - 1 steps (whisper_sinusoid_table).
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


def whisper_sinusoid_table(max_len: int, d_model: int) -> torch.Tensor:
    """Whisper's encoder table: [sin(pos * w_i) for i] then [cos(pos * w_i) for i], with
    w_i = 10000^(-i / (D/2 - 1)), i = 0 .. D/2 - 1 (the same circles, laid out in two halves).

    Shapes:
        returns: (max_len, D)
    """
    if d_model % 2 or d_model < 4:
        raise ValueError(f"sinusoid positions need an even d_model >= 4, got {d_model}")
    increment = math.log(10000.0) / (d_model // 2 - 1)
    frequency = torch.exp(-increment * torch.arange(d_model // 2, dtype=torch.float64))
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * frequency  # (max_len, D/2)
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()  # (max_len, D)


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table (a non-persistent buffer: not saved, not trained).

    Shapes:
        x: (B, T, D)   returns: (B, T, D)
    """

    def __init__(self, max_len: int, d_model: int, layout: str = "interleaved") -> None:
        super().__init__()
        make_table = whisper_sinusoid_table if layout == "concat" else sinusoidal_table
        with torch.device("cpu"):  # computed, never loaded: real even in a model built on meta
            table = make_table(max_len, d_model)
        self.register_buffer("table", table, persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.size(1)
        if offset + T > self.table.size(0):
            raise ValueError(f"position {offset + T - 1} is beyond max_len={self.table.size(0)}")
        return x + self.table[offset : offset + T].to(x.dtype)  # (T, D) broadcasts over B

    def at(self, positions: torch.Tensor) -> torch.Tensor:
        """The vectors of `positions` (a tensor, so a compiled step keeps one shape).

        Shapes:
            positions: (T,) int   returns: (T, D)
        """
        return self.table[positions]


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

    def at(self, positions: torch.Tensor) -> torch.Tensor:
        """The vectors of `positions` (a tensor, so a compiled step keeps one shape).

        Shapes:
            positions: (T,) int   returns: (T, D)
        """
        return self.weight[positions]


POSITIONAL_KINDS = ("learned", "sinusoidal", "sinusoidal_concat")


def make_positions(kind: str, max_len: int, d_model: int) -> nn.Module:
    """The position module named by a config's `positional` field."""
    if kind == "sinusoidal":
        return SinusoidalPositions(max_len, d_model)
    if kind == "sinusoidal_concat":
        return SinusoidalPositions(max_len, d_model, layout="concat")
    if kind == "learned":
        return LearnedPositions(max_len, d_model)
    raise ValueError(f"positional={kind!r} is not one of {list(POSITIONAL_KINDS)}")
