"""`glassformer wyoming` (serve/wyoming.py) tested with the `wyoming` package's own
AsyncTcpClient: describe, a grammar-constrained transcript and an intent from a real recording
sent at 8 kHz stereo (converted), recognize from text, several clients at once; and bad input
(issue 20), the framing kind over raw sockets: garbage, a payload_length that lies either way,
a 100 MB chunk, a stream that stalls, each followed by a client that is still answered."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from glassformer.serve.model_thread import ModelThread
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands
from tests.installed import import_or_missing
from tests.serve.conftest import APPOINTMENTS, needs_whisper_and_voice

wyoming = import_or_missing("wyoming")  # the dev extra installs it
GRAMMAR = APPOINTMENTS
pytestmark = needs_whisper_and_voice


@pytest.fixture(scope="module")
def service():  # noqa: ANN201
    from glassformer.serve.models import load_speech
    from glassformer.serve.wyoming import Service

    listeners = load_speech(ListenerConfig("whisper-tiny.en"), [str(GRAMMAR)])
    return Service(listeners, "whisper-tiny.en", ModelThread())


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


async def asks_info(uri: str) -> str:
    """A well-behaved client's describe: the type of the answer ("info")."""
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe

    async with AsyncTcpClient.from_uri(uri) as client:
        await client.write_event(Describe().event())
        return (await until(client, "info")).type


