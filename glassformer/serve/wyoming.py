"""`glassformer wyoming`: the Listener as a Wyoming service, for Home Assistant's voice pipeline.

Built on the `wyoming` package (its events, server and audio converter); only the reading of
events is ours (read_event), to bound it:

    describe                         -> info: an ASR program whose models are the speech model
                                        (free text) and each grammar by name, and an intent
                                        program per grammar
    transcribe (name) + audio-start, audio-chunk..., audio-stop
                                     -> transcript-start, transcript-chunk, transcript-stop (the
                                        streaming events, where the installed wyoming has them),
                                        then transcript: constrained to the grammar `name`
                                        names; with no name (Home Assistant sends only its
                                        language), to Home Assistant's sentences of that
                                        language if served, free text otherwise; with context
                                        {"intent": true}
                                        also an intent (or not-recognized) straight from speech
    recognize (text)                 -> intent (name, the slots as entities) or not-recognized,
                                        from the grammar context {"grammar": NAME} names (else
                                        the first)

Audio in any rate, 1 to 4-byte width, mono or stereo, is converted to 16 kHz 16-bit mono.
Every model call runs on the ModelThread (serve/model_thread.py), as in the HTTP server. Bad
input costs its client an answer, never the server its memory nor other clients their
service. A bad request (a stream past MAX_COMMAND_SECONDS, an unknown model, audio before
audio-start, a field of the wrong type) gets one `error` event, and the connection goes on
(a refused stream's remaining chunks are dropped). What cannot be read as events (garbage, a
data_length or payload_length over its limit, an event not sent whole within event_timeout_s
of its first byte, a stream that rests that long without audio-stop) gets one `error` event
and a close. read_event checks each length before it reads a byte; the wyoming package's own
reader reads whatever payload_length promises, however long that takes. A connection with no
event for idle_timeout_s between streams is closed with one `error` event (Home Assistant
connects once per request), and a client past max_clients connected at once gets one `error`
event and a close: connections that only hold a socket cannot pile up. Not here: wake words,
TTS.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import time
from dataclasses import dataclass

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
from glassformer.serve.model_thread import ModelThread
from glassformer.tasks.speech.listener import Listener

MAX_COMMAND_SECONDS = 30.0  # a longer stream is refused as not a spoken command
MAX_HEADER_BYTES = 64 * 1024  # an event's JSON line: asyncio's StreamReader limit, kept by
# the wyoming package's servers (a longer line is refused as it is read)
MAX_DATA_BYTES = 64 * 1024  # data_length: an event's extra JSON (text, context), never audio
MAX_PAYLOAD_BYTES = 1024 * 1024  # payload_length: one chunk of audio; 32 s of 16 kHz 16-bit
# mono, where Home Assistant sends 1024 samples (2 KB) a chunk
EVENT_TIMEOUT_S = 10.0  # s: to send an event whole once it has begun, and between the events
# of an audio stream (a live stream sends a chunk every ~0.06 s)
IDLE_TIMEOUT_S = 300.0  # s: a connection's wait for its next event between streams
MAX_CLIENTS = 64  # connections at once (Home Assistant: one per request under way)
MAX_RATE = 384_000  # Hz: the highest sample rate of any audio interface; a chunk claiming
# more is refused before any conversion
ATTRIBUTION = ("glassformer", "https://pypi.org/project/glassformer/")


@dataclass
class Service:
    """What every connection shares: the listeners by grammar name, the model's name, the
    one thread that runs the model, its limits, and how many clients are connected now."""

    listeners: dict[str, Listener]
    source: str
    thread: ModelThread
    event_timeout_s: float = EVENT_TIMEOUT_S  # tests shorten these
    idle_timeout_s: float = IDLE_TIMEOUT_S
    max_clients: int = MAX_CLIENTS
    clients: int = 0  # connected now (the event loop's thread alone counts them)
    quiet: bool = False  # no log line per answered stream (the model, audio, intent, time)

    def __post_init__(self) -> None:
        self.first = next(iter(self.listeners.values()))  # recognize's default grammar
        self.free = self.first.with_grammar(None)  # the model's name: free text

    def unnamed(self, language: str | None) -> str:
        """The model a stream that names none is decoded with. Home Assistant names none,
        only its language: Home Assistant's sentences of that language where they are
        served (--intents), else free text. Never a Rhino grammar unasked.

        Example: serving homeassistant-fr, language "fr" or "fr-FR" -> "homeassistant-fr"
        """
        from glassformer.voice.homeassistant import HomeAssistantGrammar

        wanted = (language or "").split("-")[0].lower()
        for name, listener in self.listeners.items():
            if isinstance(listener.grammar, HomeAssistantGrammar) and wanted in (
                "",
                listener.language,
            ):
                return name
        return self.source


def describe(service: Service) -> Event:
    """The info event: an ASR program (the model and each grammar) and intent programs."""
    by = Attribution(*ATTRIBUTION)
    languages = {name: [listener.language] for name, listener in service.listeners.items()}
    models = [AsrModel(service.source, by, True, "free text", None, [service.free.language])]
    models += [
        AsrModel(name, by, True, f"the commands of {name}", None, languages[name])
        for name in service.listeners
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
            [IntentModel(name, by, True, None, None, languages[name])],
        )
        for name in service.listeners
    ]
    return Info(asr=[asr], intent=intents).event()


def intent_event(listener: Listener, text: str) -> Event:
    """The listener's grammar's reading of `text`: an intent with its slots as entities, or
    not recognized."""
    command = listener.grammar.parse(text) if listener.grammar is not None else None
    if command is None:
        return NotRecognized(text=text).event()
    entities = [Entity(name, value) for name, value in command.slots.items()]
    return Intent(command.intent, entities, text=command.text).event()


class BadEvent(Exception):
    """What the client sent cannot be read as a Wyoming event, so the rest of its stream
    cannot be either: the client is told why and its connection closed."""


def length_field(header: dict, key: str, limit: int) -> int:
    """A header's data_length or payload_length, 0 when absent; BadEvent past `limit`.

    Example: {"payload_length": 3200}, "payload_length", 1048576 -> 3200
    """
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadEvent(f"{key} {value!r} is not a number of bytes")
    if value > limit:
        raise BadEvent(f"{key} {value} is over this server's limit of {limit} bytes")
    return value


def event_header(line: bytes) -> tuple[dict, int, int]:
    """An event's JSON line, checked, and the lengths of its data and payload (which follow)."""
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):  # not JSON or not text; or 64 KiB of "[" nested
        raise BadEvent("not a Wyoming event: an event begins with a line of JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise BadEvent('not a Wyoming event: its JSON line has no "type"')
    if not isinstance(header.get("data") or {}, dict):
        raise BadEvent('not a Wyoming event: its "data" is not an object')
    data_length = length_field(header, "data_length", MAX_DATA_BYTES)
    return header, data_length, length_field(header, "payload_length", MAX_PAYLOAD_BYTES)


async def read_event(
    reader: asyncio.StreamReader, timeout_s: float, idle_s: float | None = None
) -> Event | None:
    """The client's next event, or None when it closes the connection (mid-event included).

    Waits idle_s (None: as long as it takes) for the event's first byte, then timeout_s for
    the rest. Each length is checked before anything it counts is read, so neither a
    payload_length that lies nor a client that stalls holds more than one event's limits.

    Raises:
        BadEvent: the event cannot be read (see event_header), or took over timeout_s.
        TimeoutError: no byte within idle_s.
    """
    async with asyncio.timeout(idle_s):
        first = await reader.read(1)
    if not first:
        return None
    try:
        async with asyncio.timeout(timeout_s):
            try:
                line = first + await reader.readline()
            except ValueError:  # asyncio's limit (LimitOverrunError), as wyoming's reader has
                raise BadEvent(f"an event's JSON line is over {MAX_HEADER_BYTES} bytes") from None
            header, data_length, payload_length = event_header(line)
            data = header.get("data") or {}
            if data_length:
                try:
                    extra = json.loads(await reader.readexactly(data_length))
                except RecursionError:
                    raise BadEvent("an event's data is nested too deeply") from None
                if not isinstance(extra, dict):
                    raise BadEvent("an event's data is not a JSON object")
                data |= extra
            payload = await reader.readexactly(payload_length) if payload_length else None
    except TimeoutError:
        raise BadEvent(f"an event was not sent whole within {timeout_s:g} s") from None
    except asyncio.IncompleteReadError:
        return None
    except ValueError:  # the data's JSON
        raise BadEvent("an event's data is not JSON") from None
    return Event(type=header["type"], data=data, payload=payload)


FIELDS = {  # event type -> the data fields read here, their JSON types, whether required
    "transcribe": {"name": (str, False), "context": (dict, False)},
    "recognize": {"text": (str, True), "context": (dict, False)},
    "audio-chunk": {"rate": (int, True), "width": (int, True), "channels": (int, True)},
}


def check_fields(event: Event) -> None:
    """GlassformerError unless the fields read here have their JSON types (FIELDS).

    Example: audio-chunk {"rate": "fast", "width": 2, "channels": 1} -> GlassformerError
    """
    for key, (kind, required) in FIELDS.get(event.type, {}).items():
        value = event.data.get(key)
        if value is None and not required:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            shown = "missing" if value is None else f"{value!r}, not {kind.__name__}"
            raise GlassformerError(f"{event.type}: {key} is {shown}")


class Handler(AsyncEventHandler):
    """One client's connection (the wyoming server makes one per client, through serve)."""

    def __init__(
        self, service: Service, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self.model, self.wants_intent = service.unnamed(None), False
        self.audio: list[bytes] | None = None  # between audio-start and audio-stop
        self.seconds = 0.0  # of audio in the stream so far, counted before conversion
        self.refused = False  # the stream got an error: drop its chunks up to audio-stop
        self.converter = AudioChunkConverter(rate=SAMPLE_RATE, width=2, channels=1)

    async def run(self) -> None:
        """Answer events until the client leaves, rests too long or sends what cannot be read
        (read_event); a client past max_clients is told so and let go."""
        self._is_running = True
        service, timeout_s = self.service, self.service.event_timeout_s
        if service.clients >= service.max_clients:
            await self.refuse(f"this server has {service.max_clients} clients: try again later")
            self.writer.close()
            return
        service.clients += 1
        try:
            while self._is_running:
                mid_stream = self.audio is not None
                idle_s = timeout_s if mid_stream else service.idle_timeout_s
                event = await read_event(self.reader, timeout_s, idle_s)
                if event is None or not await self.handle_event(event):
                    break
        except BadEvent as error:
            await self.refuse(str(error))
        except TimeoutError:
            await self.refuse(
                f"an audio stream rested {timeout_s:g} s without its audio-stop"
                if mid_stream
                else f"no event for {service.idle_timeout_s:g} s: the connection is closed"
            )
        except ConnectionError:
            pass  # the client went away while it was answered
        finally:
            service.clients -= 1
            await self.disconnect()
            self.writer.close()

    async def refuse(self, message: str) -> None:
        """The last word to a client whose stream cannot be read on."""
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=message, code="bad-request").event())

    async def handle_event(self, event: Event) -> bool:
        try:
            check_fields(event)
            if Describe.is_type(event.type):
                await self.write_event(describe(self.service))
            elif Transcribe.is_type(event.type):
                self.choose(Transcribe.from_event(event))
            elif AudioStart.is_type(event.type):
                self.start()
            elif AudioChunk.is_type(event.type):
                self.take(AudioChunk.from_event(event))
            elif AudioStop.is_type(event.type) and self.refused:
                self.refused = False  # the stream was answered with its error already
            elif AudioStop.is_type(event.type):
                await self.answer()
            elif Recognize.is_type(event.type):
                recognize = Recognize.from_event(event)
                name = (recognize.context or {}).get("grammar")
                listener = self.listener(str(name)) if name else self.service.first
                await self.write_event(intent_event(listener, recognize.text))
        except GlassformerError as error:
            await self.write_event(Error(text=str(error), code="bad-request").event())
        return True

    def listener(self, name: str) -> Listener:
        if name in self.service.listeners:
            return self.service.listeners[name]
        if name == self.service.source:
            return self.service.free
        known = ", ".join([self.service.source, *self.service.listeners])
        raise GlassformerError(f"no model named {name!r} (models: {known})")

    def choose(self, transcribe: Transcribe) -> None:
        self.refused = False
        self.model = transcribe.name or self.service.unnamed(transcribe.language)
        self.listener(self.model)  # an unknown name is an error now, not after the audio
        self.wants_intent = bool((transcribe.context or {}).get("intent"))

    def start(self) -> None:
        self.audio, self.seconds, self.refused = [], 0.0, False
        self.converter = AudioChunkConverter(rate=SAMPLE_RATE, width=2, channels=1)

    def take(self, chunk: AudioChunk) -> None:
        """Add a chunk to the stream; the first bad chunk refuses the rest of its stream."""
        if self.refused:
            return
        if self.audio is None:
            raise GlassformerError("audio-chunk before audio-start")
        try:
            self.audio.append(self.convert(chunk))
        except GlassformerError:
            self.audio, self.refused = None, True
            raise

    def convert(self, chunk: AudioChunk) -> bytes:
        """The chunk as 16 kHz 16-bit mono, its format and length checked first: the
        conversion's output is bounded by MAX_COMMAND_SECONDS whatever the rate claimed."""
        if (
            chunk.width not in (1, 2, 3, 4)
            or chunk.channels not in (1, 2)
            or not 1 <= chunk.rate <= MAX_RATE
        ):
            raise GlassformerError(
                f"audio of rate {chunk.rate}, width {chunk.width}, {chunk.channels} channels: "
                f"give a rate from 1 to {MAX_RATE} Hz, width 1 to 4 bytes, 1 or 2 channels"
            )
        if len(chunk.audio) % (chunk.width * chunk.channels):
            raise GlassformerError(f"an audio-chunk of {len(chunk.audio)} bytes: not whole frames")
        self.seconds += chunk.seconds
        if self.seconds > MAX_COMMAND_SECONDS:
            raise GlassformerError(
                f"more than {MAX_COMMAND_SECONDS:g} s of audio: not a spoken command"
            )
        return self.converter.convert(chunk).audio

    async def answer(self) -> None:
        audio, self.audio = self.audio, None
        if not audio:
            raise GlassformerError("audio-stop with no audio")
        pcm = np.frombuffer(b"".join(audio), dtype="<i2")
        listener = self.listener(self.model)
        started = time.perf_counter()
        result = await self.service.thread.run(listener.understand, pcm)
        if not self.service.quiet:  # what was understood, never what was said (privacy)
            heard = result.intent or ("no command" if listener.grammar else "free text")
            took = (time.perf_counter() - started) * 1000
            line = (
                f"transcribe {self.model} {len(pcm) / SAMPLE_RATE:.1f} s -> {heard} {took:.0f} ms"
            )
            print(line, file=sys.stderr, flush=True)
        await self.send_transcript(result.text)
        await self.write_event(Transcript(text=result.text).event())
        if self.wants_intent:  # free text is read by the first grammar
            reader = listener if listener.grammar is not None else self.service.first
            await self.write_event(intent_event(reader, result.text))

    async def send_transcript(self, text: str) -> None:
        """The streaming transcript events, where this wyoming version has them."""
        try:
            from wyoming.asr import TranscriptChunk, TranscriptStart, TranscriptStop
        except ImportError:
            return
        await self.write_event(TranscriptStart().event())
        await self.write_event(TranscriptChunk(text=text).event())
        await self.write_event(TranscriptStop().event())


async def serve(uri: str, service: Service, zeroconf: str | None = None) -> None:
    """Serve Wyoming clients at `uri` (tcp://HOST:PORT, unix://PATH) until stopped; with
    `zeroconf` (a name, "" for the machine's), announced over mDNS as _wyoming._tcp, which
    Home Assistant discovers (the wyoming package's announcer)."""
    server = AsyncServer.from_uri(uri)
    if zeroconf is not None:
        await announce(uri, zeroconf)
    await server.run(functools.partial(Handler, service))


async def announce(uri: str, name: str) -> object:
    """Register the service at `uri` under `name` over zeroconf; the announcer is returned
    (it answers mDNS queries while the event loop runs)."""
    from urllib.parse import urlsplit

    from wyoming.zeroconf import HomeAssistantZeroconf

    parts = urlsplit(uri)
    host = parts.hostname if parts.hostname not in ("0.0.0.0", "", None) else None
    announcer = HomeAssistantZeroconf(port=parts.port, name=name or None, host=host)
    await announcer.register_server()
    return announcer
