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
from pathlib import Path

import numpy as np

from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.result import Result, as_result, as_samples
from glassformer.tasks.speech.stream import Stream
from glassformer.voice.commands import CommandGrammar

__all__ = ["Listener", "Result", "Stream", "as_samples", "load"]


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

    @property
    def language(self) -> str:
        """The language it writes (Whisper's code: "zh" for zh-CN)."""
        from glassformer.tasks.speech.loading import spoken_language

        return spoken_language(self.config) or "en"

    def with_grammar(self, grammar: CommandGrammar | None) -> Listener:
        """Another Listener on the same network for `grammar` (None: free text, in the same
        language); a zero-shot Whisper gets the grammar's phrases as its context
        (loading.use_grammar). Its config names the grammar and keeps the language."""
        from glassformer.tasks.speech.loading import use_grammar

        if grammar is self.grammar:
            return self
        config = dataclasses.replace(
            self.config,
            grammar=None if grammar is None else grammar.name,
            intents=None,
            entities=None,
            ha_url=None,
            ha_token_file=None,
            custom_sentences=None,
            area=None,
            sentences="speech",
            language=self.config.language or self.config.intents,
        )
        return Listener.on_model(use_grammar(self.speech, grammar), config)

    def stream(self) -> Stream:
        """A live stream of its own: endpointing, and each command decoded in its pauses."""
        return Stream(self.config.endpoint, self.understand, self.is_complete)

    def understand(self, waveform: np.ndarray) -> Result:
        """One whole clip (16 kHz mono: int16, or float in [-1, 1]) -> its Result."""
        return self.understand_many([waveform])[0]

    def understand_many(self, waveforms: list[np.ndarray]) -> list[Result]:
        """understand() for several clips, their encoder run as one batch (the server's
        concurrent requests); equal to understanding them one by one."""
        clips = [as_samples(w, max_seconds=float("inf")) for w in waveforms]
        started = time.perf_counter()
        transcripts = engine(self.speech)(self.speech, clips, self.options)
        elapsed = (time.perf_counter() - started) / max(len(clips), 1)
        results = [as_result(t, w, elapsed) for t, w in zip(transcripts, clips, strict=True)]
        if self.config.fallback == "free" and self.options.constrain:
            # a rejected result's text is already the clip's free transcript
            # (search.checked_against_free_text): marked, for another agent (an LLM)
            results = [r if r.accepted else dataclasses.replace(r, free_text=True) for r in results]
        return results

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


def load(config: ListenerConfig) -> SpeechModel:
    """The SpeechModel a config names: its model (for a language other than English, unless
    one is named, the multilingual one), what it understands, its language, window and
    precision. The window is the model's own encoder's; a command encoder (a model with two,
    tasks/speech/command_encoder.py) keeps its own, and is int8 with the decoder."""
    from glassformer.tasks.speech.config import DEFAULT_SPEECH_MODEL, MULTILINGUAL_MODEL
    from glassformer.tasks.speech.loading import (
        load_commands,
        load_speech_model,
        spoken_language,
        use_language,
    )
    from glassformer.tasks.speech.onnx_runtime import OnnxNetwork

    grammar = load_commands(config)
    language = spoken_language(config)
    model = config.model
    if model == DEFAULT_SPEECH_MODEL and language not in (None, "en"):
        model = MULTILINGUAL_MODEL  # tiny.en writes English only
    int8 = config.precision == "int8"  # then float16 weights stay as stored until quantized
    speech = use_language(load_speech_model(model, config.device, grammar, not int8), language)
    exported = isinstance(speech.model, OnnxNetwork)  # its precision is the export's
    if config.window_step is not None and speech.features.window_seconds > 0:
        step = min(config.window_step, speech.features.window_seconds)
        features = dataclasses.replace(speech.features, window_step=step)
        speech = dataclasses.replace(speech, features=features)
    if int8 and not exported:
        from glassformer.models.int8 import quantize_speech_decoder
        from glassformer.tasks.speech.command_encoder import quantize_command_encoder

        quantize_speech_decoder(speech.model)
        quantize_command_encoder(speech)  # a second encoder's, if it has one (not Whisper's)
    return speech


def engine(speech: SpeechModel):  # noqa: ANN201
    """The transcription path for a loaded model: inference.transcribe_many on torch, or
    onnx_runtime.transcribe_many for a model `glassformer export` wrote (no torch)."""
    from glassformer.tasks.speech.onnx_runtime import OnnxNetwork

    if isinstance(speech.model, OnnxNetwork):
        from glassformer.tasks.speech.onnx_runtime import transcribe_many
    else:
        from glassformer.tasks.speech.inference import transcribe_many
    return transcribe_many
