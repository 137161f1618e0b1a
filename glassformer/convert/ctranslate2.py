"""Reading CTranslate2 model directories (model.bin, config.json, vocabulary) with our own code.

faster-whisper and other CTranslate2 users publish models as a directory: model.bin (every
weight, in CTranslate2's binary layout), config.json (decoding settings) and the vocabulary.
model.bin, as python/ctranslate2/specs/model_spec.py `_serialize` writes it and
src/models/model.cc reads it (little-endian; a string is a uint16 length counting a final
NUL, then the UTF-8 bytes and the NUL):

    uint32 binary version (1-6; 6 since CTranslate2 3.x)   the file's only "magic"
    string spec name, uint32 spec revision                  (version >= 2)
    uint32 count, then per variable, sorted by name:
        string name, uint8 rank, uint32 dims[rank],
        uint8 dtype id, uint32 byte count                   (version >= 4; before: item size, count)
        the bytes, C order
    uint32 count, then per alias: string alias, string target   (version >= 3)

Values come back as numpy arrays, converted as follows (and nothing else is changed):
  * float32 and float16 stay as stored; bfloat16 widens exactly to float32 (numpy has none).
    With `widen`, float16 widens to float32 too, as it is read, a block at a time: no
    float16 copy of a variable is ever held whole (the caller wants float32 weights and the
    least peak memory; the conversion is exact).
  * int8 weights with a `NAME_scale` beside them become float32 `int8 / scale`. CTranslate2
    quantizes row by row (scale = 127 / max|row|, a conv weight's rows flattened first), so
    the scale has one value per row; int16 weights have one scale for the whole matrix. The
    scale is used up and dropped, as CTranslate2 drops it when it dequantizes.
  * integers without a scale (encoder/num_heads, flags stored as int8) stay integers.
  * an alias (a tied weight, e.g. Whisper's output projection and token embedding) is the
    same array object as its target.

Whisper's variable names (WhisperSpec, revision 3); {i} is a layer number, and each linear
layer is NAME/weight (out, in) with NAME/bias. Each sub-layer holds its own pre-norm:
    encoder/conv1 (D, M, 3), encoder/conv2 (D, D, 3), encoder/position_encodings/encodings
    (S_max, D), encoder/layer_{i}/self_attention/{layer_norm/gamma|beta, linear_0 = fused
    q,k,v (3*D, D; the k bias is zeros), linear_1 = out (D, D)}, .../ffn/{layer_norm,
    linear_0 (F, D), linear_1 (D, F)}, encoder/layer_norm/{gamma, beta}
    decoder/embeddings/weight (V, D), decoder/position_encodings/encodings (T_max, D),
    decoder/layer_{i}/self_attention (as the encoder's), decoder/layer_{i}/attention = cross-
    attention {layer_norm, linear_0 = q (D, D), linear_1 = fused k,v (2*D, D), linear_2 =
    out (D, D)}, .../ffn, decoder/layer_norm, decoder/projection/weight (an alias of the
    embedding); 0-d settings: {encoder,decoder}/num_heads (int16), decoder/activation (int8,
    3 = GELU), decoder/pre_norm (1), decoder/scale_embeddings (0), alibi and alignment fields

Not here: mapping these names onto glassformer's modules (convert/whisper.py), AWQ 4-bit
files (their `_zero` variables are refused), tensor-parallel splitting, other model.bin
versions than 1 to 6. Every problem with a file is one CheckpointError line naming it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, NoReturn

import numpy as np

from glassformer.errors import CheckpointError
from glassformer.textfiles import read_json as read_json_file
from glassformer.textfiles import read_utf8

BINARY_VERSIONS = range(1, 7)  # model.bin layouts this reader knows; CTranslate2 4.x writes 6
DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")  # dtype ids 0-5 (types.h)
ITEM_SIZE_DTYPES = {4: "float32", 2: "int16", 1: "int8"}  # versions < 4 stored item sizes
VOCABULARY_FILES = ("vocabulary.json", "vocabulary.txt")  # newer converters write the .json
WIDEN_BLOCK_BYTES = 1 << 20  # float16 read at a time when widening: 1 MiB, a small buffer


class CTranslate2Model(NamedTuple):
    """A model directory's contents: unpacks as (spec_name, variables, config)."""

    spec_name: str  # the model's layout in CTranslate2, e.g. "WhisperSpec"
    variables: dict[str, np.ndarray]  # every weight by CTranslate2 name, aliases resolved
    config: dict[str, Any]  # config.json ({} when the directory has none)


class ModelBin(NamedTuple):
    """model.bin alone: the spec, its revision (a layout version) and the variables."""

    spec_name: str
    revision: int
    variables: dict[str, np.ndarray]


