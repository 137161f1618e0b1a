"""What a training run writes into its run directory, and the check of all of it up front.

    OUT/last/          checkpoint + optimizer, RNG and progress state (resume from here)
    OUT/best/          checkpoint with the lowest validation loss so far
    OUT/metrics.jsonl  one row per step and per evaluation
    OUT/loss.png       the loss curve, redrawn at every evaluation
    OUT/.lock          held while a run trains here (train/lock.py)

Every one of them is written through glassformer/files.py under the same rules as any output
(no device, FIFO or socket replaced or appended to, a link followed only to a regular file,
a checkpoint folder replaced only while it holds nothing but CHECKPOINT_FILES).
check_run_directory applies those rules to all of them before a run reads its data, so a
FIFO at OUT/metrics.jsonl or a device at OUT/loss.png is one line at the start, not a hang
or a replaced device an hour in. Torch-free: the CLI calls it before importing torch.
"""

from __future__ import annotations

import stat
from pathlib import Path

from glassformer.files import (
    check_output_directory,
    check_output_file,
    output_path,
    refuse_unless,
)

METRICS_FILE = "metrics.jsonl"
CURVE_FILE = "loss.png"
LOCK_FILE = ".lock"
CHECKPOINT_DIRS = ("last", "best")  # OUT/last is written first: see train/loop.py
OPTIMIZER_FILE = "optimizer.safetensors"  # the train state in OUT/last (train/state.py)
STATE_FILE = "train_state.json"
RNG_FILE = "rng.safetensors"
# Every file a checkpoint directory of any task holds: the model, the train state, the tasks'
# tokenizers (with their .vocab views) and the speech task's grammar. A checkpoint's
# config.json also lists its own files ("files"), so a task that writes others is known too;
# a directory holding anything else is not replaced.
CHECKPOINT_FILES = frozenset(
    {"config.json", "model.safetensors", OPTIMIZER_FILE, RNG_FILE, STATE_FILE, "grammar.yaml"}
    | {f"{name}.{ext}" for name in ("tokenizer", "source_tokenizer") for ext in ("json", "vocab")}
)


def steps_done(out: Path) -> int | None:
    """The step OUT/last's training state reached; None when there is none (a state file
    that is no JSON object is one GlassformerError naming it)."""
    from glassformer.textfiles import read_json

    state = out / "last" / STATE_FILE
    if not state.is_file():
        return None
    saved = read_json(state, "training state")
    step = saved.get("step") if isinstance(saved, dict) else None
    return step if isinstance(step, int) else None


def checkpoint_files(directory: Path) -> frozenset[str]:
    """The names a checkpoint directory may hold and still be replaced: CHECKPOINT_FILES and
    the files its config.json lists as its own.

    Raises:
        CheckpointError: it has a config.json that is not a JSON object (then whose folder
            it is cannot be told: a resume would fail on it too, and a new run must not
            sweep it away).
    """
    from glassformer.errors import CheckpointError
    from glassformer.textfiles import read_json

    path = directory / "config.json"
    if not directory.is_dir() or not (path.exists() or path.is_symlink()):
        return CHECKPOINT_FILES
    header = read_json(path, "checkpoint config", 16 << 20, CheckpointError)
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    listed = header.get("files")
    if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
        return CHECKPOINT_FILES
    return CHECKPOINT_FILES | set(listed)


def check_run_directory(out: str | Path) -> Path:
    """Raise GlassformerError unless a run can write everything it writes under `out`;
    returns `out` as a Path.

    Raises:
        GlassformerError: `out` is empty or not a directory, a file the run writes there
            exists as something other than a regular file (through links), or OUT/last or
            OUT/best holds files that are not a checkpoint's.
    """
    out = output_path(out)
    refuse_unless(out, stat.S_ISDIR, "directory")
    for name in (METRICS_FILE, CURVE_FILE, LOCK_FILE):
        check_output_file(out / name)
    for name in CHECKPOINT_DIRS:
        check_output_directory(out / name, checkpoint_files(out / name))
    return out
