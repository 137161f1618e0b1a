"""Every door calls the one Listener: the CLI, HTTP and the listening socket give the same
Result for the same real recording (whisper-tiny.en, a real person's recorded words)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile
from fastapi.testclient import TestClient

from glassformer.cli import main
from glassformer.serve.app import create_app
from glassformer.serve.models import load_models
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
from tests.serve.conftest import APPOINTMENTS, needs_whisper_and_voice, recorded_command

GRAMMAR = APPOINTMENTS
pytestmark = needs_whisper_and_voice
FIELDS = ("text", "intent", "slots", "confidence", "accepted")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    return recorded_command(tmp_path_factory.mktemp("doors"), seed=3)


def test_cli_http_socket_and_listener_give_the_same_result(
    recording: tuple[Path, object], capsys: pytest.CaptureFixture
) -> None:
    path, command = recording
    listener = Listener(ListenerConfig("whisper-tiny.en", str(GRAMMAR)))
    expected = listener.understand_file(path).to_json()
    assert (expected["intent"], expected["slots"]) == (command.intent, command.slots)
    mine = {k: expected[k] for k in FIELDS}

    assert (
        main(["transcribe", "whisper-tiny.en", str(path), "--grammar", str(GRAMMAR), "--json"]) == 0
    )
    [cli] = json.loads(capsys.readouterr().out)
    assert {k: cli[k] for k in FIELDS} == mine

    served = load_models(ListenerConfig("whisper-tiny.en"), [str(GRAMMAR)], None, None)
    with TestClient(create_app(served)) as client:
        answer = client.post(
            "/v1/transcribe", content=path.read_bytes(), headers={"content-type": "audio/wav"}
        )
        assert answer.status_code == 200, answer.text
        assert {k: answer.json()[k] for k in FIELDS} == mine

        samples, _ = soundfile.read(path, dtype="int16")
        silence = np.zeros(32_000, np.int16)
        pcm = np.concatenate([silence, samples, silence, silence]).astype("<i2").tobytes()
        with client.websocket_connect("/v1/listen") as socket:
            assert socket.receive_json()["type"] == "ready"
            for i in range(0, len(pcm), 6400):  # 200-ms chunks
                socket.send_bytes(pcm[i : i + 6400])
            socket.send_text('{"type": "end"}')
            event = socket.receive_json()
            while event["type"] != "result":
                event = socket.receive_json()
    # the socket hears the endpointed command (silence trimmed differently): same words
    assert (event["text"], event["intent"], event["slots"]) == (
        mine["text"],
        mine["intent"],
        mine["slots"],
    )
    assert 0 < event["latency_ms"] < 10_000 and event["end"] > event["start"]


def test_result_json_is_written_in_one_place() -> None:
    from glassformer.tasks.speech.listener import Result

    result = Result("monday at nine", "book", {"day": "monday"}, 0.81234, 0.9, 2.5, 101.26)
    assert result.to_json() == {
        "text": "monday at nine",
        "intent": "book",
        "slots": {"day": "monday"},
        "confidence": 0.8123,
        "accepted": True,
        "audio_seconds": 2.5,
        "elapsed_ms": 101.3,
    }
    streamed = Result("x", None, latency_ms=240.04, start=16_000, end=48_000).to_json()
    assert streamed["latency_ms"] == 240.0 and not streamed["accepted"]
