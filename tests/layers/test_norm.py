"""Written-out norms equal torch's (biased variance, eps inside the square root)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from glassformer.layers.norm import LayerNorm, RMSNorm, layer_norm


@pytest.mark.parametrize("written_out", [True, False])
def test_layer_norm_equals_torch(written_out: bool) -> None:
    ours = LayerNorm(16, eps=1e-5, written_out=written_out)
    theirs = nn.LayerNorm(16, eps=1e-5)
    with torch.no_grad():
        for p in (theirs.weight, theirs.bias):
            p.normal_()
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)
    x = torch.randn(3, 5, 16) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5, msg="LayerNorm")


@pytest.mark.parametrize("written_out", [True, False])
def test_layer_norm_without_bias_equals_torch_and_has_no_bias(written_out: bool) -> None:
    ours = LayerNorm(16, written_out=written_out, bias=False)
    theirs = nn.LayerNorm(16, bias=False)
    assert ours.bias is None and [n for n, _ in ours.named_parameters()] == ["weight"]
    with torch.no_grad():
        ours.weight.copy_(theirs.weight.normal_())
    x = torch.randn(3, 5, 16) * 4 + 2
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5, msg="no bias")


def test_written_out_layer_norm_equals_the_fused_kernel_in_float64() -> None:
    x = torch.randn(4, 7, 32, dtype=torch.float64) * 3 + 1
    weight, bias = torch.randn(32, dtype=torch.float64), torch.randn(32, dtype=torch.float64)
    expected = torch.nn.functional.layer_norm(x, (32,), weight, bias, 1e-5)
    torch.testing.assert_close(layer_norm(x, weight, bias, 1e-5), expected, atol=1e-12, rtol=0)


def test_layer_norm_gives_mean_zero_std_one() -> None:
    x = torch.randn(4, 32, dtype=torch.float64) * 7 - 3
    y = LayerNorm(32, eps=0.0, written_out=True).double()(x)
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
