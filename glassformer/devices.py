"""Device names from the command line to torch devices, with one-line errors.

    auto      cuda when this torch build sees a GPU, else cpu
    cpu, mps, cuda, cuda:N

Torch-free until a device is resolved: configs check names with require_device_name. A name
that is not a device, or a device this machine or torch build lacks (`cuda` on a CPU
build), is a GlassformerError, so the CLI prints one line instead of a traceback.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from glassformer.errors import ConfigError, GlassformerError

if TYPE_CHECKING:
    import torch

DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(:\d+)?")  # what --device accepts


def require_device_name(config: object, name: str = "device") -> None:
    """Raise ConfigError unless field `name` is a device name (whether this machine has that
    device is resolve_device's question, asked when the model is placed)."""
    value = getattr(config, name)
    if not isinstance(value, str) or not DEVICE_PATTERN.fullmatch(value):
        raise ConfigError(f"{name}={value!r} is not a device (auto, cpu, mps, cuda, cuda:N)")


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    """The torch device for `name`; under torchrun "cuda" means this process's GPU."""
    import torch

    if not DEVICE_PATTERN.fullmatch(name):
        raise GlassformerError(f"--device {name!r}: not a device (auto, cpu, mps, cuda, cuda:N)")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and local_rank:
        name = f"cuda:{local_rank}"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            build = "a CPU-only torch build" if torch.version.cuda is None else "no CUDA device"
            raise GlassformerError(f"--device {name}: CUDA is not available here ({build})")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            count = torch.cuda.device_count()
            raise GlassformerError(f"--device {name}: this machine has {count} CUDA device(s)")
    if name == "mps" and not torch.backends.mps.is_available():
        raise GlassformerError("--device mps: MPS is not available here")
    return torch.device(name)
