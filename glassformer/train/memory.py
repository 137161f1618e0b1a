"""Will a model train in this machine's memory? Asked before its weights are allocated.

The config bounds (models/configs.py) stop typos such as `--d-model 1000000`; sizes inside
them can still ask for more than the machine has (d_model 65536 with 1000 layers), and the
kernel's out-of-memory killer ends such a process without a word once the weights are
touched. So the model is first built on torch's "meta" device, which records shapes and
allocates nothing, and its parameter count is compared with the memory there is.

The estimate counts fp32 weights, their gradients and AdamW's two moments (16 bytes per
parameter); activations come on top, so passing is necessary, not sufficient.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
from torch import nn

from glassformer.errors import GlassformerError

TRAINING_BYTES_PER_PARAMETER = 16  # fp32 weight + gradient + AdamW's first and second moments


def parameter_count(build: Callable[[], nn.Module]) -> int:
    """Parameters of the model `build()` makes, counted on the meta device (no memory used)."""
    with torch.device("meta"):
        model = build()
    return sum(p.numel() for p in model.parameters())


def memory_bytes(device: str) -> int | None:
    """Total memory of the device a run trains on (None when unknown, e.g. mps)."""
    if device.startswith("cuda") or (device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            return None  # resolve_device says so in its own words later
        index = int(device.partition(":")[2] or 0)
        return torch.cuda.get_device_properties(index).total_memory
    if device in ("cpu", "auto") and hasattr(os, "sysconf"):
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def check_model_fits(build: Callable[[], nn.Module], device: str) -> None:
    """Raise GlassformerError if training the model `build()` makes needs more than `device`'s
    whole memory (see the module docstring for what is counted).

    Example: a GPT of d_model 65536 and 1000 layers has about 5e13 parameters; 16 bytes each
    is 800 TB -> "... needs at least 800,000 GB to train; cpu has 23 GB".
    """
    available = memory_bytes(device)
    if available is None:
        return
    count = parameter_count(build)
    needed = count * TRAINING_BYTES_PER_PARAMETER
    if needed > available:
        raise GlassformerError(
            f"the model has {count:,} parameters and needs at least {needed / 1e9:,.0f} GB to "
            f"train ({TRAINING_BYTES_PER_PARAMETER} bytes each); {device} has "
            f"{available / 1e9:,.0f} GB: choose a smaller model"
        )
