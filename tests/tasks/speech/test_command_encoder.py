"""A model with two encoders (tasks/speech/command_encoder.py): each clip is read by the
encoder its length calls for and decoded by the one decoder; the pair saves and loads as
one checkpoint, int8 reaches the command encoder, and a file that does not fit is refused."""

from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer.errors import CheckpointError
from glassformer.tasks.speech.clips import clip_audio
from glassformer.tasks.speech.command_encoder import COMMAND_ENCODER_FILE, with_command_encoder
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.inference import transcribe, transcribe_many
from glassformer.tasks.speech.listener import Listener
from glassformer.tasks.speech.loading import load_grammar, load_speech_model, use_grammar
from glassformer.tasks.speech.model import RECHECK_BELOW, RECHECK_MARGIN
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.transcript import WEIGHED_FROM, Transcript, lead, second_reading
from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands
from tests.installed import needs_voice, needs_whisper
from tests.tasks.speech.students import nudged_encoder

pytestmark = [needs_whisper, needs_voice]

APPOINTMENTS = "glassformer/voice/grammars/appointments.yaml"


@pytest.fixture(scope="module")
def plain():  # noqa: ANN201 - whisper-tiny.en for the appointments grammar
    return use_grammar(load_speech_model("whisper-tiny.en"), load_grammar(APPOINTMENTS))


@pytest.fixture(scope="module")
def student(plain) -> dict[str, torch.Tensor]:  # noqa: ANN001
    """Whisper's encoder side, its last block nudged: another encoder, as a taught one is."""
    return nudged_encoder(plain.model)


@pytest.fixture(scope="module")
def paired(plain, student):  # noqa: ANN001, ANN201
    return with_command_encoder(plain, student, window_step=5.0, from_seconds=1.5)


@pytest.fixture(scope="module")
def clips(plain) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """A real recorded command (2-5 s heard) and its first second (a word's length)."""
    [(_, audio)] = recorded_commands(Grammar.from_yaml(APPOINTMENTS), find_voice(), 1, seed=3)
    heard = clip_audio(plain, audio)
    assert len(heard) >= 2 * 16_000
    return audio, heard[:16_000].copy()


def options(speech) -> SpeechOptions:  # noqa: ANN001
    return SpeechOptions.resolve(ListenerConfig(grammar=APPOINTMENTS), speech)


def as_tuple(transcript) -> tuple:  # noqa: ANN001
    return transcript.text, transcript.confidence, transcript.intent


def test_a_command_reads_the_command_encoder_and_a_word_the_models_own(
    plain,
    student,
    paired,
    clips,  # noqa: ANN001
) -> None:
    command, word = clips
    whole = copy.deepcopy(plain.model)  # the reference: one network, the student's encoder
    whole.load_state_dict(student, strict=False)
    fitted = dataclasses.replace(plain.features, window_step=5.0)
    reference = dataclasses.replace(plain, model=whole, features=fitted)
    with torch.inference_mode():
        assert as_tuple(transcribe(paired, command, options(paired))) == as_tuple(
            transcribe(reference, command, options(reference))
        )
        assert as_tuple(transcribe(paired, command, options(paired))) != as_tuple(
            transcribe(plain, command, options(plain))
        )  # a test that would notice the command encoder going unread
        assert as_tuple(transcribe(paired, word, options(paired))) == as_tuple(
            transcribe(plain, word, options(plain))
        )
        together = transcribe_many(paired, [command, word, command], options(paired))
        alone = [transcribe(paired, c, options(paired)) for c in (command, word, command)]
    assert [as_tuple(t) for t in together] == [as_tuple(t) for t in alone]  # batched by encoder


