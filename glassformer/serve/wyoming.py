"""`glassformer wyoming`: the Listener as a Wyoming service, for Home Assistant's voice pipeline.

Built on the `wyoming` package (its events, server and audio converter; no protocol code here):

    describe                         -> info: an ASR program whose models are the speech model
                                        (free text) and each grammar by name, and an intent
                                        program per grammar
    transcribe (name) + audio-start, audio-chunk..., audio-stop
                                     -> transcript-start, transcript-chunk, transcript-stop (the
                                        streaming events, where the installed wyoming has them),
                                        then transcript: constrained to the grammar `name`
                                        names, free text otherwise; with context {"intent": true}
                                        also an intent (or not-recognized) straight from speech
    recognize (text)                 -> intent (name, the slots as entities) or not-recognized,
                                        from the grammar context {"grammar": NAME} names (else
                                        the first)

Audio in any rate, width or channel count is converted to 16 kHz 16-bit mono. A stream longer
than the server's command limit, an unknown model or audio without audio-start gets an
`error` event; garbage ends that client's connection; other clients are served on. Every
model call runs on one worker thread, as in the HTTP server. Not here: wake words, TTS, and a
bound on a lying payload_length (the wyoming package reads the payload it is promised).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioChunkConverter, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import (
    AsrModel,
    AsrProgram,
    Attribution,
    Describe,
    Info,
    IntentModel,
    IntentProgram,
)
from wyoming.intent import Entity, Intent, NotRecognized, Recognize
from wyoming.server import AsyncEventHandler, AsyncServer

from glassformer.audio.endpoint import SAMPLE_RATE
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.listener import Listener

MAX_COMMAND_SECONDS = 30.0  # a longer stream is refused as not a spoken command
ATTRIBUTION = ("glassformer", "https://pypi.org/project/glassformer/")
Returned = TypeVar("Returned")  # what a function run on the model thread returns


@dataclass
class Service:
    """What every connection shares: the listeners by grammar name, the model's name, and
    the one thread that runs the model."""

    listeners: dict[str, Listener]
    source: str
    executor: ThreadPoolExecutor

    async def run(self, function: Callable[..., Returned], *args: object) -> Returned:
        call = functools.partial(function, *args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, call)


def describe(service: Service) -> Event:
    """The info event: an ASR program (the model and each grammar) and intent programs."""
    by = Attribution(*ATTRIBUTION)
    models = [
        AsrModel(name, by, True, description, None, ["en"])
        for name, description in [
            (service.source, "free text"),
            *((g, f"the commands of {g}") for g in service.listeners),
        ]
    ]
    asr = AsrProgram("glassformer", by, True, "spoken commands to text", None, models)
    asr.supports_transcript_streaming = True
    intents = [
        IntentProgram(
            f"glassformer-{name}",
            by,
            True,
            f"the intents of {name}",
            None,
            [IntentModel(name, by, True, None, None, ["en"])],
        )
        for name in service.listeners
    ]
    return Info(asr=[asr], intent=intents).event()


def intent_event(listener: Listener, text: str) -> Event:
    """The grammar's reading of `text`: an intent with its slots as entities, or not."""
    command = listener.grammar.parse(text) if listener.grammar is not None else None
    if command is None:
        return NotRecognized(text=text).event()
    entities = [Entity(name, value) for name, value in command.slots.items()]
    return Intent(command.intent, entities, text=command.text).event()


class Handler(AsyncEventHandler):
    """One client's connection (the wyoming server makes one per client, through serve)."""

    def __init__(
        self, service: Service, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self.model, self.wants_intent = service.source, False
        self.audio: list[bytes] | None = None  # between audio-start and audio-stop
        self.converter = AudioChunkConverter(rate=SAMPLE_RATE, width=2, channels=1)

    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                await self.write_event(describe(self.service))
            elif Transcribe.is_type(event.type):
                self.choose(Transcribe.from_event(event))
            elif AudioStart.is_type(event.type):
                self.audio = []
            elif AudioChunk.is_type(event.type):
                self.take(AudioChunk.from_event(event))
            elif AudioStop.is_type(event.type):
                await self.answer()
            elif Recognize.is_type(event.type):
                recognize = Recognize.from_event(event)
                default = next(iter(self.service.listeners))
                name = (recognize.context or {}).get("grammar") or default
                await self.write_event(intent_event(self.listener(name), recognize.text))
        except GlassformerError as error:
            self.audio = None
            await self.write_event(Error(text=str(error), code="bad-request").event())
        return True

    def listener(self, name: str) -> Listener:
        if name in self.service.listeners:
            return self.service.listeners[name]
        if name == self.service.source:
            return next(iter(self.service.listeners.values())).fork(constrain=False)
        known = ", ".join([self.service.source, *self.service.listeners])
        raise GlassformerError(f"no model named {name!r} (models: {known})")

    def choose(self, transcribe: Transcribe) -> None:
        self.model = transcribe.name or self.service.source
        self.listener(self.model)  # an unknown name is an error now, not after the audio
        self.wants_intent = bool((transcribe.context or {}).get("intent"))

    def take(self, chunk: AudioChunk) -> None:
        if self.audio is None:
            raise GlassformerError("audio-chunk before audio-start")
        self.audio.append(self.converter.convert(chunk).audio)
        seconds = sum(map(len, self.audio)) / 2 / SAMPLE_RATE
        if seconds > MAX_COMMAND_SECONDS:
            raise GlassformerError(
                f"more than {MAX_COMMAND_SECONDS:g} s of audio: not a spoken command"
            )

    async def answer(self) -> None:
        if not self.audio:
            raise GlassformerError("audio-stop with no audio")
        pcm = np.frombuffer(b"".join(self.audio), dtype="<i2")
        self.audio = None
        listener = self.listener(self.model)
        result = await self.service.run(listener.understand, pcm)
        await self.send_transcript(result.text)
        await self.write_event(Transcript(text=result.text).event())
        if self.wants_intent:
            await self.write_event(intent_event(listener, result.text))

    async def send_transcript(self, text: str) -> None:
        """The streaming transcript events, where this wyoming version has them."""
        try:
            from wyoming.asr import TranscriptChunk, TranscriptStart, TranscriptStop
        except ImportError:
            return
        await self.write_event(TranscriptStart().event())
        await self.write_event(TranscriptChunk(text=text).event())
        await self.write_event(TranscriptStop().event())


async def serve(uri: str, service: Service) -> None:
    """Serve Wyoming clients at `uri` (tcp://HOST:PORT, unix://PATH) until stopped."""
    server = AsyncServer.from_uri(uri)
    await server.run(functools.partial(Handler, service))
