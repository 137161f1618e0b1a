"""`glassformer wyoming` (serve/wyoming.py) tested with the `wyoming` package's own
AsyncTcpClient: describe, a grammar-constrained transcript and an intent from a real recording
sent at 8 kHz stereo (converted), recognize from text, bad input, several clients at once."""

from __future__ import annotations

import asyncio
import socket
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands
from tests.serve.conftest import APPOINTMENTS, needs_whisper_and_voice

wyoming = pytest.importorskip("wyoming")  # the dev extra installs it
GRAMMAR = APPOINTMENTS
pytestmark = needs_whisper_and_voice


@pytest.fixture(scope="module")
def service():  # noqa: ANN201
    from glassformer.serve.models import load_speech
    from glassformer.serve.wyoming import Service

    listeners = load_speech("whisper-tiny.en", [str(GRAMMAR)], "cpu")
    return Service(listeners, "whisper-tiny.en", ThreadPoolExecutor(1))


@pytest.fixture(scope="module")
def spoken() -> list:
    return recorded_commands(Grammar.from_yaml(GRAMMAR), find_voice(), 2, seed=7)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def with_server(service, talk):  # noqa: ANN001, ANN201
    """Start the service on a free loopback port, run `talk(uri)`, stop the server."""
    from glassformer.serve.wyoming import serve

    uri = f"tcp://127.0.0.1:{free_port()}"
    server = asyncio.create_task(serve(uri, service))
    await asyncio.sleep(0.3)
    try:
        return await talk(uri)
    finally:
        server.cancel()


async def until(client, kind: str):  # noqa: ANN001, ANN201
    while True:
        event = await asyncio.wait_for(client.read_event(), 60)
        assert event is not None, f"the connection closed before {kind}"
        if event.type == kind or event.type == "error":
            return event


async def transcribe(uri: str, waveform: np.ndarray, name: str, intent: bool = False) -> list:
    """Send one command as 8 kHz stereo 16-bit audio (the server converts it)."""
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    narrow = waveform[::2]  # 16 kHz -> 8 kHz (a telephone's rate)
    pcm = (np.clip(np.repeat(narrow[:, None], 2, axis=1), -1, 1) * 32767).astype("<i2")
    data = pcm.tobytes()
    async with AsyncTcpClient.from_uri(uri) as client:
        context = {"intent": True} if intent else None
        await client.write_event(Transcribe(name=name, context=context).event())
        await client.write_event(AudioStart(rate=8000, width=2, channels=2).event())
        for i in range(0, len(data), 3200):
            chunk = AudioChunk(rate=8000, width=2, channels=2, audio=data[i : i + 3200])
            await client.write_event(chunk.event())
        await client.write_event(AudioStop().event())
        events = [await until(client, "transcript")]
        if intent:
            events.append(await until(client, "intent"))
        return events


def test_describe_transcribe_and_intent_from_speech(service, spoken: list) -> None:  # noqa: ANN001
    from wyoming.asr import Transcript
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe, Info
    from wyoming.intent import Intent

    (command, waveform), _ = spoken

    async def talk(uri: str) -> tuple:
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(Describe().event())
            info = Info.from_event(await until(client, "info"))
        heard = await transcribe(uri, waveform, "appointments", intent=True)
        return info, heard

    info, (transcript, intent) = asyncio.run(with_server(service, talk))
    assert [m.name for m in info.asr[0].models] == ["whisper-tiny.en", "appointments"]
    assert [p.models[0].name for p in info.intent] == ["appointments"]
    assert Transcript.from_event(transcript).text == command.text
    intent = Intent.from_event(intent)
    assert intent.name == command.intent
    assert {e.name: e.value for e in intent.entities} == command.slots


def test_recognize_text_and_bad_requests(service) -> None:  # noqa: ANN001
    from wyoming.audio import AudioChunk
    from wyoming.client import AsyncTcpClient
    from wyoming.intent import Recognize

    async def talk(uri: str) -> list:
        answers = []
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(Recognize(text="monday at nine p m").event())
            answers.append(await until(client, "intent"))
            await client.write_event(Recognize(text="make me a sandwich").event())
            answers.append(await until(client, "not-recognized"))
            chunk = AudioChunk(rate=16000, width=2, channels=1, audio=b"\0\0" * 160)
            await client.write_event(chunk.event())  # no audio-start
            answers.append(await until(client, "error"))
        async with AsyncTcpClient.from_uri(uri) as client:  # garbage: that client is closed
            client._writer.write(b"this is not json\n")
            await client._writer.drain()
            answers.append(await asyncio.wait_for(client.read_event(), 10))
        return answers

    intent, not_recognized, error, after_garbage = asyncio.run(with_server(service, talk))
    assert intent.type == "intent" and intent.data["name"] == "book"
    assert not_recognized.type == "not-recognized"
    assert error.type == "error" and "audio-start" in error.data["text"]
    assert after_garbage is None


def test_several_clients_at_once(service, spoken: list) -> None:  # noqa: ANN001
    async def talk(uri: str) -> list:
        jobs = [transcribe(uri, w, "appointments") for _, w in spoken * 2]
        return await asyncio.gather(*jobs)

    heard = asyncio.run(with_server(service, talk))
    texts = [events[0].data["text"] for events in heard]
    assert texts == [command.text for command, _ in spoken * 2]


def test_fifty_clients_at_once_and_a_stream_that_never_stops(service) -> None:  # noqa: ANN001
    """50 clients asking at once are all answered; a stream that goes on past the command
    limit (no audio-stop) gets an error, and the server still answers the next client."""
    from wyoming.audio import AudioChunk, AudioStart
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe

    from glassformer.serve.wyoming import MAX_COMMAND_SECONDS

    async def ask(uri: str) -> str:
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(Describe().event())
            return (await until(client, "info")).type

    async def talk(uri: str) -> tuple:
        answers = await asyncio.gather(*(ask(uri) for _ in range(50)))
        second = b"\0\0" * 16_000  # one second of 16 kHz silence
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            for _ in range(int(MAX_COMMAND_SECONDS) + 2):
                chunk = AudioChunk(rate=16000, width=2, channels=1, audio=second)
                await client.write_event(chunk.event())
            error = await until(client, "error")
        return answers, error, await ask(uri)

    answers, error, after = asyncio.run(with_server(service, talk))
    assert answers == ["info"] * 50
    assert error.type == "error" and "not a spoken command" in error.data["text"]
    assert after == "info"
