"""The glassformer command: instant help, one-line errors, info and demo on real checkpoints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from glassformer.cli import main
from glassformer.models.gpt import GPT, GPTConfig
from glassformer.train.checkpoint import save_checkpoint
from tests.installed import needs_espeak


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "glassformer", *args], capture_output=True, text=True, timeout=120
    )


def test_help_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from glassformer.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch imported by --help'\n"
        "import glassformer\n"
        "assert 'torch' not in sys.modules, 'torch imported by import glassformer'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "info" in result.stdout and "demo" in result.stdout


def test_info_prints_kind_config_and_parameter_count(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    model = GPT(GPTConfig.tiny())
    save_checkpoint(model, tmp_path / "ckpt")
    assert main(["info", str(tmp_path / "ckpt")]) == 0
    out = capsys.readouterr().out
    n_params = sum(p.numel() for p in model.parameters())
    assert "gpt checkpoint" in out and f"{n_params:,}" in out and "d_model" in out
    save_checkpoint(model, tmp_path / "run" / "last")  # a run directory: its last/ checkpoint
    assert main(["info", str(tmp_path / "run")]) == 0
    assert f"{tmp_path / 'run' / 'last'}: gpt checkpoint" in capsys.readouterr().out


@pytest.mark.parametrize("broken", ["missing", "empty-dir", "garbage"])
def test_info_on_a_bad_checkpoint_exits_2_with_one_line(tmp_path: Path, broken: str) -> None:
    path = tmp_path / "ckpt"
    if broken != "missing":
        path.mkdir()
    if broken == "garbage":
        (path / "config.json").write_text("[]")
    result = run("info", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("glassformer: error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_unknown_command_is_a_usage_error() -> None:
    result = run("frobnicate")
    assert result.returncode == 2 and "invalid choice" in result.stderr


@needs_espeak
def test_demo_runs_the_main_job_end_to_end_at_a_tiny_size(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    args = [
        "demo",
        "--out",
        str(tmp_path / "demo"),
        "--clips",
        "40",
        "--steps",
        "20",
        "--preset",
        "tiny",
        "--test-clips",
        "4",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1/4" in out and "4/4" in out and "command acceptance" in out
    assert "from scratch" in out and "real human speech" in out
    assert (tmp_path / "demo" / "cross_attention_scratch.png").is_file()
    assert "2/4 synthesizing 40 commands" in out
    assert "why: the article's model, trained minutes ago on synthesized voices" in out
    saved = tmp_path / "demo" / "test-commands"  # the test commands, kept for reuse
    labels = (saved / "labels.tsv").read_text().splitlines()
    assert len(labels) == 4 and all(line.count("\t") == 1 for line in labels)
    for condition in ("clean", "noisy"):
        assert sorted(p.name for p in (saved / condition).iterdir()) == sorted(
            line.split("\t")[0] for line in labels
        )
    grammar = "glassformer/voice/grammars/appointments.yaml"
    evaluate = ["evaluate", str(tmp_path / "demo"), "--audio-dir", str(saved / "clean")]
    assert main([*evaluate, "--labels", str(saved / "labels.tsv"), "--grammar", grammar]) == 0
    assert "command acceptance" in capsys.readouterr().out  # what the demo printed it reads
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "reusing the trained model" in again and "2/4 reusing the 40 synthesized" in again
    (tmp_path / "demo" / "trained-on.txt").write_text("clips made another way\n")
    assert main(args) == 0  # a model trained on other clips is not reused: trained afresh
    assert "3/4 training the speech Transformer" in capsys.readouterr().out
