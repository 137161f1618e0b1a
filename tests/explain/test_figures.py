"""Every figure read as a reader would: no text outside the figure (titles, tick labels,
numbers), every cell's number readable on its cell; the checker itself catches both."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from glassformer.explain import plots
from tests.explain.conftest import checking_figures


def test_the_checker_finds_text_outside_and_text_without_contrast() -> None:
    figure, axes = plots.new_figure(figsize=(3, 3))
    axes.imshow(np.ones((2, 2)), cmap="Blues", vmin=0, vmax=1)  # every cell the darkest blue
    axes.text(0, 0, "0.99", color="black")  # black on navy
    axes.set_title("a title far too long to fit in a figure three inches wide, left unwrapped")
    figure.suptitle("over the panel", y=0.5)
    problems = plots.figure_problems(figure)
    plots.pyplot().close(figure)
    assert any("contrast" in p for p in problems), problems
    assert any("reaches outside" in p for p in problems), problems
    assert any("lies over a panel" in p for p in problems), problems


def test_the_checker_passes_a_figure_that_reads() -> None:
    figure, axes = plots.new_figure(figsize=(4, 3))
    image = axes.imshow(np.array([[0.0, 1.0]]), cmap="Blues", vmin=0, vmax=1)
    for column, value in enumerate([0.0, 1.0]):
        colour = plots.readable_on(image.cmap(image.norm(value)))
        axes.text(column, 0, f"{value:.1f}", ha="center", va="center", color=colour)
    axes.set_title("short")
    plots.suptitle(figure, "a figure title")
    problems = plots.figure_problems(figure)
    plots.pyplot().close(figure)
    assert problems == []


def test_every_explain_figure_reads(results: dict, figure_problems: dict) -> None:
    assert len(figure_problems) >= 15, sorted(figure_problems)  # every section drew
    found = {name: p for name, p in figure_problems.items() if p}
    assert not found, found


def test_cell_numbers_are_black_or_white_by_their_cell() -> None:
    assert plots.readable_on((0.03, 0.19, 0.42, 1)) == "white"  # Blues' darkest
    assert plots.readable_on((0.97, 0.98, 1.0, 1)) == "black"  # Blues' lightest
    assert plots.contrast((0, 0, 0), (1, 1, 1)) == pytest.approx(21.0)


def test_the_attention_grids_and_cross_attention_read(tmp_path: Path) -> None:
    """The figures `attention` and the demo draw: a speech grid with its waveform and a long
    title, a text grid with many tokens, one sentence's cross-attention."""
    found: dict[str, list[str]] = {}
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(30), size=(2, 4, 9))  # (L, H, T, S)
    words = [f"token{i}" for i in range(30)]
    long_title = "cross-attention of whisper-tiny.en over a recorded command: " * 2
    with checking_figures(found):
        plots.plot_attention_grid(
            probs,
            words[:9],
            [],
            tmp_path / "speech.png",
            long_title,
            waveform=rng.standard_normal(16_000).astype(np.float32),
        )
        square = rng.dirichlet(np.ones(30), size=(2, 2, 30))
        plots.plot_attention_grid(square, words, words, tmp_path / "text.png", "self-attention")
        plots.plot_cross_attention(probs[0, 0], words[:9], 0.02, tmp_path / "cross.png")
    assert set(found) == {"speech.png", "text.png", "cross.png"}
    assert not any(found.values()), found


def test_the_loss_curve_shows_every_step(tmp_path: Path) -> None:
    """The demo's curve was cut at three times the lowest loss, hiding its first steps."""
    from glassformer.train.curves import plot_loss_curve

    rows = [{"step": s, "train_loss": 9.0 * 0.99**s + 0.3} for s in range(1, 800)]
    captured = {}
    pyplot = plots.pyplot()
    original = pyplot.close

    def keep(figure):  # noqa: ANN001, ANN202
        captured["limits"] = figure.axes[0].get_ylim()
        return original(figure)

    pyplot.close = keep
    try:
        plot_loss_curve(rows, tmp_path / "loss.png")
    finally:
        pyplot.close = original
    low, high = captured["limits"]
    assert low <= 0.3 and high >= max(r["train_loss"] for r in rows), captured
    assert json.dumps(captured)  # plain numbers
