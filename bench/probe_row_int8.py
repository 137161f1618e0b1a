"""int8 activations rounded row by row instead of per call: would the int8 decoder hear
better, and answer a clip in a server's batch as it answers it alone? Measured, not kept
(docs/benchmarks.md, "int8 rounded row by row").

    .venv/bin/python bench/probe_row_int8.py bench/bench_whisper.py coffee --clips 43 \
        --precision int8
    .venv/bin/python bench/probe_row_int8.py bench/bench_cascade.py --fast runs/pair \
        --slow whisper-tiny.en --out runs/cascade-rowq

Runs the given bench script in this process with RowInt8Linear in place of
layers/quantized.Int8Linear. fbgemm's dynamic kernel quantizes its whole input with one
scale, so a row's rounding depends on the other rows of the call: a quiet row beside a loud
one is rounded coarsely, and in a server's batch one clip's answer moves with the other
clips'. Here each row is mapped onto [-1, 1] by its own middle c and half-range h, and the
call's range pinned to exactly [-1, 1] by one row more, so the kernel's one scale is every
row's own; the map is undone after the product:

    x = c + h z   ->   x Wᵀ + b = h (z Wᵀ) + c (W 1) + b      (c, h per row; W 1 per column)
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import torch
from torch import nn

import glassformer.layers.quantized as quantized
import glassformer.models.int8 as int8_models
from glassformer.layers.int8_kernels import pack_weight, qint8_rows, quantize_block

TINY = 1e-30  # a row's half-range at least this (a constant row's is 0: z = 0)


def quantize_rows_summed(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """quantized.quantize_rows, and each row's sum as the int8 weight holds it (scale * the
    sum of its int8 values), block by block (an int64 copy of Whisper's output layer would
    be 160 MB).

    Shapes:
        weight: (out, in)   returns: (out, in) qint8, (out,) float32
    """
    out_features, block_rows = weight.shape[0], quantized.QUANTIZE_ROWS
    values = torch.empty(weight.shape, dtype=torch.int8)
    scales = torch.empty(out_features, dtype=torch.float64)
    sums = torch.empty(out_features, dtype=torch.float64)
    for start in range(0, out_features, block_rows):
        rows = weight[start : start + block_rows].float()  # (r, in)
        row_scales = (rows.abs().amax(dim=1).clamp(min=1e-12) / 127).double()  # (r,)
        block = quantize_block(rows, row_scales)  # (r, in) int8
        values[start : start + len(rows)] = block
        scales[start : start + len(rows)] = row_scales
        sums[start : start + len(rows)] = block.sum(dim=1, dtype=torch.int32) * row_scales
    return qint8_rows(values, scales), sums.float()


class RowInt8Linear(nn.Module):
    """quantized.Int8Linear with each row of activations rounded on its own scale.

    Shapes:
        x: (..., in)   returns: (..., out)
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        out_features, in_features = weight.shape
        weight_int8, sums = quantize_rows_summed(weight.detach())
        self.packed = pack_weight(weight_int8, None)
        self.register_buffer("row_sums", sums)  # W 1 of the int8 weight the kernel multiplies
        self.register_buffer("bias", None if bias is None else bias.detach().float())
        pin = torch.zeros(in_features)
        pin[0], pin[1] = -1.0, 1.0  # the call's range: exactly [-1, 1]
        self.register_buffer("pin", pin)
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1]).float()  # (N, in)
        n = flat.size(0)
        low, high = torch.aminmax(flat, dim=1, keepdim=True)  # (N, 1) each
        middle = (high + low).mul_(0.5)
        half = (high - low).mul_(0.5).clamp_(min=TINY)
        z = torch.empty(n + 1, flat.size(1))  # (N + 1, in): every row in [-1, 1]
        torch.sub(flat, middle, out=z[:n]).div_(half)
        z[n] = self.pin
        y = quantized.int8_linear(z, self.packed, quantized.REDUCE_RANGE)[:n].mul_(half)
        y.addcmul_(middle, self.row_sums)  # h (z Wᵀ) + c (W 1)
        if self.bias is not None:
            y.add_(self.bias)
        return y.view(*shape[:-1], self.out_features)


def main() -> None:
    if len(sys.argv) < 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: probe_row_int8.py BENCH_SCRIPT.py [its arguments]")
    quantized.Int8Linear = RowInt8Linear  # what quantize_linear_layers builds
    int8_models.Int8Linear = RowInt8Linear  # and the speech decoder's untied output layer
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
