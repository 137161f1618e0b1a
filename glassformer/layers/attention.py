"""Attention: the article's "attention as matrix multiplication", made soft and multi-headed.

scaled_dot_product_attention is Eq. (1) of Vaswani et al. (2017), written out: it returns the
attention probabilities so they can be looked at. MultiHeadAttention projects the inputs into
H smaller subspaces, attends in each, concatenates and projects back (Eq. (2)). It serves both
self-attention (queries, keys and values from the same sequence) and cross-attention (keys and
values from the encoder's output, `memory`).

Two paths compute the same thing: the explicit one (teaches, returns probabilities) and
torch.nn.functional.scaled_dot_product_attention (fused kernels). tests/layers/test_attention.py
checks that they agree.

Training computes self-attention's q, k, v as one stacked (3*D, D) product (one larger matrix
product is faster than three small ones); the three projections stay separate modules and
parameters, so checkpoints, conversions and traces see q_proj, k_proj, v_proj. The
beams of one clip ask their shared encoder memory together, as one longer row of queries
(fold_rows). Both are tested equal to the plain computation (tests/layers/test_kv_cache.py,
tests/layers/test_attention.py).

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
        bias: the four projections have biases; False removes all of them (nanoGPT's
            bias=False), whatever key_bias says.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        use_sdpa: bool = True,
        key_bias: bool = True,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.use_sdpa = use_sdpa
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias and key_bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.fused_qkv = True  # training: q, k, v as one product (project_qkv)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, H, T, Dh): each head gets its own Dh-wide slice of every position."""
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, Dh)

    def project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention's queries, keys and values: three projections of the same x.

        In training (train mode, gradients on) the three weights are stacked into one (3*D, D)
        matrix on every call and applied as one product: the same numbers up to float
        rounding, and one product of width 3*D runs faster on a CPU than three of width D,
        forward and backward. The stack is made afresh from q_proj, k_proj and v_proj each
        time, so the gradients flow back into them and nothing has to notice when an
        optimizer changes the weights. Everything else (decoding, evaluation, traces that hook
        q_proj), and `fused_qkv = False`, computes the three one by one, as written in the
        paper: a kept stack measured no faster for decoding (docs/benchmarks.md).

        Shapes:
            x: (B, T, D)   returns: q, k, v, each (B, H, T, Dh)
        """
        if not (self.fused_qkv and self.training and torch.is_grad_enabled()):
            return tuple(self.split_heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        B, T, _ = x.shape
        weight, bias = self.stack_qkv()  # (3*D, D), (3*D,) or None
        qkv = F.linear(x, weight, bias).view(B, T, 3, self.n_heads, self.d_head)  # (B, T, 3*D)
        return qkv.permute(2, 0, 3, 1, 4).unbind(0)  # three (B, H, T, Dh) views

    def stack_qkv(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """q_proj, k_proj and v_proj's weights and biases, one under the other: (3*D, D), (3*D,).

        A key projection without bias (Whisper's) contributes zeros; projections without any
        bias (bias=False) give None, and the product adds nothing.
        """
        projections = (self.q_proj, self.k_proj, self.v_proj)
        weight = torch.cat([p.weight for p in projections])  # (3*D, D)
        if all(p.bias is None for p in projections):
            return weight, None
        zeros = self.q_proj.weight.new_zeros(self.q_proj.out_features)  # no bias adds 0
        bias = torch.cat([zeros if p.bias is None else p.bias for p in projections])  # (3*D,)
        return weight, bias

    def project_memory(
        self, memory: torch.Tensor, cache: AttentionCache | None, batch: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention's keys and values: `memory` projected once, then reused from the
        cache on every later step.

        A memory with fewer rows than the `batch` of queries is shared by groups of rows (the
        beams of one clip): projected once per memory, never copied per beam. One memory is
        kept as a stride-0 view over all rows; several as they are (B_memory, H, S, Dh).
        """
        if cache is not None and cache.k is not None:
            return cache.k, cache.v
        k = self.split_heads(self.k_proj(memory))  # (B_memory, H, S, Dh)
        v = self.split_heads(self.v_proj(memory))  # (B_memory, H, S, Dh)
        if k.size(0) == 1 < batch:
            k, v = k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)  # views: stride 0
        if cache is not None:
            cache.k, cache.v = k, v
        return k, v

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
            is_causal: also forbid attending to later positions (self-attention only).
            cache: past keys and values for incremental decoding (see kv_cache.py).
            need_weights: return the per-head probabilities (forces the explicit path).

        Shapes:
            x: (B, T, D)   memory: (B, S, D), or (B_memory, S, D) shared by groups of
            B / B_memory consecutive rows (a clip's beams)   attn_mask: broadcastable to
            (B, H, T, S), or to (B_memory, H, T, S) for a shared memory
            returns: output (B, T, D), probs (B, H, T, S) or None
        """
        B, T, D = x.shape
        if memory is not None:
            q = self.split_heads(self.q_proj(x))  # (B, H, T, Dh)
            k, v = self.project_memory(memory, cache, B)  # (B or B_memory, H, S, Dh)
            k, v = distinct_memories(k), distinct_memories(v)
            if k.size(0) < B:  # groups of rows ask the same memory: one batch row per memory
                q = fold_rows(q, k.size(0))  # (B_memory, H, K*T, Dh)
            out, probs = self.attend(q, k, v, attn_mask, False, need_weights)
            if out.size(0) < B:
                out = unfold_rows(out, B)  # (B, H, T, Dh)
                probs = None if probs is None else unfold_rows(probs, B)  # (B, H, T, S)
        else:
            q, k, v = self.project_qkv(x)  # (B, H, T, Dh) each
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, S_past + T, Dh)
            out, probs = self.attend(q, k, v, attn_mask, is_causal, need_weights)
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, H, T, Dh) -> (B, T, D): concat heads
        return self.out_proj(out), probs

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        attn_mask: torch.Tensor | None,
        is_causal: bool,
        need_weights: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Eq. (1) for every head, through the fused kernel or written out.

        Shapes:
            q: (B, H, T, Dh)   k, v: (B, H, S, Dh)   returns: (B, H, T, Dh), (B, H, T, S) or None
        """
        T, S = q.size(2), k.size(2)
        dropout = self.dropout if self.training else 0.0
        if self.use_sdpa and not need_weights:
            # The fused kernel's is_causal aligns the mask top-left, right only when T == S;
            # one new query at the end of the keys (a decode step) may see them all: no mask.
            # (bool(): under torch.onnx's tracer sizes are tensors, and so is T == S)
            fused_causal = bool(is_causal and attn_mask is None and T == S)
            if is_causal and not fused_causal and T > 1:
                attn_mask = combine_masks(causal_mask(T, S, device=q.device), attn_mask)
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, dropout_p=dropout, is_causal=fused_causal
            )  # (B, H, T, Dh)
            return out, None
        if is_causal:
            attn_mask = combine_masks(causal_mask(T, S, device=q.device), attn_mask)
        return scaled_dot_product_attention(q, k, v, attn_mask, dropout)


