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
from typing import TYPE_CHECKING

import torch
from torch import nn

from glassformer.errors import ConfigError
from glassformer.layers.embedding import TokenEmbedding

if TYPE_CHECKING:
    from glassformer.models.seq2seq import Seq2SeqTransformer


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
        out_features, in_features = weight.shape
        with warnings.catch_warnings():  # torch's eager quantization API is marked deprecated
            warnings.simplefilter("ignore")
            quantized = quantize_rows(weight.detach())
            bias = None if bias is None else bias.detach().float()
            self.packed = torch.ops.quantized.linear_prepack(quantized, bias)
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).float().contiguous()  # (N, in)
        y = torch.ops.quantized.linear_dynamic(flat, self.packed, REDUCE_RANGE)  # (N, out)
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
    with warnings.catch_warnings():  # torch's eager quantization API is marked deprecated
        warnings.simplefilter("ignore")
        for start in range(0, out_features, QUANTIZE_ROWS):
            rows = weight[start : start + QUANTIZE_ROWS].float()  # (r, in)
            row_scales = (rows.abs().amax(dim=1).clamp(min=1e-12) / 127).double()  # (r,)
            zeros = torch.zeros(len(rows), dtype=torch.long)
            block = torch.quantize_per_channel(rows, row_scales, zeros, 0, torch.qint8)
            values[start : start + len(rows)] = block.int_repr()
            scales[start : start + len(rows)] = row_scales
        zero_points = torch.zeros(out_features, dtype=torch.long)
        return torch._make_per_channel_quantized_tensor(values, scales, zero_points, 0)


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


def halve_token_table(model: Seq2SeqTransformer) -> bool:
    """Hold the model's token table in float16 (HalfTokenTable) when that is exact and the
    output layer does not share it; returns whether it did."""
    if not isinstance(model.tgt_embed, TokenEmbedding):
        return False
    if getattr(model.head, "weight", None) is model.tgt_embed.weight:  # still tied: float
        return False
    table = model.tgt_embed.weight.detach()
    for rows in table.split(QUANTIZE_ROWS):  # a block at a time: no second whole table
        if not torch.equal(rows.half().float(), rows.float()):  # any float dtype
            return False
    model.tgt_embed = HalfTokenTable(model.tgt_embed)
    return True


def quantize_speech_decoder(model: Seq2SeqTransformer) -> None:
    """CTranslate2's CPU recipe, in place: the decoder's linear layers and its output layer in
    int8, the token table in float16 where exact, everything else float32.

    The decoder and its output layer are nearly all of a decode step's bytes (the 51,864-word
    output layer alone reads 80 MB a step in float32). The encoder keeps float32: in int8 it
    cost 0.7 points on clean real digits (docs/benchmarks.md), for 30 ms a clip. A model
    loaded with its float16 weights as stored (load_speech_model(..., widen=False)) is
    quantized from them and the rest widened a tensor at a time, so no float32 copy of what
    becomes int8 is ever held (peak memory: docs/benchmarks.md).
    """
    quantize_linear_layers(model.decoder)
    model.head = Int8Linear(model.head.weight)  # untied from the table from here on
    halve_token_table(model)  # the lookup alone reads it now: float16, 40 MB less
    for child in model.children():
        if not isinstance(child, HalfTokenTable):
            child.float()  # each float16 tensor left (norms, biases, the encoder) widened
