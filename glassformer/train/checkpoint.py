"""Checkpoint directories: config.json + model.safetensors, written atomically, loaded with checks.

    DIR/config.json         {"format_version": 1, "kind": "gpt", "config": {...}, ...metadata}
    DIR/model.safetensors   the weights; tied matrices are stored once

No pickle anywhere: safetensors holds only tensors and JSON holds only data, so loading a
checkpoint can never run code. A directory is written under a temporary name and renamed into
place, so a crash leaves either the old checkpoint or the new one, never half of one.

Loading checks everything it can and fails with one line naming the file and the problem:
missing file, unreadable JSON, unknown format version or model kind, invalid config, truncated
weights, missing or unexpected tensors, wrong shapes, NaN or infinite weights. The shapes come
from the safetensors header and are compared with a model built on the meta device (no
memory) before the real one is built, so a config.json edited to a billion parameters is
refused without allocating them.

Saving replaces an existing directory only if it holds nothing but a checkpoint's own files
(train/outputs.CHECKPOINT_FILES, and those its config.json lists as its own under "files"):
`import whisper --out DIR` given a folder of the user's is refused before anything is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.configs import config_from_dict, config_to_dict
from glassformer.errors import CheckpointError, first_line
from glassformer.files import output_path, write_directory_atomically
from glassformer.models.registry import MODELS, upgrade_header
from glassformer.textfiles import read_json
from glassformer.train.outputs import checkpoint_files

FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TASK_MODELS = {"lm": "gpt", "speech": "speech", "translation": "seq2seq"}  # task -> model kind


FINITE_CHECK_STRETCH = 1 << 20  # values a finiteness check reads at a time: isfinite holds
# temporaries as large as what it reads (a whole 80-MB token table: 70 MB more peak memory)


def stored(tensor: torch.Tensor) -> torch.Tensor:
    """A float32 tensor as float16 where every value survives the round trip exactly (an
    imported Whisper's weights, published in float16: half the file, and half the memory
    each tensor takes while it is read), else as it is. Loading widens it back, bit for bit.
    """
    if tensor.dtype != torch.float32:
        return tensor
    half = tensor.to(torch.float16)
    return half if torch.equal(half.to(torch.float32), tensor) else tensor


def unique_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with tied tensors kept once (the first name wins), all contiguous.

    safetensors refuses tensors that share memory; a tied de-embedding is restored on load by
    the model's constructor, so storing it once loses nothing.
    """
    seen: set[int] = set()
    unique = {}
    for name, tensor in model.state_dict().items():
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        unique[name] = tensor.detach().contiguous()
    return unique


