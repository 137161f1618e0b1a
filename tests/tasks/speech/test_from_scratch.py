"""The main job end to end at a tiny size: synthesize, overfit a few clips, transcribe, score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassformer.audio.feature_config import FeatureConfig
from glassformer.audio.io import load_audio
from glassformer.cli import main
from glassformer.tasks.speech.config import SPEECH_PRESETS, ListenerConfig, SpeechDataConfig
from glassformer.tasks.speech.evaluation import evaluate_speech
from glassformer.tasks.speech.inference import SpeechOptions, transcribe
from glassformer.tasks.speech.listener import Listener
from glassformer.tasks.speech.loading import load_speech_model
from glassformer.tasks.speech.training import train_speech
from glassformer.train.config import TrainConfig
from glassformer.voice.synth import read_manifest
from tests.helpers import TINY_GRAMMAR, assert_confidences_reuse_the_search
from tests.installed import needs_espeak

pytestmark = needs_espeak
GRAMMAR_TEXT = TINY_GRAMMAR
CLEAN = SpeechDataConfig(
    noise_prob=0.0,
    speed_range=0.0,
    augment_prob=0.0,
    pad_seconds=0.0,
    spec_augment=False,
    bpe_vocab_size=300,
)
BAND = FeatureConfig(f_max=3800.0)  # not the default, so that a dropped setting shows


def synth(grammar: Path, data: Path, *flags: str) -> None:
    """`glassformer voice synth --grammar GRAMMAR --out DATA FLAGS...`, which must succeed."""
    assert main(["voice", "synth", "--grammar", str(grammar), "--out", str(data), *flags]) == 0


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("speech")
    grammar = root / "grammar.yaml"
    grammar.write_text(GRAMMAR_TEXT)
    data = root / "data"
    synth(grammar, data, "--count", "12", "--seed", "3")
    model_fields, train_fields = SPEECH_PRESETS["tiny"].model, SPEECH_PRESETS["tiny"].train
    config = TrainConfig(**{**train_fields, "steps": 150, "batch_size": 8, "lr": 3e-3})
    run = root / "run"
    train_speech(grammar, data, model_fields, config, CLEAN, run, progress=False, features=BAND)
    return grammar, data, run


def test_the_model_reads_the_features_it_was_trained_with(trained: tuple[Path, Path, Path]) -> None:
    # bench/bench_speech.py once passed its FeatureConfig where `progress` goes, and five
    # measured runs trained on the default band: the settings given must be the ones saved
    assert load_speech_model(trained[2]).features == BAND


def test_overfits_the_training_clips(trained: tuple[Path, Path, Path]) -> None:
    _, data, run = trained
    rows = [r for r in read_manifest(data) if r["split"] == "train"]
    speech = load_speech_model(run)
    free = SpeechOptions(beam_size=4)
    right = sum(
        transcribe(speech, load_audio(data / r["audio"]), free).text == r["text"] for r in rows
    )
    assert right >= len(rows) - 1, f"{right} of {len(rows)} training clips transcribed exactly"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    losses = [m["train_loss"] for m in metrics if "train_loss" in m]
    assert losses[-1] < losses[0] / 4


def test_constrained_transcripts_are_commands_and_rejection_follows_confidence(
    trained: tuple[Path, Path, Path],
) -> None:
    _, data, run = trained
    speech = load_speech_model(run)
    for row in read_manifest(data)[:4]:
        waveform = load_audio(data / row["audio"])
        heard = transcribe(speech, waveform, SpeechOptions(4, True, reject_below=0.0))
        assert heard.intent is not None and speech.grammar.accepts(heard.text)
        strict = transcribe(speech, waveform, SpeechOptions(4, True, reject_below=1.0))
        assert strict.intent is None and strict.confidence == heard.confidence


def test_confidence_from_what_the_search_computed_equals_scoring_from_scratch(
    trained: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, data, run = trained
    clips = [load_audio(data / r["audio"]) for r in read_manifest(data)[:3]]
    assert assert_confidences_reuse_the_search(monkeypatch, load_speech_model(run), clips) == 3


def test_transcribe_and_evaluate_commands(
    trained: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, data, run = trained
    rows = read_manifest(data)[:4]
    clips = [str(data / r["audio"]) for r in rows]
    assert main(["transcribe", str(run), *clips, "--json", "--constrain"]) == 0
    lines = json.loads(capsys.readouterr().out)  # one list, one object per file
    assert len(lines) == 4 and all(
        {"file", "text", "intent", "slots", "confidence", "accepted"} <= set(x) for x in lines
    )
    assert all(x["accepted"] == (x["intent"] is not None) for x in lines)
    labels = tmp_path / "labels.tsv"
    labels.write_text("".join(f"{r['audio']}\t{r['text']}\n" for r in rows))
    scored, summary = evaluate_speech(Listener(ListenerConfig(str(run))), data, labels)
    assert summary["files"] == 4 and 0 <= summary["wer"] <= 1.5 and 0 <= summary["acceptance"] <= 1
    assert main(["evaluate", str(run), "--audio-dir", str(data), "--labels", str(labels)]) == 0
    assert "command acceptance" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["transcribe", "RUN", "/nonexistent.wav"], "no such audio file"),
        (["transcribe", "/nonexistent-run", "x.wav"], "no such model directory"),
        (["evaluate", "RUN", "--audio-dir", "DATA"], "--audio-dir DIR --labels FILE"),
        (["voice", "synth", "--grammar", "/nonexistent.yaml", "--out", "OUT"], "no such grammar"),
    ],
)
def test_bad_input_is_one_line(
    trained: tuple[Path, Path, Path],
    tmp_path: Path,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture,
) -> None:
    _, data, run = trained
    swap = {"RUN": str(run), "DATA": str(data), "OUT": str(tmp_path / "o")}
    assert main([swap.get(a, a) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_train_speech_uses_the_noise_dir_given_to_synth(tmp_path: Path) -> None:
    import numpy as np

    from glassformer.audio.io import save_audio

    noise = tmp_path / "noise"
    save_audio(noise / "hum.wav", 0.1 * np.sin(np.arange(32_000) / 5.0).astype(np.float32))
    grammar = tmp_path / "grammar.yaml"
    grammar.write_text(GRAMMAR_TEXT)
    data, out = tmp_path / "data", tmp_path / "run"
    synth(grammar, data, "--count", "8", "--noise-dir", str(noise))
    assert (
        main(
            [
                "train",
                "speech",
                "--grammar",
                str(grammar),
                "--data",
                str(data),
                "--preset",
                "tiny",
                "--steps",
                "2",
                "--eval-every",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    saved = json.loads((out / "last" / "config.json").read_text())
    assert saved["data"]["noise_dir"] == str(noise) and saved["task"] == "speech"
    # Resuming rebuilds the saved (tiny) model even though the default preset is "small".
    assert (
        main(
            [
                "train",
                "speech",
                "--grammar",
                str(grammar),
                "--data",
                str(data),
                "--steps",
                "4",
                "--eval-every",
                "2",
                "--out",
                str(out),
                "--resume",
            ]
        )
        == 0
    )
    resumed = json.loads((out / "last" / "config.json").read_text())
    assert resumed["step"] == 4 and resumed["config"] == saved["config"]


def test_a_batch_of_clips_of_different_lengths_transcribes_as_one_by_one(
    trained: tuple[Path, Path, Path],
) -> None:
    from glassformer.tasks.speech.inference import transcribe_many

    _, data, run = trained
    speech = load_speech_model(run)
    clips = [load_audio(data / r["audio"]) for r in read_manifest(data)[:5]]
    assert len({len(c) for c in clips}) > 1  # the encoder sees a padded batch
    constrained = SpeechOptions(4, True, speech.rules.reject_below)
    alone = [transcribe(speech, clip, constrained) for clip in clips]
    together = transcribe_many(speech, clips, constrained, encoder_batch=3)
    assert [t.text for t in together] == [t.text for t in alone]
    assert [t.intent for t in together] == [t.intent for t in alone]
    for a, b in zip(alone, together, strict=True):
        assert b.confidence == pytest.approx(a.confidence, rel=1e-4)
