"""`glassformer train TASK`: one block for the three tasks (cli/train.py).

Each task's skip-list is its withheld model fields (derived from the data, or fixed by the
task), which no flag and no [model] key sets; and every train command prints its resolved
[model], [train] and [data] tables, in the form --config reads back.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import tomllib
from pathlib import Path

import pytest

from glassformer.cli import build_parser, main
from glassformer.cli.train import RUNS, TaskRun, announce, resolve_settings
from glassformer.errors import GlassformerError
from tests.helpers import TINY_GRAMMAR, reversal_pairs
from tests.installed import HAS_ESPEAK, missing

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n" * 40
TABLE_LINE = re.compile(r"^\[\w+\]$|^\w+ = ")  # a line of a printed TOML table


def train_parser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    tasks = next(
        a for a in commands.choices["train"]._actions if isinstance(a, argparse._SubParsersAction)
    )
    return tasks.choices[name]


def train_args(run: TaskRun, *extra: str) -> argparse.Namespace:
    """`train TASK --preset tiny` parsed, for resolve_settings (every task has a tiny preset)."""
    return build_parser().parse_args(["train", run.name, "--preset", "tiny", *extra])


@pytest.mark.parametrize("name", list(RUNS))
def test_the_skip_list_is_the_withheld_fields(name: str) -> None:
    run = RUNS[name]
    group = next(
        g for g in train_parser(name)._action_groups if g.title == f"{run.model.__name__} fields"
    )
    flags = {action.dest for action in group._group_actions}
    fields = {f.name for f in dataclasses.fields(run.model)}
    assert fields - flags == set(run.withheld()) == {*run.derived, *run.fixed}
    assert all(reason for reason in run.fixed.values()), "each fixed field says why"


@pytest.mark.parametrize("name", list(RUNS))
def test_a_withheld_field_in_the_model_table_is_refused(name: str, tmp_path: Path) -> None:
    run = RUNS[name]
    for field, value in run.withheld().items():
        toml = tmp_path / "run.toml"
        toml.write_text(f"[model]\n{field} = {json.dumps(value)}\n")
        with pytest.raises(GlassformerError, match=f"{field} come.s. from the data or the task"):
            resolve_settings(run, train_args(run, "--config", str(toml)))


@pytest.mark.parametrize(
    ("name", "preset"), [(name, preset) for name, run in RUNS.items() for preset in run.presets]
)
def test_every_preset_resolves_with_the_withheld_stand_ins(name: str, preset: str) -> None:
    run = RUNS[name]
    model_fields, _, _ = resolve_settings(run, train_args(run), run.presets[preset])
    assert not set(model_fields) & set(run.withheld())


def test_a_run_that_is_not_rank_0_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("RANK", "1")  # torchrun's second process
    announce("# header", {"d_model": 32}, argparse.Namespace(steps=2), argparse.Namespace())
    assert capsys.readouterr().out == ""


def test_train_lm_on_a_rank_that_is_not_0_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The command's own lines (its tables, the result, "checkpoints:") come from rank 0
    alone. (The loop's per-evaluation lines, on stderr, follow its process group's rank,
    which RANK alone does not make: with WORLD_SIZE unset this process is the whole run.)"""
    monkeypatch.setenv("RANK", "1")  # torchrun's second process
    steps = ["--preset", "tiny", "--steps", "2", "--eval-every", "2", "--out", str(tmp_path / "r")]
    capsys.readouterr()
    assert main(["train", "lm", *lm_argv(tmp_path), *steps]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "step 2: train loss" in err, (out, err)


def lm_argv(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    return ["--data", str(corpus)]


def translation_argv(tmp_path: Path) -> list[str]:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{s}\t{t}\n" for s, t in reversal_pairs(120, seed=3)))
    return ["--data", str(pairs)]


def speech_argv(tmp_path: Path) -> list[str]:
    if not HAS_ESPEAK:
        missing("espeak-ng")
    grammar, data = tmp_path / "grammar.yaml", tmp_path / "data"
    grammar.write_text(TINY_GRAMMAR)
    synth = ["voice", "synth", "--grammar", str(grammar), "--out", str(data), "--count", "6"]
    assert main(synth) == 0
    return ["--data", str(data)]


@pytest.mark.parametrize(
    ("name", "data_argv"),
    [("lm", lm_argv), ("translation", translation_argv), ("speech", speech_argv)],
)
def test_every_train_command_prints_its_resolved_tables(
    name: str, data_argv, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run, out = RUNS[name], tmp_path / "run"
    steps = ["--preset", "tiny", "--steps", "2", "--eval-every", "2", "--out", str(out)]
    argv = ["train", name, *data_argv(tmp_path), *steps]
    capsys.readouterr()
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    first = lines.index("[model]")
    assert lines[first - 1].startswith(f"# glassformer train {name}"), lines[: first + 1]
    tables = []
    for line in lines[first:]:
        if not TABLE_LINE.match(line):
            break
        tables.append(line)
    printed = tomllib.loads("\n".join(tables))
    assert list(printed) == ["model", "train", "data"]
    saved = json.loads((out / "last" / "config.json").read_text())
    assert printed["train"] == saved["train"] and printed["data"] == saved["data"]
    assert printed["model"] == {k: saved["config"][k] for k in printed["model"]}
    assert printed["model"] and not set(printed["model"]) & set(run.withheld())
    # the tables are a --config file that resolves to the same settings
    toml = tmp_path / "printed.toml"
    toml.write_text("\n".join(tables))
    model_fields, train_config, data_config = resolve_settings(
        run, train_args(run, "--config", str(toml))
    )
    assert model_fields == printed["model"]
    assert vars(train_config) == printed["train"] and vars(data_config) == printed["data"]
