"""Embedding and de-embedding: into the model's D-dimensional space and back to the vocabulary.

The article: multiplying a one-hot row vector by a (V, D) projection matrix pulls out one row,
the word's coordinates in embedding space. Indexing the row directly is the same operation
without the zeros, and that is what TokenEmbedding does.

De-embedding projects back: (B, T, D) @ (D, V) gives one score per vocabulary word (the
logits); softmax turns the scores into next-word probabilities. With weight tying the
de-embedding matrix is the embedding matrix transposed (Press & Wolf 2017), as in the paper
and GPT-2.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class TokenEmbedding(nn.Module):
    """Look up each token's row of a (V, D) table, optionally times sqrt(D) as in the paper.

    The paper scales embeddings by sqrt(D) (Section 3.4) so that, with small initial weights,
    the word vector is not drowned by the positional encoding added to it. GPT-2 does not.

    Shapes:
        tokens: (B, T) int   returns: (B, T, D)
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        self.multiplier = math.sqrt(d_model) if scale else 1.0
        if not self.weight.is_meta:  # a model built without_weights: nothing to draw, and
            nn.init.normal_(self.weight, std=0.02)  # torch's normal_ on meta takes real memory

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = F.embedding(tokens, self.weight)  # (B, T) -> (B, T, D): row lookup = one-hot @ table
        return x * self.multiplier if self.multiplier != 1.0 else x


class DeEmbedding(nn.Module):
    """Project from the model's space to one score per vocabulary word.

    Tie it to an embedding by passing `tied=embedding.weight`: the same matrix then turns
    words into vectors and vectors into word scores (no second copy is ever allocated).

    Shapes:
        x: (B, T, D)   returns: logits (B, T, V)
    """

    def __init__(self, d_model: int, vocab_size: int, tied: nn.Parameter | None = None) -> None:
        super().__init__()
        if tied is not None:
            if tied.shape != (vocab_size, d_model):
                raise ValueError(
                    f"tied weight {tuple(tied.shape)}, expected {(vocab_size, d_model)}"
                )
            self.weight = tied
            return
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        if not self.weight.is_meta:  # as TokenEmbedding
            nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T  # (B, T, D) @ (D, V) -> (B, T, V)


def softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x_i) / sum_j exp(x_j), written out; turns de-embedding scores into probabilities.

    Subtracting the maximum first changes nothing mathematically (it cancels in the ratio)
    but keeps exp() from overflowing. The article's three reasons for softmax: it gives a
    probability distribution, it sharpens a clear winner towards argmax while keeping close
    runners-up, and it is differentiable.

    Shapes:
        logits: (..., V)   returns: (..., V), summing to 1 along `dim`
    """
    shifted = logits - logits.amax(dim=dim, keepdim=True)
    exp = shifted.exp()
    return exp / exp.sum(dim=dim, keepdim=True)
