"""`glassformer explain` through its own small parser (cli/__init__.py wires it separately)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from glassformer.cli import HelpFormatter
from glassformer.cli.explain import add_explain_commands
from glassformer.errors import GlassformerError
from tests.explain.conftest import assert_png


def parse(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="glassformer")
    commands = parser.add_subparsers(dest="command", required=True)
    add_explain_commands(commands, HelpFormatter)
    return parser.parse_args(["explain", *words])


def test_one_section_prints_tables_and_writes_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    args = parse("markov", "--out", str(tmp_path))
    args.handler(args)
    printed = capsys.readouterr().out
    assert printed.startswith("== markov:")
    assert "transition matrix P(next | word)" in printed and "0.2" in printed
    assert_png(tmp_path / "markov-transitions.png")


def test_json_output_parses(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    args = parse("second-order", "--out", str(tmp_path), "--json")
    args.handler(args)
    result = json.loads(capsys.readouterr().out)
    assert result["values"]["after_ran"] == {"down": 0.4, "please": 0.6}
    assert "==" not in json.dumps(result), "no tables in JSON mode"
    assert "figures" not in result and not list(tmp_path.iterdir()), "nothing written to --out"


def test_unknown_section(tmp_path: Path) -> None:
    args = parse("nope", "--out", str(tmp_path))
    with pytest.raises(GlassformerError, match="unknown section"):
        args.handler(args)


def test_help_lists_every_section(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        parse("--help")
    text = capsys.readouterr().out
    assert "skips            second order with skips" in text
    assert "runs/explain" in text
