"""Training records: a JSONL metrics log and a PNG loss curve (train and validation).

Both are written through glassformer/files.py, as every output is: OUT/metrics.jsonl is
appended to only while it is a regular file (a FIFO there would hang the run, a device
would swallow it), and loss.png is replaced atomically, never over a device or a link to one.

A run killed mid-write (kill -9, a power cut) can leave the last line of metrics.jsonl
half-written; that row was never completed, so reading drops it, and resuming rewrites the
file without it. Any other line that is not a JSON object with an integer "step" is one
error naming the file and the line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from glassformer.errors import GlassformerError
from glassformer.files import atomic_file, open_for_append, write_text_atomically

MAX_METRICS_BYTES = 1 << 30  # metrics.jsonl read back: about 8 million rows of one step each


class MetricsLog:
    """Appends one JSON object per line; on resume, rows after the resumed step are dropped."""

    def __init__(self, path: Path, resume_step: int | None = None) -> None:
        self.path = path
        if resume_step is None:
            write_text_atomically(path, "")
        elif path.exists():
            kept = [row for row in self.read() if row["step"] <= resume_step]
            write_text_atomically(path, "".join(json.dumps(row) + "\n" for row in kept))

    def write(self, row: dict[str, Any]) -> None:
        with open_for_append(self.path) as handle:  # a regular file, checked at every row
            handle.write(json.dumps(row) + "\n")

    def read(self) -> list[dict[str, Any]]:
        """Every complete row; a torn last line (no newline after it) is left out."""
        return read_metrics(self.path)


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a metrics.jsonl (see the module docstring for what is dropped or refused).

    Raises:
        GlassformerError: not a regular file, too large, or a complete line that is not UTF-8
            or not a row (naming the file and the line).
    """
    from glassformer.textfiles import parse_json, read_bytes

    if not path.exists():
        return []
    lines = read_bytes(path, "metrics", MAX_METRICS_BYTES).split(b"\n")
    lines.pop()  # after the last newline: empty, or a row a crash cut short
    rows = []
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise GlassformerError(f"{where}: not UTF-8 text ({error.reason})") from None
        if not text.strip():
            continue
        row = parse_json(text, where)
        step = row.get("step") if isinstance(row, dict) else None
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise GlassformerError(f"{where}: not a metrics row (no integer step)")
        losses = [row.get(name, 0.0) for name in ("train_loss", "val_loss")]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in losses):
            raise GlassformerError(f"{where}: not a metrics row (a loss that is not a number)")
        rows.append(row)
    return rows


def moving_average(values: tuple[float, ...], end: int, window: int) -> float:
    """Mean of the `window` values up to and including index `end`."""
    recent = values[max(0, end - window + 1) : end + 1]
    return sum(recent) / len(recent)


def plot_loss_curve(rows: list[dict[str, Any]], path: Path) -> None:
    """Train loss (light: every step; dark: moving average) and validation loss against step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(r["step"], r["train_loss"]) for r in rows if "train_loss" in r]
    val = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    figure, axes = plt.subplots(figsize=(7, 4), dpi=100)
    if train:
        steps, losses = zip(*train, strict=True)
        axes.plot(steps, losses, color="tab:blue", alpha=0.25, linewidth=0.8)
        window = max(1, len(losses) // 50)
        smooth = [moving_average(losses, i, window) for i in range(len(losses))]
        axes.plot(steps, smooth, color="tab:blue", label="train")
    if val:
        steps, losses = zip(*val, strict=True)
        axes.plot(steps, losses, "o-", color="tab:orange", label="validation")
    finite = [loss for _, loss in train + val if math.isfinite(loss) and loss > 0]
    if finite:  # a log scale shows the first steps' fall and the last steps' detail at once
        axes.set_yscale("log")
        axes.set_ylim(min(finite) * 0.9, max(finite) * 1.1)
    axes.set_xlabel("step")
    axes.set_ylabel("loss (nats per token)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    try:
        with atomic_file(path, ".png") as tmp:  # never over a device, nor a link to one
            figure.savefig(tmp)
    finally:
        plt.close(figure)
