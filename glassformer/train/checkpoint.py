"""Checkpoint directories: config.json + model.safetensors, written atomically, loaded with checks.

    DIR/config.json         {"format_version": 1, "kind": "gpt", "config": {...}, ...metadata}
    DIR/model.safetensors   the weights; tied matrices are stored once

No pickle anywhere: safetensors holds only tensors and JSON holds only data, so loading a
checkpoint can never run code. A directory is written under a temporary name and renamed into
place, so a crash leaves either the old checkpoint or the new one, never half of one.

Loading checks everything it can and fails with one line naming the file and the problem:
missing file, unreadable JSON, unknown format version or model kind, invalid config, truncated
weights, missing or unexpected tensors, wrong shapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.configs import config_from_dict, config_to_dict
from glassformer.errors import CheckpointError
from glassformer.files import write_directory_atomically
from glassformer.models.registry import MODELS, upgrade_header

FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TASK_MODELS = {"lm": "gpt", "speech": "speech", "translation": "seq2seq"}  # task -> model kind


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
    """
    from safetensors.torch import save_file

    header = {"format_version": FORMAT_VERSION, "kind": model.kind}
    header["config"] = config_to_dict(model.config)
    header.update(metadata or {})
    tensors = {name: t.cpu() for name, t in unique_state_dict(model).items()}

    def write(tmp: Path) -> None:
        (tmp / CONFIG_FILE).write_text(json.dumps(header, indent=2) + "\n")
        save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format_version": "1"})
        if write_extra is not None:
            write_extra(tmp)

    from safetensors import SafetensorError

    try:
        write_directory_atomically(Path(directory), write)
    except (OSError, SafetensorError) as error:  # a full disk, a lost mount: the old one stays
        reason = getattr(error, "strerror", None) or one_line(str(error))
        kept = "the previous version is kept" if Path(directory).is_dir() else "nothing written"
        raise CheckpointError(f"{directory}: could not be written ({reason}); {kept}") from None
    return Path(directory)


def one_line(text: str) -> str:
    """The first line of an error's text."""
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


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


def read_header(directory: str | Path) -> dict[str, Any]:
    """Read and check config.json; returns it with "config" rebuilt as a config dataclass."""
    directory = Path(directory)
    if not directory.is_dir():
        hint = next(directory.parent.glob(f".{directory.name}.old-*"), None)
        extra = f" (an interrupted save left the previous version at {hint})" if hint else ""
        raise CheckpointError(f"{directory}: no such checkpoint directory{extra}")
    path = directory / CONFIG_FILE
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing") from None
    except (ValueError, RecursionError) as error:  # bad JSON, not UTF-8, a 5000-digit number
        raise CheckpointError(f"{path}: not valid JSON ({error})") from None
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


def load_checkpoint(directory: str | Path, device: str | torch.device = "cpu") -> nn.Module:
    """Build the model described by config.json and load model.safetensors into it.

    Returns:
        The model in eval mode on `device`.

    Raises:
        CheckpointError: one line naming the file and what is wrong with it.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    header = read_header(directory)
    model = MODELS[header["kind"]][1](header["config"])
    path = Path(directory) / WEIGHTS_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: unreadable or truncated ({error})") from None
    check_tensors(tensors, unique_state_dict(model), path)
    model.load_state_dict(tensors, strict=False)  # tied aliases are restored by sharing
    return model.to(device).eval()


def check_tensors(
    found: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], path: Path
) -> None:
    """Raise CheckpointError unless `found` has exactly the expected names, shapes and dtypes."""
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing:
        raise CheckpointError(f"{path}: missing tensors {', '.join(missing[:5])}")
    if unexpected:
        raise CheckpointError(f"{path}: unexpected tensors {', '.join(unexpected[:5])}")
    for name, tensor in expected.items():
        if found[name].shape != tensor.shape:
            raise CheckpointError(
                f"{path}: tensor {name!r} has shape {tuple(found[name].shape)}, "
                f"config.json implies {tuple(tensor.shape)}"
            )
        if not found[name].is_floating_point():
            raise CheckpointError(f"{path}: tensor {name!r} has dtype {found[name].dtype}")


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
    lines += [f"  {name}: {value}" for name, value in extra.items()]
    return "\n".join(lines)