def read_ctranslate2_model(
    directory: str | Path, model_bin_parts: Sequence[Path] = (), widen: bool = False
) -> CTranslate2Model:
    """Read a CTranslate2 model directory: model.bin and, when present, config.json.

    `model_bin_parts`, when given, replace directory/model.bin: its bytes split into files
    that are read one after another (a model shipped in several packages, e.g. whisper-base).

    Example: read_ctranslate2_model("faster-whisper-tiny.en") ->
    ("WhisperSpec", {"encoder/conv1/weight": array (384, 80, 3), ...}, {"lang_ids": ...})

    Shapes:
        each variable keeps the shape stored for it, e.g. decoder/embeddings/weight (V, D)

    Raises:
        CheckpointError: one line naming the file: no such directory, no model.bin, a model.bin
            that is truncated, corrupt or of an unknown version or dtype, a broken config.json.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: not a directory (a CTranslate2 model is a directory)")
    spec_name, _, variables = read_model_bin(model_bin_parts or directory / "model.bin", widen)
    return CTranslate2Model(spec_name, variables, read_json(directory / "config.json", {}))


def read_model_bin(path: str | Path | Sequence[Path], widen: bool = False) -> ModelBin:
    """Read one model.bin (or its parts, in order): header, variables (dequantized, and with
    `widen` float16 made float32, as the module says), aliases.

    Raises:
        CheckpointError: one line naming the file and what is wrong with it.
    """
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(part) for part in path]
    for part in paths:
        if not part.is_file():
            raise CheckpointError(f"{part}: no such file (a CTranslate2 model directory has one)")
    label = " + ".join(str(part) for part in paths)  # errors name every part
    try:
        with ExitStack() as stack:
            handles = [stack.enter_context(open(part, "rb")) for part in paths]
            stream = handles[0] if len(handles) == 1 else JoinedFiles(handles)
            size = sum(part.stat().st_size for part in paths)
            return read_layout(BinaryReader(stream, label, size), widen)
    except OSError as error:
        raise CheckpointError(f"{label}: cannot read ({error.strerror or error})") from None


def read_layout(reader: BinaryReader, widen: bool = False) -> ModelBin:
    """The fields of model.bin in the order `_serialize` writes them (module docstring)."""
    version = reader.number("<I", "the binary version")
    if version not in BINARY_VERSIONS:
        reader.fail(f"not a CTranslate2 model.bin (binary version {version}, known: 1 to 6)")
    spec_name, revision = "", 1
    if version >= 2:
        spec_name = reader.string("the spec name")
        revision = reader.number("<I", "the spec revision")
    variables: dict[str, np.ndarray] = {}
    for _ in range(reader.number("<I", "the variable count")):
        name, value = read_variable(reader, version, widen)
        if name in variables:
            reader.fail(f"variable {name!r} is stored twice")
        variables[name] = value
    dequantize(variables, reader)
    if version >= 3:
        for _ in range(reader.number("<I", "the alias count")):
            alias, target = reader.string("an alias"), reader.string("an alias target")
            if target not in variables:
                reader.fail(f"alias {alias!r} points to {target!r}, which is not a variable")
            variables[alias] = variables[target]
    if reader.remaining:
        reader.fail(f"{reader.remaining} unexpected bytes after the last field")
    return ModelBin(spec_name, revision, variables)


def read_variable(
    reader: BinaryReader, version: int, widen: bool = False
) -> tuple[str, np.ndarray]:
    """One variable's name, shape, dtype and bytes, as a numpy array of that shape."""
    name = reader.string("a variable name")
    rank = reader.number("<B", f"the rank of {name!r}")
    shape = struct.unpack(f"<{rank}I", reader.take(4 * rank, f"the shape of {name!r}"))
    if version >= 4:
        dtype_id = reader.number("<B", f"the dtype of {name!r}")
        if dtype_id >= len(DTYPES):
            reader.fail(f"variable {name!r} has unknown dtype id {dtype_id} (known: 0 to 5)")
        dtype = DTYPES[dtype_id]
        n_bytes = reader.number("<I", f"the byte count of {name!r}")
    else:
        item_size = reader.number("<B", f"the item size of {name!r}")
        if item_size not in ITEM_SIZE_DTYPES:
            reader.fail(f"variable {name!r} has unknown item size {item_size} (known: 1, 2, 4)")
        dtype = ITEM_SIZE_DTYPES[item_size]
        n_bytes = reader.number("<I", f"the element count of {name!r}") * item_size
    item_bytes = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    if n_bytes != math.prod(shape) * item_bytes:
        reader.fail(f"variable {name!r} has {n_bytes} bytes for shape {shape} of {dtype}")
    if dtype == "float16" and widen:
        return name, reader.take_float16_as_float32(shape, f"variable {name!r}")
    raw = reader.take(n_bytes, f"variable {name!r}")
    if dtype == "bfloat16":  # the top half of a float32: shift each 16-bit word up
        widened = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
        return name, widened.view(np.float32).reshape(shape)
    return name, np.frombuffer(raw, np.dtype(dtype).newbyteorder("<")).reshape(shape)


