"""POST /v1/audio/transcriptions, tested with the official `openai` client (base_url pointing
at a real uvicorn server on loopback, a dummy key) on a real recording, and its bad input."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from glassformer.serve.app import create_app
from glassformer.serve.config import ServeConfig
from glassformer.serve.models import load_models
from glassformer.tasks.speech.config import ListenerConfig
from tests.installed import import_or_missing
from tests.serve.conftest import APPOINTMENTS, needs_whisper_and_voice, recorded_command

openai = import_or_missing("openai")  # the dev extra installs it
GRAMMAR = APPOINTMENTS
pytestmark = needs_whisper_and_voice


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """`glassformer serve`'s app under uvicorn on a free loopback port, in a thread."""
    import uvicorn

    served = load_models(ListenerConfig("whisper-tiny.en"), [str(GRAMMAR)], None, None)
    config = ServeConfig(max_upload_mb=1.0)  # small, so that an oversized body is cheap
    app = create_app(served, config, allowed_hosts=["127.0.0.1"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    return recorded_command(tmp_path_factory.mktemp("openai"), seed=5)


def client(server: str):  # noqa: ANN201
    return openai.OpenAI(base_url=server, api_key="not-needed", max_retries=0, timeout=60)


def test_the_openai_client_transcribes_with_a_grammar_and_free(
    server: str, recording: tuple[Path, object]
) -> None:
    path, command = recording
    with path.open("rb") as audio:
        answer = client(server).audio.transcriptions.create(model="appointments", file=audio)
    assert answer.text == command.text
    extra = answer.model_extra or {}
    assert (extra["intent"], extra["slots"]) == (command.intent, command.slots)
    with path.open("rb") as audio:
        free = client(server).audio.transcriptions.create(
            model="whisper-1", file=audio, response_format="verbose_json", language="en"
        )
    assert free.text.strip() and free.duration > 1.0 and free.language == "english"
    (segment,) = free.segments or []
    assert (segment.start, segment.end, segment.text) == (0.0, free.duration, free.text)
    assert 0.0 < segment.no_speech_prob < 0.5  # Whisper's own, no longer a constant 0
    assert 0.0 < (free.model_extra or {})["confidence"] <= 1.0
    assert extra["accepted"] is True and extra["confidence"] > 0.0
    names = [model.id for model in client(server).models.list()]
    assert names == ["whisper-tiny.en", "whisper-1", "appointments"]
    with path.open("rb") as audio:
        text = client(server).audio.transcriptions.create(
            model="appointments", file=audio, response_format="text"
        )
    assert str(text).strip() == command.text


@pytest.mark.parametrize(
    ("what", "status", "message"),
    [
        ("unknown model", 404, "does not exist"),
        ("text as audio", 422, "not a readable"),
        ("bad format", 400, "response_format"),
        ("french", 400, "writes en only"),
    ],
)
def test_bad_requests_get_openais_error_shape(
    server: str, recording: tuple[Path, object], tmp_path: Path, what: str, status: int,
    message: str,
) -> None:  # fmt: skip
    path, _ = recording
    options: dict = {"model": "appointments"}
    if what == "unknown model":
        options["model"] = "gpt-9"
    if what == "text as audio":
        path = tmp_path / "notes.wav"
        path.write_text("this is not audio\n")
    if what == "bad format":
        options["response_format"] = "srt"
    if what == "french":
        options["language"] = "fr"
    with path.open("rb") as audio, pytest.raises(openai.APIStatusError) as caught:
        client(server).audio.transcriptions.create(file=audio, **options)
    assert caught.value.status_code == status
    body = caught.value.body
    assert isinstance(body, dict) and message in body["message"], body
    assert body["type"] in ("invalid_request_error", "not_found_error")


def test_no_file_and_an_oversized_body(server: str) -> None:
    import httpx

    form_only = {"model": (None, "appointments")}  # multipart, with no file part
    no_file = httpx.post(f"{server}/audio/transcriptions", files=form_only)
    assert no_file.status_code == 400, no_file.text
    assert no_file.json()["error"]["message"].startswith("the form has no file")
    big = b"\0" * (2 * 1024 * 1024)  # over the test server's 1 MB limit
    files = {"file": ("big.wav", big, "audio/wav")}
    answer = httpx.post(f"{server}/audio/transcriptions", data={"model": "x"}, files=files)
    assert answer.status_code == 413 and "larger than" in answer.json()["error"]["message"]
