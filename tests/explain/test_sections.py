"""The registry, the result format, the terminal tables and the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.explain.sections import SECTIONS, render_result, run_section
from glassformer.explain.text import format_number, render_table, table
from tests.explain.conftest import assert_png


def test_sections_follow_the_article() -> None:
    assert list(SECTIONS)[:5] == ["one-hot", "markov", "second-order", "skips", "attention"]
    assert list(SECTIONS)[-2:] == ["bpe", "audio"] and len(SECTIONS) == 15


def test_every_result_is_json_and_renders(results: dict) -> None:
    for name, result in results.items():
        assert result["section"] == name
        assert set(result) == {"section", "title", "tables", "values", "notes", "figures"}
        json.loads(json.dumps(result, allow_nan=False))
        text = render_result(result)
        assert text.startswith(f"== {name}:")
        assert all(t["title"] in text for t in result["tables"].values())


def test_every_figure_is_a_png_in_the_out_dir(results: dict, explain_dir: Path) -> None:
    figures = [path for result in results.values() for path in result["figures"]]
    assert len(figures) >= 18
    for path in figures:
        assert Path(path).parent == explain_dir
        assert_png(path)


def test_unknown_section_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(GlassformerError, match="unknown section 'nope'"):
        run_section("nope", tmp_path)


def test_numbers_render_short() -> None:
    assert [format_number(x) for x in (1.0, 0.25, -1.0, 0.1234, 512, -0.0001, "-inf")] == [
        "1",
        "0.25",
        "-1",
        "0.123",
        "512",
        "0",
        "-inf",
    ]
    assert format_number(-613.44) == "-613.4"


def test_table_rendering_is_aligned() -> None:
    text = render_table(table("P", ["my", "show"], ["files", "me"], [[0.3, 0], [0, 1.0]]))
    assert text.splitlines() == ["P", "        files  me", "  my      0.3   0", "  show      0   1"]


def test_table_checks_its_shape() -> None:
    with pytest.raises(ValueError, match="row lengths"):
        table("bad", ["a"], ["x", "y"], [[1]])
