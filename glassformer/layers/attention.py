"""Attention: the article's "attention as matrix multiplication", made soft and multi-headed.

scaled_dot_product_attention is Eq. (1) of Vaswani et al. (2017), written out: it returns the
attention probabilities so they can be looked at. MultiHeadAttention projects the inputs into
H smaller subspaces, attends in each, concatenates and projects back (Eq. (2)). It serves both
self-attention (queries, keys and values from the same sequence) and cross-attention (keys and
values from the encoder's output, `memory`).

Two paths compute the same thing: the explicit one (teaches, returns probabilities) and
torch.nn.functional.scaled_dot_product_attention (fused kernels). tests/layers/test_attention.py
checks that they agree.

Not here: rotary or relative positions, grouped-query attention.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from glassformer.layers.kv_cache import AttentionCache
from glassformer.layers.masks import causal_mask, combine_masks


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ / sqrt(Dh)) V, written out.

    Dividing by sqrt(Dh) keeps the scores' spread independent of the head width, so softmax
    does not saturate into an argmax as Dh grows. A query row whose mask allows no key gets
    all-zero probabilities (and a zero output) instead of NaN, as torch's SDPA does.

    Args:
        q, k, v: queries, keys and values for every head.
        mask: True where a query may attend to a key (docs/notation.md).
        dropout: probability of dropping an attention weight (training only).

    Shapes:
        q: (B, H, T, Dh)   k, v: (B, H, S, Dh)   mask: broadcastable to (B, H, T, S)
        returns: output (B, H, T, Dh), probs (B, H, T, S)
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # blocked pairs get zero weight
    probs = scores.softmax(dim=-1)  # each row sums to 1 over S
    if mask is not None:
        probs = probs.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # rows with no key: 0
    if dropout > 0.0:
        probs = F.dropout(probs, p=dropout)
    return probs @ v, probs  # (B, H, T, Dh)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Args:
        d_model: width of the inputs and the output (D).
        n_heads: number of heads (H); d_model must be divisible by it.
        dropout: dropout on the attention probabilities during training.
        use_sdpa: compute with torch's fused kernel unless probabilities are requested.
        key_bias: the key projection has a bias (Whisper's has none: a bias on every key
            adds the same score to every key of a query, which softmax ignores).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        use_sdpa: bool = True,
        key_bias: bool = True,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.use_sdpa = use_sdpa
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model, bias=key_bias)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, H, T, Dh): each head gets its own Dh-wide slice of every position."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, Dh)

    def project_kv(
        self, source: torch.Tensor, cache: AttentionCache | None, is_cross: bool, batch: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values for this call, through the cache when one is given.

        Self-attention appends the new positions; cross-attention projects `memory` once and
        reuses it on every later step. One memory for a batch of `batch` queries (the beams
        of one clip) is projected once and shared as a view, never copied per beam.
        """
        if is_cross and cache is not None and cache.k is not None:
            return cache.k, cache.v
        k = self.split_heads(self.k_proj(source))  # (B, H, S, Dh)
        v = self.split_heads(self.v_proj(source))  # (B, H, S, Dh)
        if is_cross and k.size(0) == 1 < batch:
            k, v = k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)  # views: stride 0
        if cache is None:
            return k, v
        if is_cross:
            cache.k, cache.v = k, v
            return k, v
        return cache.append(k, v)  # (B, H, S_past + T, Dh)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        is_causal: bool = False,
        cache: AttentionCache | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from every position of `x` to every allowed position of `memory` (or of `x`).

        Args:
            x: the sequence asking (queries); the residual stream.
            memory: the sequence answering (keys and values) for cross-attention; None for self.
            attn_mask: True where a query may attend to a key.
            is_causal: also forbid attending to later positions (decoder self-attention).
            cache: past keys and values for incremental decoding (see kv_cache.py).
            need_weights: return the per-head probabilities (forces the explicit path).

        Shapes:
            x: (B, T, D)   memory: (B, S, D) or (1, S, D)   attn_mask: broadcastable to
            (B, H, T, S)
            returns: output (B, T, D), probs (B, H, T, S) or None
        """
        B, T, D = x.shape
        is_cross = memory is not None
        q = self.split_heads(self.q_proj(x))  # (B, H, T, Dh)
        k, v = self.project_kv(memory if is_cross else x, cache, is_cross, B)  # (B, H, S, Dh)
        S = k.size(2)
        dropout = self.dropout if self.training else 0.0
        if self.use_sdpa and not need_weights:
            # The fused kernel's is_causal aligns the mask top-left, right only when T == S.
            fused_causal = is_causal and attn_mask is None and T == S
            if is_causal and not fused_causal:
                attn_mask = combine_masks(causal_mask(T, S, device=x.device), attn_mask)
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, dropout_p=dropout, is_causal=fused_causal
            )  # (B, H, T, Dh)
            probs = None
        else:
            if is_causal:
                attn_mask = combine_masks(causal_mask(T, S, device=x.device), attn_mask)
            out, probs = scaled_dot_product_attention(q, k, v, attn_mask, dropout)
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, H, T, Dh) -> (B, T, D): concat heads
        return self.out_proj(out), probs
