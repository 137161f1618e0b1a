"""Attention masks, in one convention: boolean, True = this query may attend to this key.

This is the convention of torch.nn.functional.scaled_dot_product_attention. The article's
"masking" section draws the same thing: a matrix of ones (look) and zeros (ignore).
torch.nn.MultiheadAttention uses the opposite (True = blocked); convert with `~mask` at that
boundary only. Masks are combined with logical AND and broadcast to (B, H, T, S).
"""

from __future__ import annotations

import torch


def causal_mask(T: int, S: int | None = None, device: torch.device | None = None) -> torch.Tensor:
    """Lower-triangular mask: query t may attend to keys up to its own position.

    With a KV cache the T new queries sit at the end of S keys (S >= T), so query t has
    absolute position S - T + t and sees keys 0 .. S - T + t.

    Shapes:
        returns: (T, S) bool
    """
    S = T if S is None else S
    if S < T:
        raise ValueError(f"causal_mask needs S >= T, got T={T}, S={S}")
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(diagonal=S - T)


def padding_mask(lengths: torch.Tensor, S: int) -> torch.Tensor:
    """True at real positions, False at padding, for right-padded sequences.

    Shapes:
        lengths: (B,) int   returns: (B, S) bool
    """
    positions = torch.arange(S, device=lengths.device)  # (S,)
    return positions[None, :] < lengths[:, None]  # (B, S)


def key_padding_to_attn_mask(key_padding: torch.Tensor) -> torch.Tensor:
    """Turn a per-key padding mask into an attention mask that broadcasts over heads and queries.

    Shapes:
        key_padding: (B, S) bool, True = real key   returns: (B, 1, 1, S)
    """
    return key_padding[:, None, None, :]  # (B, S) -> (B, 1, 1, S)


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the given masks (None means "no restriction"); None if all are None.

    Shapes:
        masks: each broadcastable to (B, H, T, S)   returns: their broadcast shape
    """
    result = None
    for mask in masks:
        if mask is None:
            continue
        result = mask if result is None else result & mask
    return result
