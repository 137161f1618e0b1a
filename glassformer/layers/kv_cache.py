"""An explicit key/value cache for incremental decoding.

When a decoder writes one word at a time, the keys and values of the words already written
never change. Keeping them means each new step projects only the newest position instead of
the whole prefix: the work per step goes from O(T) projections to O(1).

The cache is a plain object the caller creates, passes in and owns (no hooks, nothing stored on
the model). Self-attention adds the new positions' keys and values; cross-attention computes
its keys and values from the encoder output once, on the first step, and reuses them.

Two ways to keep self-attention's keys, tested equal (tests/layers/test_kv_cache.py):
  * written out (no capacity): concatenate the new positions onto the old ones each step.
    Reads like the idea, but every step allocates and copies the whole prefix again.
  * preallocated (a capacity, e.g. the model's max_len): one (B, H, capacity, Dh) buffer,
    allocated on the first step; each step writes its positions in place and attention reads
    a view of the filled part. Beam search's reordering copies rows within the same buffer.
"""

from __future__ import annotations

import torch


class AttentionCache:
    """Keys and values one attention module has seen so far.

    Args:
        capacity: positions to preallocate (self-attention's fast path); None: grow by
            concatenation (the written-out path).

    Shapes:
        k, v: (B, H, S, Dh), or None before the first step (with a capacity: views of the
        (B, H, capacity, Dh) buffers). Cross-attention to one memory per group of beams keeps
        that memory's keys once: a stride-0 view over the rows for one memory (a clip's
        beams), or (B_memory, H, S, Dh) for several (see attention.py).
    """

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.k_buffer: torch.Tensor | None = None  # (B, H, capacity, Dh) when preallocated
        self.v_buffer: torch.Tensor | None = None

    @property
    def seq_len(self) -> int:
        return 0 if self.k is None else self.k.size(2)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the newest positions and return all keys and values so far.

        Shapes:
            k, v: (B, H, T, Dh)   returns: two (B, H, S + T, Dh)
        """
        if self.capacity is None:
            if self.k is None:
                self.k, self.v = k, v
            else:
                self.k = torch.cat([self.k, k], dim=2)  # (B, H, S + T, Dh): a new copy
                self.v = torch.cat([self.v, v], dim=2)
            return self.k, self.v
        start, end = self.seq_len, self.seq_len + k.size(2)
        if start == 0 and (self.k_buffer is None or self.k_buffer.shape[0] != k.size(0)):
            self.allocate(k)
        if end > self.capacity:
            raise ValueError(f"the cache holds {self.capacity} positions; position {end - 1} asked")
        self.k_buffer[:, :, start:end] = k  # written in place: no copy of the prefix
        self.v_buffer[:, :, start:end] = v
        self.k, self.v = self.k_buffer[:, :, :end], self.v_buffer[:, :, :end]  # views
        return self.k, self.v

    def allocate(self, k: torch.Tensor) -> None:
        """The (B, H, capacity, Dh) buffers, shaped, typed and placed like the first keys."""
        B, H, _, Dh = k.shape
        self.k_buffer = k.new_empty(B, H, self.capacity, Dh)
        self.v_buffer = k.new_empty(B, H, self.capacity, Dh)

    def clear(self) -> None:
        """Forget the keys and values (a preallocated buffer is kept for the next ones)."""
        self.k = self.v = None

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` (beam search reorders hypotheses each step).

        Shapes:
            index: (B',) int
        """
        if self.k is None or self.k.stride(0) == 0 or self.k.size(0) < index.size(0):
            return  # one memory per group of rows (a clip's beams): beams never change clips
        self.select(index)

    def select(self, index: torch.Tensor) -> None:
        """Rows `index` of the keys and values, as many as `index` has (reorder's work).

        Shapes:
            index: (B',) int
        """
        k, v = self.k.index_select(0, index), self.v.index_select(0, index)  # (B', H, S, Dh)
        if self.k_buffer is None:
            self.k, self.v = k, v
            return
        if index.size(0) != self.k_buffer.size(0):
            self.allocate(k)  # a new batch size: new buffers
        S = k.size(2)
        self.k_buffer[:, :, :S] = k  # the filled part, rewritten in place
        self.v_buffer[:, :, :S] = v
        self.k, self.v = self.k_buffer[:, :, :S], self.v_buffer[:, :, :S]


class KVCache:
    """One AttentionCache per decoder layer for self-attention, and optionally for cross-attention.

    Args:
        n_layers: decoder blocks in the model.
        cross_attention: also cache the encoder-side keys and values (encoder-decoder models).
        capacity: preallocate self-attention's keys for this many positions (the model's
            max_len); None keeps the written-out, concatenating cache.
    """

    def __init__(
        self, n_layers: int, cross_attention: bool = False, capacity: int | None = None
    ) -> None:
        self.self_attn = [AttentionCache(capacity) for _ in range(n_layers)]
        self.cross_attn = [AttentionCache() for _ in range(n_layers)] if cross_attention else None

    @property
    def seq_len(self) -> int:
        """Positions already decoded (the offset of the next position)."""
        return self.self_attn[0].seq_len

    def clear(self) -> None:
        """Forget every layer's keys and values (to re-prefill a shifted context window)."""
        for cache in self.self_attn + (self.cross_attn or []):
            cache.clear()

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows `index` in every layer's cache (beam search)."""
        for cache in self.self_attn + (self.cross_attn or []):
            cache.reorder(index)

    def repeat_rows(self, times: int) -> None:
        """Each row `times` times in a row: B prefilled prompts become B * times beams.

        Self-attention's keys are copied per beam (each beam writes its own next tokens);
        cross-attention's stay one per memory, shared by that memory's beams (attention.py).
        """
        if self.seq_len == 0 or times == 1:
            return
        first = self.self_attn[0].k  # (B, H, S, Dh)
        index = torch.arange(first.size(0), device=first.device).repeat_interleave(times)
        for cache in self.self_attn:
            cache.select(index)  # (B*times, H, S, Dh)
