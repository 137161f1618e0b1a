"""An explicit key/value cache for incremental decoding.

When a decoder writes one word at a time, the keys and values of the words already written
never change. Keeping them means each new step projects only the newest position instead of
the whole prefix: the work per step goes from O(T) projections to O(1).

The cache is a plain object the caller creates, passes in and owns (no hooks, nothing stored on
the model). Self-attention appends the new positions' keys and values; cross-attention computes
its keys and values from the encoder output once, on the first step, and reuses them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class AttentionCache:
    """Keys and values one attention module has seen so far.

    Shapes:
        k, v: (B, H, S, Dh), or None before the first step
    """

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    @property
    def seq_len(self) -> int:
        return 0 if self.k is None else self.k.size(2)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the newest positions and return all keys and values so far.

        Shapes:
            k, v: (B, H, T, Dh)   returns: two (B, H, S + T, Dh)
        """
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=2)  # (B, H, S + T, Dh)
            self.v = torch.cat([self.v, v], dim=2)
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` (beam search reorders hypotheses each step).

        Shapes:
            index: (B',) int
        """
        if self.k is not None and self.k.stride(0) == 0:
            return  # one memory shared by every row (a clip's beams): all rows are the same
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


class KVCache:
    """One AttentionCache per decoder layer for self-attention, and optionally for cross-attention.

    Args:
        n_layers: decoder blocks in the model.
        cross_attention: also cache the encoder-side keys and values (encoder-decoder models).
    """

    def __init__(self, n_layers: int, cross_attention: bool = False) -> None:
        self.self_attn = [AttentionCache() for _ in range(n_layers)]
        self.cross_attn = [AttentionCache() for _ in range(n_layers)] if cross_attention else None

    @property
    def seq_len(self) -> int:
        """Positions already decoded (the offset of the next position)."""
        return self.self_attn[0].seq_len

    def clear(self) -> None:
        """Forget every layer's keys and values (to re-prefill a shifted context window)."""
        for cache in self.self_attn + (self.cross_attn or []):
            cache.k = cache.v = None

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` in every layer's cache (beam search)."""
        for cache in self.self_attn + (self.cross_attn or []):
            cache.reorder(index)
