"""torch's int8 kernels (layers/int8_kernels.py, the one adapter over torch's private and
deprecated quantization API) against the arithmetic each stands for, written out here: a torch
release that changes one fails this file, not the decoder."""

from __future__ import annotations

import warnings

import pytest
import torch

from glassformer.layers.int8_kernels import (
    has_int8_kernels,
    int8_linear,
    pack_weight,
    qint8_rows,
    quantize_block,
)
from glassformer.layers.quantized import has_vnni

pytestmark = pytest.mark.skipif(not has_int8_kernels(), reason="this torch has no fbgemm")


def scales_of(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric per-row scales: the largest magnitude of each row maps to 127."""
    return (weight.abs().amax(dim=1).clamp(min=1e-12) / 127).double()


def test_a_block_quantizes_as_rounding_half_to_even_and_clamping() -> None:
    torch.manual_seed(0)
    rows = torch.randn(6, 9) * torch.logspace(-2, 1, 6)[:, None]
    scales = scales_of(rows)
    expected = torch.clamp(torch.round(rows.double() / scales[:, None]), -128, 127).to(torch.int8)
    assert torch.equal(quantize_block(rows, scales), expected)


def test_a_qint8_tensor_from_its_parts_is_the_one_torch_quantizes() -> None:
    torch.manual_seed(0)
    weight = torch.randn(10, 7)
    scales = scales_of(weight)
    ours = qint8_rows(quantize_block(weight, scales), scales)
    zeros = torch.zeros(10, dtype=torch.long)
    with warnings.catch_warnings():  # torch marks its eager quantization API deprecated
        warnings.simplefilter("ignore")
        theirs = torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8)
    assert ours.qscheme() == theirs.qscheme() == torch.per_channel_affine
    assert torch.equal(ours.int_repr(), theirs.int_repr())
    assert torch.equal(ours.q_per_channel_scales(), theirs.q_per_channel_scales())
    assert torch.equal(ours.dequantize(), theirs.dequantize())


def written_out_int8_linear(
    x: torch.Tensor, qweight: torch.Tensor, bias: torch.Tensor, reduce_range: bool
) -> torch.Tensor:
    """fbgemm's dynamic int8 linear, by hand: x quantized to uint8 over [min(x, 0), max(x, 0)]
    (7 bits with reduce_range), products summed in integers, scaled back by both scales."""
    levels = 127 if reduce_range else 255
    low, high = min(x.min().item(), 0.0), max(x.max().item(), 0.0)
    scale = (high - low) / levels
    zero_point = max(0, min(levels, round(-low / scale)))
    xq = torch.clamp(torch.round(x.double() / scale) + zero_point, 0, levels)  # (N, in)
    sums = (xq - zero_point) @ qweight.int_repr().double().T  # (N, out), whole numbers
    return sums * scale * qweight.q_per_channel_scales()[None] + bias.double()


@pytest.mark.parametrize("reduce_range", [True, False])
def test_the_int8_linear_kernel_is_the_written_out_arithmetic(reduce_range: bool) -> None:
    """Exact up to float32 rounding. Without VNNI, fbgemm sums pairs of products in 16 bits,
    which saturate at full 8-bit activations: that is why layers/quantized.py keeps 7
    (REDUCE_RANGE); the 8-bit case is checked where the CPU has VNNI."""
    if not reduce_range and not has_vnni():
        pytest.skip("8-bit activations saturate fbgemm's 16-bit sums on a CPU without VNNI")
    torch.manual_seed(0)
    weight, bias, x = torch.randn(48, 64), torch.randn(48), 3 * torch.randn(7, 64)
    scales = scales_of(weight)
    qweight = qint8_rows(quantize_block(weight, scales), scales)
    ours = int8_linear(x.contiguous(), pack_weight(qweight, bias), reduce_range)
    expected = written_out_int8_linear(x, qweight, bias, reduce_range)
    torch.testing.assert_close(ours.double(), expected, atol=1e-4, rtol=1e-6, msg="int8 linear")
