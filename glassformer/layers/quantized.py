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

Not here: training in int8 (these layers have no gradients), GPUs (fbgemm is a CPU kernel;
a model on another device keeps float weights), torch's kernels themselves (called only
through layers/int8_kernels.py, with a parity test each) and which layers of a model become
int8 (models/int8.py).
"""

from __future__ import annotations

import torch
from torch import nn

from glassformer.errors import ConfigError
from glassformer.layers.embedding import TokenEmbedding
from glassformer.layers.int8_kernels import (
    has_int8_kernels,
    int8_linear,
    pack_weight,
    qint8_rows,
    quantize_block,
)


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
QUANTIZE_ROWS = 4096  # rows quantized or checked at a time (4096 x 384 floats: 6 MB)


class Int8Linear(nn.Module):
    """A linear layer whose weight is int8 per output row, activations quantized per call.

    Shapes:
        x: (..., in)   returns: (..., out)
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        out_features, in_features = weight.shape
        bias = None if bias is None else bias.detach().float()
        self.packed = pack_weight(quantize_rows(weight.detach()), bias)
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).float().contiguous()  # (N, in)
        y = int8_linear(flat, self.packed, REDUCE_RANGE)  # (N, out)
        return y.view(*shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_rows(weight: torch.Tensor) -> torch.Tensor:
    """A float weight (any float dtype) as torch's qint8 tensor with one scale per row
    (symmetric: scale = max|row| / 127, zero point 0), quantized QUANTIZE_ROWS rows at a time,
    so that no float32 copy or temporary of the whole matrix is made (Whisper's output layer:
    80 MB in float32, 20 MB in int8; the whole-matrix call took 78 MB more at its peak).

    Shapes:
        weight: (out, in)   returns: (out, in) qint8, per-channel along dim 0
    """
    out_features = weight.shape[0]
    values = torch.empty(weight.shape, dtype=torch.int8)
    scales = torch.empty(out_features, dtype=torch.float64)
    for start in range(0, out_features, QUANTIZE_ROWS):
        rows = weight[start : start + QUANTIZE_ROWS].float()  # (r, in)
        row_scales = (rows.abs().amax(dim=1).clamp(min=1e-12) / 127).double()  # (r,)
        values[start : start + len(rows)] = quantize_block(rows, row_scales)
        scales[start : start + len(rows)] = row_scales
    return qint8_rows(values, scales)


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


class HalfTokenTable(nn.Module):
    """A token embedding whose table is held in float16, looked up into float32 rows.

    For a table whose every value is a float16 already (a Whisper file stores float16, so its
    51,864 x 384 table is exact in half the bytes: 40 MB, not 80), this is the same lookup.
    Used once the output layer no longer reads the table (it is int8 then).

    Shapes:
        tokens: (B, T) int   returns: (B, T, D) float32
    """

    def __init__(self, embedding: TokenEmbedding) -> None:
        super().__init__()
        self.register_buffer("table", embedding.weight.detach().half())
        self.multiplier = embedding.multiplier

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.table[tokens].float()  # (B, T, D): the rows, widened exactly
        return x * self.multiplier if self.multiplier != 1.0 else x
