"""`glassformer tokenizer ...` end to end under tmp_path."""

from __future__ import annotations

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
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: list[str], message: str, trained: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty.txt").write_text("")
    replace = {
        "EMPTY": str(tmp_path / "empty.txt"),
        "CORPUS": str(tmp_path / "corpus.txt"),
        "TOK": str(trained),
    }
    capsys.readouterr()
    assert main(["tokenizer", *[replace.get(a, a) for a in args]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
