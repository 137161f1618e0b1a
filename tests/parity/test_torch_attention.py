"""Our MultiHeadAttention against torch.nn.MultiheadAttention with copied weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from glassformer.layers.attention import MultiHeadAttention
from glassformer.layers.masks import causal_mask, key_padding_to_attn_mask, padding_mask
from tests.helpers import copy_mha

D, H = 32, 4
TOL = {"atol": 1e-5, "rtol": 1e-5}


def make_pair(use_sdpa: bool) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    theirs = nn.MultiheadAttention(D, H, dropout=0.0, batch_first=True).eval()
    ours = MultiHeadAttention(D, H, use_sdpa=use_sdpa).eval()
    copy_mha(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_self_attention_matches_torch(use_sdpa: bool) -> None:
    ours, theirs = make_pair(use_sdpa)
    x = torch.randn(3, 7, D)
    expected, _ = theirs(x, x, x, need_weights=False)
    actual, _ = ours(x)
    torch.testing.assert_close(actual, expected, **TOL, msg="self-attention output")


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_cross_attention_with_different_lengths_matches_torch(use_sdpa: bool) -> None:
    ours, theirs = make_pair(use_sdpa)
    x, memory = torch.randn(2, 5, D), torch.randn(2, 9, D)  # T=5 queries, S=9 keys
    expected, _ = theirs(x, memory, memory, need_weights=False)
    actual, _ = ours(x, memory)
    torch.testing.assert_close(actual, expected, **TOL, msg="cross-attention, S != T")


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_causal_mask_matches_torch(use_sdpa: bool) -> None:
    ours, theirs = make_pair(use_sdpa)
    x = torch.randn(2, 6, D)
    mask = causal_mask(6)
    expected, _ = theirs(x, x, x, attn_mask=~mask, need_weights=False)  # torch: True = blocked
    by_mask, _ = ours(x, attn_mask=mask)
    by_flag, _ = ours(x, is_causal=True)
    torch.testing.assert_close(by_mask, expected, **TOL, msg="causal via mask")
    torch.testing.assert_close(by_flag, expected, **TOL, msg="causal via is_causal")


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_key_padding_matches_torch(use_sdpa: bool) -> None:
    ours, theirs = make_pair(use_sdpa)
    x, memory = torch.randn(3, 4, D), torch.randn(3, 8, D)
    keep = padding_mask(torch.tensor([8, 5, 2]), 8)  # (B, S), True = real
    expected, _ = theirs(x, memory, memory, key_padding_mask=~keep, need_weights=False)
    actual, _ = ours(x, memory, attn_mask=key_padding_to_attn_mask(keep))
    torch.testing.assert_close(actual, expected, **TOL, msg="key padding")


def test_per_head_probabilities_match_torch() -> None:
    ours, theirs = make_pair(use_sdpa=True)  # need_weights forces the explicit path
    x, memory = torch.randn(2, 5, D), torch.randn(2, 6, D)
    keep = padding_mask(torch.tensor([6, 3]), 6)
    _, expected = theirs(
        x, memory, memory, key_padding_mask=~keep, need_weights=True, average_attn_weights=False
    )
    _, probs = ours(x, memory, attn_mask=key_padding_to_attn_mask(keep), need_weights=True)
    assert probs.shape == (2, H, 5, 6)
    torch.testing.assert_close(probs, expected, **TOL, msg="per-head probabilities")
