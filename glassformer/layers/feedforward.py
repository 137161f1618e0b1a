"""The position-wise feed-forward network: the same two-layer network applied at every position.

In the article's hand-built model, this is the layer that turns what attention gathered into
word-pair features ("battery, ran" -> down). Here its weights are learned: D -> F -> D with a
non-linearity in between, F usually 4 * D.

Activations: ReLU (the paper), exact GELU, and the tanh approximation of GELU that GPT-2 uses
(Hugging Face calls it "gelu_new"). gelu_tanh below writes that formula out; the network itself
calls torch's kernel, and a test checks the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU, tanh form (Hendrycks & Gimpel 2016).

    gelu(x) ~= 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    """
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,  # the paper
    "gelu": F.gelu,  # exact: x * Phi(x)
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2; equals gelu_tanh()
}


class FeedForward(nn.Module):
    """linear (D -> F), activation, dropout, linear (F -> D); applied to each position alone.

    Args:
        d_model: input and output width (D).
        d_ff: hidden width (F); the paper uses 2048 for D = 512.
        activation: one of ACTIVATIONS.
        dropout: dropout on the hidden activations during training.
        bias: both linear layers learn a bias (False as nanoGPT's bias=False).

    Shapes:
        x: (B, T, D)   returns: (B, T, D)
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        activation: str = "relu",
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not one of {sorted(ACTIVATIONS)}")
        self.activation = ACTIVATIONS[activation]
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.dropout(self.activation(self.up_proj(x)))  # (B, T, F)
        return self.down_proj(hidden)  # (B, T, D)
