"""Figures: pure functions from data to a PNG file (matplotlib imported only here, lazily)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_cross_attention(
    probs: np.ndarray, tokens: list[str], seconds_per_frame: float, path: Path, title: str = ""
) -> None:
    """Heat map of a decoder's cross-attention: one row per written token, one column per
    encoder position (a time in the audio).

    Shapes:
        probs: (T, S), averaged over heads
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T, S = probs.shape
    figure, axes = plt.subplots(figsize=(max(6, S * 0.08), max(3, T * 0.3)), dpi=110)
    axes.imshow(
        probs,
        aspect="auto",
        cmap="magma",
        origin="upper",
        extent=(0, S * seconds_per_frame, T - 0.5, -0.5),
    )
    axes.set_yticks(range(T), tokens)
    axes.set_xlabel("time in the audio (s)")
    axes.set_ylabel("written token")
    axes.set_title(title or "where each written token looks in the audio (cross-attention)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
