"""The Listener: the one speech engine every door calls (CLI, server, listening socket, demo).

    listener = Listener(ListenerConfig("whisper-tiny.en", grammar="coffee_maker.yaml"))
    listener.understand(waveform)                  # one whole clip -> its Result
    stream = listener.stream()                     # a live stream of its own
    for frame in microphone_frames:                # 16-bit 16 kHz mono, any frame length
        result = stream.process(frame)             # None until a command has ended
        if result: print(result.intent, result.slots, result.latency_ms)
    result = stream.flush()                        # the stream ended: a command under way

The Listener is shared and holds no stream's state (Vosk's model); each Stream holds one
stream's endpointer and the command decoded ahead (Vosk's recognizer). A Listener is built one
way, from its ListenerConfig; its settings are resolved against the loaded model once
(SpeechOptions), and another grammar on the same network is listener.with_grammar(g).

A stream works in the speaker's pauses, so that little is left when they stop. The
endpointer (audio/endpoint.py) cuts a command's audio a fixed time after its last speech
frame, however long the silence that ends it: complete_tail_ms (150) for a command ended as
complete, tail_ms (300) otherwise. At each of those moments of a pause the Stream decodes
that very clip (encoder, constrained beam, confidence):
  * if the grammar-aware rule finds it complete (the grammar accepts the words and the model
    finds the end likely, end_probability >= end_likely, or the grammar allows nothing
    after them), the command ends there, its result already computed;
  * else the result at tail_ms is kept, and the command ends after end_ms of silence with
    it (the command may go on: "a large coffee ... with milk"); if the speaker goes on,
    the result is dropped.
Either way the result is understand() of the command's audio, computed early: streaming
equals decoding the finished clip by construction (tested).

Not here: the decoding itself (tasks/speech/inference.py and the modules it names), reading
files (audio/io.py), the server's batching of concurrent requests (serve/batching.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glassformer.audio.endpoint import SAMPLE_RATE, Command, Endpointer
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.search import Transcript
from glassformer.voice.commands import CommandGrammar

MAX_FRAME_SECONDS = 60.0  # a larger frame passed to process() is refused as not a stream's
MAX_FLOAT_SAMPLE = 4.0  # full scale is 1; resampling overshoots a little, 3e29 is no audio


@dataclass(frozen=True)
class Result:
    """What the Listener understood of one command; the JSON every door answers with."""

    text: str  # the words, normalized
    intent: str | None  # None: not a command of the grammar (or rejected as unlikely)
    slots: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.0  # geometric-mean probability of the written tokens, 0..1
    end_probability: float = 0.0  # the model's probability of the end after the words
    audio_seconds: float = 0.0  # the clip's length
    elapsed_ms: float = 0.0  # compute spent on this result
    latency_ms: float | None = None  # streams: from the last speech frame to the result
    start: int | None = None  # streams: the sample where the command's audio starts
    end: int | None = None  # streams: the sample just after it

    @property
    def accepted(self) -> bool:
        return self.intent is not None

    def to_json(self) -> dict:
        """The fields of every door's answer (CLI --json, HTTP, the listening socket)."""
        fields = {
            "text": self.text,
            "intent": self.intent,
            "slots": self.slots,
            "confidence": round(self.confidence, 4),
            "accepted": self.accepted,
            "audio_seconds": round(self.audio_seconds, 3),
            "elapsed_ms": round(self.elapsed_ms, 1),
        }
        if self.latency_ms is not None:
            fields |= {"latency_ms": round(self.latency_ms, 1), "start": self.start}
            fields["end"] = self.end
        return fields


def as_result(transcript: Transcript, waveform: np.ndarray, elapsed_s: float) -> Result:
    return Result(
        transcript.text,
        transcript.intent,
        transcript.slots,
        transcript.confidence,
        transcript.end_probability,
        len(waveform) / SAMPLE_RATE,
        elapsed_s * 1000,
    )


