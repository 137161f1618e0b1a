"""Masks: one boolean convention, True = may attend."""

from __future__ import annotations

import pytest
import torch

from glassformer.layers.masks import (
    causal_mask,
    combine_masks,
    key_padding_to_attn_mask,
    padding_mask,
)


def test_causal_mask_is_the_articles_lower_triangle() -> None:
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(3), expected)


def test_causal_mask_with_cache_offsets_the_diagonal() -> None:
    # 2 new queries at positions 3 and 4 over 5 keys.
    expected = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(2, 5), expected)
    with pytest.raises(ValueError, match="S >= T"):
        causal_mask(5, 2)


def test_padding_mask_and_broadcast_shape() -> None:
    keep = padding_mask(torch.tensor([3, 1]), 4)
    assert keep.tolist() == [[True, True, True, False], [True, False, False, False]]
    assert key_padding_to_attn_mask(keep).shape == (2, 1, 1, 4)


def test_combine_masks_is_logical_and_ignoring_none() -> None:
    keep = key_padding_to_attn_mask(padding_mask(torch.tensor([2]), 3))
    combined = combine_masks(causal_mask(3), None, keep)
    assert combined.shape == (1, 1, 3, 3)
    assert combined[0, 0].tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, False],
    ]
    assert combine_masks(None, None) is None
