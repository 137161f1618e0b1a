"""Everything besides the weights that an exact resume needs, stored without pickle.

    optimizer.safetensors   every optimizer state tensor, named "{param index}.{key}"
    train_state.json        step, best validation loss, optimizer hyper-parameters, Python RNG
    rng.safetensors         torch's CPU (and CUDA) generator states and the data sampler's

The learning-rate schedule is a pure function of the step, so it needs nothing stored. With
these restored, 10 steps + resume + 10 steps equal 20 straight steps bit for bit on CPU
(tests/train/test_loop.py) when both run with the same number of threads at every step
(a sum split over another number of threads rounds differently): the thread count at the
checkpoint is saved too ("threads"), and the run resumes with it.

Each file is checked as it is read; a truncated or edited one (a crash mid-copy, a hand
edit) is one CheckpointError naming it, never a traceback from deep inside torch.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch

from glassformer.errors import CheckpointError
from glassformer.train.outputs import OPTIMIZER_FILE, RNG_FILE, STATE_FILE


def write_train_state(
    directory: Path,
    optimizer: torch.optim.Optimizer,
    data_generator: torch.Generator,
    progress: dict[str, Any],
) -> None:
    """Write optimizer, RNG and progress files into `directory` (a checkpoint being built)."""
    from safetensors.torch import save_file

    state = optimizer.state_dict()
    tensors = {
        f"{index}.{key}": value.detach().cpu().contiguous()
        for index, slots in state["state"].items()
        for key, value in slots.items()
    }
    save_file(tensors, str(directory / OPTIMIZER_FILE))
    rng = {"torch_cpu": torch.get_rng_state(), "data": data_generator.get_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        rng["torch_cuda"] = torch.cuda.get_rng_state()
    save_file(rng, str(directory / RNG_FILE))
    python_state = random.getstate()
    document = {
        **progress,
        "param_groups": state["param_groups"],
        "python_random": [python_state[0], list(python_state[1]), python_state[2]],
    }
    (directory / STATE_FILE).write_text(json.dumps(document, indent=1) + "\n")


def read_train_state(
    directory: Path, optimizer: torch.optim.Optimizer, data_generator: torch.Generator
) -> dict[str, Any]:
    """Restore optimizer and RNG states from a checkpoint; returns the progress entries
    (step, best_val_loss, val_loss, and threads when the run saved it).

    Raises:
        CheckpointError: a file is missing, truncated, or does not fit this run (naming it).
    """
    for name in (OPTIMIZER_FILE, STATE_FILE, RNG_FILE):
        if not (directory / name).is_file():
            raise CheckpointError(f"{directory / name}: missing, so the run cannot resume exactly")
    document = read_progress(directory / STATE_FILE)
    load_optimizer(directory / OPTIMIZER_FILE, optimizer, document["param_groups"])
    rng = read_tensors(directory / RNG_FILE)
    try:
        torch.set_rng_state(rng["torch_cpu"])
        data_generator.set_state(rng["data"])
        if "torch_cuda" in rng and torch.cuda.is_available():
            torch.cuda.set_rng_state(rng["torch_cuda"])
    except (KeyError, RuntimeError, TypeError, ValueError) as error:
        raise CheckpointError(f"{directory / RNG_FILE}: not a generator state ({error})") from None
    version, internal, gauss = document["python_random"]
    try:
        random.setstate((version, tuple(internal), gauss))
    except (TypeError, ValueError) as error:
        where = directory / STATE_FILE
        raise CheckpointError(
            f"{where}: python_random is not a generator state ({error})"
        ) from None
    return {k: v for k, v in document.items() if k not in ("param_groups", "python_random")}


def read_progress(path: Path) -> dict[str, Any]:
    """train_state.json, checked: an integer step, numeric losses, the optimizer's groups."""
    from glassformer.textfiles import read_json

    document = read_json(path, "train state", error=CheckpointError)
    if not isinstance(document, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    step = document.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise CheckpointError(f"{path}: step={step!r} is not a step number")
    for name in ("best_val_loss", "val_loss"):
        value = document.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise CheckpointError(f"{path}: {name}={value!r} is not a number")
    threads = document.get("threads", 1)
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise CheckpointError(f"{path}: threads={threads!r} is not a thread count")
    groups = document.get("param_groups")
    if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
        raise CheckpointError(f"{path}: param_groups is not a list of objects")
    state = document.get("python_random")
    if not isinstance(state, list) or len(state) != 3 or not isinstance(state[1], list):
        raise CheckpointError(f"{path}: python_random is not a generator state")
    return document


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """A safetensors file's tensors; a truncated or garbled one is one CheckpointError."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: unreadable or truncated ({error})") from None


def load_optimizer(
    path: Path, optimizer: torch.optim.Optimizer, param_groups: list[dict[str, Any]]
) -> None:
    """Give `optimizer` the state stored at `path`, each tensor checked against its parameter
    (AdamW would only fail at its next step, deep inside the update)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    slots: dict[int, dict[str, torch.Tensor]] = {}
    for name, tensor in read_tensors(path).items():
        index, _, key = name.partition(".")
        if not index.isdigit() or int(index) >= len(params):
            raise CheckpointError(f"{path}: tensor {name!r} belongs to no parameter of the model")
        wanted = () if key == "step" else params[int(index)].shape
        if tuple(tensor.shape) != tuple(wanted):
            raise CheckpointError(
                f"{path}: does not fit the model ({name!r} has shape {tuple(tensor.shape)}, "
                f"the parameter {tuple(wanted)})"
            )
        slots.setdefault(int(index), {})[key] = tensor
    try:
        optimizer.load_state_dict({"state": slots, "param_groups": param_groups})
    except (ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path}: does not fit the model ({error})") from None
