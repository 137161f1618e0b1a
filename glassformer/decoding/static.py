"""A decode step with one shape for every token, compiled once: the fast path for small GPTs.

The KV cache of layers/kv_cache.py hands attention a view one position longer at every step:
each step has new shapes, which a compiler would have to trace again or treat as symbols.
Here every single-token step has the same shapes:

    keys, values   (B, H, capacity, Dh) buffers, written at a position *tensor* (index_copy_)
    attention      reads the whole buffer; a mask hides the positions not yet written
    positions      looked up by that tensor (positional modules' `at`)

so torch.compile traces the step once and runs it as one graph of fused kernels: for a small
model, where a step is ~100 operator calls of microseconds each, that removes most of the
per-call overhead (docs/benchmarks.md, issue 14: the baby GPT's decode step 0.62 -> 0.33 ms).
For GPT-2 small it does not pay: a step reads 500 MB of weights either way.

StaticStep(model) is a `step` for the shared decoding loop (search.py): greedy, sampling and
the sliding context window work unchanged, with StaticKVCache in place of KVCache. Prompts
(several new positions at once) run the same code eagerly; single-token steps and the
window's refill (always max_len // 2 tokens) run compiled, one graph each.
Tested equal to the ordinary decode path (tests/decoding/test_static.py). Compiling costs
seconds once per process and batch size (a few with inductor's on-disk cache warm), so the
CLI compiles only when asked (`glassformer generate --compile`).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import torch
from torch import nn

from glassformer.models.gpt import GPT

# cpp_wrapper: the compiled graph calls its kernels from C++, not a Python wrapper. The guard
# filter skips re-checking every module's attributes before each call (65 -> 22 us of a
# 0.38 ms step): safe because a StaticStep is made for one fixed model in eval mode and
# compiles its own copy of the step (own_copy), so no other model's graph is ever reused for
# it; tensors (shapes, dtypes) and global state (grad mode) are still checked.
COMPILE_OPTIONS = {
    "cpp_wrapper": True,
    "guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe,
}


class StaticLayerCache:
    """One layer's keys and values in fixed buffers (stands in for AttentionCache.append).

    Shapes:
        k_buffer, v_buffer: (B, H, capacity, Dh)
    """

    def __init__(self, owner: StaticKVCache, k_buffer: torch.Tensor, v_buffer: torch.Tensor):
        self.owner, self.k_buffer, self.v_buffer = owner, k_buffer, v_buffer

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new positions' keys and values in place; return the whole buffers.

        Shapes:
            k, v: (B, H, T, Dh)   returns: two (B, H, capacity, Dh)
        """
        self.k_buffer.index_copy_(2, self.owner.positions, k)
        self.v_buffer.index_copy_(2, self.owner.positions, v)
        return self.k_buffer, self.v_buffer


