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
config as a dict) into that model; names are renamed one by one, nothing is downloaded. A
CTranslate2 directory (faster-whisper's format, read by convert/ctranslate2.py) is first
given Hugging Face's names, then converted the same way; so is an OpenAI .pt checkpoint
(convert/openai_whisper.py). Not here: the tokenizer (tokenizer/hf_json.py), the log-mel
features (audio/features.py).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
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
    hf_state: dict[str, torch.Tensor], config: SpeechConfig
) -> dict[str, torch.Tensor]:
    """Rename a Whisper state dict to SpeechTransformer names, moving each tensor out of
    `hf_state` (it ends empty: no second reference keeps a tensor alive).

    The encoder's position table is not a weight of ours (it is computed): it is checked
    against Whisper's sinusoids instead. The output projection is the token embedding (tied).

    Raises:
        CheckpointError: an unknown tensor name, or an encoder table that is not sinusoids.
    """
    ours = {}
    while hf_state:
        name, tensor = hf_state.popitem()
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


def from_hf_whisper(
    source: Any, config: Any = None, consume: bool = False, widen: bool = True
) -> SpeechTransformer:
    """Our SpeechTransformer holding the weights of a Hugging Face Whisper.

    Args:
        source: a transformers WhisperForConditionalGeneration (its config is read), or a
            state dict, in which case `config` (a WhisperConfig or its dict) is required.
        config: the WhisperConfig for a bare state dict.
        consume: the state dict is the caller's to give away: its float32 tensors become the
            model's own, and each tensor leaves the dict as it is converted, so that a
            float16 file is never held beside the whole float32 model (a loader's peak
            memory). Otherwise every tensor is copied and the dict is left as it was.
        widen: the model's weights are float32 (float16 ones widened, exactly). False keeps
            each in its stored dtype, for a caller that quantizes them next and widens the
            rest (layers/quantized.py: quantize_speech_decoder): no float32 copy of the
            weights it quantizes is ever made.

    Returns:
        The model in eval mode; its logits match the source's (tests/parity/test_hf_whisper.py).
    """
    if hasattr(source, "state_dict") and hasattr(source, "config"):
        config, hf_state, consume = source.config, source.state_dict(), False
    elif config is None:
        raise CheckpointError("a bare Whisper state dict needs its config")
    else:
        hf_state = source if consume else dict(source)
    speech_config = speech_config_from_hf(config)
    model = SpeechTransformer.without_weights(speech_config)
    state = speech_state_dict_from_hf(hf_state, speech_config)
    load_weights(model, state, copy=not consume, dtype=torch.float32 if widen else None)
    return model.eval()


