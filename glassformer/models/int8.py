"""int8 recipes for whole models: which layers of a model to hold in int8 and which not.

    quantize_speech_decoder(model)   CTranslate2's CPU recipe for Whisper's decoder
    halve_token_table(model)         a token table held in float16 where that is exact

The int8 layer itself, and torch's kernels under it, are layers/quantized.py and
layers/int8_kernels.py; this module only chooses where they go in a model.
"""

from __future__ import annotations

import torch

from glassformer.layers.embedding import TokenEmbedding
from glassformer.layers.quantized import (
    QUANTIZE_ROWS,
    HalfTokenTable,
    Int8Linear,
    quantize_linear_layers,
)
from glassformer.models.seq2seq import Seq2SeqTransformer


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