class StaticKVCache:
    """Self-attention keys and values of every layer at fixed shapes, for StaticStep.

    Stands in for KVCache in greedy decoding and sampling: `seq_len` and `clear()`. The
    buffers are made on the first step, in the mode it runs in (the decoding loop's
    inference mode: a compiled graph is specialized to it), shaped for its batch. They start
    as zeros: attention multiplies the masked positions' values by exactly 0, which garbage
    memory (a NaN) would not survive.
    """

    def __init__(self, model: GPT) -> None:
        self.config = model.config
        self.self_attn: list[StaticLayerCache] = []
        self.cross_attn = None  # decoder-only
        self.length = 0  # positions written so far
        self.key_positions: torch.Tensor | None = None  # (capacity,): 0, 1, 2, ...
        self.step_position: torch.Tensor | None = None  # (1,): a single step's position
        self.positions: torch.Tensor | None = None  # (T,): the positions being written now

    def allocate(self, batch: int, like: torch.Tensor) -> None:
        """Zeroed (batch, H, capacity, Dh) buffers, typed and placed like `like`."""
        c = self.config
        shape = (batch, c.n_heads, c.max_len, c.d_model // c.n_heads)
        self.self_attn = [
            StaticLayerCache(self, like.new_zeros(shape), like.new_zeros(shape))
            for _ in range(c.n_layers)
        ]
        self.key_positions = torch.arange(c.max_len, device=like.device)
        self.step_position = torch.zeros(1, dtype=torch.long, device=like.device)

    @property
    def batch(self) -> int:
        return self.self_attn[0].k_buffer.size(0) if self.self_attn else 0

    @property
    def seq_len(self) -> int:
        return self.length

    def clear(self) -> None:
        """Forget the positions written (the buffers stay; the mask hides what is in them)."""
        self.length = 0


class StaticStep:
    """`step(tokens, cache)` for the decoding loop, single-token steps compiled at one shape.

    Args:
        model: a GPT in eval mode (dropout would make steps differ; make a new StaticStep
            after changing its weights: the compiled step keeps the stacked q/k/v).
        compile: torch.compile the single-token step (and the window's refill); False runs
            the same code eagerly.

    Shapes:
        tokens: (B, T)   returns: logits (B, T, V)
    """

    def __init__(self, model: GPT, compile: bool = True) -> None:
        if model.training:
            raise ValueError("StaticStep needs the model in eval mode (model.eval())")
        self.model = model
        self.compiled = (
            torch.compile(own_copy(self.forward), dynamic=False, options=COMPILE_OPTIONS)
            if compile
            else self.forward
        )

    def new_cache(self) -> StaticKVCache:
        return StaticKVCache(self.model)

    def __call__(self, tokens: torch.Tensor, cache: StaticKVCache) -> torch.Tensor:
        T = tokens.size(1)
        if cache.length + T > self.model.config.max_len:
            raise ValueError(
                f"the cache holds {self.model.config.max_len} positions; "
                f"position {cache.length + T - 1} asked"
            )
        # a fresh copy: one memory layout, and made in the current mode (a prompt from outside
        # inference mode, or a slice of the growing output, would each compile a new graph)
        tokens = tokens.clone(memory_format=torch.contiguous_format)
        if cache.batch != tokens.size(0):
            cache.allocate(tokens.size(0), next(self.model.parameters()))
        if T == 1:
            cache.step_position.fill_(cache.length)  # in place: the compiled step's input
            cache.positions = cache.step_position
        else:
            cache.positions = torch.arange(cache.length, cache.length + T, device=tokens.device)
        # one new token, or the refill of a full window (search.py: always max_len // 2
        # tokens) run compiled, one graph each; a prompt's length varies: eagerly
        compiled = T in (1, self.model.config.max_len // 2)
        logits = (self.compiled if compiled else self.forward)(tokens, cache)
        cache.length += T
        return logits

    def forward(self, tokens: torch.Tensor, cache: StaticKVCache) -> torch.Tensor:
        """The model's own forward (GPT.forward), with positions and the mask from tensors.

        Shapes:
            tokens: (B, T)   returns: (B, T, V)
        """
        model: nn.Module = self.model
        positions = cache.positions  # (T,)
        x = model.embed(tokens) + model.positions.at(positions)  # (B, T, D)
        # key j is visible to the query at position p when j <= p; later keys are not written
        visible = cache.key_positions <= positions[:, None]  # (T, capacity)
        x = model.decoder(x, self_mask=visible[None, None], cache=cache)  # (B, T, D)
        return model.head(x)  # (B, T, V)


def own_copy(method: Callable) -> Callable:
    """`method` bound to a fresh copy of its code. torch.compile keeps its graphs per code
    object, so with module guards skipped, two StaticSteps sharing StaticStep.forward's code
    could run one model's graph for another of the same shapes; a copy per instance cannot."""
    function = method.__func__
    code = function.__code__.replace()  # equal, but a new object
    copy = types.FunctionType(code, function.__globals__, function.__name__)
    return types.MethodType(copy, method.__self__)
