"""Figures: pure functions from data to a PNG file (matplotlib imported only here, lazily).

Every function takes numbers and a path, draws with the Agg backend (no display needed),
writes the PNG and closes the figure. Figures use matplotlib's constrained layout (titles,
suptitles, tick labels and colour bars are given room instead of overlapping), wrap titles
to their axes, write cell numbers in black or white by the cell's colour, and give every
heat map a colour bar. `figure_problems` is what tests/explain/test_figures.py asks of each
figure: no text outside the figure, no cell number without contrast. The numbers drawn come
from the explain sections, and tests assert on those.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from glassformer.audio.io import SAMPLE_RATE

MAX_ANNOTATED_CELLS = 200  # heat maps up to this size get their numbers written in the cells
MIN_CONTRAST = 4.5  # WCAG's ratio for normal text: a cell's number against the cell's colour
CHARACTER_WIDTH = 0.55  # an average character's width, in units of the font size


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only, never a window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def new_figure(rows: int = 1, columns: int = 1, **options: Any) -> tuple[Any, Any]:
    """plt.subplots with constrained layout (the room titles and colour bars need)."""
    return pyplot().subplots(rows, columns, layout="constrained", **options)


def wrap_titles(figure: Any) -> None:
    """Break each axes title into lines that fit its width."""
    inches = figure.get_size_inches()[0]
    for ax in figure.axes:
        wrap_text(ax.title, ax.get_position().width * inches * 72)  # points


def suptitle(figure: Any, title: str) -> None:
    """The figure's title, broken into lines that fit the figure's width."""
    wrap_text(figure.suptitle(title), figure.get_size_inches()[0] * 72)


def wrap_text(text: Any, points: float) -> None:
    characters = max(8, int(points / (text.get_fontsize() * CHARACTER_WIDTH)))
    flat = " ".join(text.get_text().split())
    if flat:
        text.set_text(textwrap.fill(flat, characters))


def save(figure: Any, path: Path) -> Path:
    """Write the figure as a PNG (atomically, never over a device: glassformer/files.py) and
    close it."""
    from glassformer.files import atomic_file

    wrap_titles(figure)
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
    T, S = probs.shape
    figure, axes = new_figure(figsize=(max(6, S * 0.08), max(3, T * 0.3 + 1.2)), dpi=110)
    image = axes.imshow(
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
    figure.colorbar(image, ax=axes, label="attention weight")
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
    values = np.asarray(values, dtype=float)
    R, C = values.shape
    figure, axes = new_figure(figsize=(max(4.5, 0.6 * C + 3), max(3, 0.4 * R + 2)), dpi=100)
    finite = np.where(np.isfinite(values), values, np.nan)
    image = axes.imshow(finite, cmap=cmap, aspect="auto")
    axes.set_xticks(range(C), columns, rotation=45, ha="right")
    axes.set_yticks(range(R), rows)
    if R * C <= MAX_ANNOTATED_CELLS:
        for (i, j), value in np.ndenumerate(values):
            colour = readable_on(image.cmap(image.norm(finite[i, j])))
            axes.text(j, i, f"{value:.2g}", ha="center", va="center", fontsize=8, color=colour)
    axes.set_title(title)
    figure.colorbar(image, ax=axes, shrink=0.9)
    return save(figure, path)


def luminance(rgba: Sequence[float]) -> float:
    """WCAG's relative luminance of an sRGB colour (components 0-1).

    Example: luminance((1, 1, 1, 1)) -> 1.0; luminance((0, 0, 0, 1)) -> 0.0
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: Sequence[float], b: Sequence[float]) -> float:
    """WCAG's contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def readable_on(background: Sequence[float]) -> str:
    """Black or white: whichever contrasts more with `background` (a cell's colour)."""
    return (
        "black" if contrast(background, (0, 0, 0)) >= contrast(background, (1, 1, 1)) else "white"
    )


def figure_problems(figure: Any) -> list[str]:
    """What a reader would trip over, after a draw: text (titles, tick labels, numbers) reaching
    outside the figure, a figure's title over a panel, and a cell's number with less than
    MIN_CONTRAST against its cell."""
    from matplotlib.colors import to_rgba

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    bounds = figure.bbox
    problems = []
    undrawn = undrawn_tick_labels(figure)
    for text in figure.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_color")):
        if not text.get_visible() or not str(text.get_text()).strip() or id(text) in undrawn:
            continue
        box = text.get_window_extent(renderer)
        outside = box.x0 < bounds.x0 - 1 or box.x1 > bounds.x1 + 1
        if outside or box.y0 < bounds.y0 - 1 or box.y1 > bounds.y1 + 1:
            problems.append(f"text {text.get_text()!r} reaches outside the figure")
    title = figure._suptitle  # matplotlib keeps no public getter for the suptitle's artist
    if title is not None and title.get_text().strip():
        box = title.get_window_extent(renderer)
        for ax in figure.axes:
            if box.overlaps(ax.get_window_extent(renderer)):
                problems.append(f"the figure's title {title.get_text()!r} lies over a panel")
                break
    for ax in figure.axes:
        images = ax.get_images()
        if not images:
            continue
        image, array = images[0], np.asarray(images[0].get_array(), dtype=float)
        for text in ax.texts:
            column, row = (int(round(v)) for v in text.get_position())
            if 0 <= row < array.shape[0] and 0 <= column < array.shape[1]:
                cell = image.cmap(image.norm(array[row, column]))
                ratio = contrast(cell, to_rgba(text.get_color()))
                if ratio < MIN_CONTRAST:
                    problems.append(f"cell text {text.get_text()!r}: contrast {ratio:.1f}")
    return problems


def undrawn_tick_labels(figure: Any) -> set[int]:
    """The ids of tick labels a draw skips: a locator proposes ticks past the axis' ends, and
    matplotlib keeps their labels as visible artists although it never draws them."""
    skipped = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            slack = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - slack <= tick.get_loc() <= high + slack:
                    skipped.update({id(tick.label1), id(tick.label2)})
    return skipped


def plot_points(points: np.ndarray, labels: Sequence[str], path: Path, title: str) -> Path:
    """Labelled points in a plane (a 2-D embedding).

    Shapes:
        points: (V, 2)
    """
    figure, axes = new_figure(figsize=(5, 5), dpi=100)
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
    figure, axes = new_figure(figsize=(5, 5), dpi=100)
    axes.plot(pairs[:, 0], pairs[:, 1], marker="o", color="tab:orange")
    for position, (x, y) in enumerate(pairs):
        axes.annotate(str(position), (x, y), textcoords="offset points", xytext=(4, 4))
    axes.set_aspect("equal")
    axes.set_title(title)
    return save(figure, path)


def plot_bars(panels: dict[str, Sequence[float]], labels: Sequence[str], path: Path) -> Path:
    """One bar chart per named panel, over the same labels (scores, softmax, argmax)."""
    figure, axes = new_figure(len(panels), 1, figsize=(7, 2.4 * len(panels)), dpi=100)
    for ax, (name, values) in zip(np.atleast_1d(axes), panels.items(), strict=True):
        ax.bar(range(len(labels)), values, color="tab:blue")
        ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
        ax.set_title(name)
    return save(figure, path)


def plot_histograms(
    before: dict[str, np.ndarray], after: dict[str, np.ndarray], path: Path
) -> Path:
    """Two panels of overlaid histograms: distributions before and after normalization."""
    figure, axes = new_figure(1, 2, figsize=(10, 3.5), dpi=100)
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
    H = probs.shape[0]
    figure, axes = new_figure(1, H, figsize=(3.2 * H + 1.2, 4.2), dpi=100)
    for head, ax in enumerate(np.atleast_1d(axes)):
        image = ax.imshow(probs[head], cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens if head == 0 else [], fontsize=7)
        ax.set_title(f"head {head}")
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    suptitle(figure, title)
    return save(figure, path)


def plot_audio(
    waveform: np.ndarray, mel: np.ndarray, mfcc: np.ndarray, sample_rate: int, path: Path
) -> Path:
    """Waveform, log-mel spectrogram and MFCC matrix of one clip, on one time axis.

    Shapes:
        waveform: (L,)   mel: (M, N)   mfcc: (M', N)
    """
    from matplotlib.ticker import MaxNLocator

    seconds = len(waveform) / sample_rate
    figure, axes = new_figure(3, 1, figsize=(8, 7.5), dpi=100, sharex=True)
    axes[0].plot(np.arange(len(waveform)) / sample_rate, waveform, linewidth=0.5)
    axes[0].set_title("waveform")
    # c0 (the frame's loudness) is far larger than the rest: the MFCC panel's colours span
    # coefficients 1 on, so that their pattern shows (c0 is then the scale's dark end)
    rest = mfcc[1:] if len(mfcc) > 1 else mfcc
    limit = float(np.percentile(np.abs(rest), 99)) or 1.0
    panels = [
        (axes[1], mel, "log-mel spectrogram", "mel band", {}, "log power"),
        (
            axes[2],
            mfcc,
            "MFCC (colours span c1 on; c0, the loudness, is off the scale)",
            "coefficient",
            {"cmap": "coolwarm", "vmin": -limit, "vmax": limit},
            "value",
        ),
    ]
    for ax, matrix, name, label, colours, unit in panels:
        image = ax.imshow(
            matrix,
            aspect="auto",
            origin="lower",
            extent=(0, seconds, -0.5, matrix.shape[0] - 0.5),
            **colours,
        )
        ax.set_title(name)
        ax.set_ylabel(label)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # bands and coefficients: whole
        figure.colorbar(image, ax=ax, label=unit)
    axes[2].set_xlabel("time (s)")
    return save(figure, path)


def plot_ladder(scores: dict[str, dict[str, float]], path: Path) -> Path:
    """Two bar panels over the models: next-word accuracy, and perplexity on a log scale (the
    uniform guess's perplexity is the vocabulary size, tens of times the others')."""
    names = list(scores)
    figure, axes = new_figure(1, 2, figsize=(11, 4.5), dpi=100)
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
    L, H, T, S = probs.shape
    cell = min(4.0, max(2.2, 0.2 * max(T, S)))  # inches per map: readable labels, bounded
    extra = 1 if waveform is not None else 0
    size = (cell * H + 2.5, cell * (L + 0.6 * extra) + 1.8)
    figure = pyplot().figure(figsize=size, dpi=90, layout="constrained")
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
                image = ax.imshow(probs[layer, head], cmap="viridis", vmin=0, vmax=1, aspect="auto")
                ax.set_xticks(range(S), keys if layer == L - 1 else [], rotation=90, fontsize=7)
            else:
                extent = (0, seconds, T - 0.5, -0.5)
                image = ax.imshow(
                    probs[layer, head], cmap="magma", vmin=0, vmax=1, aspect="auto", extent=extent
                )
                ax.set_xlabel("time (s)" if layer == L - 1 else "")
            ax.set_yticks(range(T), queries if head == 0 else [], fontsize=7)
            ax.set_title(f"layer {layer} head {head}", fontsize=8)
    figure.colorbar(image, ax=figure.axes[extra:], shrink=0.6, label="attention weight")
    suptitle(figure, title)
    return save(figure, path)