def save_checkpoint(
    model: nn.Module,
    directory: str | Path,
    metadata: dict[str, Any] | None = None,
    write_extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write `model` (a GPT or Seq2SeqTransformer) as a checkpoint directory.

    Args:
        model: the (uncompiled) model; its `kind` and `config` go into config.json.
        directory: created or replaced atomically, extra files included.
        metadata: extra JSON-serialisable entries for config.json (e.g. the tokenizer used).
        write_extra: writes more files into the directory being built (tokenizer, train state).

    Raises:
        CheckpointError: the directory could not be written (a full disk: safetensors raises
            its own error type, not OSError); a previous version of it is left as it was.
        GlassformerError: `directory` is empty, not a directory, or holds files that are not
            a checkpoint's (checked before anything is written).
    """
    from safetensors.torch import save_file

    directory = output_path(directory)

    header = {"format_version": FORMAT_VERSION, "kind": model.kind}
    header["config"] = config_to_dict(model.config)
    header.update(metadata or {})
    tensors = {name: stored(t.cpu()) for name, t in unique_state_dict(model).items()}

    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format_version": "1"})
        if write_extra is not None:
            write_extra(tmp)
        header["files"] = sorted({CONFIG_FILE, *os.listdir(tmp)})  # its own, for a later save
        (tmp / CONFIG_FILE).write_text(json.dumps(header, indent=2) + "\n")

    from safetensors import SafetensorError

    try:
        write_directory_atomically(directory, write, checkpoint_files(directory))
    except (OSError, SafetensorError) as error:  # a full disk, a lost mount: the old one stays
        reason = getattr(error, "strerror", None) or first_line(error)
        kept = "the previous version is kept" if Path(directory).is_dir() else "nothing written"
        raise CheckpointError(f"{directory}: could not be written ({reason}); {kept}") from None
    return Path(directory)


def resolve_checkpoint(path: str | Path) -> Path:
    """A checkpoint directory, or a run directory (its best/, else its last/ checkpoint)."""
    path = Path(path)
    for candidate in (path, path / "best", path / "last"):
        if (candidate / "config.json").is_file():
            return candidate
    raise CheckpointError(f"{path}: no checkpoint here (looked for config.json, best/, last/)")


def open_task_checkpoint(path: str | Path, task: str) -> tuple[Path, dict[str, Any]]:
    """A run or checkpoint directory of `task` ("lm", "speech", "translation"): the resolved
    checkpoint directory and its header. Another task, or a model kind the task does not use,
    is a one-line CheckpointError. A bare GPT (saved without a task) counts as "lm"."""
    directory = resolve_checkpoint(path)
    header = read_header(directory)
    found = header.get("task") or ("lm" if header["kind"] == "gpt" else None)
    if found != task:
        raise CheckpointError(f"{directory}: not a {task} checkpoint (task={found!r})")
    if header["kind"] != TASK_MODELS[task]:
        raise CheckpointError(f"{directory}: a {task} checkpoint of kind {header['kind']!r}")
    return directory, header


MAX_HEADER_BYTES = 16 << 20  # config.json: a few KB (an imported Whisper's, with its rules)


def read_header(directory: str | Path) -> dict[str, Any]:
    """Read and check config.json; returns it with "config" rebuilt as a config dataclass."""
    directory = Path(directory)
    if not directory.is_dir():
        hint = next(directory.parent.glob(f".{directory.name}.old-*"), None)
        extra = f" (an interrupted save left the previous version at {hint})" if hint else ""
        raise CheckpointError(f"{directory}: no such checkpoint directory{extra}")
    path = directory / CONFIG_FILE
    if not path.exists():
        raise CheckpointError(f"{path}: missing")
    header = read_json(path, "checkpoint config", MAX_HEADER_BYTES, CheckpointError)
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    header = upgrade_header(header)
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise CheckpointError(f"{path}: format_version={version!r}, expected {FORMAT_VERSION}")
    if not isinstance(header.get("kind"), str) or header["kind"] not in MODELS:
        raise CheckpointError(f"{path}: kind={header.get('kind')!r} is not one of {list(MODELS)}")
    config_class = MODELS[header["kind"]][0]
    try:
        header["config"] = config_from_dict(config_class, header.get("config") or {})
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: invalid config: {error}") from None
    return header


def load_checkpoint(
    directory: str | Path, device: str | torch.device = "cpu", as_stored: bool = False
) -> nn.Module:
    """Build the model described by config.json and load model.safetensors into it.

    The names and shapes in the weights file's header are checked against the config before
    the model is built (from a weightless copy on the meta device), so a config that asks for
    more than the file holds allocates nothing. The weights are then read a tensor at a time
    into the built model, each checked as it comes, so the whole file is never held beside
    the model (a speech model with two encoders: 606 -> 546 MB peak, docs/benchmarks.md).
    With `as_stored`, the weightless copy itself is given the tensors in the dtypes the file
    holds them (float16 where that was exact: `stored`), and no float32 model is built: for
    a caller that quantizes them next and widens the rest (models/int8.py).

    Returns:
        The model in eval mode on `device`.

    Raises:
        CheckpointError: one line naming the file and what is wrong with it.
    """
    from safetensors import SafetensorError, safe_open

    header = read_header(directory)
    build = MODELS[header["kind"]][1]
    path = Path(directory) / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    with torch.device("meta"):
        skeleton = build(header["config"])
    expected = expected_shapes(skeleton)  # each tensor once, by its first name
    check_shapes(stored_shapes(path), expected, path)
    model = skeleton if as_stored else build(header["config"])
    aliases = tied_names(model) if as_stored else {}  # name -> the names sharing its tensor
    try:
        with safe_open(str(path), framework="pt") as weights, torch.no_grad():
            targets = model.state_dict(keep_vars=True)
            for name in expected:  # one tensor of the file read at a time
                tensor = weights.get_tensor(name)
                check_tensor(name, tensor, path)
                if as_stored:
                    assign(model, name, tensor, aliases.get(name, []))
                else:
                    targets[name].copy_(tensor)
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: unreadable or truncated ({error})") from None
    if as_stored:  # the skeleton's tensors are on the meta device until given one
        tensors = [*model.named_parameters(), *model.named_buffers()]
        empty = [name for name, tensor in tensors if tensor.is_meta]
        if empty:  # neither in the file nor computed by the model: a bug, not bad input
            raise CheckpointError(f"{path}: nothing loaded for {', '.join(empty[:5])}")
    return model.to(device).eval()


def tied_names(model: nn.Module) -> dict[str, list[str]]:
    """For each tensor that other names share (a tied output layer), those other names."""
    first: dict[int, str] = {}
    aliases: dict[str, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) in first:
            aliases.setdefault(first[id(tensor)], []).append(name)
        else:
            first[id(tensor)] = name
    return aliases


def assign(model: nn.Module, name: str, tensor: torch.Tensor, aliases: list[str]) -> None:
    """Make `tensor` the model's `name` (a parameter or a buffer), as it is, and its aliases'
    the same one (a tied output layer stays tied)."""
    owner, _, leaf = name.rpartition(".")
    is_parameter = leaf in model.get_submodule(owner)._parameters
    value = nn.Parameter(tensor, requires_grad=False) if is_parameter else tensor
    for each in (name, *aliases):
        owner, _, leaf = each.rpartition(".")
        table = "_parameters" if is_parameter else "_buffers"
        getattr(model.get_submodule(owner), table)[leaf] = value


def stored_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape as the safetensors header states it; no tensor is read."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as weights:
            names = weights.keys()
            return {name: tuple(weights.get_slice(name).get_shape()) for name in names}
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: unreadable or truncated ({error})") from None


def expected_shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    """unique_state_dict's names and shapes, for a model on the meta device (whose tensors
    have no data pointers: tied tensors are found as the same Parameter object)."""
    seen: set[int] = set()
    shapes = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            shapes[name] = tuple(tensor.shape)
    return shapes


def check_shapes(
    found: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]], path: Path
) -> None:
    """Raise CheckpointError unless `found` has exactly the expected names and shapes."""
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing:
        raise CheckpointError(f"{path}: missing tensors {', '.join(missing[:5])}")
    if unexpected:
        raise CheckpointError(f"{path}: unexpected tensors {', '.join(unexpected[:5])}")
    for name, shape in expected.items():
        if found[name] != shape:
            raise CheckpointError(
                f"{path}: tensor {name!r} has shape {found[name]}, config.json implies {shape}"
            )


def check_tensors(
    found: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], path: Path
) -> None:
    """Raise CheckpointError unless `found` has exactly the expected names, shapes and dtypes,
    and every value is finite (a NaN weight makes every output NaN)."""
    shapes = {name: tuple(tensor.shape) for name, tensor in found.items()}
    check_shapes(shapes, {name: tuple(t.shape) for name, t in expected.items()}, path)
    for name in expected:
        check_tensor(name, found[name], path)


def check_tensor(name: str, tensor: torch.Tensor, path: Path) -> None:
    """Raise CheckpointError unless `tensor` (of `name`, its shape checked already) holds
    floating-point values, all finite."""
    if not tensor.is_floating_point():
        raise CheckpointError(f"{path}: tensor {name!r} has dtype {tensor.dtype}")
    flat = tensor.reshape(-1)  # checked a stretch at a time: isfinite's temporaries are the
    for start in range(0, flat.numel(), FINITE_CHECK_STRETCH):  # stretch's, not the tensor's
        if not bool(torch.isfinite(flat[start : start + FINITE_CHECK_STRETCH]).all()):
            raise CheckpointError(f"{path}: tensor {name!r} holds NaN or infinite values")


def describe_checkpoint(directory: str | Path) -> str:
    """A readable summary: kind, parameter count, weights size and every config field."""
    header = read_header(directory)
    model = load_checkpoint(directory)
    n_params = sum(p.numel() for p in model.parameters())  # shared (tied) tensors count once
    weights = Path(directory) / WEIGHTS_FILE
    config = config_to_dict(header["config"])
    width = max(len(name) for name in config)
    lines = [
        f"{directory}: {header['kind']} checkpoint (format {header['format_version']})",
        f"  parameters  {n_params:,} (tied tensors counted once)",
        f"  weights     {weights.name}, {weights.stat().st_size / 1e6:.2f} MB",
        "  config",
    ]
    lines += [f"    {name:<{width}}  {value}" for name, value in config.items()]
    extra = {k: v for k, v in header.items() if k not in ("format_version", "kind", "config")}
    lines += [f"  {name}: {shortened(value)}" for name, value in extra.items()]
    return "\n".join(lines)


def shortened(value: object, shown: int = 8) -> object:
    """`value` with every list longer than `shown` cut to its first items and a count, at
    any depth (an imported Whisper's decoding rules suppress about 90 tokens).

    Example: [1, 2, 3, 4, 5] with shown=2 -> [1, 2, '... 5 in all']
    """
    if isinstance(value, dict):
        return {k: shortened(v, shown) for k, v in value.items()}
    if isinstance(value, list):
        head = [shortened(v, shown) for v in value[:shown]]
        return head + ([f"... {len(value):,} in all"] if len(value) > shown else [])
    return value
