"""Resuming after kill -9: a torn last line of metrics.jsonl is dropped and the run goes on;
any other damage to what a run left (metrics, train state, RNG, optimizer, last/config.json)
is one line naming the file, never a traceback. And the thread count a checkpoint was taken
with comes back with it, so a resumed run's steps add up as the uninterrupted run's did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from glassformer.errors import CheckpointError, GlassformerError
from glassformer.train import loop
from glassformer.train.loop import train
from tests.train.test_loop import CountingTask, config, make_model


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run directory with a checkpoint at step 10 (OUT/last) and metrics up to step 10."""
    out = tmp_path / "run"
    train(make_model(), CountingTask(4), config(steps=10), out, progress=False)
    return out


def resume(out: Path, steps: int = 12) -> None:
    train(make_model(), CountingTask(4), config(steps=steps), out, resume=True, progress=False)


def test_a_torn_last_metrics_line_is_dropped_and_the_run_goes_on(run: Path) -> None:
    metrics = run / "metrics.jsonl"
    with metrics.open("ab") as handle:
        handle.write(b'{"step": 11, "train_lo')  # kill -9 in the middle of a write
    resume(run)
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["step"] for r in rows if "train_loss" in r] == list(range(1, 13))


@pytest.mark.parametrize(
    ("damage", "line", "expected"),
    [
        (b'{"step": 3, "train_loss": 1.0}\n\xff\xfe garbage\n', 2, "not UTF-8 text"),
        (b'{"train_loss": 1.0}\n', 1, "not a metrics row (no integer step)"),
        (b'{"step": 3, "train_loss": "low"}\n', 1, "not a metrics row"),
        (b"[1, 2\n", 1, "not valid JSON"),
    ],
    ids=["not-utf8", "no-step", "loss-not-a-number", "not-json"],
)
def test_a_damaged_metrics_line_is_one_error_naming_the_file(
    run: Path, damage: bytes, line: int, expected: str
) -> None:
    metrics = run / "metrics.jsonl"
    number = len(metrics.read_text().splitlines()) + line  # the damaged line's number
    with metrics.open("ab") as handle:
        handle.write(damage)
    with pytest.raises(GlassformerError) as caught:
        resume(run)
    assert str(caught.value).startswith(f"{metrics}:{number}: {expected}"), caught.value


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    ("name", "damage", "expected"),
    [
        ("train_state.json", lambda p: p.write_bytes(b"\x00garbage"), "not valid JSON"),
        ("train_state.json", lambda p: p.write_text("[]"), "expected a JSON object"),
        ("train_state.json", lambda p: p.write_text('{"step": "ten"}'), "is not a step number"),
        ("rng.safetensors", truncate, "unreadable or truncated"),
        ("optimizer.safetensors", truncate, "unreadable or truncated"),
        ("config.json", lambda p: p.write_text("{"), "not valid JSON"),
    ],
)
def test_a_damaged_checkpoint_file_is_one_error_naming_it(
    run: Path,
    name: str,
    damage,
    expected: str,  # noqa: ANN001
) -> None:
    damage(run / "last" / name)
    with pytest.raises(CheckpointError) as caught:
        resume(run)
    message = str(caught.value)
    assert message.startswith(f"{run / 'last' / name}: ") and expected in message, message
    assert "\n" not in message


def test_a_python_random_state_that_is_not_one_names_the_file(run: Path) -> None:
    path = run / "last" / "train_state.json"
    document = json.loads(path.read_text())
    document["python_random"] = [3, [1, 2, 3], None]  # the wrong length for Mersenne Twister
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match="python_random is not a generator state"):
        resume(run)


def test_an_optimizer_state_of_another_shape_is_refused_at_load(run: Path) -> None:
    from safetensors.torch import load_file, save_file

    path = run / "last" / "optimizer.safetensors"
    tensors = load_file(path)
    name = next(n for n in sorted(tensors) if n.endswith("exp_avg"))
    tensors[name] = torch.zeros(3, 3)
    save_file(tensors, path)
    with pytest.raises(CheckpointError, match=f"does not fit the model \\({name!r} has shape"):
        resume(run)


def test_a_resumed_run_starts_with_the_threads_its_checkpoint_was_taken_with(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = run / "last" / "train_state.json"
    document = json.loads(state.read_text())
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    ran_with = next(r["threads"] for r in rows if r["step"] == 10 and "threads" in r)
    # saved with every checkpoint: the count step 10 ran with (on a busy machine the governor
    # may have given a thread up by then and taken it back once training ended)
    assert document["threads"] == ran_with
    document["threads"] = 1  # as if the governor had given a thread up before the crash
    state.write_text(json.dumps(document))
    started = []
    original = loop.ThreadGovernor.start_at

    def start_at(self, threads: int) -> None:  # noqa: ANN001
        started.append(threads)
        original(self, threads)

    monkeypatch.setattr(loop.ThreadGovernor, "start_at", start_at)
    most = torch.get_num_threads()
    try:
        resume(run)
    finally:
        torch.set_num_threads(most)
    assert started == [1]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert next(r for r in rows if r["step"] == 11 and "threads" in r)["threads"] == 1
