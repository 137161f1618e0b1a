"""torch's int8 CPU kernels, behind one adapter: the only place glassformer calls them.

    has_int8_kernels()                      whether this torch build has them (fbgemm)
    qint8_rows(values, scales)              int8 values and per-row scales -> a qint8 tensor
    pack_weight(qweight, bias)              the kernel's packed form of a weight
    int8_linear(x, packed, reduce_range)    y = x Wᵀ + b, x quantized per call, in integers

Each wraps an API torch marks private or deprecated: `torch._make_per_channel_quantized_tensor`
(the one way to build a per-channel qint8 tensor from its parts, so that a large matrix is
quantized a block at a time), and the eager quantization operators
`torch.ops.quantized.linear_prepack` / `linear_dynamic` (fbgemm's kernels, what
torch.ao.nn.quantized.dynamic.Linear runs). Their warnings are silenced here alone, and
tests/layers/test_int8_kernels.py checks each against the arithmetic it stands for, so a torch
release that changes or drops them fails one test file, not the decoder. Not here: which
layers of a model become int8 (layers/quantized.py, models/int8.py).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """torch's eager quantization API warns that it is deprecated on every call."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def has_int8_kernels() -> bool:
    """Whether this torch has fbgemm's dynamic int8 linear kernel on the CPU."""
    return "fbgemm" in torch.backends.quantized.supported_engines and hasattr(
        torch.ops.quantized, "linear_dynamic"
    )


def qint8_rows(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """A per-row (axis 0) symmetric qint8 tensor from its int8 values and float64 scales.

    Shapes:
        values: (out, in) int8   scales: (out,) float64   returns: (out, in) qint8
    """
    zero_points = torch.zeros(len(scales), dtype=torch.long)
    with quiet():
        return torch._make_per_channel_quantized_tensor(values, scales, zero_points, 0)


def quantize_block(rows: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """round(rows / scale) clamped to [-128, 127], row by row (torch's public quantizer).

    Shapes:
        rows: (r, in) float32   scales: (r,) float64   returns: (r, in) int8
    """
    zeros = torch.zeros(len(rows), dtype=torch.long)
    with quiet():
        return torch.quantize_per_channel(rows, scales, zeros, 0, torch.qint8).int_repr()


def pack_weight(weight: torch.Tensor, bias: torch.Tensor | None) -> object:
    """fbgemm's packed form of a qint8 weight (and a float32 bias) for int8_linear."""
    with quiet():
        return torch.ops.quantized.linear_prepack(weight, bias)


def int8_linear(x: torch.Tensor, packed: object, reduce_range: bool) -> torch.Tensor:
    """x Wᵀ + b with W as packed: x quantized per call to uint8 over its own range (7 bits
    with reduce_range), multiplied in integers, the sum scaled back to float32.

    Shapes:
        x: (N, in) float32, contiguous   returns: (N, out) float32
    """
    with quiet():
        return torch.ops.quantized.linear_dynamic(x, packed, reduce_range)
