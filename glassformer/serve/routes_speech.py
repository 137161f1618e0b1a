"""Spoken commands over HTTP and WebSocket.

    POST /v1/transcribe?grammar=NAME   an audio file -> words, intent, slots, confidence
    WS   /v1/listen?grammar=NAME       16 kHz PCM as it is recorded -> an intent per command

The socket protocol. The client sends binary messages of 16-bit little-endian mono PCM at
16 kHz, any length up to MAX_CHUNK_BYTES, and may send the text message {"type": "end"}
to end a command under way (a stream that stops). The server sends JSON text messages:

    {"type": "ready", "sample_rate": 16000, "grammar": NAME}     once, on connecting
    {"type": "speech_start", "sample": N}                          a command began
    {"type": "result", ...the /v1/transcribe fields..., "latency_ms": MS, "start": N, "end": N}
    {"type": "error", "error": MESSAGE}                            then, for bad data, a close

Each connection gets its own Stream of the grammar's Listener (tasks/speech/listener.py): its
endpointing, and the command decoded in the speaker's pauses, so that the result is there
when they stop; latency_ms says how long after the last speech frame it came. Listening goes
on after each result. Not here: audio in other rates or encodings.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import numpy as np
from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect

from glassformer.serve.audio_upload import audio_bytes, decode_audio
from glassformer.serve.http import ApiError

if TYPE_CHECKING:
    from glassformer.serve.models import ServedModels
    from glassformer.tasks.speech.listener import Listener
from glassformer.audio.endpoint import SAMPLE_RATE

MAX_CHUNK_BYTES = 256 * 1024  # one socket message: 8 s of 16-bit PCM at most
MAX_CONTROL_CHARS = 256  # a text message: {"type": "end"} with room for spaces
CLOSE_UNSUPPORTED = 1003  # WebSocket close codes (RFC 6455 section 7.4.1)
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009

router = APIRouter()


def require_speech(served: ServedModels) -> None:
    """A 404 for a speech request to a server started without a speech model."""
    if not served.speech:
        raise ApiError(404, "no speech model is loaded (start the server with --speech MODEL)")


def choose_speech(served: ServedModels, grammar: str | None) -> tuple[str, Listener]:
    """The Listener of the named grammar (default: the only one loaded), and its name. With
    several loaded, a request must name one: none is chosen for it (a coffee order heard in
    an appointment, accepted)."""
    require_speech(served)
    name = grammar or served.default_grammar
    if name is None:
        loaded = ", ".join(served.speech)
        raise ApiError(400, f"several grammars are loaded ({loaded}): name one, ?grammar=NAME")
    if name not in served.speech:
        loaded = ", ".join(served.speech)
        raise ApiError(404, f"no grammar named {name!r} is loaded (loaded: {loaded})")
    return name, served.speech[name]


def check_audible(waveform: np.ndarray) -> None:
    """A 422 for a clip with nothing audible in it (audio/silence.check_audible)."""
    from glassformer.audio.silence import check_audible as check
    from glassformer.errors import GlassformerError

    try:
        check(waveform)
    except GlassformerError as error:
        raise ApiError(422, str(error)) from None


@router.post("/v1/transcribe")
async def transcribe(request: Request, grammar: str | None = None) -> dict:
    """An audio file (WAV, FLAC or OGG; raw body or the multipart field `file`) -> its
    command: text, intent, slots, confidence, accepted, audio_seconds, elapsed_ms."""
    started = time.perf_counter()
    state = request.app.state
    _, listener = choose_speech(state.served, grammar)
    data = await audio_bytes(request)
    waveform = await asyncio.to_thread(decode_audio, data, state.config.max_command_seconds)
    check_audible(waveform)
    result, batch = await state.batcher.transcribe(listener, waveform)
    elapsed_ms = (time.perf_counter() - started) * 1000  # the request's, waiting included
    return result.to_json() | {"elapsed_ms": round(elapsed_ms, 1), "batch_size": batch}


class SocketRefused(Exception):
    """The client sent something the protocol does not allow: tell it, then close."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def pcm_samples(message: dict) -> np.ndarray | None:
    """A socket message's PCM as float samples; None for the "end" control message."""
    data, text = message.get("bytes"), message.get("text")
    if data is not None:
        if len(data) > MAX_CHUNK_BYTES:
            raise SocketRefused(
                CLOSE_TOO_BIG, f"a message of {len(data)} bytes; at most {MAX_CHUNK_BYTES}"
            )
        if len(data) % 2:
            raise SocketRefused(
                CLOSE_INVALID, "binary messages must be 16-bit PCM (an even number of bytes)"
            )
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
    if len(text or "") > MAX_CONTROL_CHARS:  # {"type": "end"}: refused before it is parsed
        control = None
    else:
        try:
            control = json.loads(text or "")
        except ValueError:
            control = None
    if not isinstance(control, dict) or control.get("type") != "end":
        raise SocketRefused(CLOSE_UNSUPPORTED, 'text messages may only be {"type": "end"}')
    return None


@router.websocket("/v1/listen")
async def listen(socket: WebSocket, grammar: str | None = None) -> None:
    """Endpoint a live 16 kHz PCM stream into commands; answer each with its intent."""
    await socket.accept()
    state = socket.app.state
    try:
        name, listener = choose_speech(state.served, grammar)
    except ApiError as error:
        await socket.send_json({"type": "error", "error": error.message})
        await socket.close(CLOSE_POLICY)
        return
    stream = listener.stream()
    await socket.send_json({"type": "ready", "sample_rate": SAMPLE_RATE, "grammar": name})
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                break
            samples = pcm_samples(message)
            was_listening = not stream.in_command
            if samples is None:
                result = await state.thread.run(stream.flush)
            else:
                result = await state.thread.run(stream.process, samples)
            if was_listening and stream.in_command:
                await socket.send_json({"type": "speech_start", "sample": stream.position})
            if result is not None:
                await socket.send_json({"type": "result", **result.to_json(), "batch_size": 1})
    except SocketRefused as refused:
        await socket.send_json({"type": "error", "error": str(refused)})
        await socket.close(refused.code)
    except WebSocketDisconnect:
        pass