def as_samples(frame: object, max_seconds: float = MAX_FRAME_SECONDS) -> np.ndarray:
    """A frame of 16 kHz mono audio as float32 samples in [-1, 1], or one GlassformerError.

    Accepted: int16 samples (PCM, as microphones give), or float32/float64 in [-1, 1] (up to
    MAX_FLOAT_SAMPLE);
    shape (L,) or (L, 1). Refused: other dtypes, several channels, NaN or infinity, samples
    beyond MAX_FLOAT_SAMPLE, more than `max_seconds`.

    Shapes:
        frame: (L,) or (L, 1)   returns: (L,)
    """
    if not isinstance(frame, np.ndarray):
        raise GlassformerError(f"audio must be a numpy array, not {type(frame).__name__}")
    if frame.ndim == 2 and frame.shape[1] == 1:
        frame = frame[:, 0]
    if frame.ndim != 1:
        raise GlassformerError(
            f"audio must be mono, shape (L,) or (L, 1); got shape {frame.shape} (stereo? mix "
            "it down first)"
        )
    if len(frame) > max_seconds * SAMPLE_RATE:
        raise GlassformerError(
            f"a frame of {len(frame) / SAMPLE_RATE:.1f} s; at most {max_seconds:g} s at a time"
        )
    if frame.dtype == np.int16:
        return frame.astype(np.float32) / 32768.0
    if frame.dtype not in (np.float32, np.float64):
        raise GlassformerError(f"audio must be int16 or float32 samples, not {frame.dtype}")
    if not np.isfinite(frame).all():
        raise GlassformerError("audio contains NaN or infinite samples")
    if len(frame) and np.abs(frame).max() > MAX_FLOAT_SAMPLE:
        raise GlassformerError(
            f"float samples reach {np.abs(frame).max():.3g}; audio lies in [-1, 1] (full scale)"
        )
    return frame.astype(np.float32, copy=False)


class Listener:
    """Spoken commands to intents: whole clips here, live streams through stream().

    Shared by every request and stream: it holds the loaded model and its resolved options,
    never a stream's state.

    Args:
        config: what to load (model, grammar, precision, window, device) and how to listen
            (beam, threshold, endpointing); tasks/speech/config.ListenerConfig.
    """

    def __init__(self, config: ListenerConfig | None = None) -> None:
        config = config or ListenerConfig()
        if not isinstance(config, ListenerConfig):
            raise TypeError(
                f"Listener takes a ListenerConfig, not {type(config).__name__}: "
                "Listener(ListenerConfig(model, grammar))"
            )
        self.config = config
        self.speech = load(config)
        self.options = SpeechOptions.resolve(config, self.speech)

    @classmethod
    def on_model(cls, speech: SpeechModel, config: ListenerConfig) -> Listener:
        """A Listener for a model already loaded as `config` says (no file is read again)."""
        listener = cls.__new__(cls)
        listener.config, listener.speech = config, speech
        listener.options = SpeechOptions.resolve(config, speech)
        return listener

    @property
    def grammar(self) -> CommandGrammar | None:
        return self.speech.grammar

    def with_grammar(self, grammar: CommandGrammar | None) -> Listener:
        """Another Listener on the same network for `grammar` (None: free text); a zero-shot
        Whisper gets the grammar's phrases as its context (loading.use_grammar)."""
        from glassformer.tasks.speech.loading import use_grammar

        config = dataclasses.replace(self.config, grammar=None if grammar is None else grammar.name)
        return Listener.on_model(use_grammar(self.speech, grammar), config)

    def stream(self) -> Stream:
        """A live stream of its own: endpointing, and each command decoded in its pauses."""
        return Stream(self)

    def understand(self, waveform: np.ndarray) -> Result:
        """One whole clip (16 kHz mono: int16, or float in [-1, 1]) -> its Result."""
        return self.understand_many([waveform])[0]

    def understand_many(self, waveforms: list[np.ndarray]) -> list[Result]:
        """understand() for several clips, their encoder run as one batch (the server's
        concurrent requests); equal to understanding them one by one."""
        from glassformer.tasks.speech.inference import transcribe_many

        clips = [as_samples(w, max_seconds=float("inf")) for w in waveforms]
        started = time.perf_counter()
        transcripts = transcribe_many(self.speech, clips, self.options)
        elapsed = (time.perf_counter() - started) / max(len(clips), 1)
        return [as_result(t, w, elapsed) for t, w in zip(transcripts, clips, strict=True)]

    def understand_file(self, path: str | Path) -> Result:
        """A WAV, FLAC or OGG file (any rate, any channels) -> its Result; errors name it."""
        from glassformer.audio.io import load_audio

        waveform = load_audio(path)
        try:
            return self.understand(waveform)
        except GlassformerError as error:
            raise GlassformerError(f"{path}: {error}") from None

    def is_complete(self, result: Result) -> bool:
        """The grammar accepts the words and the end is likely, or nothing may follow them."""
        if not result.accepted or self.grammar is None:
            return False
        if result.end_probability >= self.config.endpoint.end_likely:
            return True
        return not self.grammar.can_extend(result.text)


