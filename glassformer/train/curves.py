"""Training records: a JSONL metrics log and a PNG loss curve (train and validation)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


class MetricsLog:
    """Appends one JSON object per line; on resume, rows after the resumed step are dropped."""

    def __init__(self, path: Path, resume_step: int | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is None:
            path.write_text("")
        elif path.exists():
            kept = [row for row in self.read() if row["step"] <= resume_step]
            path.write_text("".join(json.dumps(row) + "\n" for row in kept))

    def write(self, row: dict[str, Any]) -> None:
        with open(self.path, "a") as handle:
            handle.write(json.dumps(row) + "\n")

    def read(self) -> list[dict[str, Any]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        return [json.loads(line) for line in lines if line.strip()]


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
    finite = [loss for _, loss in train + val if math.isfinite(loss)]
    if finite:
        axes.set_ylim(min(finite) * 0.95, min(max(finite), min(finite) * 3))
    axes.set_xlabel("step")
    axes.set_ylabel("loss (nats per token)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(tmp)
    plt.close(figure)
    tmp.replace(path)
