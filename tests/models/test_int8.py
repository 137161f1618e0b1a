"""The int8 recipe for a whole model (models/int8.py): a speech model's linear layers stay close
to float32, and its token table is held in float16 only where that is exact."""

from __future__ import annotations

import pytest
import torch

from glassformer.layers.quantized import HalfTokenTable, has_int8_kernels, quantize_linear_layers
from glassformer.models.configs import Seq2SeqConfig, SpeechConfig
from glassformer.models.int8 import halve_token_table
from glassformer.models.seq2seq import Seq2SeqTransformer
from glassformer.models.speech import SpeechTransformer

pytestmark = pytest.mark.skipif(not has_int8_kernels(), reason="this torch has no fbgemm")


def test_a_speech_models_int8_linear_layers_stay_close_to_float32() -> None:
    config = SpeechConfig(
        tgt_vocab_size=50, n_features=13, d_model=32, n_heads=2, n_encoder_layers=1,
        n_decoder_layers=1, d_ff=64, dropout=0.0, ctc_head=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = SpeechTransformer(config).eval()
    features, tokens = torch.randn(2, 13, 40), torch.randint(0, 50, (2, 6))
    with torch.no_grad():
        reference = model(features, tokens).logits  # (B, T, V)
        assert quantize_linear_layers(model) == 17  # 3 attentions x 4, 2 FFNs x 2, the head
        logits = model(features, tokens).logits
    error = (logits - reference).abs().max() / reference.abs().max()
    assert error < 0.05, f"int8 logits differ by {error:.3f} of their scale"


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
