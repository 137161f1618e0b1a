"""`glassformer evaluate` (cli/evaluate.py): a speech model is scored with the ListenerConfig's
defaults, as `transcribe` hears, and the flags given replace only their own settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from glassformer.cli import build_parser
from glassformer.cli.evaluate import evaluate_speech_command
from glassformer.tasks.speech.config import ListenerConfig


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], ListenerConfig(model="RUN")),  # constrained to the model's own grammar, if any
        (
            ["--beam", "2", "--reject-below", "0.5"],
            ListenerConfig(model="RUN", beam_size=2, reject_below=0.5),
        ),
        (
            ["--beam-size", "3", "--no-constrain"],
            ListenerConfig("RUN", beam_size=3, constrain=False),
        ),
        (["--grammar", "g.yaml"], ListenerConfig(model="RUN", grammar="g.yaml")),
        (["--device", "cpu", "--constrain"], ListenerConfig(model="RUN", device="cpu")),
        (
            ["--precision", "int8", "--window-step", "5"],
            ListenerConfig(model="RUN", precision="int8", window_step=5.0),
        ),
    ],
)
def test_speech_evaluation_takes_the_listeners_defaults(
    flags: list[str], expected: ListenerConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: list[ListenerConfig] = []

    class Listener:  # stands in for the real one: only its config matters here
        def __init__(self, config: ListenerConfig) -> None:
            heard.append(config)

    monkeypatch.setattr("glassformer.tasks.speech.listener.Listener", Listener)
    monkeypatch.setattr(
        "glassformer.tasks.speech.evaluation.evaluate_speech",
        lambda listener, audio_dir, labels: ([], {"files": 0, "acceptance": 0.0}),
    )
    argv = ["evaluate", "RUN", "--audio-dir", "DIR", "--labels", "L.tsv", *flags]
    evaluate_speech_command(build_parser().parse_args(argv))
    assert heard == [expected]


def test_unset_evaluate_flags_leave_the_choice_to_each_task() -> None:
    args = build_parser().parse_args(["evaluate", str(Path("RUN"))])
    assert args.beam_size is None and args.device is None and args.reject_below is None
    assert args.precision is None and args.window_step is None
