"""int8 weights for the linear layers, as CTranslate2 runs Whisper on a CPU.

A linear layer y = x Wᵀ + b in float32 reads 4 bytes per weight for every product; a decode
step of a large vocabulary is mostly that read (Whisper's output layer: 51,864 x 384 floats,
80 MB for each written token at beam 4). Stored as int8 with one scale per output row
(symmetric, per channel), W takes a quarter of the bytes, and fbgemm's dynamic kernel
quantizes x per call (one scale per call, uint8; 7 bits on a CPU without VNNI) and multiplies
in integers:

    W ≈ scale[o] * W_int8[o, :]      x ≈ scale_x * (x_uint8 - zero_x)      y ≈ their product

Measured on this project's CPU, one thread: the (4, 384) x (384, 51864) product 18 ms in
float32, 2 ms in int8. The cost is rounding: about 1% of a row's largest weight, so accuracy
is checked on real speech (docs/benchmarks.md), never assumed.

Not here: training in int8 (these layers have no gradients), and GPUs (fbgemm is a CPU
kernel; a model on another device keeps float weights). torch marks its eager quantization
API deprecated; the operators used here are its CPU kernels, wrapped so that one function
(`has_int8_kernels`) tells whether the installed torch still has them.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from glassformer.errors import ConfigError


def has_vnni() -> bool:
    """Whether the CPU sums int8 products in 32 bits (AVX-512 VNNI or AVX-VNNI): then the
    activations keep all 8 bits. Without it fbgemm's 16-bit sums could saturate, and the
    activations get 7 (`reduce_range`), with twice the rounding error (measured 1.1% against
    2.0% of a product's scale)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return False
    return "avx512_vnni" in flags.split() or "avx_vnni" in flags.split()


REDUCE_RANGE = not has_vnni()  # read once: the CPU does not change under a process


def has_int8_kernels() -> bool:
    """Whether this torch has fbgemm's dynamic int8 linear kernel on the CPU."""
    return "fbgemm" in torch.backends.quantized.supported_engines and hasattr(
        torch.ops.quantized, "linear_dynamic"
    )


class Int8Linear(nn.Module):
    """A linear layer whose weight is int8 per output row, activations quantized per call.

    Shapes:
        x: (..., in)   returns: (..., out)
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        weight = weight.detach().float()
        out_features, in_features = weight.shape
        scales = weight.abs().amax(dim=1).clamp(min=1e-12) / 127  # (out,): one per row
        zero_points = torch.zeros(out_features, dtype=torch.long)
        with warnings.catch_warnings():  # torch's eager quantization API is marked deprecated
            warnings.simplefilter("ignore")
            quantized = torch.quantize_per_channel(
                weight, scales.double(), zero_points, 0, torch.qint8
            )
            self.packed = torch.ops.quantized.linear_prepack(
                quantized, None if bias is None else bias.detach().float()
            )
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).float().contiguous()  # (N, in)
        y = torch.ops.quantized.linear_dynamic(flat, self.packed, REDUCE_RANGE)  # (N, out)
        return y.view(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_linear_layers(model: nn.Module, head: bool = True) -> int:
    """Replace every nn.Linear below `model` by an Int8Linear (in place), and with `head` the
    output layer (a DeEmbedding, tied or not) too; returns how many were replaced.

    Attention modules then project q, k and v one by one (the stacked fast path reads float
    weights). The embedding table stays float: a lookup reads one row, not the matrix.

    Raises:
        ConfigError: the model is not on the CPU, or this torch lacks the int8 kernels.
    """
    from glassformer.layers.attention import MultiHeadAttention
    from glassformer.layers.embedding import DeEmbedding

    if any(p.device.type != "cpu" for p in model.parameters()):
        raise ConfigError("precision int8 runs on the CPU only (fbgemm); use float32 elsewhere")
    if not has_int8_kernels():
        raise ConfigError("precision int8 needs torch's fbgemm int8 kernels, absent here")
    replaced = 0
    for module in list(model.modules()):
        if isinstance(module, MultiHeadAttention):
            module.fused_qkv = False
        for name, child in list(module.named_children()):
            quantize = isinstance(child, nn.Linear) or (head and isinstance(child, DeEmbedding))
            if quantize:
                setattr(module, name, Int8Linear(child.weight, getattr(child, "bias", None)))
                replaced += 1
    return replaced
