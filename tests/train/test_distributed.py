"""Scale-out: the same command under torchrun with 2 CPU processes (gloo) follows the same loss
trajectory as 1 process with the same global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TEXT = "All the world's a stage, and all the men and women merely players;\n" * 60


def train_losses(out: Path) -> list[float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    return [r["train_loss"] for r in rows if "train_loss" in r]


def test_two_gloo_processes_match_one_process(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # two torch processes on 2 cores
    args = [
        "-m",
        "glassformer",
        "train",
        "lm",
        "--preset",
        "tiny",
        "--data",
        str(corpus),
        "--steps",
        "8",
        "--batch-size",
        "8",
        "--eval-every",
        "4",
        "--device",
        "cpu",
    ]
    single = subprocess.run(
        [sys.executable, *args, "--out", str(tmp_path / "one")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    double = subprocess.run(
        [*launcher, *args, "--out", str(tmp_path / "two")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert double.returncode == 0, double.stderr[-3000:]
    one, two = train_losses(tmp_path / "one"), train_losses(tmp_path / "two")
    assert len(one) == len(two) == 8
    assert two == pytest.approx(one, abs=1e-4), "same trajectory within float tolerance"
    assert (tmp_path / "two" / "last" / "model.safetensors").is_file()
    assert double.stdout.count("trained to step 8") == 1  # only rank 0 reports and writes
