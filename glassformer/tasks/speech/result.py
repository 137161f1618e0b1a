"""What the Listener answers, and the audio it takes: one Result per command, every door's
JSON; frames of 16 kHz mono checked in one place (as_samples).

Not here: how a result is found (tasks/speech/listener.py, stream.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from glassformer.audio.endpoint import SAMPLE_RATE
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.transcript import Transcript

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
    free_text: bool = False  # fallback "free": no command was heard; text is free text
    no_speech: float = 0.0  # the model's own probability that the clip holds no speech
    # (Whisper's; 0 for a model without one): Transcript.no_speech

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
        if self.free_text:
            fields["free_text"] = True  # for another agent (an LLM) to handle
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
        no_speech=transcript.no_speech,
    )


def as_samples(frame: object, max_seconds: float = MAX_FRAME_SECONDS) -> np.ndarray:
    """A frame of 16 kHz mono audio as float32 samples in [-1, 1], or one GlassformerError.

    Accepted: int16 samples (PCM, as microphones give), or float32/float64 in [-1, 1] (up to
    MAX_FLOAT_SAMPLE), shape (L,) or (L, 1); or bytes of 16-bit little-endian mono PCM, as
    `wave.readframes`, pyaudio and sounddevice's raw streams give them. Refused: other
    dtypes, several channels, NaN or infinity, samples beyond MAX_FLOAT_SAMPLE, an odd number
    of bytes, more than `max_seconds`.

    Shapes:
        frame: (L,) or (L, 1)   returns: (L,)
    """
    if isinstance(frame, bytes | bytearray | memoryview):
        data = bytes(frame)
        if len(data) % 2:
            raise GlassformerError(
                f"{len(data)} bytes of audio: 16-bit PCM has an even number (one sample is 2)"
            )
        frame = np.frombuffer(data, dtype="<i2")
    if not isinstance(frame, np.ndarray):
        raise GlassformerError(
            f"audio must be a numpy array or 16-bit PCM bytes, not {type(frame).__name__}"
        )
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