def load_weights(
    model: SpeechTransformer,
    state: dict[str, torch.Tensor],
    copy: bool,
    dtype: torch.dtype | None = torch.float32,
) -> None:
    """Give a model built `without_weights` its parameters from `state` (our names), each as
    `dtype` (None: as stored), emptying `state` as it goes; a tied output layer is tied again.

    Raises:
        CheckpointError: a missing, extra or wrongly shaped tensor (the first one named).
    """
    expected = model.state_dict(keep_vars=True)
    tied = {"head.weight"} if model.config.tie_output else set()
    missing = [name for name in expected if name not in state and name not in tied]
    unexpected = [name for name in state if name not in expected]
    if missing or unexpected:
        raise CheckpointError(f"Whisper weights: missing {missing[:5]}, extra {unexpected[:5]}")
    weights = {}
    while state:
        name, tensor = state.popitem()  # its float16 original goes as soon as it is converted
        if tensor.shape != expected[name].shape:
            raise CheckpointError(
                f"Whisper weights: {name} is {tuple(tensor.shape)}, expected "
                f"{tuple(expected[name].shape)}"
            )
        tensor = tensor.detach().to(dtype or tensor.dtype, copy=copy)
        weights[name] = tensor.contiguous()
    model.load_state_dict(weights, strict=False, assign=True)
    if model.config.tie_output:
        model.head.weight = model.tgt_embed.weight  # assign replaced the embedding's Parameter
    meta = [name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if meta:  # a tensor the model has that is neither loaded nor computed: a bug here
        raise CheckpointError(f"Whisper weights: nothing loaded for {meta[:5]}")


# CTranslate2's Whisper names -> Hugging Face's, per block (fused projections are split below).
CT2_BLOCK = {
    "self_attention/layer_norm/": "self_attn_layer_norm.",
    "self_attention/linear_1/": "self_attn.out_proj.",
    "attention/layer_norm/": "encoder_attn_layer_norm.",
    "attention/linear_0/": "encoder_attn.q_proj.",
    "attention/linear_2/": "encoder_attn.out_proj.",
    "ffn/layer_norm/": "final_layer_norm.",
    "ffn/linear_0/": "fc1.",
    "ffn/linear_1/": "fc2.",
}
CT2_TOP = {
    "encoder/conv1/": "encoder.conv1.",
    "encoder/conv2/": "encoder.conv2.",
    "encoder/layer_norm/": "encoder.layer_norm.",
    "encoder/position_encodings/encodings": "encoder.embed_positions.weight",
    "decoder/embeddings/weight": "decoder.embed_tokens.weight",
    "decoder/position_encodings/encodings": "decoder.embed_positions.weight",
    "decoder/layer_norm/": "decoder.layer_norm.",
}
CT2_FUSED = {  # fused projection -> the HF projections it holds, in order
    "self_attention/linear_0/": ("self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj."),
    "attention/linear_1/": ("encoder_attn.k_proj.", "encoder_attn.v_proj."),
}
CT2_LAYER = re.compile(r"^(encoder|decoder)/layer_(\d+)/(.+)$")
CT2_SETTINGS = re.compile(r"^(encoder|decoder)/[a-z_]+$")  # 0-d settings such as num_heads


def hf_names_from_ctranslate2(variables: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A CTranslate2 WhisperSpec's variables as a Hugging Face Whisper state dict.

    Fused q/k/v (and cross-attention k/v) are split into separate projections; the key bias,
    which CTranslate2 stores as zeros, is dropped (Whisper has none); layer-norm gamma/beta
    become weight/bias. The tied output projection is left out. Each array moves out of
    `variables` (it ends empty) into a tensor that keeps its dtype (float16 for tiny.en) and
    shares its memory, but a fused projection's parts are copied apart, so that each array
    is freed as soon as `from_hf_whisper(..., consume=True)` has converted it.
    """
    state: dict[str, torch.Tensor] = {}
    variables.pop("decoder/projection/weight", None)  # the embedding's alias: one reference less
    while variables:
        name, array = variables.popitem()
        if CT2_SETTINGS.match(name):
            continue
        with warnings.catch_warnings():  # read-only file buffers: we never write to them
            warnings.simplefilter("ignore", UserWarning)
            tensor = torch.from_numpy(np.ascontiguousarray(array))
        name = name.replace("/gamma", "/weight").replace("/beta", "/bias")
        match = CT2_LAYER.match(name)
        if not match:
            state[rename_ctranslate2(name, CT2_TOP, name).replace("/", ".")] = tensor
            continue
        stack, index, rest = match.groups()
        prefix = f"{stack}.layers.{index}."
        for theirs, parts in CT2_FUSED.items():
            if rest.startswith(theirs):
                field = rest[len(theirs) :]  # weight or bias
                for part, chunk in zip(parts, tensor.chunk(len(parts)), strict=True):
                    if not (field == "bias" and part.endswith("k_proj.")):
                        state[prefix + part + field] = chunk.clone()  # not a view of the fused
                break
        else:
            state[prefix + rename_ctranslate2(rest, CT2_BLOCK, name).replace("/", ".")] = tensor
    return state


def rename_ctranslate2(rest: str, table: Mapping[str, str], name: str) -> str:
    for theirs, mine in table.items():
        if rest.startswith(theirs):
            return mine + rest[len(theirs) :]
    raise CheckpointError(f"unexpected CTranslate2 Whisper variable {name!r}")


def hf_config_from_ctranslate2(variables: Mapping[str, Any]) -> dict[str, int | str]:
    """The WhisperConfig fields that the variables' shapes and settings determine."""
    layers = {stack: set() for stack in ("encoder", "decoder")}
    for name in variables:
        match = CT2_LAYER.match(name)
        if match:
            layers[match.group(1)].add(int(match.group(2)))
    conv1 = variables["encoder/conv1/weight"]
    return {
        "vocab_size": variables["decoder/embeddings/weight"].shape[0],
        "num_mel_bins": conv1.shape[1],
        "d_model": conv1.shape[0],
        "max_source_positions": variables["encoder/position_encodings/encodings"].shape[0],
        "max_target_positions": variables["decoder/position_encodings/encodings"].shape[0],
        "encoder_attention_heads": int(variables["encoder/num_heads"]),
        "encoder_layers": len(layers["encoder"]),
        "decoder_layers": len(layers["decoder"]),
        "encoder_ffn_dim": variables["encoder/layer_0/ffn/linear_0/weight"].shape[0],
        "activation_function": "gelu",
    }


def from_ctranslate2_whisper(
    directory: str | Path, model_bin_parts: Sequence[Path] = (), widen: bool = True
) -> tuple[SpeechTransformer, dict[str, Any]]:
    """Our SpeechTransformer from a CTranslate2 Whisper directory (faster-whisper's format),
    read by convert/ctranslate2.py (model.bin, or its parts in order). Returns the model and
    the directory's config.json. `widen`: as from_hf_whisper (False: float16 as stored)."""
    from glassformer.convert.ctranslate2 import read_ctranslate2_model

    spec, variables, config = read_ctranslate2_model(directory, model_bin_parts, widen=widen)
    if spec != "WhisperSpec":
        raise CheckpointError(f"{directory}: a {spec} model, not Whisper")
    try:
        hf_config = hf_config_from_ctranslate2(variables)
    except KeyError as error:
        raise CheckpointError(f"{directory}: model.bin lacks {error}") from None
    state = hf_names_from_ctranslate2(variables)  # empties `variables`
    return from_hf_whisper(state, hf_config, consume=True, widen=widen), config


def from_hf_whisper_directory(directory: str | Path, widen: bool = True) -> SpeechTransformer:
    """Our SpeechTransformer from a Hugging Face Whisper directory (config.json and
    model.safetensors, as `save_pretrained` writes them); weights only, never pickle.
    `widen`: as from_hf_whisper."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from glassformer.textfiles import read_json

    directory = Path(directory)
    config = read_json(directory / "config.json", "Whisper config", error=CheckpointError)
    if not isinstance(config, dict) or config.get("model_type") != "whisper":
        raise CheckpointError(f"{directory / 'config.json'}: not a Hugging Face Whisper config")
    weights = directory / "model.safetensors"
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{weights}: unreadable or truncated ({error})") from None
    return from_hf_whisper(state, config, consume=True, widen=widen)  # ours to give away