def test_a_command_the_command_encoder_doubts_is_read_again_by_the_models_own(
    plain,
    student,
    paired,
    clips,  # noqa: ANN001
) -> None:
    command, _ = clips
    doubting = with_command_encoder(plain, student, 5.0, 1.5, recheck_below=1.0)  # every one
    with torch.inference_mode():
        first = transcribe(paired, command, options(paired))
        assert 0.05 <= first.confidence < 1.0 and first.intent is not None  # not doubted
        own = transcribe(plain, command, options(plain))
        assert own.intent is not None and own.confidence != first.confidence  # two readings
        again = transcribe(doubting, command, options(doubting))
        surer = own if own.confidence >= first.confidence else first
        assert as_tuple(again) == as_tuple(surer)
        free = dataclasses.replace(options(doubting), constrain=False)  # no grammar: no doubt
        assert transcribe(doubting, command, free).text == transcribe(paired, command, free).text


def test_a_command_whose_search_led_by_little_is_read_again(plain, student) -> None:  # noqa: ANN001
    """The margin rule alone (recheck_below 0): a command the beam's best words led the next
    other words by less than recheck_margin is read again and weighed; one that led by more
    is not; without a grammar nothing is."""
    sure = with_command_encoder(plain, student, 5.0, 1.5, recheck_below=0.0, recheck_margin=0.0)
    commands = recorded_commands(Grammar.from_yaml(APPOINTMENTS), find_voice(), 8, seed=5)
    with torch.inference_mode():
        # a beam often holds one sentence written several ways ("Today at eight." and "today
        # at eight"): no other words, no lead (inf); the first command whose beam has some
        read = [(transcribe(sure, audio, options(sure)), audio) for _, audio in commands]
        first, command = next((t, audio) for t, audio in read if t.margin < float("inf"))
        assert first.intent is not None and first.margin > 0
        own = transcribe(plain, command, options(plain))
        above = with_command_encoder(
            plain, student, 5.0, 1.5, recheck_below=0.0, recheck_margin=first.margin
        )
        below = with_command_encoder(plain, student, 5.0, 1.5, recheck_below=0.0,
                                     recheck_margin=first.margin * 1.01)  # fmt: skip
        assert as_tuple(transcribe(above, command, options(above))) == as_tuple(first)
        assert as_tuple(transcribe(below, command, options(below))) == as_tuple(
            second_reading(first, own)
        )
    assert first.confidence != own.confidence  # the two readings can be told apart


def test_the_lead_is_over_other_words_only() -> None:
    assert lead(["a small latte.", "A small latte", "a large latte"], [-0.3, -0.31, -0.36]) == (
        pytest.approx(0.06)
    )  # the same words in other case and punctuation are not a rival
    assert lead(["a small latte", "a large latte"], [-0.3, float("-inf")]) == float("inf")
    assert lead(["a small latte"], [-0.3]) == float("inf")
    assert lead(["a small latte", "a small latte"], [-0.3, -0.4]) == float("inf")


def test_of_two_readings_a_command_stands_over_a_rejection_and_else_the_surer_one() -> None:
    doubted = Transcript("a large latte", "orderDrink", {"size": "large"}, confidence=0.3)
    surer = Transcript("a small latte", "orderDrink", {"size": "small"}, confidence=0.4)
    less_sure = dataclasses.replace(surer, confidence=0.2)
    as_sure = dataclasses.replace(surer, confidence=0.3)
    rejected = Transcript("a large lot", None, confidence=0.5)
    assert second_reading(doubted, surer) is surer
    assert second_reading(doubted, as_sure) is as_sure  # a tie: Whisper's own
    assert second_reading(doubted, less_sure) is doubted  # the command encoder was surer
    assert second_reading(doubted, rejected) is doubted  # its command passed its own test
    unheard = dataclasses.replace(doubted, intent=None, slots={})
    assert second_reading(unheard, less_sure) is less_sure
    assert second_reading(unheard, rejected) is rejected
    faint = dataclasses.replace(doubted, confidence=WEIGHED_FROM / 2)  # never overrules
    assert second_reading(faint, rejected) is rejected
    assert second_reading(faint, dataclasses.replace(surer, confidence=0.01)).confidence == 0.01