def dequantize(variables: dict[str, np.ndarray], reader: BinaryReader) -> None:
    """Replace each int8/int16 weight that has a NAME_scale by float32 weight / scale, in place.

    Example: int8 [[127, -64]] with scale [127 / 2.0] -> [[2.0, -1.0079]]
    """
    if any(name.endswith("_zero") for name in variables):
        reader.fail("AWQ-quantized weights (with _zero variables) are not supported")
    for name in [n for n in variables if f"{n}_scale" in variables]:
        value, scale = variables[name], variables.pop(f"{name}_scale")
        if value.dtype not in (np.int8, np.int16):
            reader.fail(f"variable {name!r} of {value.dtype} has a scale (only int8/int16 do)")
        scale = scale.astype(np.float32)
        if scale.ndim == 0:  # int16: one scale for the whole matrix
            variables[name] = value.astype(np.float32) / scale
        elif value.ndim >= 1 and scale.shape == value.shape[:1]:  # int8: one scale per row
            rows = value.reshape(value.shape[0], -1).astype(np.float32)  # (rows, rest)
            variables[name] = (rows / scale[:, None]).reshape(value.shape)
        else:
            reader.fail(f"scale of {name!r} has shape {scale.shape} for weight {value.shape}")


def read_ctranslate2_vocabulary(directory: str | Path) -> list[str]:
    """The model's tokens by id: vocabulary.json (a JSON list) or vocabulary.txt (one a line).

    Example: faster-whisper tiny.en -> ["!", "\\"", ..., "<|endoftext|>", ..., "<|30.00|>"]

    Raises:
        CheckpointError: neither file exists, or the one found is not a list of strings.
    """
    directory = Path(directory)
    json_path, text_path = (directory / name for name in VOCABULARY_FILES)
    if json_path.is_file():
        tokens = read_json(json_path, None)
    elif text_path.is_file():
        tokens = read_utf8(text_path, "vocabulary").split("\n")
        tokens = tokens[:-1] if tokens and not tokens[-1] else tokens  # the final newline
    else:
        raise CheckpointError(f"{directory}: no {' or '.join(VOCABULARY_FILES)}")
    if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
        raise CheckpointError(f"{json_path}: not a JSON list of token strings")
    return tokens


def read_json(path: Path, missing: Any) -> Any:
    """A JSON file's value, `missing` when there is no file; broken JSON names the file."""
    if not path.exists():
        return missing
    value = read_json_file(path, "JSON", error=CheckpointError)  # deep nesting: one line too
    if missing is not None and not isinstance(value, type(missing)):
        raise CheckpointError(f"{path}: expected a JSON {type(missing).__name__}")
    return value


class JoinedFiles:
    """Open files read one after another as one stream (model.bin shipped in parts; a
    variable's bytes may straddle two parts)."""

    def __init__(self, handles: list[BinaryIO]) -> None:
        self.handles, self.index, self.position = handles, 0, 0

    def readinto(self, buffer: bytearray | memoryview) -> int:
        view, filled = memoryview(buffer), 0
        while filled < len(view) and self.index < len(self.handles):
            count = self.handles[self.index].readinto(view[filled:])
            if not count:  # this part is used up: go on with the next
                self.index += 1
            filled += count or 0
        self.position += filled
        return filled

    def tell(self) -> int:
        return self.position


class BinaryReader:
    """Reads model.bin front to back; any read past the end is a truncation error."""

    def __init__(self, handle: BinaryIO | JoinedFiles, path: Path | str, size: int) -> None:
        self.handle, self.path, self.remaining = handle, path, size

    def fail(self, problem: str) -> NoReturn:
        offset = self.handle.tell()
        raise CheckpointError(f"{self.path}: {problem} (at byte {offset})")

    def take(self, n_bytes: int, what: str) -> bytearray:
        """The next n_bytes (a bytearray, so arrays built on it are writable)."""
        if n_bytes > self.remaining:
            self.fail(f"truncated: {what} needs {n_bytes} bytes, {self.remaining} are left")
        data = bytearray(n_bytes)
        if self.handle.readinto(data) != n_bytes:
            self.fail(f"truncated while reading {what}")
        self.remaining -= n_bytes
        return data

    def take_float16_as_float32(self, shape: tuple[int, ...], what: str) -> np.ndarray:
        """The next float16 array of `shape`, read WIDEN_BLOCK_BYTES at a time straight into
        the float32 array it becomes (exact: every float16 is a float32)."""
        count = math.prod(shape)
        if 2 * count > self.remaining:
            self.fail(f"truncated: {what} needs {2 * count} bytes, {self.remaining} are left")
        widened = np.empty(count, np.float32)
        block = memoryview(bytearray(min(2 * count, WIDEN_BLOCK_BYTES)))
        for start in range(0, count, len(block) // 2):
            part = block[: 2 * min(len(block) // 2, count - start)]
            if self.handle.readinto(part) != len(part):
                self.fail(f"truncated while reading {what}")
            widened[start : start + len(part) // 2] = np.frombuffer(part, "<f2")
        self.remaining -= 2 * count
        return widened.reshape(shape)

    def number(self, fmt: str, what: str) -> int:
        """One unsigned integer in `fmt` ("<B", "<H" or "<I")."""
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        """A uint16 length (NUL included), the UTF-8 bytes and the NUL."""
        length = self.number("<H", f"the length of {what}")
        data = self.take(length, what)
        if length == 0 or data[-1] != 0:
            self.fail(f"corrupt header: {what} is not a NUL-terminated string")
        try:
            return data[:-1].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"corrupt header: {what} is not UTF-8")
