"""The preallocated KV cache against its written-out form:
the same keys, values and outputs, with no reallocation per step, and beams reordered in place."""

from __future__ import annotations

import pytest
import torch

from glassformer.layers.attention import MultiHeadAttention
from glassformer.layers.kv_cache import AttentionCache, KVCache
from glassformer.layers.masks import key_padding_to_attn_mask, padding_mask

EXACT = {"atol": 1e-10, "rtol": 1e-10}


def test_preallocated_cache_equals_concatenation_and_writes_in_place() -> None:
    torch.manual_seed(0)
    grown, preallocated = AttentionCache(), AttentionCache(capacity=10)
    for T in (3, 1, 1, 2):  # a prompt, two steps, then two positions at once
        k, v = torch.randn(4, 2, T, 5), torch.randn(4, 2, T, 5)
        expected, actual = grown.append(k, v), preallocated.append(k, v)
        torch.testing.assert_close(actual, expected, atol=0, rtol=0)
        assert preallocated.k.data_ptr() == preallocated.k_buffer.data_ptr()  # no new buffer
    buffer = preallocated.k_buffer
    order = torch.tensor([3, 3, 0, 1])
    grown.reorder(order)
    preallocated.reorder(order)
    assert preallocated.k_buffer is buffer  # reordered within the same buffer
    torch.testing.assert_close((preallocated.k, preallocated.v), (grown.k, grown.v), atol=0, rtol=0)
    preallocated.reorder(torch.tensor([1, 2]))  # fewer rows: new, smaller buffers
    grown.reorder(torch.tensor([1, 2]))
    torch.testing.assert_close((preallocated.k, preallocated.v), (grown.k, grown.v), atol=0, rtol=0)
    preallocated.append(torch.zeros(2, 2, 1, 5), torch.zeros(2, 2, 1, 5))
    assert preallocated.seq_len == 8


def test_a_full_cache_says_so_and_clear_keeps_the_buffer() -> None:
    cache = KVCache(1, capacity=4)
    layer = cache.self_attn[0]
    layer.append(torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2))
    with pytest.raises(ValueError, match="holds 4 positions; position 4 asked"):
        layer.append(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
    buffer = layer.k_buffer
    cache.clear()
    assert cache.seq_len == 0
    layer.append(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2))
    assert layer.k_buffer is buffer and layer.k.sum() == 4


def test_decoding_after_a_fused_adamw_step_reads_the_new_weights() -> None:
    """torch's fused AdamW changes weights in place without bumping their version counter:
    decoding after training must read the weights as they are now. The module keeps no copy
    of its weights (no tensor besides its parameters), so nothing can go stale."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        before = attention.eval()(x, cache=AttentionCache(5))[0]
    optimizer = torch.optim.AdamW(attention.parameters(), lr=0.1, fused=True)
    attention.train()(x, is_causal=True)[0].sum().backward()
    optimizer.step()
    with torch.no_grad():
        decoded = attention.eval()(x, cache=AttentionCache(5))[0]
        attention.fused_qkv = False
        torch.testing.assert_close(decoded, attention(x)[0], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(decoded, before)
    assert not [name for name, value in vars(attention).items() if torch.is_tensor(value)]


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_several_memories_each_serve_their_own_beams(use_sdpa: bool) -> None:
    """B clips x K beams: each clip's memory (with its padding) is projected once and asked
    by its K beams together; equal to every beam holding its own copy of the memory."""
    torch.manual_seed(0)
    B, K, S, D = 3, 2, 7, 16
    attention = MultiHeadAttention(D, 4, use_sdpa=use_sdpa).double().eval()
    memory = torch.randn(B, S, D, dtype=torch.float64)
    mask = key_padding_to_attn_mask(padding_mask(torch.tensor([7, 4, 5]), S))  # (B, 1, 1, S)
    x = torch.randn(B * K, 2, D, dtype=torch.float64)
    shared, copied = AttentionCache(), AttentionCache()
    out, probs = attention(x, memory, mask, cache=shared, need_weights=not use_sdpa)
    repeated_mask = mask.repeat_interleave(K, 0)
    expected, expected_probs = attention(
        x, memory.repeat_interleave(K, 0), repeated_mask, cache=copied, need_weights=not use_sdpa
    )
    torch.testing.assert_close(out, expected, **EXACT)
    if not use_sdpa:
        torch.testing.assert_close(probs, expected_probs, **EXACT)
    assert shared.k.size(0) == B  # one projection per clip, not per beam
    order = torch.tensor([1, 1, 2, 3, 5, 4])  # beams move only within their clip
    shared.reorder(order)
    copied.reorder(order)
    step = torch.randn(B * K, 1, D, dtype=torch.float64)
    torch.testing.assert_close(
        attention(step, memory, mask, cache=shared)[0],
        attention(step, memory, repeated_mask, cache=copied)[0],
        **EXACT,
    )
