"""Every explain section runs once per session into a temporary folder; tests read the results."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from glassformer.explain.sections import SECTIONS, run_section

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def explain_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("explain")


@pytest.fixture(scope="session")
def figure_problems() -> dict[str, list[str]]:
    """Each figure the sections wrote -> what plots.figure_problems found in it."""
    return {}


@contextmanager
def checking_figures(found: dict[str, list[str]]) -> Iterator[None]:
    """While open, every figure plots.save writes is first checked: its file name ->
    what plots.figure_problems found in it, in the layout the PNG will have."""
    from glassformer.explain import plots

    original = plots.save

    def checked_save(figure, path):  # noqa: ANN001, ANN202
        plots.wrap_titles(figure)  # as save() does first
        found[Path(path).name] = plots.figure_problems(figure)
        return original(figure, path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "save", checked_save)
        yield


@pytest.fixture(scope="session")
def results(explain_dir: Path, figure_problems: dict[str, list[str]]) -> dict[str, dict]:
    """Each section's result dict, by name (all figures written under explain_dir), every
    figure checked as it is saved (tests/explain/test_figures.py reads the findings)."""
    with checking_figures(figure_problems):
        return {name: run_section(name, explain_dir) for name in SECTIONS}


def assert_png(path: str | Path) -> None:
    """A real PNG: the magic bytes, and PIL can decode the whole image."""
    from PIL import Image

    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    with Image.open(path) as image:
        image.load()
        assert image.size[0] > 50 and image.size[1] > 50, f"{path}: {image.size}"
