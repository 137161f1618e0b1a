"""OpenAI's Whisper checkpoints (the `.pt` files openai-whisper downloads) in our modules.

Such a file is a dict written by `torch.save`: "dims" (the ten sizes of whisper's
ModelDimensions) and "model_state_dict" (float16 weights under whisper/model.py's names).
It is read only with `torch.load(..., weights_only=True)`, which rebuilds tensors and plain
containers and refuses every other pickled object; nothing in the file is ever executed.
The names are given Hugging Face's (the table below), then convert/whisper.py takes over:

    OpenAI (per block i)                       Hugging Face
    encoder.blocks.{i}.attn.{query,key,...}    encoder.layers.{i}.self_attn.{q,k,v,out}_proj
    decoder.blocks.{i}.cross_attn.query        decoder.layers.{i}.encoder_attn.q_proj
    attn_ln / cross_attn_ln / mlp_ln           self_attn_ / encoder_attn_ / final_layer_norm
    mlp.0 / mlp.2                              fc1 / fc2
    encoder.ln_post / decoder.ln               encoder.layer_norm / decoder.layer_norm
    {encoder,decoder}.positional_embedding     {encoder,decoder}.embed_positions.weight

Not here: the tokenizer (a .pt ships none; tasks/speech/pretrained.py finds one), alignment
heads (timestamps), checkpoints of other shapes than whisper's (separate encoder and decoder
widths are refused).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from glassformer.errors import CheckpointError
from glassformer.models.speech import SpeechTransformer

DIMS = (  # whisper's ModelDimensions, every one required
    "n_mels",
    "n_vocab",
    "n_audio_ctx",
    "n_audio_state",
    "n_audio_head",
    "n_audio_layer",
    "n_text_ctx",
    "n_text_state",
    "n_text_head",
    "n_text_layer",
)
OPENAI_BLOCK = {  # inside encoder.blocks.{i} / decoder.blocks.{i}, longest prefixes first
    "attn_ln.": "self_attn_layer_norm.",
    "cross_attn_ln.": "encoder_attn_layer_norm.",
    "mlp_ln.": "final_layer_norm.",
    "mlp.0.": "fc1.",
    "mlp.2.": "fc2.",
}
OPENAI_ATTENTION = {"attn": "self_attn", "cross_attn": "encoder_attn"}
OPENAI_PROJECTION = {"query": "q_proj", "key": "k_proj", "value": "v_proj", "out": "out_proj"}
OPENAI_TOP = {
    "encoder.positional_embedding": "encoder.embed_positions.weight",
    "encoder.ln_post.": "encoder.layer_norm.",
    "decoder.token_embedding.": "decoder.embed_tokens.",
    "decoder.positional_embedding": "decoder.embed_positions.weight",
    "decoder.ln.": "decoder.layer_norm.",
    "encoder.conv1.": "encoder.conv1.",
    "encoder.conv2.": "encoder.conv2.",
}
OPENAI_LAYER = re.compile(r"^(encoder|decoder)\.blocks\.(\d+)\.(.+)$")
OPENAI_PROJECTION_NAME = re.compile(r"^(attn|cross_attn)\.(query|key|value|out)\.(.+)$")


def hf_name_from_openai(name: str) -> str:
    """One openai-whisper tensor name -> Hugging Face's. Example:
    'decoder.blocks.1.cross_attn.key.weight' -> 'decoder.layers.1.encoder_attn.k_proj.weight'"""
    match = OPENAI_LAYER.match(name)
    if match:
        stack, index, rest = match.groups()
        prefix = f"{stack}.layers.{index}."
        projection = OPENAI_PROJECTION_NAME.match(rest)
        if projection:
            attention, part, field = projection.groups()
            return f"{prefix}{OPENAI_ATTENTION[attention]}.{OPENAI_PROJECTION[part]}.{field}"
        for theirs, mine in OPENAI_BLOCK.items():
            if rest.startswith(theirs):
                return prefix + mine + rest[len(theirs) :]
    for theirs, mine in OPENAI_TOP.items():
        if name.startswith(theirs):
            return mine + name[len(theirs) :]
    raise CheckpointError(f"unexpected openai-whisper tensor {name!r}")


def hf_config_from_openai_dims(dims: Mapping[str, Any], d_ff: int) -> dict[str, int | str]:
    """The WhisperConfig fields of whisper's ModelDimensions (the FFN width comes from the
    weights: whisper always uses 4 * n_audio_state, but the shape is what loads)."""
    if dims["n_text_state"] != dims["n_audio_state"] or dims["n_text_head"] != dims["n_audio_head"]:
        raise CheckpointError(
            f"encoder width/heads {dims['n_audio_state']}/{dims['n_audio_head']} differ from "
            f"the decoder's {dims['n_text_state']}/{dims['n_text_head']} (one width is supported)"
        )
    return {
        "vocab_size": dims["n_vocab"],
        "num_mel_bins": dims["n_mels"],
        "d_model": dims["n_audio_state"],
        "max_source_positions": dims["n_audio_ctx"],
        "max_target_positions": dims["n_text_ctx"],
        "encoder_attention_heads": dims["n_audio_head"],
        "encoder_layers": dims["n_audio_layer"],
        "decoder_layers": dims["n_text_layer"],
        "encoder_ffn_dim": d_ff,
        "activation_function": "gelu",
    }


def read_openai_checkpoint(path: str | Path) -> tuple[dict[str, int], dict[str, torch.Tensor]]:
    """The dims and state dict of an openai-whisper .pt file, tensors only (weights_only).

    Raises:
        CheckpointError: one line naming the file: missing, not a PyTorch file, truncated,
            holding pickled objects other than tensors, or not shaped like whisper's dict.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        with warnings.catch_warnings():  # a newer pickle protocol than torch expects: harmless
            warnings.simplefilter("ignore", UserWarning)
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises RuntimeError, EOFError, KeyError, ... on bad bytes
        if type(error).__name__ == "UnpicklingError":  # weights_only refused an object
            raise CheckpointError(
                f"{path}: holds pickled Python objects besides tensors (refused: glassformer "
                "reads .pt files with weights_only and never unpickles anything else)"
            ) from None
        problem = f"{type(error).__name__}: {str(error).split('.')[0].strip()}"
        raise CheckpointError(f"{path}: not a readable PyTorch file ({problem[:160]})") from None
    if not isinstance(checkpoint, Mapping) or not {"dims", "model_state_dict"} <= set(checkpoint):
        raise CheckpointError(f'{path}: not an openai-whisper checkpoint (no "dims" and weights)')
    dims, state = checkpoint["dims"], checkpoint["model_state_dict"]
    if not isinstance(dims, Mapping) or not all(isinstance(dims.get(k), int) for k in DIMS):
        raise CheckpointError(f'{path}: "dims" must hold the integers {", ".join(DIMS)}')
    if not isinstance(state, Mapping) or not all(
        isinstance(v, torch.Tensor) for v in state.values()
    ):
        raise CheckpointError(f'{path}: "model_state_dict" must map names to tensors')
    return {k: dims[k] for k in DIMS}, dict(state)


def from_openai_whisper(path: str | Path) -> SpeechTransformer:
    """Our SpeechTransformer from an openai-whisper .pt checkpoint (e.g. tiny.en.pt).

    Returns:
        The model in eval mode, float32; its logits match Hugging Face's for the same weights
        (tests/convert/test_openai_whisper.py).

    Raises:
        CheckpointError: one line naming the file (see read_openai_checkpoint), or a tensor
            whisper does not have, or a missing one.
    """
    from glassformer.convert.whisper import from_hf_whisper

    dims, state = read_openai_checkpoint(path)
    try:
        hf_state = {hf_name_from_openai(name): tensor for name, tensor in state.items()}
        d_ff = state["encoder.blocks.0.mlp.0.weight"].shape[0]  # (F, D)
        return from_hf_whisper(hf_state, hf_config_from_openai_dims(dims, d_ff))
    except KeyError as error:
        raise CheckpointError(f"{path}: no tensor {error}") from None
    except (CheckpointError, ValueError) as error:  # ValueError: dims SpeechConfig refuses
        raise CheckpointError(f"{path}: {error}") from None
