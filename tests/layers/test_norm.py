"""Written-out norms equal torch's (biased variance, eps inside the square root)."""

from __future__ import annotations

import torch
from torch import nn

from glassformer.layers.norm import LayerNorm, RMSNorm


def test_layer_norm_equals_torch() -> None:
    ours, theirs = LayerNorm(16, eps=1e-5), nn.LayerNorm(16, eps=1e-5)
    with torch.no_grad():
        for p in (theirs.weight, theirs.bias):
            p.normal_()
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)
    x = torch.randn(3, 5, 16) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5, msg="LayerNorm")


def test_layer_norm_gives_mean_zero_std_one() -> None:
    x = torch.randn(4, 32, dtype=torch.float64) * 7 - 3
    y = LayerNorm(32, eps=0.0).double()(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, dtype=torch.float64), atol=1e-10, rtol=0)
    torch.testing.assert_close(
        y.var(-1, unbiased=False), torch.ones(4, dtype=torch.float64), atol=1e-10, rtol=0
    )


def test_rms_norm_equals_torch() -> None:
    ours, theirs = RMSNorm(16, eps=1e-6), nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        theirs.weight.normal_()
        ours.weight.copy_(theirs.weight)
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5, msg="RMSNorm")
