"""model.bin read by our own code == the weights CTranslate2's converter was given.

A tiny random Hugging Face Whisper (d_model 64, 2 + 2 layers) is converted by CTranslate2's
own TransformersConverter at each quantization; every variable we read must be the HF weight
it came from (exactly for float32, within the format's rounding otherwise). Broken files are
checked on copies of the converted model.bin; test_ctranslate2_format.py packs its own files.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch  # noqa: E402

from glassformer.convert.ctranslate2 import (
    read_ctranslate2_model,
    read_ctranslate2_vocabulary,
    read_model_bin,
)
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.tokenizer.hf_json import tokenizer_from_hf_json
from tests.helpers import tiny_whisper_config
from tests.installed import import_or_missing
from tests.tokenizer.hf_byte_level import train_byte_level_bpe

ctranslate2 = import_or_missing("ctranslate2")
transformers = import_or_missing("transformers")

QUANTIZATIONS = [None, "float16", "int8", "int16", "bfloat16"]
N_LAYERS = 2  # as tiny_whisper_config builds it


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, np.ndarray], dict]:
    """HF weights by name, and a CTranslate2 directory per quantization."""
    root = tmp_path_factory.mktemp("whisper")
    tokenizer = train_byte_level_bpe()
    specials = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|endoftext|>", additional_special_tokens=specials
    ).save_pretrained(root / "hf")
    end, start = (tokenizer.token_to_id(t) for t in ["<|endoftext|>", "<|startoftranscript|>"])
    config = tiny_whisper_config(
        tokenizer.get_vocab_size() + 10,  # the converter names 10 more timestamps
        50,
        pad_token_id=end,  # the defaults are Whisper's ids, beyond this vocabulary
        bos_token_id=end,
        eos_token_id=end,
        decoder_start_token_id=start,
    )
    model = transformers.WhisperForConditionalGeneration(config)
    with torch.no_grad():
        for parameter in model.parameters():  # distinct values, so nothing aliases by chance
            parameter.normal_(0.0, 0.5)
    model.save_pretrained(root / "hf")
    directories = {}
    for quantization in QUANTIZATIONS:
        out = root / f"ct2_{quantization}"
        converter = ctranslate2.converters.TransformersConverter(
            str(root / "hf"), copy_files=["tokenizer.json"] if quantization is None else None
        )
        converter.convert(str(out), quantization=quantization)
        directories[quantization] = out
    weights = {name: t.detach().numpy().copy() for name, t in model.state_dict().items()}
    return weights, directories


def expected_variables(hf: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each CTranslate2 Whisper weight built from the HF weights: the name map, verified."""

    def linear(name: str, *parts: str) -> dict[str, np.ndarray]:  # parts fused along rows
        weights = [hf[f"{p}.weight"] for p in parts]
        biases = [hf.get(f"{p}.bias", np.zeros(len(hf[f"{p}.weight"]), np.float32)) for p in parts]
        return {f"{name}/weight": np.concatenate(weights), f"{name}/bias": np.concatenate(biases)}

    def norm(name: str, module: str) -> dict[str, np.ndarray]:
        return {f"{name}/gamma": hf[f"{module}.weight"], f"{name}/beta": hf[f"{module}.bias"]}

    def layer(side: str, i: int) -> dict[str, np.ndarray]:
        ours, theirs = f"{side}/layer_{i}", f"model.{side}.layers.{i}"
        attn = f"{theirs}.self_attn"
        out = {
            **norm(f"{ours}/self_attention/layer_norm", f"{theirs}.self_attn_layer_norm"),
            **linear(f"{ours}/self_attention/linear_0", *(f"{attn}.{p}_proj" for p in "qkv")),
            **linear(f"{ours}/self_attention/linear_1", f"{attn}.out_proj"),
            **norm(f"{ours}/ffn/layer_norm", f"{theirs}.final_layer_norm"),
            **linear(f"{ours}/ffn/linear_0", f"{theirs}.fc1"),
            **linear(f"{ours}/ffn/linear_1", f"{theirs}.fc2"),
        }
        if side == "decoder":
            cross = f"{theirs}.encoder_attn"
            out |= {
                **norm(f"{ours}/attention/layer_norm", f"{theirs}.encoder_attn_layer_norm"),
                **linear(f"{ours}/attention/linear_0", f"{cross}.q_proj"),
                **linear(f"{ours}/attention/linear_1", f"{cross}.k_proj", f"{cross}.v_proj"),
                **linear(f"{ours}/attention/linear_2", f"{cross}.out_proj"),
            }
        return out

    expected = {
        **linear("encoder/conv1", "model.encoder.conv1"),
        **linear("encoder/conv2", "model.encoder.conv2"),
        "encoder/position_encodings/encodings": hf["model.encoder.embed_positions.weight"],
        **norm("encoder/layer_norm", "model.encoder.layer_norm"),
        "decoder/embeddings/weight": hf["model.decoder.embed_tokens.weight"],
        "decoder/position_encodings/encodings": hf["model.decoder.embed_positions.weight"],
        **norm("decoder/layer_norm", "model.decoder.layer_norm"),
        "decoder/projection/weight": hf["proj_out.weight"],
    }
    for i in range(N_LAYERS):
        expected |= layer("encoder", i) | layer("decoder", i)
    return expected


def row_bound(expected: np.ndarray, levels: float) -> np.ndarray:
    """Half a quantization step per row: max|row| / levels / 2, broadcast to the weight."""
    rows = np.abs(expected.reshape(len(expected), -1)).max(axis=1)
    return (rows / levels / 2).reshape((-1,) + (1,) * (expected.ndim - 1)) * 1.001 + 1e-7