class Stream:
    """One live stream: its endpointer, the command decoded ahead in a pause, and the results
    of ended commands not yet returned. Made by Listener.stream(); one per microphone."""

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.endpointer = Endpointer(listener.config.endpoint)
        self.early: tuple[tuple[int, int], Result] | None = None  # (clip start, end), result
        self.ready: deque[Result] = deque()  # ended commands' results not yet returned

    @property
    def in_command(self) -> bool:
        """Whether a command has started and not yet ended."""
        return self.endpointer.in_command

    @property
    def position(self) -> int:
        """Samples of the stream heard so far."""
        return self.endpointer.position

    def process(self, frame: np.ndarray) -> Result | None:
        """The next frame of a live stream -> the Result of a command that ended, else None.

        A bad frame raises one GlassformerError and changes nothing: the stream goes on.
        latency_ms counts from the last speech frame to this result, in stream time (the
        audio after it, at real-time speed) plus the compute of this call.
        """
        called = time.perf_counter()
        samples = as_samples(frame)
        for piece in self.endpointer.frames(samples):
            ended = self.endpointer.step(piece)
            if ended is None and self.endpointer.in_command:
                ended = self.think_ahead()
            if ended is not None:
                self.answer(ended, called)
        return self.next_result()

    def flush(self) -> Result | None:
        """The stream ended: a command under way ends here; its Result, or None."""
        called = time.perf_counter()
        for ended in self.endpointer.flush():
            self.answer(ended, called)
        return self.next_result()

    def next_result(self) -> Result | None:
        """A further Result, when one call ended several commands (a chunk of many seconds)."""
        return self.ready.popleft() if self.ready else None

    def think_ahead(self) -> Command | None:
        """In a pause: decode the command as it would end now, at complete_tail_ms (ended at
        once if the grammar finds it complete) and at tail_ms (kept for the end after end_ms,
        or ended at once too if complete). Returns the command if it ends here."""
        endpointer, c = self.endpointer, self.listener.config.endpoint
        tails = [c.tail_ms, *([c.complete_tail_ms] if c.grammar_aware else [])]
        tail = next((t for t in tails if endpointer.silence_ms == endpointer.whole_frames(t)), None)
        if tail is None:
            return None  # only when a clip is fixed (speech resumed: again at the next pause)
        waveform, start = endpointer.heard(tail)
        key = (start, start + len(waveform))
        if self.early is None or self.early[0] != key:
            try:
                self.early = (key, self.listener.understand(waveform))
            except GlassformerError:
                return None  # the final clip's own attempt will say what is wrong
        if c.grammar_aware and self.listener.is_complete(self.early[1]):
            return endpointer.finish(tail)
        return None

    def answer(self, command: Command, called: float) -> None:
        """Queue the Result of an ended command: the one computed ahead if its clip is the
        same (nothing for a click or hum no model can hear)."""
        key = (command.start, command.end)
        early = self.early[1] if self.early is not None and self.early[0] == key else None
        self.early = None
        try:
            result = early or self.listener.understand(command.waveform)
        except GlassformerError:
            return  # a click or hum no model can hear: nothing was said
        heard_after = (self.endpointer.position - command.speech_end) / SAMPLE_RATE * 1000
        latency = heard_after + (time.perf_counter() - called) * 1000
        self.ready.append(
            dataclasses.replace(result, latency_ms=latency, start=command.start, end=command.end)
        )


def load(config: ListenerConfig) -> SpeechModel:
    """The SpeechModel a config names: its model, grammar, window and precision."""
    from glassformer.tasks.speech.loading import load_grammar, load_speech_model

    grammar = load_grammar(config.grammar) if config.grammar is not None else None
    int8 = config.precision == "int8"  # then float16 weights stay as stored until quantized
    speech = load_speech_model(config.model, config.device, grammar, widen=not int8)
    if config.window_step is not None and speech.features.window_seconds > 0:
        step = min(config.window_step, speech.features.window_seconds)
        features = dataclasses.replace(speech.features, window_step=step)
        speech = dataclasses.replace(speech, features=features)
    if int8:
        from glassformer.models.int8 import quantize_speech_decoder

        quantize_speech_decoder(speech.model)
    return speech
