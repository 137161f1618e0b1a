"""Endpointing a live stream: when did a spoken command start, and when did it end?

A voice assistant listens all the time; no button marks each command. The stream is cut into
short frames and each frame's energy (dB below full scale) is compared with a running
estimate of the background noise:

    speech frame     level > max(noise floor + margin_db, min_level_db)
    command starts   after start_ms of speech frames in a row (with pre_roll_ms kept before)
    command ends     after end_ms of non-speech frames in a row, or at cut_after_seconds

The noise floor is the quietest frame of the last floor_seconds (minimum statistics): a
steady fan or a cafe's murmur becomes the floor within that time, even when the stream starts
with it, while a command, whose words have quieter stretches between them and quiet before
them, does not. Commands with less than min_speech_ms of speech (a click, a door) are
dropped. Not here: spectral or learned voice-activity detection, and echo cancellation.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from glassformer.serve.config import EndpointConfig

SAMPLE_RATE = 16_000  # samples per second of every stream


@dataclass(frozen=True)
class Command:
    """One endpointed stretch of the stream.

    Shapes:
        waveform: (L,), L = end - start
    """

    waveform: np.ndarray
    start: int  # the stream's sample index where the kept audio begins (pre-roll included)
    end: int  # the sample index just after it
    speech_ms: int  # how much of it was speech frames


def frame_level(frame: np.ndarray) -> float:
    """The frame's mean power in dB relative to a full-scale square wave (0 dB).

    Example: a constant 0.1 -> -20.0 dB
    """
    power = float(np.mean(frame.astype(np.float64) ** 2))
    return 10 * math.log10(power + 1e-12)


class Endpointer:
    """Feed it a stream's chunks in order; it returns each command once the command ended."""

    def __init__(self, config: EndpointConfig | None = None) -> None:
        self.config = c = config or EndpointConfig()
        self.frame = SAMPLE_RATE * c.frame_ms // 1000  # samples per frame
        self.start_frames = math.ceil(c.start_ms / c.frame_ms)
        self.end_frames = math.ceil(c.end_ms / c.frame_ms)
        self.max_frames = int(c.cut_after_seconds * 1000 / c.frame_ms)
        self.levels: deque[float] = deque(maxlen=max(1, int(c.floor_seconds * 1000 / c.frame_ms)))
        before = math.ceil(c.pre_roll_ms / c.frame_ms) + self.start_frames
        self.recent: deque[np.ndarray] = deque(maxlen=before)  # frames before a start
        self.pending = np.zeros(0, dtype=np.float32)  # samples short of a whole frame
        self.command: list[np.ndarray] = []  # frames of the command under way
        self.position = 0  # samples consumed as whole frames so far
        self.speech_run = self.silence_run = self.speech_frames = 0

    @property
    def in_command(self) -> bool:
        return bool(self.command)

    def feed(self, chunk: np.ndarray) -> list[Command]:
        """Take the next samples (float, 16 kHz mono, any length); the commands that ended.

        Shapes:
            chunk: (L,)
        """
        samples = np.concatenate([self.pending, np.asarray(chunk, dtype=np.float32)])
        whole = len(samples) // self.frame * self.frame
        self.pending = samples[whole:]
        ended = []
        for i in range(0, whole, self.frame):
            command = self.step(samples[i : i + self.frame])
            if command is not None:
                ended.append(command)
        return ended

    def flush(self) -> list[Command]:
        """The stream ended: a command under way ends here."""
        if not self.command:
            return []
        command = self.finish()
        return [command] if command is not None else []

    def step(self, frame: np.ndarray) -> Command | None:
        """One frame: is it speech, and does a command start or end with it?"""
        c = self.config
        level = frame_level(frame)
        self.levels.append(level)
        is_speech = level > max(min(self.levels) + c.margin_db, c.min_level_db)
        self.position += len(frame)
        if not self.command:
            self.recent.append(frame)
            self.speech_run = self.speech_run + 1 if is_speech else 0
            if self.speech_run >= self.start_frames:
                self.command = list(self.recent)
                self.speech_frames, self.silence_run = self.speech_run, 0
            return None
        self.command.append(frame)
        self.speech_frames += is_speech
        self.silence_run = 0 if is_speech else self.silence_run + 1
        if self.silence_run >= self.end_frames or len(self.command) >= self.max_frames:
            return self.finish()
        return None

    def finish(self) -> Command | None:
        """End the command under way; None when it had too little speech to count."""
        frames, speech_frames = self.command, self.speech_frames
        self.command, self.speech_run, self.silence_run, self.speech_frames = [], 0, 0, 0
        self.recent.clear()
        speech_ms = speech_frames * self.config.frame_ms
        if speech_ms < self.config.min_speech_ms:
            return None
        waveform = np.concatenate(frames)  # (L,)
        return Command(waveform, self.position - len(waveform), self.position, speech_ms)