def assert_close_to_hf(name: str, value: np.ndarray, expected: np.ndarray, kind: Any) -> None:
    assert value.shape == expected.shape, name
    value = value.astype(np.float32)
    if kind is None:
        np.testing.assert_array_equal(value, expected, err_msg=name)
    elif kind == "float16":
        np.testing.assert_allclose(value, expected, rtol=1e-3, atol=1e-6, err_msg=name)
    elif kind == "bfloat16":
        np.testing.assert_allclose(value, expected, rtol=2**-8, atol=1e-30, err_msg=name)
    elif kind == "int8" and expected.ndim >= 2:  # 127 levels per row
        assert np.all(np.abs(value - expected) <= row_bound(expected, 127)), name
    elif kind == "int16" and expected.ndim >= 2:  # 2**10 levels for the whole matrix
        assert np.all(np.abs(value - expected) <= np.abs(expected).max() / 2**11 * 1.001), name
    else:  # vectors are not quantized
        np.testing.assert_array_equal(value, expected, err_msg=name)


@pytest.mark.parametrize("quantization", QUANTIZATIONS)
def test_every_variable_is_the_hf_weight(converted, quantization: str | None) -> None:  # noqa: ANN001
    hf, directories = converted
    spec_name, variables, config = read_ctranslate2_model(directories[quantization])
    assert spec_name == "WhisperSpec"
    expected = expected_variables(hf)
    weights = {name: value for name, value in variables.items() if value.ndim > 0}
    assert sorted(weights) == sorted(expected)
    for name, value in weights.items():
        assert_close_to_hf(name, value, expected[name], quantization)
    assert not any(name.endswith("_scale") for name in variables), "scales are used up"
    for name in ["encoder/conv1/weight", "decoder/layer_1/attention/linear_1/weight"]:
        rounded = not np.array_equal(weights[name], expected[name])
        assert rounded == (quantization is not None), f"{name} was stored as {quantization}"
    assert variables["decoder/projection/weight"] is variables["decoder/embeddings/weight"]
    assert int(variables["encoder/num_heads"]) == int(variables["decoder/num_heads"]) == 4
    assert config == json.loads((directories[quantization] / "config.json").read_text())


def test_stored_dtypes_are_kept_or_dequantized(converted) -> None:  # noqa: ANN001
    _, directories = converted
    conv = "encoder/conv1/weight"
    as_read = {q: read_ctranslate2_model(d).variables[conv].dtype for q, d in directories.items()}
    assert as_read == {q: np.float16 if q == "float16" else np.float32 for q in QUANTIZATIONS}
    assert read_model_bin(directories[None] / "model.bin").revision == 3


def test_vocabulary_and_tokenizer_json(converted) -> None:  # noqa: ANN001
    hf, directories = converted
    vocabulary = read_ctranslate2_vocabulary(directories[None])
    assert len(vocabulary) == len(hf["model.decoder.embed_tokens.weight"])
    tokenizer = tokenizer_from_hf_json(directories[None] / "tokenizer.json")
    assert vocabulary[tokenizer.vocab_size :] == [f"<|{i * 0.02:.2f}|>" for i in range(10)]
    for text, token in tokenizer.special_tokens.items():
        assert vocabulary[token] == text


# --- broken files ----------------------------------------------------------------------------


def broken_copy(directories: dict, tmp_path: Path, edit: Any) -> Path:
    """A copy of the float32 model directory whose model.bin bytes are `edit(bytes)`."""
    directory = tmp_path / "broken"
    shutil.copytree(directories[None], directory)
    path = directory / "model.bin"
    path.write_bytes(edit(path.read_bytes()))
    return directory


EDITS = {
    "truncated in the header": (lambda data: data[:10], "truncated"),
    "truncated in a variable": (lambda data: data[: len(data) // 2], "truncated"),
    "truncated in the aliases": (lambda data: data[:-3], "truncated"),
    "a zip file": (lambda data: b"PK\x03\x04" + data[4:], "not a CTranslate2 model.bin"),
    "version 7": (lambda data: struct.pack("<I", 7) + data[4:], "binary version 7"),
    "a huge name length": (lambda data: data[:4] + b"\xff\xff" + data[6:], "corrupt header"),
    "bytes after the end": (lambda data: data + b"\0", "unexpected bytes"),
}


@pytest.mark.parametrize("problem", list(EDITS))
def test_broken_model_bin_is_one_line(converted, tmp_path: Path, problem: str) -> None:  # noqa: ANN001
    edit, words = EDITS[problem]
    directory = broken_copy(converted[1], tmp_path, edit)
    with pytest.raises(CheckpointError, match=words) as error:
        read_ctranslate2_model(directory)
    assert str(directory / "model.bin") in str(error.value) and "\n" not in str(error.value)


def test_missing_files_are_one_line(converted, tmp_path: Path) -> None:  # noqa: ANN001
    for path in [tmp_path / "nowhere", tmp_path]:  # no directory; a directory without model.bin
        with pytest.raises(GlassformerError, match=str(path)):
            read_ctranslate2_model(path)
    directory = broken_copy(converted[1], tmp_path, lambda data: data)
    (directory / "config.json").write_text("{", encoding="utf-8")
    with pytest.raises(GlassformerError, match="config.json: not valid JSON"):
        read_ctranslate2_model(directory)
    (directory / "vocabulary.json").unlink()
    with pytest.raises(GlassformerError, match="no vocabulary.json or vocabulary.txt"):
        read_ctranslate2_vocabulary(directory)
