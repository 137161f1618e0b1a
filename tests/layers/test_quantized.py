"""int8 rows and the float16 token table (layers/quantized.py) against torch's own whole-matrix
quantization and the float32 lookup."""

from __future__ import annotations

import warnings

import pytest
import torch

from glassformer.layers.quantized import (
    HalfTokenTable,
    halve_token_table,
    has_int8_kernels,
    quantize_rows,
)
from glassformer.models.configs import Seq2SeqConfig
from glassformer.models.seq2seq import Seq2SeqTransformer

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


def tiny_model(tie_output: bool = False) -> Seq2SeqTransformer:
    config = Seq2SeqConfig(
        src_vocab_size=11, tgt_vocab_size=13, d_model=8, n_heads=2, n_encoder_layers=1,
        n_decoder_layers=1, d_ff=16, max_src_len=6, max_tgt_len=6, tie_output=tie_output,
    )  # fmt: skip
    return Seq2SeqTransformer(config).eval()


def test_a_float16_table_looks_up_the_same_rows_in_half_the_bytes() -> None:
    model = tiny_model()
    with torch.no_grad():
        model.tgt_embed.weight.copy_(model.tgt_embed.weight.half().float())  # as a file holds it
    tokens = torch.tensor([[0, 5, 12], [3, 3, 1]])
    expected = model.tgt_embed(tokens)
    assert halve_token_table(model)
    assert isinstance(model.tgt_embed, HalfTokenTable) and model.tgt_embed.table.dtype == torch.half
    looked_up = model.tgt_embed(tokens)
    assert looked_up.dtype == torch.float32
    torch.testing.assert_close(looked_up, expected, rtol=0, atol=0)


def test_a_table_that_is_not_exact_in_float16_or_still_tied_stays_float32() -> None:
    inexact = tiny_model()
    with torch.no_grad():
        inexact.tgt_embed.weight[3, 2] = 1 + 2**-20  # not a float16 value
    assert not halve_token_table(inexact) and not isinstance(inexact.tgt_embed, HalfTokenTable)
    tied = tiny_model(tie_output=True)
    with torch.no_grad():
        tied.tgt_embed.weight.copy_(tied.tgt_embed.weight.half().float())
    assert not halve_token_table(tied)  # the output layer still reads the float32 table