async def raw(uri: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = uri.removeprefix("tcp://").rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


def header(kind: str, payload_length: int = 0, **data: object) -> bytes:
    """An event's JSON line, its data inline, its payload_length whatever the test claims."""
    line: dict = {"type": kind, "data": data}
    if payload_length:
        line["payload_length"] = payload_length
    return json.dumps(line).encode() + b"\n"


MONO = {"rate": 16000, "width": 2, "channels": 1}  # 16 kHz 16-bit mono


async def answers_until_closed(reader: asyncio.StreamReader, timeout: float) -> list:
    """Every event the server sends until it closes the connection."""
    from wyoming.event import async_read_event

    events = []
    while (event := await asyncio.wait_for(async_read_event(reader), timeout)) is not None:
        events.append(event)
    return events


async def transcribe(
    uri: str,
    waveform: np.ndarray,
    name: str | None,
    intent: bool = False,
    language: str | None = None,
) -> list:
    """Send one command as 8 kHz stereo 16-bit audio (the server converts it); `name` None
    and a language is what Home Assistant sends."""
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    narrow = waveform[::2]  # 16 kHz -> 8 kHz (a telephone's rate)
    pcm = (np.clip(np.repeat(narrow[:, None], 2, axis=1), -1, 1) * 32767).astype("<i2")
    data = pcm.tobytes()
    async with AsyncTcpClient.from_uri(uri) as client:
        context = {"intent": True} if intent else None
        await client.write_event(Transcribe(name, language, context).event())
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
    assert service.unnamed("en") == "whisper-tiny.en"  # no grammar unasked: free text


def test_recognize_text_and_bad_requests(service) -> None:  # noqa: ANN001
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.event import Event
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
            await client.write_event(Event("recognize", {"txt": "monday"}))  # a field's name
            answers.append(await until(client, "intent"))
            await client.write_event(Event("audio-chunk", {**MONO, "rate": "fast"}, b"\0\0"))
            answers.append(await until(client, "error"))
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            await client.write_event(Event("audio-chunk", {**MONO, "rate": 2**70}, b"\0\0"))
            answers.append(await until(client, "error"))  # the connection was dropped
            await client.write_event(AudioStop().event())  # ends the refused stream, unanswered
            await client.write_event(Recognize(text="monday at nine p m").event())
            answers.append(await until(client, "intent"))  # the connection goes on
        for garbage in (b"this is not json\n", b"[" * 60_000 + b"\n"):  # one error, a close
            reader, writer = await raw(uri)
            writer.write(garbage)
            answers.append(await answers_until_closed(reader, 10))
            writer.close()
        return answers

    answers = asyncio.run(with_server(service, talk))
    intent, not_recognized, error, no_text, bad_rate, huge_rate, still, *after_garbage = answers
    assert intent.type == "intent" and intent.data["name"] == "book"
    assert not_recognized.type == "not-recognized"
    assert error.type == "error" and "audio-start" in error.data["text"]
    assert no_text.type == "error" and "text is missing" in no_text.data["text"]
    assert bad_rate.type == "error" and "rate is 'fast'" in bad_rate.data["text"]
    assert huge_rate.type == "error" and "a rate from 1 to 384000 Hz" in huge_rate.data["text"]
    assert still.type == "intent"
    for closed in after_garbage:  # not JSON; 60,000 nested "[" (a RecursionError before)
        assert [e.type for e in closed] == ["error"]
        assert "not a Wyoming event" in closed[0].data["text"]


def test_several_clients_at_once(service, spoken: list) -> None:  # noqa: ANN001
    async def talk(uri: str) -> list:
        jobs = [transcribe(uri, w, "appointments") for _, w in spoken * 2]
        return await asyncio.gather(*jobs)

    heard = asyncio.run(with_server(service, talk))
    texts = [events[0].data["text"] for events in heard]
    assert texts == [command.text for command, _ in spoken * 2]


def test_fifty_clients_at_once_and_a_stream_that_never_stops(service) -> None:  # noqa: ANN001
    """50 clients asking at once are all answered; a stream that goes on past the command
    limit (no audio-stop) gets one error (its later chunks and audio-stop are dropped), and
    that client and the next are still answered."""
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe

    from glassformer.serve.wyoming import MAX_COMMAND_SECONDS

    async def talk(uri: str) -> tuple:
        answers = await asyncio.gather(*(asks_info(uri) for _ in range(50)))
        second = b"\0\0" * 16_000  # one second of 16 kHz silence
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
            for _ in range(int(MAX_COMMAND_SECONDS) + 2):
                chunk = AudioChunk(rate=16000, width=2, channels=1, audio=second)
                await client.write_event(chunk.event())
            error = await until(client, "error")
            await client.write_event(AudioStop().event())
            await client.write_event(Describe().event())
            same_client = await until(client, "info")
        return answers, error, same_client.type, await asks_info(uri)

    answers, error, same_client, after = asyncio.run(with_server(service, talk))
    assert answers == ["info"] * 50
    assert error.type == "error" and "not a spoken command" in error.data["text"]
    assert same_client == "info"  # not a second error for the refused stream
    assert after == "info"


def test_a_payload_length_that_lies(service) -> None:  # noqa: ANN001
    """payload_length claims 3200 bytes and 100 come: a client that then closes is let go;
    one that stalls gets one error and a close within event_timeout_s (1 s here; 10 s by
    default). payload_length claims 100 bytes and 3200 come: the rest is not an event header,
    so one error and a close. After each, the next client is answered."""
    quick = dataclasses.replace(service, event_timeout_s=1.0)
    start = header("audio-start", **MONO)
    claims_more = header("audio-chunk", 3200, **MONO) + bytes(100)

    async def talk(uri: str) -> tuple:
        _, writer = await raw(uri)
        writer.write(start + claims_more)
        writer.close()
        after_close = await asks_info(uri)
        reader, writer = await raw(uri)
        writer.write(start + claims_more)  # and then nothing
        began = time.monotonic()
        stalled = await answers_until_closed(reader, 10)
        waited = time.monotonic() - began
        writer.close()
        after_stall = await asks_info(uri)
        reader, writer = await raw(uri)
        writer.write(start + header("audio-chunk", 100, **MONO) + bytes(3200))
        writer.write(header("audio-stop"))
        claimed_less = await answers_until_closed(reader, 10)
        writer.close()
        return after_close, stalled, waited, after_stall, claimed_less, await asks_info(uri)

    after_close, stalled, waited, after_stall, claimed_less, after = asyncio.run(
        with_server(quick, talk)
    )
    assert after_close == after_stall == after == "info"
    assert [e.type for e in stalled] == ["error"]
    assert "not sent whole within 1 s" in stalled[0].data["text"]
    assert waited < 5, f"the stalled client held its connection {waited:.1f} s (bound: 1 s)"
    assert [e.type for e in claimed_less] == ["error"]
    assert "not a Wyoming event" in claimed_less[0].data["text"]


def test_a_stream_that_rests_without_audio_stop(service) -> None:  # noqa: ANN001
    """audio-start, a chunk, then nothing: one error and a close within event_timeout_s."""
    quick = dataclasses.replace(service, event_timeout_s=1.0)

    async def talk(uri: str) -> tuple:
        reader, writer = await raw(uri)
        writer.write(header("audio-start", **MONO) + header("audio-chunk", 3200, **MONO))
        writer.write(bytes(3200))
        answers = await answers_until_closed(reader, 10)
        writer.close()
        return answers, await asks_info(uri)

    answers, after = asyncio.run(with_server(quick, talk))
    assert [e.type for e in answers] == ["error"]
    assert "without its audio-stop" in answers[0].data["text"]
    assert after == "info"


def resident_bytes() -> int:
    """This process's resident memory now (Linux /proc; the server runs in this process)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads Linux's /proc")
def test_a_100_mb_chunk_is_refused_before_it_is_read(service) -> None:  # noqa: ANN001
    """An audio-chunk whose payload_length is 100 MB gets an error on its header alone and a
    close; the client cannot push the 100 MB, and the server's memory does not grow by it."""
    from wyoming.event import async_read_event

    claimed = 100_000_000

    async def talk(uri: str) -> tuple:
        peak = before = resident_bytes()

        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, resident_bytes())
                await asyncio.sleep(0.005)

        sampler = asyncio.create_task(sample())
        reader, writer = await raw(uri)
        writer.write(header("audio-chunk", claimed, **MONO))
        answer = await asyncio.wait_for(async_read_event(reader), 5)  # before any payload
        sent, block = 0, bytes(1024 * 1024)
        try:
            while sent < claimed:
                writer.write(block)
                await writer.drain()
                sent += len(block)
        except ConnectionError:
            pass
        writer.close()
        sampler.cancel()
        return answer, sent, peak - before, await asks_info(uri)

    answer, sent, growth, after = asyncio.run(with_server(service, talk))
    assert answer.type == "error" and "payload_length 100000000" in answer.data["text"]
    assert sent < claimed, "the server took the whole 100 MB"
    assert growth < 20 * 2**20, f"resident memory grew {growth / 2**20:.0f} MB"
    assert after == "info"


