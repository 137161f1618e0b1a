"""Feed-forward layer: written-out GELU (tanh form) equals torch's kernel; shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from glassformer.layers.feedforward import ACTIVATIONS, FeedForward, gelu_tanh


def test_gelu_tanh_formula_equals_torch_kernel() -> None:
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    torch.testing.assert_close(gelu_tanh(x), F.gelu(x, approximate="tanh"), atol=1e-12, rtol=0)
    torch.testing.assert_close(ACTIVATIONS["gelu_tanh"](x), gelu_tanh(x), atol=1e-12, rtol=0)


def test_exact_and_tanh_gelu_differ_slightly() -> None:
    x = torch.linspace(-3, 3, 101, dtype=torch.float64)
    gap = (ACTIVATIONS["gelu"](x) - gelu_tanh(x)).abs().max().item()
    assert 1e-5 < gap < 1e-3  # why GPT-2 parity needs the tanh form


def test_feedforward_acts_per_position() -> None:
    ffn = FeedForward(8, 32, "relu")
    x = torch.randn(2, 5, 8)
    out = ffn(x)
    assert out.shape == (2, 5, 8)
    torch.testing.assert_close(ffn(x[:, 2:3]), out[:, 2:3])  # one position alone: same result
    with pytest.raises(ValueError, match="activation='swish'"):
        FeedForward(8, 32, "swish")
