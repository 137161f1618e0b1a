"""The explicit attention equals torch's SDPA, and behaves as the article says."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from glassformer.layers.attention import MultiHeadAttention, scaled_dot_product_attention
from glassformer.layers.kv_cache import AttentionCache
from glassformer.layers.masks import causal_mask, key_padding_to_attn_mask, padding_mask

EXACT = {"atol": 1e-10, "rtol": 1e-10}  # float64: an algebraic identity


def qkv(B: int = 2, H: int = 3, T: int = 5, S: int = 7, Dh: int = 8) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(B, H, n, Dh, dtype=torch.float64) for n in (T, S, S))


def test_explicit_equals_sdpa_without_mask() -> None:
    q, k, v = qkv()
    out, probs = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **EXACT)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64), **EXACT)


def test_explicit_equals_sdpa_causal() -> None:
    q, k, v = qkv(T=6, S=6)
    out, probs = scaled_dot_product_attention(q, k, v, causal_mask(6))
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **EXACT
    )
    assert (probs.triu(diagonal=1) == 0).all(), "no weight on future positions"


def test_explicit_equals_sdpa_with_boolean_mask_and_fully_masked_rows() -> None:
    q, k, v = qkv()
    mask = torch.rand(2, 3, 5, 7) > 0.4
    mask[0, 1, 2] = False  # one query that may attend to nothing
    out, probs = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, expected, **EXACT)
    assert not out.isnan().any() and not probs.isnan().any()
    assert (probs[0, 1, 2] == 0).all() and (out[0, 1, 2] == 0).all()
    assert (probs[~mask] == 0).all(), "masked pairs get exactly zero weight"


def test_one_hot_query_with_sharp_scores_selects_one_value() -> None:
    """The article's attention as table lookup: a dominant score pulls out one value row."""
    k = torch.eye(4, dtype=torch.float64)[None, None] * 50  # keys far apart
    v = torch.arange(16, dtype=torch.float64).view(1, 1, 4, 4)
    q = k[:, :, [2]]  # query equal to key 2
    out, probs = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out[0, 0, 0], v[0, 0, 2], atol=1e-6, rtol=0)
    assert probs[0, 0, 0].argmax() == 2


@pytest.mark.parametrize("is_causal", [False, True])
def test_mha_explicit_path_equals_sdpa_path_with_padding(is_causal: bool) -> None:
    mha = MultiHeadAttention(16, 4, use_sdpa=True).double().eval()
    x = torch.randn(3, 6, 16, dtype=torch.float64)
    mask = key_padding_to_attn_mask(padding_mask(torch.tensor([6, 4, 1]), 6))
    fast, none = mha(x, attn_mask=mask, is_causal=is_causal)
    slow, probs = mha(x, attn_mask=mask, is_causal=is_causal, need_weights=True)
    assert none is None and probs.shape == (3, 4, 6, 6)
    torch.testing.assert_close(fast, slow, **EXACT)


def test_mha_rejects_width_not_divisible_by_heads() -> None:
    with pytest.raises(ValueError, match="d_model=30 is not divisible by n_heads=4"):
        MultiHeadAttention(30, 4)


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_cached_self_attention_equals_full_recomputation(use_sdpa: bool) -> None:
    mha = MultiHeadAttention(16, 4, use_sdpa=use_sdpa).double().eval()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    full, _ = mha(x, is_causal=True)
    cache = AttentionCache()
    first, _ = mha(x[:, :3], is_causal=True, cache=cache)  # a 3-token prompt
    steps = [mha(x[:, t : t + 1], is_causal=True, cache=cache)[0] for t in range(3, 7)]
    torch.testing.assert_close(torch.cat([first, *steps], dim=1), full, **EXACT)
    assert cache.seq_len == 7


def test_cross_attention_cache_projects_memory_once() -> None:
    mha = MultiHeadAttention(16, 4).double().eval()
    x, memory = (
        torch.randn(2, 3, 16, dtype=torch.float64),
        torch.randn(2, 5, 16, dtype=torch.float64),
    )
    cache = AttentionCache()
    first, _ = mha(x[:, :1], memory, cache=cache)
    keys = cache.k
    second, _ = mha(x[:, 1:], memory * 0, cache=cache)  # memory ignored: cached keys reused
    assert cache.k is keys
    torch.testing.assert_close(torch.cat([first, second], 1), mha(x, memory)[0], **EXACT)


def test_one_memory_serves_every_beam_without_copies() -> None:
    """Beam search over one clip: the memory is (1, S, D) for K queries. Its keys and values
    are projected once and shared as views (stride 0), reordering beams leaves them alone,
    and every result equals the memory repeated per beam."""
    torch.manual_seed(0)
    K, S, D = 4, 30, 16
    for use_sdpa in (False, True):
        attention = MultiHeadAttention(D, 2, use_sdpa=use_sdpa).eval()
        x, memory = torch.randn(K, 3, D), torch.randn(1, S, D)
        shared, repeated = AttentionCache(), AttentionCache()
        out = attention(x, memory, cache=shared)[0]
        expected = attention(x, memory.repeat(K, 1, 1), cache=repeated)[0]
        torch.testing.assert_close(out, expected)
        assert shared.k.stride(0) == 0 and shared.k.shape == repeated.k.shape
        order = torch.tensor([2, 2, 0, 1])
        shared.reorder(order)
        repeated.reorder(order)
        assert shared.k.stride(0) == 0
        step = torch.randn(K, 1, D)
        torch.testing.assert_close(
            attention(step, memory, cache=shared)[0], attention(step, memory, cache=repeated)[0]
        )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("key_bias, bias", [(True, True), (False, True), (True, False)])
def test_training_fused_projection_equals_three_in_outputs_and_gradients(
    dtype: torch.dtype, key_bias: bool, bias: bool
) -> None:
    """Training computes q, k, v as one stacked product; the three written-out projections
    (fused_qkv=False) give the same outputs and the same gradient for every weight, with
    and without biases."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4, key_bias=key_bias, bias=bias).to(dtype).train()
    x = torch.randn(3, 6, 16, dtype=dtype)
    target = torch.randn(3, 6, 16, dtype=dtype)
    results = []
    for fused in (True, False):
        attention.fused_qkv = fused
        attention.zero_grad(set_to_none=True)
        out = attention(x, is_causal=True)[0]
        ((out - target) ** 2).sum().backward()
        results.append((out, {n: p.grad for n, p in attention.named_parameters()}))
    (fused_out, fused_grads), (out, grads) = results
    tolerance = EXACT if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    torch.testing.assert_close(fused_out, out, **tolerance, msg="outputs differ")
    assert fused_grads.keys() == grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(fused_grads[name], grad, **tolerance, msg=name)