async def asks_info_once_it_can(uri: str, within: float = 10.0) -> str:
    """asks_info, again every 0.1 s while the answer is an error (a slot frees up when the
    server has seen a client leave)."""
    deadline = time.monotonic() + within
    while (answer := await asks_info(uri)) != "info" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return answer


def test_clients_past_the_limit_and_idle_connections_are_let_go(service) -> None:  # noqa: ANN001
    """With max_clients 2, two connections that send nothing hold both places: a third
    client gets one error and a close. Idle past idle_timeout_s (1 s here; 300 s by
    default), each is closed with one error, and a client is answered again."""
    quick = dataclasses.replace(service, max_clients=2, idle_timeout_s=1.0)

    async def talk(uri: str) -> tuple:
        holders = [await raw(uri) for _ in range(2)]
        await asyncio.sleep(0.2)  # both connections are counted
        reader, writer = await raw(uri)
        third = await answers_until_closed(reader, 10)
        writer.close()
        began = time.monotonic()
        idle = [await answers_until_closed(r, 10) for r, _ in holders]
        waited = time.monotonic() - began
        for _, w in holders:
            w.close()
        return third, idle, waited, await asks_info_once_it_can(uri)

    third, idle, waited, after = asyncio.run(with_server(quick, talk))
    assert [e.type for e in third] == ["error"]
    assert "has 2 clients" in third[0].data["text"]
    for answers in idle:
        assert [e.type for e in answers] == ["error"]
        assert "no event for 1 s" in answers[0].data["text"]
    assert waited < 5, f"idle connections were held {waited:.1f} s (bound: 1 s)"
    assert after == "info"
