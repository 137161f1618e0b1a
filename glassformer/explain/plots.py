"""Figures: pure functions from data to a PNG file (matplotlib imported only here, lazily).

Every function takes numbers and a path, draws with the Agg backend (no display needed),
writes the PNG and closes the figure. Nothing is computed here that a test should check: the
numbers come from the explain sections, and tests assert on those.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from glassformer.audio.io import SAMPLE_RATE

MAX_ANNOTATED_CELLS = 200  # heat maps up to this size get their numbers written in the cells


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only, never a window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure: Any, path: Path) -> Path:
    """Write the figure as a PNG (atomically, never over a device: glassformer/files.py) and
    close it."""
    from glassformer.files import atomic_file

    figure.tight_layout()
    try:
        with atomic_file(path, ".png") as tmp:
            figure.savefig(tmp)
    finally:
        pyplot().close(figure)
    return path


def plot_cross_attention(
    probs: np.ndarray, tokens: list[str], seconds_per_frame: float, path: Path, title: str = ""
) -> None:
    """Heat map of a decoder's cross-attention: one row per written token, one column per
    encoder position (a time in the audio).

    Shapes:
        probs: (T, S), averaged over heads
    """
    plt = pyplot()
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
    save(figure, path)


def plot_matrix(
    values: np.ndarray,
    rows: Sequence[str],
    columns: Sequence[str],
    path: Path,
    title: str,
    cmap: str = "Blues",
) -> Path:
    """A labelled matrix as a heat map, small ones with their numbers in the cells.

    Shapes:
        values: (len(rows), len(columns))
    """
    plt = pyplot()
    values = np.asarray(values, dtype=float)
    R, C = values.shape
    figure, axes = plt.subplots(figsize=(max(4, 0.6 * C + 2), max(2.5, 0.4 * R + 1.5)), dpi=100)
    finite = np.where(np.isfinite(values), values, np.nan)
    axes.imshow(finite, cmap=cmap, aspect="auto")
    axes.set_xticks(range(C), columns, rotation=45, ha="right")
    axes.set_yticks(range(R), rows)
    if R * C <= MAX_ANNOTATED_CELLS:
        for (i, j), value in np.ndenumerate(values):
            axes.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=8, color="black")
    axes.set_title(title)
    return save(figure, path)


def plot_points(points: np.ndarray, labels: Sequence[str], path: Path, title: str) -> Path:
    """Labelled points in a plane (a 2-D embedding).

    Shapes:
        points: (V, 2)
    """
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(5, 5), dpi=100)
    axes.scatter(points[:, 0], points[:, 1], color="tab:blue")
    for (x, y), label in zip(points, labels, strict=True):
        axes.annotate(label, (x, y), textcoords="offset points", xytext=(4, 4))
    axes.axhline(0, color="grey", linewidth=0.5)
    axes.axvline(0, color="grey", linewidth=0.5)
    axes.set_title(title)
    return save(figure, path)


def plot_circle(pairs: np.ndarray, path: Path, title: str) -> Path:
    """Points (x, y) joined in order and numbered: a positional wiggle going round a circle.

    Shapes:
        pairs: (T, 2)
    """
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(5, 5), dpi=100)
    axes.plot(pairs[:, 0], pairs[:, 1], marker="o", color="tab:orange")
    for position, (x, y) in enumerate(pairs):
        axes.annotate(str(position), (x, y), textcoords="offset points", xytext=(4, 4))
    axes.set_aspect("equal")
    axes.set_title(title)
    return save(figure, path)


def plot_bars(panels: dict[str, Sequence[float]], labels: Sequence[str], path: Path) -> Path:
    """One bar chart per named panel, over the same labels (scores, softmax, argmax)."""
    plt = pyplot()
    figure, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 * len(panels)), dpi=100)
    for ax, (name, values) in zip(np.atleast_1d(axes), panels.items(), strict=True):
        ax.bar(range(len(labels)), values, color="tab:blue")
        ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
        ax.set_title(name)
    return save(figure, path)


def plot_histograms(
    before: dict[str, np.ndarray], after: dict[str, np.ndarray], path: Path
) -> Path:
    """Two panels of overlaid histograms: distributions before and after normalization."""
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5), dpi=100)
    for ax, (title, series) in zip(axes, [("before", before), ("after", after)], strict=True):
        for name, values in series.items():
            ax.hist(values, bins=40, alpha=0.5, label=name)
        ax.set_title(title)
        ax.legend(fontsize=8)
    return save(figure, path)


def plot_heads(probs: np.ndarray, tokens: Sequence[str], path: Path, title: str) -> Path:
    """Each head's attention probabilities side by side.

    Shapes:
        probs: (H, T, S), here T = S = len(tokens)
    """
    plt = pyplot()
    H = probs.shape[0]
    figure, axes = plt.subplots(1, H, figsize=(3.2 * H, 3.6), dpi=100)
    for head, ax in enumerate(np.atleast_1d(axes)):
        ax.imshow(probs[head], cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens if head == 0 else [], fontsize=7)
        ax.set_title(f"head {head}")
    figure.suptitle(title)
    return save(figure, path)


def plot_audio(
    waveform: np.ndarray, mel: np.ndarray, mfcc: np.ndarray, sample_rate: int, path: Path
) -> Path:
    """Waveform, log-mel spectrogram and MFCC matrix of one clip, on one time axis.

    Shapes:
        waveform: (L,)   mel: (M, N)   mfcc: (M', N)
    """
    plt = pyplot()
    seconds = len(waveform) / sample_rate
    figure, axes = plt.subplots(3, 1, figsize=(8, 7), dpi=100, sharex=True)
    axes[0].plot(np.arange(len(waveform)) / sample_rate, waveform, linewidth=0.5)
    axes[0].set_title("waveform")
    for ax, matrix, name in [(axes[1], mel, "log-mel spectrogram"), (axes[2], mfcc, "MFCC")]:
        ax.imshow(matrix, aspect="auto", origin="lower", extent=(0, seconds, 0, matrix.shape[0]))
        ax.set_title(name)
    axes[2].set_xlabel("time (s)")
    return save(figure, path)


def plot_ladder(scores: dict[str, dict[str, float]], path: Path) -> Path:
    """Two bar panels over the models: next-word accuracy, and perplexity on a log scale (the
    uniform guess's perplexity is the vocabulary size, tens of times the others')."""
    plt = pyplot()
    names = list(scores)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=100)
    for ax, metric, colour in [
        (axes[0], "accuracy", "tab:blue"),
        (axes[1], "perplexity", "tab:orange"),
    ]:
        values = [scores[name][metric] for name in names]
        bars = ax.bar(range(len(names)), values, color=colour)
        ax.bar_label(bars, [f"{v:.3g}" for v in values], fontsize=8)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_title(f"held-out next-word {metric}")
    axes[0].set_ylim(0, 1.08)
    axes[1].set_yscale("log")
    axes[1].set_ylim(bottom=1)  # perplexity 1 = always certain and right
    return save(figure, path)


def plot_attention_grid(
    probs: np.ndarray,
    queries: Sequence[str],
    keys: Sequence[str],
    path: Path,
    title: str,
    waveform: np.ndarray | None = None,
    sample_rate: int = SAMPLE_RATE,
) -> Path:
    """Every layer's and head's attention: rows = layers, columns = heads. With `waveform`
    (speech), the keys are audio positions: the x axis is time, the waveform drawn on top.

    Shapes:
        probs: (L, H, T, S)   queries: T labels   keys: S labels, or none with a waveform
    """
    plt = pyplot()
    L, H, T, S = probs.shape
    cell = min(4.0, max(2.2, 0.2 * max(T, S)))  # inches per map: readable labels, bounded
    extra = 1 if waveform is not None else 0
    figure = plt.figure(figsize=(cell * H + 1.5, cell * (L + 0.6 * extra) + 1), dpi=90)
    grid = figure.add_gridspec(L + extra, H, height_ratios=[0.6] * extra + [1] * L)
    seconds = 0.0 if waveform is None else len(waveform) / sample_rate
    if waveform is not None:
        top = figure.add_subplot(grid[0, :])
        top.plot(np.arange(len(waveform)) / sample_rate, waveform, linewidth=0.4)
        top.set_xlim(0, seconds)
        top.set_ylabel("waveform")
    for layer in range(L):
        for head in range(H):
            ax = figure.add_subplot(grid[layer + extra, head])
            if waveform is None:
                ax.imshow(probs[layer, head], cmap="viridis", vmin=0, vmax=1, aspect="auto")
                ax.set_xticks(range(S), keys if layer == L - 1 else [], rotation=90, fontsize=7)
            else:
                extent = (0, seconds, T - 0.5, -0.5)
                ax.imshow(probs[layer, head], cmap="magma", aspect="auto", extent=extent)
                ax.set_xlabel("time (s)" if layer == L - 1 else "")
            ax.set_yticks(range(T), queries if head == 0 else [], fontsize=7)
            ax.set_title(f"layer {layer} head {head}", fontsize=8)
    figure.suptitle(title)
    return save(figure, path)
