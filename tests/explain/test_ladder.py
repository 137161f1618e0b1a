"""The ladder on the default corpus: the ordering the article predicts, and the CLI's errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from glassformer.cli import HelpFormatter
from glassformer.cli.explain import add_explain_commands
from glassformer.errors import GlassformerError
from glassformer.explain.ladder import LadderConfig, run_ladder
from tests.explain.conftest import assert_png

FAST = LadderConfig(steps=200)  # enough for both GPTs on this corpus, about 4 s on one core


@pytest.fixture(scope="module")
def ladder(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_ladder(None, tmp_path_factory.mktemp("ladder"), FAST)


def parse(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="glassformer")
    add_explain_commands(parser.add_subparsers(dest="command", required=True), HelpFormatter)
    return parser.parse_args(list(words))


def test_skips_beat_second_order_on_the_long_range_example(ladder: dict) -> None:
    probes = ladder["values"]["probes"]
    for label in ("battery .. it ran ->", "program .. it ran ->"):
        models = probes[label]["models"]
        truth = probes[label]["next"]
        assert models["skips"]["predicted"] == truth, (label, models["skips"])
        assert models["skips"]["p_expected"] > models["second order"]["p_expected"], label
        # second order sees only "it ran": about 50/50, whatever came eight words earlier
        assert abs(models["second order"]["p_expected"] - 0.5) < 0.1, models["second order"]


def test_masking_sharpens_the_vote_to_one_against_zero(ladder: dict) -> None:
    for label in ("battery .. it ran ->", "program .. it ran ->"):
        models = ladder["values"]["probes"][label]["models"]
        assert models["skips"]["p_expected"] < 0.7, "unmasked: right, but barely"
        # 1 against 0 before smoothing; smoothing (e = 0.01) leaves 0.99 + 0.01 / V
        assert models["masked skips"]["p_expected"] > 0.99, models["masked skips"]


def test_attention_reaches_the_masked_skips_and_counting_climbs(ladder: dict) -> None:
    scores = ladder["values"]["scores"]
    accuracy = {name: s["accuracy"] for name, s in scores.items()}
    assert accuracy["attention"] >= accuracy["masked skips"], accuracy
    assert accuracy["uniform"] < accuracy["first order"] < accuracy["second order"], accuracy
    assert accuracy["second order"] <= accuracy["skips"] <= accuracy["masked skips"], accuracy
    corpus = ladder["values"]["corpus"]
    assert scores["uniform"]["perplexity"] == pytest.approx(corpus["vocabulary"])
    for label, probe in ladder["values"]["probes"].items():
        assert probe["models"]["attention"]["predicted"] == probe["next"], label


def test_png_is_written(ladder: dict) -> None:
    (figure,) = ladder["figures"]
    assert figure.endswith("ladder.png")
    assert_png(figure)


def test_cli_with_a_corpus_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus = tmp_path / "corpus.txt"
    lines = [f"the {a} cat sat on the {b} mat" for a in ("red", "big", "old") for b in "xyz"]
    corpus.write_text("\n".join(lines * 3) + "\n\n")
    args = parse("ladder", "--corpus", str(corpus), "--out", str(tmp_path), "--json")
    args.handler(args)
    result = json.loads(capsys.readouterr().out)
    assert result["values"]["corpus"]["source"] == str(corpus)
    assert len(result["values"]["probes"]) == 3, "contexts found in the held-out sentences"
    assert set(result["values"]["scores"]) >= {"uniform", "skips", "attention"}
    assert "figures" not in result and not list(tmp_path.glob("*.png")), "JSON instead of PNGs"


@pytest.mark.parametrize("content", [None, "", "\n\n", "one\ntwo\n"])
def test_missing_or_empty_corpus_is_a_one_line_error(tmp_path: Path, content: str | None) -> None:
    corpus = tmp_path / "corpus.txt"
    if content is not None:
        corpus.write_text(content)
    args = parse("ladder", "--corpus", str(corpus), "--out", str(tmp_path))
    with pytest.raises(GlassformerError) as error:
        args.handler(args)
    assert "\n" not in str(error.value) and str(corpus) in str(error.value)


def test_the_ladder_gives_back_the_callers_threads(tmp_path: Path) -> None:
    """run_ladder limits torch to 2 threads for its tiny models, and restores the caller's."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        run_ladder(None, tmp_path, LadderConfig(steps=2))
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
