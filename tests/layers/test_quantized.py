"""int8 rows (layers/quantized.py) against torch's own whole-matrix quantization, and an int8
linear layer against the float32 one it stands for."""

from __future__ import annotations

import warnings

import pytest
import torch

from glassformer.layers.quantized import Int8Linear, has_int8_kernels, quantize_rows

pytestmark = pytest.mark.skipif(not has_int8_kernels(), reason="this torch has no fbgemm")


def whole_matrix_quantized(weight: torch.Tensor) -> torch.Tensor:
    """The reference: one torch.quantize_per_channel call over the whole float32 matrix."""
    weight = weight.float()
    scales = (weight.abs().amax(dim=1).clamp(min=1e-12) / 127).double()
    zeros = torch.zeros(len(weight), dtype=torch.long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rows_quantized_block_by_block_equal_the_whole_matrix(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("glassformer.layers.quantized.QUANTIZE_ROWS", 3)  # 10 rows: 4 blocks
    torch.manual_seed(0)
    weight = (torch.randn(10, 7) * torch.logspace(-3, 1, 10)[:, None]).to(dtype)
    weight[4] = 0  # an all-zero row keeps its floor scale
    ours, reference = quantize_rows(weight), whole_matrix_quantized(weight)
    assert torch.equal(ours.int_repr(), reference.int_repr())
    assert torch.equal(ours.q_per_channel_scales(), reference.q_per_channel_scales())
    assert ours.q_per_channel_axis() == 0


def test_an_int8_linear_layer_stays_close_to_float32() -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48)
    x = torch.randn(3, 5, 64)
    scale = linear(x).abs().max().item()
    quantized = Int8Linear(linear.weight, linear.bias)
    torch.testing.assert_close(quantized(x), linear(x), atol=0.03 * scale, rtol=0, msg="int8")
