"""Text completion end to end on a small file: data cache, training, generation, evaluation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from glassformer.cli import main
from glassformer.decoding.search import DecodeConfig
from glassformer.tasks.lm.config import LM_PRESETS, LMDataConfig
from glassformer.tasks.lm.inference import evaluate_lm, generate_text, load_lm
from glassformer.tasks.lm.training import train_lm
from glassformer.tokenizer.char import CharTokenizer
from glassformer.train.config import TrainConfig
from glassformer.train.data import prepare_token_data, sample_blocks, token_dtype

TEXT = (
    "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 40
)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def test_token_file_is_cached_split_and_sampled(corpus: Path, tmp_path: Path) -> None:
    tokenizer = CharTokenizer.train([TEXT])
    data = prepare_token_data([corpus], tokenizer, tmp_path / "cache")
    assert data.tokens.dtype == np.uint16 and token_dtype(70_000) == np.uint32
    assert len(data.tokens) == len(TEXT) and data.n_train == int(len(TEXT) * 0.9)
    assert tokenizer.decode(data.val.tolist()) == TEXT[data.n_train :]
    token_file = next((tmp_path / "cache").glob("*/tokens.bin"))
    before = token_file.stat().st_mtime_ns
    prepare_token_data([corpus], tokenizer, tmp_path / "cache")
    assert token_file.stat().st_mtime_ns == before, "the second call reuses the cache"
    x, y = sample_blocks(data.train, 4, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16) and torch.equal(x[:, 1:], y[:, :-1])


def test_train_generate_evaluate(corpus: Path, tmp_path: Path) -> None:
    model_fields, train_fields = LM_PRESETS["tiny"].model, LM_PRESETS["tiny"].train
    train_config = TrainConfig(**{**train_fields, "steps": 120, "lr": 1e-2, "device": "cpu"})
    result = train_lm(
        [corpus],
        model_fields,
        train_config,
        LMDataConfig(block_size=32),
        tmp_path / "run",
        progress=False,
    )
    assert result.val_loss < 1.5, result  # a repeated text is easy to learn
    model, tokenizer = load_lm(tmp_path / "run")
    streamed: list[str] = []
    text = generate_text(
        model,
        tokenizer,
        "To be, or ",
        DecodeConfig(max_new_tokens=20, temperature=0),
        stream=streamed.append,
    )
    assert "".join(streamed) == text and len(text) == 20
    greedy_config = DecodeConfig(max_new_tokens=20, temperature=0)
    assert generate_text(model, tokenizer, "To be, or ", greedy_config, compile=True) == text
    scores = evaluate_lm(model, tokenizer, corpus)
    assert scores["loss"] < 1.5 and scores["perplexity"] == pytest.approx(math.exp(scores["loss"]))
    assert scores["bits_per_byte"] == pytest.approx(scores["loss"] / math.log(2), rel=1e-6)


def test_cli_train_resume_generate_evaluate(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    args = [
        "train",
        "lm",
        "--preset",
        "tiny",
        "--data",
        str(corpus),
        "--out",
        str(out),
        "--steps",
        "20",
        "--eval-every",
        "10",
        "--block-size",
        "32",
    ]
    assert main(args) == 0
    assert "[train]\nsteps = 20" in capsys.readouterr().out
    assert main([*args[:-4], "--steps", "30", "--resume"]) == 0
    said = f"# resuming {out / 'last'}: its settings kept (max_minutes=0.0, ...); given now: "
    printed = capsys.readouterr().out
    assert said in printed and "steps=30" in printed.split(said)[1].splitlines()[0], printed
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    assert max(r["step"] for r in rows) == 30
    assert json.loads((out / "last" / "config.json").read_text())["data"]["block_size"] == 32
    capsys.readouterr()
    assert (
        main(
            [
                "generate",
                str(out),
                "--prompt",
                "To be",
                "--max-new-tokens",
                "15",
                "--temperature",
                "0.8",
                "--top-k",
                "5",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("To be")
    assert (
        main(["generate", str(out), "--prompt", "To be", "--max-new-tokens", "5", "--beam", "3"])
        == 0
    )
    assert main(["evaluate", str(out), "--data", str(corpus)]) == 0
    assert "perplexity" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--data", "/nonexistent.txt"], "no such file"),
        (["--config", "RUN"], "[train] has unknown key(s) ['stepz']"),
        (["--n-heads", "3"], "d_model=32 is not divisible by n_heads=3"),
        (["--resume"], "no checkpoint to resume from"),
        (["--block-size", "100"], "block_size=100 exceeds max_len=64"),
    ],
)
def test_cli_train_errors_are_one_line(
    extra: list[str], message: str, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run_file = tmp_path / "run.toml"
    run_file.write_text("[train]\nstepz = 3\n")
    extra = [str(run_file) if e == "RUN" else e for e in extra]
    args = ["train", "lm", "--preset", "tiny", "--data", str(corpus), "--out", str(tmp_path / "o")]
    assert main(args + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
