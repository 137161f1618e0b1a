"""`glassformer tokenizer ...` end to end under tmp_path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from glassformer.cli import main
from tests.helpers import MULTILINGUAL


@pytest.fixture
def trained(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(MULTILINGUAL * 3, encoding="utf-8")
    out = tmp_path / "tok.json"
    assert (
        main(
            [
                "tokenizer",
                "train",
                str(corpus),
                "--vocab-size",
                "400",
                "--out",
                str(out),
                "--special",
                "<eos>",
            ]
        )
        == 0
    )
    return out


def test_train_encode_decode_show_export(trained: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    assert main(["tokenizer", "encode", str(trained), "Grüße 🎉<eos>", "--allow-special"]) == 0
    ids = capsys.readouterr().out.split()
    assert ids[-1] == "399"
    assert main(["tokenizer", "decode", str(trained), *ids]) == 0
    assert capsys.readouterr().out == "Grüße 🎉<eos>\n"
    assert main(["tokenizer", "show", "--plain", str(trained), "the lazy dog"]) == 0
    assert "|" in capsys.readouterr().out
    hf = trained.parent / "hf.json"
    assert main(["tokenizer", "export", str(trained), "--to", "hf", "--out", str(hf)]) == 0
    assert hf.is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "/nonexistent.txt", "--vocab-size", "300", "--out", "x.json"], "no such file"),
        (["train", "EMPTY", "--vocab-size", "300", "--out", "x.json"], "training text is empty"),
        (["train", "CORPUS", "--vocab-size", "100", "--out", "x.json"], "is below 256 bytes"),
        (["encode", "/nonexistent.json", "hi"], "no such tokenizer file"),
        (["decode", "TOK", "1", "two"], "token ids must be integers"),
        (["decode", "TOK", "99999"], "token id 99999 is not in"),
        (["train", "CORPUS", "--vocab-size", "300", "--out", "OUT", "--special", ""], "is empty"),
        (
            ["train", "CORPUS", "--vocab-size", "300", "--out", "OUT", "--special", "<e>", "<e>"],
            "--special: special token '<e>' is given twice",
        ),
        (
            ["train", "CORPUS", "--vocab-size", "300", "--out", "OUT", "--pattern", "(a"],
            "--pattern: pattern '(a' is not a valid regex",
        ),
        (
            ["train", "LATIN", "--vocab-size", "300", "--out", "OUT"],
            "not UTF-8 text (byte offset 3",
        ),
        (["encode", "LATIN", "hi"], "not UTF-8 text (byte offset 3"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: list[str], message: str, trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "latin.txt").write_bytes("abcé".encode("latin-1"))
    out = tmp_path / "new" / "out.json"
    replace = {
        "EMPTY": str(tmp_path / "empty.txt"),
        "CORPUS": str(tmp_path / "corpus.txt"),
        "LATIN": str(tmp_path / "latin.txt"),
        "TOK": str(trained),
        "OUT": str(out),
    }
    capsys.readouterr()
    assert main(["tokenizer", *[replace.get(a, a) for a in args]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.parent.exists(), "nothing is written after an error"


def run_without_torch(arguments: list[str]) -> None:
    """Run `python -X importtime ARGUMENTS` and fail if it imported torch."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    torch_lines = [line for line in result.stderr.splitlines() if re.search(r"\|\s+torch$", line)]
    assert not torch_lines, f"torch was imported: {torch_lines}"


def test_tokenizer_handlers_never_import_torch(tmp_path: Path) -> None:
    """train, encode, decode, show and export, each through its own handler."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(MULTILINGUAL, encoding="utf-8")
    tok, hf = tmp_path / "tok.json", tmp_path / "hf.json"
    code = f"""
import argparse, sys
from glassformer.cli.tokenizer import add_tokenizer_commands
parser = argparse.ArgumentParser()
add_tokenizer_commands(parser.add_subparsers(), argparse.HelpFormatter)
for words in [
    ["tokenizer", "train", {str(corpus)!r}, "--vocab-size", "300", "--out", {str(tok)!r}],
    ["tokenizer", "encode", {str(tok)!r}, "hello"],
    ["tokenizer", "decode", {str(tok)!r}, "104", "105"],
    ["tokenizer", "show", "--plain", {str(tok)!r}, "hello"],
    ["tokenizer", "export", {str(tok)!r}, "--to", "hf", "--out", {str(hf)!r}],
]:
    args = parser.parse_args(words)
    args.handler(args)
assert "torch" not in sys.modules
"""
    run_without_torch(["-c", code])
    assert tok.is_file() and hf.is_file()


def test_tokenizer_train_command_never_imports_torch(tmp_path: Path) -> None:
    """The whole command, parser included: `python -m glassformer tokenizer train ...`."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(MULTILINGUAL, encoding="utf-8")
    out = tmp_path / "tok.json"
    run_without_torch(
        ["-m", "glassformer", "tokenizer", "train", str(corpus), "--vocab-size", "300"]
        + ["--out", str(out)]
    )
    assert out.is_file()
