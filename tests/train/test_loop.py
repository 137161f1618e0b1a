"""The training loop: exact resume, NaN stop, accumulation, records written."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from glassformer.models.gpt import GPT, GPTConfig
from glassformer.train.checkpoint import load_checkpoint
from glassformer.train.loop import TrainConfig, TrainingDiverged, train

V, T = 16, 8


class CountingTask:
    """Sequences that count up modulo V: a task a tiny GPT learns quickly."""

    def __init__(
        self, batch_size: int, nan_at_call: int | None = None, kill_at_batch: int | None = None
    ) -> None:
        self.batch_size, self.nan_at_call, self.calls = batch_size, nan_at_call, 0
        self.kill_at_batch, self.train_batches = kill_at_batch, 0

    def get_batch(self, split: str, generator: torch.Generator):  # noqa: ANN201
        if split == "train":
            self.train_batches += 1
            if self.train_batches == self.kill_at_batch:
                raise KeyboardInterrupt  # as if the process were killed here
        starts = torch.randint(0, V, (self.batch_size, 1), generator=generator)
        window = (starts + torch.arange(T + 1)) % V  # (B, T + 1)
        return window[:, :-1], window[:, 1:]

    def loss(self, model, batch, label_smoothing):  # noqa: ANN001, ANN201
        self.calls += 1
        x, y = batch
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), label_smoothing=label_smoothing)
        return loss * float("nan") if self.calls == self.nan_at_call else loss

    def count_tokens(self, batch) -> int:  # noqa: ANN001
        return batch[0].numel()

    def checkpoint_metadata(self) -> dict:
        return {"task": "counting"}

    def write_files(self, directory: Path) -> None:
        (directory / "extra.txt").write_text("written with every checkpoint")

    def extra_metrics(self, val_loss: float) -> dict:
        return {}


def make_model(dropout: float = 0.1) -> GPT:
    torch.manual_seed(1234)
    return GPT(
        GPTConfig(
            vocab_size=V, max_len=T, d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=dropout
        )
    )


def config(**overrides) -> TrainConfig:  # noqa: ANN003
    base = {
        "steps": 20,
        "batch_size": 4,
        "lr": 3e-3,
        "warmup_steps": 3,
        "eval_every": 5,
        "eval_batches": 2,
        "checkpoint_every": 10,
        "device": "cpu",
    }
    return TrainConfig(**{**base, **overrides})


def test_resume_is_bit_identical_to_an_uninterrupted_run(tmp_path: Path) -> None:
    straight = make_model()
    train(straight, CountingTask(4), config(), tmp_path / "straight", progress=False)

    interrupted = make_model()
    with pytest.raises(KeyboardInterrupt):  # killed while starting step 11
        train(
            interrupted,
            CountingTask(4, kill_at_batch=11),
            config(),
            tmp_path / "split",
            progress=False,
        )
    resumed = make_model()  # a fresh process would build the model anew, then resume
    torch.manual_seed(999)  # and its global RNG would be anything: resume must restore it
    train(resumed, CountingTask(4), config(), tmp_path / "split", resume=True, progress=False)

    for (name, a), (_, b) in zip(
        straight.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), f"{name} differs after resume"
    rows = [json.loads(line) for line in (tmp_path / "split" / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if "train_loss" in r] == list(range(1, 21))


def test_nan_loss_stops_before_the_update_and_keeps_the_last_good_checkpoint(
    tmp_path: Path,
) -> None:
    model = make_model(dropout=0.0)
    task = CountingTask(4, nan_at_call=9)  # calls: steps 1-5, 2 for the evaluation, steps 6, 7
    with pytest.raises(TrainingDiverged, match="loss became nan at step 7"):
        train(model, task, config(checkpoint_every=2), tmp_path, progress=False)
    saved = json.loads((tmp_path / "last" / "train_state.json").read_text())
    assert saved["step"] == 6
    assert load_checkpoint(tmp_path / "last").config == model.config


def test_gradient_accumulation_matches_one_big_batch(tmp_path: Path) -> None:
    losses = []
    for accum in (1, 2):
        model = make_model(dropout=0.0)
        train(
            model,
            CountingTask(8),
            config(batch_size=8, grad_accum=accum, steps=6),
            tmp_path / str(accum),
            progress=False,
        )
        rows = (tmp_path / str(accum) / "metrics.jsonl").read_text().splitlines()
        losses.append([json.loads(r)["train_loss"] for r in rows if "train_loss" in r])
    assert losses[0] == pytest.approx(losses[1], abs=1e-5)


def test_run_writes_best_last_metrics_and_curve_and_learns(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    result = train(
        make_model(dropout=0.0),
        CountingTask(8),
        config(steps=60, batch_size=8, lr=1e-2),
        tmp_path,
        progress=False,
    )
    assert result.step == 60 and result.val_loss < 1.0, result
    for name in (
        "best/model.safetensors",
        "best/extra.txt",
        "last/optimizer.safetensors",
        "last/rng.safetensors",
        "metrics.jsonl",
        "loss.png",
    ):
        assert (tmp_path / name).is_file(), name
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").open()]
    evals = [r for r in rows if "val_loss" in r]
    assert [r["step"] for r in evals] == [5 * k for k in range(1, 13)]
    assert all(r["val_ppl"] == pytest.approx(2.718281828 ** r["val_loss"]) for r in evals)
    steps = [r for r in rows if "train_loss" in r]
    assert all(1 <= r["threads"] <= torch.get_num_threads() for r in steps)  # the governor's
    header = json.loads((tmp_path / "last" / "config.json").read_text())
    assert header["train"]["steps"] == 60 and header["task"] == "counting"
    out, err = capsys.readouterr()  # stdout is a caller's (bench/ prints JSON there)
    assert out == "" and "step 60: train loss" in err, (out, err)


def test_a_time_limit_stops_with_an_evaluation_and_a_checkpoint(tmp_path: Path) -> None:
    started = time.perf_counter()
    result = train(
        make_model(), CountingTask(4), config(max_minutes=1e-9), tmp_path, progress=False
    )
    took = time.perf_counter() - started
    assert result.step == 1  # the limit is checked after each optimizer step
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").open()]
    assert rows[-1]["step"] == 1 and "val_loss" in rows[-1]
    assert 0 <= rows[-1]["time_s"] <= took + 0.05  # this call's training time, to 0.1 s
    state = json.loads((tmp_path / "last" / "train_state.json").read_text())
    assert state["step"] == 1  # resumable from where the time ran out
    resumed = train(
        make_model(), CountingTask(4), config(steps=3), tmp_path, resume=True, progress=False
    )
    assert resumed.step == 3


def test_train_config_validation() -> None:
    with pytest.raises(ValueError, match="batch_size=10 is not divisible by grad_accum=3"):
        TrainConfig(batch_size=10, grad_accum=3)
    with pytest.raises(ValueError, match="schedule='linear'"):
        TrainConfig(schedule="linear")


def test_the_thread_governor_hands_back_the_threads_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from glassformer.threads import ThreadGovernor
    from glassformer.train import loop

    seen = []

    class Crowded(ThreadGovernor):  # a machine where others always use two cores
        def __init__(self) -> None:
            ticks, now = iter(range(10**6)), [0.0]

            def clock() -> float:  # a second passes at every look
                now[0] = float(next(ticks))
                return now[0]

            super().__init__(most=2, clock=clock, busy_seconds=lambda: 4.0 * now[0])

        def tick(self) -> int:
            seen.append(super().tick())
            return seen[-1]

    monkeypatch.setattr(loop, "ThreadGovernor", Crowded)
    torch.set_num_threads(2)
    try:
        train(make_model(), CountingTask(4), config(steps=3), tmp_path, progress=False)
        assert 1 in seen  # it did give a thread up during the run
        assert torch.get_num_threads() == 2  # and handed it back at the end
    finally:
        torch.set_num_threads(2)


def test_a_full_disk_keeps_the_previous_last_checkpoint_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import safetensors.torch

    from glassformer.errors import CheckpointError

    real_save, last_dirs = safetensors.torch.save_file, []

    def save_file(tensors, path, metadata=None):  # noqa: ANN001, ANN202 - safetensors' signature
        folder = str(Path(path).parent)
        if "/.last.tmp-" in folder and folder not in last_dirs:
            last_dirs.append(folder)
        if last_dirs and folder == last_dirs[-1] and len(last_dirs) == 2:  # the second last/
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(tensors, path, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", save_file)
    with pytest.raises(CheckpointError) as caught:
        train(make_model(), CountingTask(4), config(checkpoint_every=5), tmp_path, progress=False)
    message = str(caught.value)
    assert "No space left on device" in message and "\n" not in message, message
    assert "training stopped at step 10" in message and "resume from step 5" in message, message
    saved = json.loads((tmp_path / "last" / "train_state.json").read_text())
    assert saved["step"] == 5, "the previous last/ must stay whole"
    assert load_checkpoint(tmp_path / "last").config == make_model().config
    assert not list(tmp_path.glob(".last.*")), "no half-written directory left"
    monkeypatch.setattr(safetensors.torch, "save_file", real_save)
    resumed = train(
        make_model(),
        CountingTask(4),
        config(checkpoint_every=5),
        tmp_path,
        resume=True,
        progress=False,
    )
    assert resumed.step == 20  # the run goes on from last/ once there is room


def test_a_second_run_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    from glassformer.errors import GlassformerError
    from glassformer.train.lock import run_directory_lock

    holder = subprocess.Popen(  # another process holds the lock, as a running `train` would
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from glassformer.train.lock import run_directory_lock\n"
            "with run_directory_lock(pathlib.Path(sys.argv[1])):\n"
            "    print('locked', flush=True); sys.stdin.read()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(
            GlassformerError, match=rf"is in use by another training run \(pid {holder.pid}\)"
        ):
            train(make_model(), CountingTask(4), config(steps=2), tmp_path, progress=False)
        assert not (tmp_path / "metrics.jsonl").exists(), "the refused run wrote nothing"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with run_directory_lock(tmp_path):  # released when its holder ended
        pass
    train(make_model(), CountingTask(4), config(steps=2), tmp_path, progress=False)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("warmup_steps", -5, "warmup_steps=-5 must be >= 0"),
        ("seed", 10**23, "seed=100000000000000000000000 must be an integer from 0"),
        ("seed", -1, "seed=-1 must be an integer from 0"),
        ("batch_size", 10**9, "batch_size=1000000000 is over the limit"),
        ("beta2", 1.0, "beta2=1.0 must be in [0, 1)"),
        ("adam_eps", float("nan"), "adam_eps=nan"),
        ("label_smoothing", float("nan"), "label_smoothing=nan"),
    ],
)
def test_train_config_refuses_out_of_range_numbers(field: str, value: object, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        TrainConfig(**{field: value})
