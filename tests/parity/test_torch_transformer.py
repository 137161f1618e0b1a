"""Our blocks and stacks against torch.nn.TransformerEncoderLayer / DecoderLayer / Transformer.

Weights are copied (tests/helpers.py), dropout is 0, both norm placements are checked.
torch's encoder may take a nested-tensor fast path under a padding mask in eval mode and
return zeros at padded positions, so only valid positions are compared there.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from glassformer.layers.blocks import BlockConfig, Decoder, DecoderBlock, Encoder, EncoderBlock
from glassformer.layers.masks import key_padding_to_attn_mask, padding_mask
from glassformer.layers.norm import LayerNorm
from tests.helpers import copy_decoder_layer, copy_encoder_layer, copy_norm, torch_causal_mask

D, H, F = 32, 4, 64
TOL = {"atol": 1e-5, "rtol": 1e-5}


def block_args(norm_first: bool, use_sdpa: bool = True) -> BlockConfig:
    return BlockConfig(D, H, F, norm_first=norm_first, use_sdpa=use_sdpa)


def torch_layer_args(norm_first: bool) -> dict:
    return {
        "d_model": D,
        "nhead": H,
        "dim_feedforward": F,
        "dropout": 0.0,
        "batch_first": True,
        "norm_first": norm_first,
    }


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_sdpa", [False, True])
def test_encoder_block_matches_torch(norm_first: bool, use_sdpa: bool) -> None:
    theirs = nn.TransformerEncoderLayer(**torch_layer_args(norm_first)).eval()
    ours = EncoderBlock(block_args(norm_first, use_sdpa)).eval()
    copy_encoder_layer(ours, theirs)
    x = torch.randn(2, 7, D)
    torch.testing.assert_close(ours(x), theirs(x), **TOL, msg=f"norm_first={norm_first}")


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_with_padding_matches_torch(norm_first: bool) -> None:
    theirs = nn.TransformerEncoderLayer(**torch_layer_args(norm_first)).eval()
    ours = EncoderBlock(block_args(norm_first)).eval()
    copy_encoder_layer(ours, theirs)
    x = torch.randn(2, 7, D)
    keep = padding_mask(torch.tensor([7, 4]), 7)
    expected = theirs(x, src_key_padding_mask=~keep)
    actual = ours(x, key_padding_to_attn_mask(keep))
    torch.testing.assert_close(actual[keep], expected[keep], **TOL, msg="valid positions")


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_sdpa", [False, True])
def test_decoder_block_matches_torch(norm_first: bool, use_sdpa: bool) -> None:
    theirs = nn.TransformerDecoderLayer(**torch_layer_args(norm_first)).eval()
    ours = DecoderBlock(block_args(norm_first, use_sdpa)).eval()
    copy_decoder_layer(ours, theirs)
    x, memory = torch.randn(2, 6, D), torch.randn(2, 9, D)
    keep = padding_mask(torch.tensor([9, 5]), 9)
    expected = theirs(x, memory, tgt_mask=torch_causal_mask(6), memory_key_padding_mask=~keep)
    actual = ours(x, memory, memory_mask=key_padding_to_attn_mask(keep))
    torch.testing.assert_close(actual, expected, **TOL, msg=f"norm_first={norm_first}")


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_encoder_decoder_matches_nn_transformer(norm_first: bool) -> None:
    n_layers = 2
    theirs = nn.Transformer(
        d_model=D,
        nhead=H,
        num_encoder_layers=n_layers,
        num_decoder_layers=n_layers,
        dim_feedforward=F,
        dropout=0.0,
        batch_first=True,
        norm_first=norm_first,
    ).eval()
    # nn.Transformer ends each stack with a LayerNorm, whatever norm_first is.
    encoder = Encoder([EncoderBlock(block_args(norm_first)) for _ in range(n_layers)], LayerNorm(D))
    decoder = Decoder([DecoderBlock(block_args(norm_first)) for _ in range(n_layers)], LayerNorm(D))
    for ours, their_layer in zip(encoder.blocks, theirs.encoder.layers, strict=True):
        copy_encoder_layer(ours, their_layer)
    for ours, their_layer in zip(decoder.blocks, theirs.decoder.layers, strict=True):
        copy_decoder_layer(ours, their_layer)
    copy_norm(encoder.final_norm, theirs.encoder.norm)
    copy_norm(decoder.final_norm, theirs.decoder.norm)
    encoder.eval(), decoder.eval()

    source, target = torch.randn(3, 8, D), torch.randn(3, 5, D)
    keep = padding_mask(torch.tensor([8, 6, 3]), 8)
    expected = theirs(
        source,
        target,
        tgt_mask=torch_causal_mask(5),
        src_key_padding_mask=~keep,
        memory_key_padding_mask=~keep,
    )
    attn_mask = key_padding_to_attn_mask(keep)
    actual = decoder(target, encoder(source, attn_mask), memory_mask=attn_mask)
    torch.testing.assert_close(actual, expected, **TOL, msg=f"norm_first={norm_first}")
