"""Everything besides the weights that an exact resume needs, stored without pickle.

    optimizer.safetensors   every optimizer state tensor, named "{param index}.{key}"
    train_state.json        step, best validation loss, optimizer hyper-parameters, Python RNG
    rng.safetensors         torch's CPU (and CUDA) generator states and the data sampler's

The learning-rate schedule is a pure function of the step, so it needs nothing stored. With
these restored, 10 steps + resume + 10 steps equal 20 straight steps bit for bit on CPU
(tests/train/test_loop.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch

from glassformer.errors import CheckpointError

OPTIMIZER_FILE = "optimizer.safetensors"
STATE_FILE = "train_state.json"
RNG_FILE = "rng.safetensors"


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
    """Restore optimizer and RNG states from a checkpoint; returns the progress entries."""
    from safetensors.torch import load_file

    for name in (OPTIMIZER_FILE, STATE_FILE, RNG_FILE):
        if not (directory / name).is_file():
            raise CheckpointError(f"{directory / name}: missing, so the run cannot resume exactly")
    document = json.loads((directory / STATE_FILE).read_text())
    slots: dict[int, dict[str, torch.Tensor]] = {}
    for name, tensor in load_file(str(directory / OPTIMIZER_FILE)).items():
        index, key = name.split(".", 1)
        slots.setdefault(int(index), {})[key] = tensor
    try:
        optimizer.load_state_dict({"state": slots, "param_groups": document["param_groups"]})
    except (ValueError, KeyError) as error:
        raise CheckpointError(
            f"{directory / OPTIMIZER_FILE}: does not fit the model ({error})"
        ) from None
    rng = load_file(str(directory / RNG_FILE))
    torch.set_rng_state(rng["torch_cpu"])
    data_generator.set_state(rng["data"])
    if "torch_cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state(rng["torch_cuda"])
    version, internal, gauss = document["python_random"]
    random.setstate((version, tuple(internal), gauss))
    return {k: v for k, v in document.items() if k not in ("param_groups", "python_random")}