def distinct_memories(k: torch.Tensor) -> torch.Tensor:
    """The one memory behind a stride-0 view over a clip's beams; anything else unchanged.

    Shapes:
        k: (B, H, S, Dh)   returns: (1, H, S, Dh) for a stride-0 view, else (B, H, S, Dh)
    """
    return k[:1] if k.size(0) > 1 and k.stride(0) == 0 else k


def fold_rows(q: torch.Tensor, groups: int) -> torch.Tensor:
    """Stack the queries of each group of rows that shares one memory into one row: every
    beam of a clip asks the same keys, so they can ask together, like one longer sequence.
    Rows b * K .. b * K + K - 1 are group b (beam search's layout).

    Shapes:
        q: (B, H, T, Dh), B = groups * K   returns: (groups, H, K*T, Dh)
    """
    B, H, T, Dh = q.shape
    q = q.reshape(groups, B // groups, H, T, Dh)  # (groups, K, H, T, Dh)
    return q.transpose(1, 2).reshape(groups, H, -1, Dh)  # (groups, H, K*T, Dh)


def unfold_rows(out: torch.Tensor, B: int) -> torch.Tensor:
    """fold_rows() undone on the result.

    Shapes:
        out: (groups, H, K*T, X)   returns: (B, H, T, X), B = groups * K
    """
    groups, H, _, X = out.shape
    out = out.reshape(groups, H, B // groups, -1, X)  # (groups, H, K, T, X)
    return out.transpose(1, 2).reshape(B, H, -1, X)  # (B, H, T, X)