def test_the_pair_saves_and_loads_as_one_checkpoint_and_int8_reaches_the_command_encoder(
    paired,
    clips,
    tmp_path,  # noqa: ANN001
) -> None:
    from glassformer.layers.quantized import Int8Linear, has_int8_kernels
    from glassformer.tasks.speech.pretrained import save_speech_model

    out = save_speech_model(paired, tmp_path / "pair", "test")
    header = json.loads((out / "config.json").read_text())
    assert header["command_encoder"] == {
        "file": COMMAND_ENCODER_FILE,
        "window_step": 5.0,
        "from_seconds": 1.5,
        "recheck_below": RECHECK_BELOW,  # the defaults, written with the model
        "recheck_margin": RECHECK_MARGIN,
    }
    loaded = load_speech_model(out, grammar=paired.grammar)
    assert loaded.command_encoder is not None
    assert loaded.command_encoder.features == paired.command_encoder.features
    held = loaded.command_encoder.network.state_dict()
    assert not any(name.startswith(("decoder", "tgt_", "head")) for name in held)
    command, _ = clips
    with torch.inference_mode():
        assert as_tuple(transcribe(loaded, command, options(loaded))) == as_tuple(
            transcribe(paired, command, options(paired))
        )
    if not has_int8_kernels():
        pytest.skip("this torch has no fbgemm int8 kernels")
    listener = Listener(ListenerConfig(str(out), APPOINTMENTS, precision="int8"))
    encoder = listener.speech.command_encoder.network.encoder
    assert any(isinstance(m, Int8Linear) for m in encoder.modules())
    assert not any(isinstance(m, Int8Linear) for m in listener.speech.model.encoder.modules())
    assert listener.understand(command).text == transcribe(paired, command, options(paired)).text


def test_a_command_encoder_that_does_not_fit_is_refused_by_name(paired, tmp_path) -> None:  # noqa: ANN001
    from glassformer.tasks.speech.pretrained import save_speech_model

    out = save_speech_model(paired, tmp_path / "pair", "test")
    weights = load_file(str(out / COMMAND_ENCODER_FILE))
    header = json.loads((out / "config.json").read_text())

    def refused(table: dict, tensors: dict, match: str) -> None:
        save_file(tensors, str(out / COMMAND_ENCODER_FILE))
        (out / "config.json").write_text(json.dumps(header | {"command_encoder": table}))
        with pytest.raises(CheckpointError, match=match):
            load_speech_model(out)

    table = header["command_encoder"]
    name = next(iter(weights))
    refused(table, {n: t for n, t in weights.items() if n != name}, "missing tensors")
    refused(table, weights | {"decoder.extra": torch.zeros(2)}, "unexpected tensors")
    refused(table, weights | {name: torch.full_like(weights[name], float("nan"))}, "NaN")
    refused(table | {"window_step": 40}, weights, "window_step")
    refused(table | {"window_step": 0.01}, weights, "window_step")
    refused(table | {"from_seconds": -1}, weights, "from_seconds")
    refused(table | {"recheck_below": 2}, weights, "recheck_below")
    refused(table | {"recheck_margin": -0.1}, weights, "recheck_margin")
    refused(table | {"recheck_margin": float("inf")}, weights, "recheck_margin")
    refused(table | {"file": "../model.safetensors"}, weights, "not a file name")
    refused({"file": COMMAND_ENCODER_FILE}, weights, "invalid")


def test_fine_tuning_refuses_a_pair_before_anything_is_made(paired, tmp_path, capsys) -> None:  # noqa: ANN001
    """adapt and train speech would teach the decoder from Whisper's encoder alone and drop
    the second encoder: refused in one line, before a clip is spoken or a folder made."""
    from glassformer.cli import main
    from glassformer.tasks.speech.pretrained import save_speech_model

    pair = save_speech_model(paired, tmp_path / "pair", "test")
    adapting = ["adapt", "--grammar", APPOINTMENTS, "--model", str(pair)]
    training = ["train", "speech", "--grammar", APPOINTMENTS, "--init", str(pair)]
    for args in (adapting, training):
        assert main([*args, "--out", str(tmp_path / "out")]) == 2
        error = capsys.readouterr().err
        assert "command encoder" in error and len(error.strip().splitlines()) == 1, error
        assert not (tmp_path / "out").exists()
