"""Whisper's weights in glassformer's own encoder-decoder (SpeechTransformer).

Whisper (Radford et al. 2022) is the article's architecture exactly: log-mel frames through
two convolutions straight into an encoder, and a decoder that writes tokens with
cross-attention. Its choices map onto options of the blocks we already have:

    Whisper                                   glassformer SpeechConfig
    conv1 (k 3, stride 1) + GELU,             frontend="whisper"
    conv2 (k 3, stride 2) + GELU
    fixed sinusoids, sines then cosines       src_positional="sinusoidal_concat"
    learned decoder positions                 positional="learned"
    pre-norm blocks, GELU MLP (4 D)           norm_first=True, final_norm=True, activation="gelu"
    no bias on the key projections            key_bias=False
    logits = x @ token_embedding.T            tie_output=True, no embedding scale

This module converts a Hugging Face `WhisperForConditionalGeneration` (or its state dict and
config as a dict) into that model; names are renamed one by one, nothing is downloaded.
Not here: CTranslate2 and OpenAI checkpoint files (their readers produce the same HF-style
names), the tokenizer (tokenizer/), the log-mel features (audio/features.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from glassformer.errors import CheckpointError
from glassformer.layers.positional import whisper_sinusoid_table
from glassformer.models.configs import SpeechConfig
from glassformer.models.speech import SpeechTransformer

# HF names (after the "model." prefix) -> ours; {i} is a layer number.
BLOCK_NAMES = {
    "self_attn.": "self_attn.",
    "self_attn_layer_norm.": "self_attn_norm.",
    "encoder_attn.": "cross_attn.",
    "encoder_attn_layer_norm.": "cross_attn_norm.",
    "fc1.": "ffn.up_proj.",
    "fc2.": "ffn.down_proj.",
    "final_layer_norm.": "ffn_norm.",
}
TOP_NAMES = {
    "encoder.conv1.": "frontend.conv1.",
    "encoder.conv2.": "frontend.conv2.",
    "encoder.layer_norm.": "encoder.final_norm.",
    "decoder.embed_tokens.": "tgt_embed.",
    "decoder.embed_positions.": "tgt_positions.",
    "decoder.layer_norm.": "decoder.final_norm.",
}
LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.+)$")
SINUSOID_TOLERANCE = 1e-3  # the checkpoint's encoder table must be Whisper's sinusoids


def speech_config_from_hf(hf_config: Any) -> SpeechConfig:
    """A SpeechConfig with the shape of a transformers WhisperConfig (object or dict)."""
    get = hf_config.get if isinstance(hf_config, Mapping) else lambda k: getattr(hf_config, k)
    if get("activation_function") not in ("gelu", None):
        raise CheckpointError(f"unsupported activation_function={get('activation_function')!r}")
    return SpeechConfig(
        tgt_vocab_size=get("vocab_size"),
        n_features=get("num_mel_bins"),
        frontend="whisper",
        max_src_len=get("max_source_positions"),
        max_tgt_len=get("max_target_positions"),
        d_model=get("d_model"),
        n_heads=get("encoder_attention_heads"),
        n_encoder_layers=get("encoder_layers"),
        n_decoder_layers=get("decoder_layers"),
        d_ff=get("encoder_ffn_dim"),
        dropout=0.0,
        activation="gelu",
        norm_first=True,
        final_norm=True,
        positional="learned",
        src_positional="sinusoidal_concat",
        key_bias=False,
        scale_embedding=False,
        tie_output=True,
        ctc_head=False,
    )


def speech_state_dict_from_hf(
    hf_state: Mapping[str, torch.Tensor], config: SpeechConfig
) -> dict[str, torch.Tensor]:
    """Rename a Whisper state dict to SpeechTransformer names.

    The encoder's position table is not a weight of ours (it is computed): it is checked
    against Whisper's sinusoids instead. The output projection is the token embedding (tied).

    Raises:
        CheckpointError: an unknown tensor name, or an encoder table that is not sinusoids.
    """
    ours = {}
    for name, tensor in hf_state.items():
        name = name.removeprefix("model.")
        if name == "proj_out.weight":
            continue  # tied to the token embedding
        if name == "encoder.embed_positions.weight":
            check_encoder_positions(tensor, config)
            continue
        ours[rename(name)] = tensor
    return ours


def rename(name: str) -> str:
    """One HF Whisper tensor name -> ours. Example: 'decoder.layers.0.fc1.weight' ->
    'decoder.blocks.0.ffn.up_proj.weight'."""
    match = LAYER.match(name)
    if match:
        stack, index, rest = match.groups()
        for theirs, mine in BLOCK_NAMES.items():
            if rest.startswith(theirs):
                return f"{stack}.blocks.{index}.{mine}{rest[len(theirs) :]}"
    for theirs, mine in TOP_NAMES.items():
        if name.startswith(theirs):
            return mine + name[len(theirs) :]
    raise CheckpointError(f"unexpected Whisper tensor {name!r}")


def check_encoder_positions(table: torch.Tensor, config: SpeechConfig) -> None:
    expected = whisper_sinusoid_table(config.max_src_len, config.d_model)
    if table.shape != expected.shape:
        raise CheckpointError(
            f"encoder position table {tuple(table.shape)}, expected {tuple(expected.shape)}"
        )
    error = (table.float() - expected).abs().max().item()
    if error > SINUSOID_TOLERANCE:
        raise CheckpointError(f"the encoder position table is not Whisper's sinusoids ({error})")


def from_hf_whisper(source: Any, config: Any = None) -> SpeechTransformer:
    """Our SpeechTransformer holding the weights of a Hugging Face Whisper.

    Args:
        source: a transformers WhisperForConditionalGeneration (its config is read), or a
            state dict, in which case `config` (a WhisperConfig or its dict) is required.
        config: the WhisperConfig for a bare state dict.

    Returns:
        The model in eval mode; its logits match the source's (tests/parity/test_hf_whisper.py).
    """
    if hasattr(source, "state_dict") and hasattr(source, "config"):
        config, hf_state = source.config, source.state_dict()
    elif config is None:
        raise CheckpointError("a bare Whisper state dict needs its config")
    else:
        hf_state = dict(source)
    speech_config = speech_config_from_hf(config)
    model = SpeechTransformer(speech_config)
    state = speech_state_dict_from_hf(hf_state, speech_config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m != "head.weight"]  # tied: it is tgt_embed.weight
    if missing or unexpected:
        raise CheckpointError(f"Whisper weights: missing {missing[:5]}, extra {unexpected[:5]}")
    return model.eval()
