"""The listening WebSocket (WS /v1/listen): each command answered, bad data refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from glassformer.audio.endpoint import SAMPLE_RATE, EndpointConfig
from glassformer.serve.app import create_app
from glassformer.serve.models import load_models
from glassformer.tasks.speech.config import ListenerConfig
from tests.serve.conftest import tone

SECOND = SAMPLE_RATE


@pytest.fixture(scope="module")
def client(checkpoints: dict[str, Path]) -> TestClient:
    # tones stand in for speech here: the energy rule hears them, Silero (the default) not
    config = ListenerConfig(str(checkpoints["speech"]), endpoint=EndpointConfig(detector="energy"))
    with TestClient(create_app(load_models(config, [], None, None))) as client:
        yield client


def pcm(waveform: np.ndarray) -> bytes:
    return (np.clip(waveform, -1, 1) * 32767).astype("<i2").tobytes()


def test_each_command_is_answered_and_listening_goes_on(client: TestClient) -> None:
    stream = np.concatenate(
        [np.zeros(SECOND // 2, np.float32), tone(1.0), np.zeros(SECOND, np.float32)]
    )
    with client.websocket_connect("/v1/listen") as socket:
        assert socket.receive_json() == {
            "type": "ready",
            "sample_rate": 16000,
            "grammar": "grammar",
        }
        for _ in range(2):
            data = pcm(stream)
            for start in range(0, len(data), 3200):
                socket.send_bytes(data[start : start + 3200])
            assert socket.receive_json()["type"] == "speech_start"
            result = socket.receive_json()
            assert result["type"] == "result" and {"intent", "confidence", "start", "end"} <= set(
                result
            )
        socket.send_bytes(pcm(tone(0.5)))  # a command under way when the stream stops
        socket.send_text('{"type": "end"}')
        assert socket.receive_json()["type"] == "speech_start"
        assert socket.receive_json()["type"] == "result"


@pytest.mark.parametrize(
    ("send", "code", "words"),
    [
        (lambda s: s.send_bytes(b"\x01\x02\x03"), 1007, "16-bit PCM"),
        (lambda s: s.send_text("hello"), 1003, "text messages"),
        (lambda s: s.send_text("[" * 100_000), 1003, "text messages"),  # was a RecursionError
        (lambda s: s.send_bytes(b"\0" * (300 * 1024)), 1009, "at most"),
    ],
)
def test_garbage_gets_an_error_and_a_clean_close(
    client: TestClient, send, code: int, words: str
) -> None:  # noqa: ANN001
    with client.websocket_connect("/v1/listen") as socket:
        socket.receive_json()
        send(socket)
        error = socket.receive_json()
        assert error["type"] == "error" and words in error["error"]
        with pytest.raises(WebSocketDisconnect) as closed:
            socket.receive_json()
        assert closed.value.code == code
    assert client.get("/healthz").json() == {"status": "ok"}


def test_a_client_gone_mid_command_leaves_the_server_answering(client: TestClient) -> None:
    with client.websocket_connect("/v1/listen") as socket:
        socket.receive_json()
        socket.send_bytes(pcm(np.concatenate([np.zeros(SECOND // 2, np.float32), tone(2.0)])))
        assert socket.receive_json()["type"] == "speech_start"
    assert client.get("/healthz").json() == {"status": "ok"}
    with client.websocket_connect("/v1/listen?grammar=nope") as socket:
        assert "nope" in socket.receive_json()["error"]
