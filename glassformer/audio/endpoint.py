"""Endpointing a live stream: when did a spoken command start, and when did it end?

A voice assistant listens all the time; no button marks each command. The stream is cut into
short frames and each frame's energy (dB below full scale) is compared with a running
estimate of the background noise:

    speech frame     level > max(noise floor + margin_db, min_level_db)
    command starts   after start_ms of speech frames in a row (with pre_roll_ms kept before)
    command ends     after end_ms of non-speech frames in a row, or at cut_after_seconds,
                     or earlier when the caller says so (finish(): the Listener ends a
                     command the grammar finds complete after a short silence)
    its audio        from the pre-roll to tail_ms after the last speech frame, however long
                     the silence that ended it (complete_tail_ms for a command the caller
                     ends as complete): so the clip is known that long after the speaker
                     stops, and work done on it then is the final clip's work

The noise floor is the quietest frame of the last floor_seconds (minimum statistics): a
steady fan or a cafe's murmur becomes the floor within that time, even when the stream starts
with it, while a command, whose words have quieter stretches between them and quiet before
them, does not. Commands with less than min_speech_ms of speech (a click, a door) are
dropped. By default (detector="silero") a trained voice-activity detector (audio/vad.py)
says which frames are speech instead: on streams of real commands with cafe babble in the
gaps, the energy rule merged most commands into one and Silero kept them apart
(bench/bench_endpoint.py, docs/benchmarks.md). Where its wheel or onnxruntime is missing,
the energy rule runs, with a warning. Not here: echo cancellation.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from glassformer.audio.io import SAMPLE_RATE  # noqa: F401 - streams are 16 kHz, as files become
from glassformer.configs import require_finite, require_positive, require_positive_number
from glassformer.errors import ConfigError

DETECTORS = ("energy", "silero")  # speech frames by energy over the floor, or Silero VAD


@dataclass(frozen=True)
class EndpointConfig:
    frame_ms: int = 20  # energy is measured over frames this long
    # 8 dB: at 10 dB SNR in cafe, fridge and traffic noise every real word was found, where
    # 12 dB missed a third in fridge and traffic noise; cafe noise bursts made 3 false
    # commands in 30 s, fridge and traffic none (tests/audio/test_endpoint.py)
    margin_db: float = 8.0  # a frame this much louder than the noise floor is speech
    # -60: some real recordings (speech_commands) peak at -55 dB of full scale
    min_level_db: float = -60.0  # quieter frames are never speech (dB of full scale)
    start_ms: int = 60  # this much speech in a row starts a command
    # 600: 400 answers 125 ms sooner (bench/bench_listen.py), but cafe noise bursts then
    # made 6 false commands in 6 streams, not <= 3 (tests/audio/test_endpoint.py)
    end_ms: int = 600  # this much non-speech in a row ends a command
    # 300: at 200 a soft word end in fridge noise at 10 dB SNR fell outside (tests/audio)
    tail_ms: int = 300  # audio kept after the last speech frame of a command
    # 150: the shorter tail of a command the grammar finds complete, so that it ends sooner
    complete_tail_ms: int = 150  # a complete command's audio ends this long after its speech
    # off: it ended 5 of 24 real commands at a pause inside them ("tuesday at eight | a m")
    grammar_aware: bool = False  # end a command the grammar finds complete sooner
    end_likely: float = 0.5  # ... when the model's probability of the end is at least this
    # 500: Silero's onset comes a frame or two late on soft first sounds; 300 cut the start
    # of 4 of 52 clean commands, 500 of 2 (bench/bench_endpoint.py)
    pre_roll_ms: int = 500  # audio kept from before the start (soft first sounds)
    min_speech_ms: int = 150  # commands with less speech than this are dropped (a click)
    cut_after_seconds: float = 15.0  # a command is cut here even if the speech goes on
    floor_seconds: float = 3.0  # the noise floor is the quietest frame of this much past audio
    # silero: on 13 streams of 4 real commands in cafe, fridge and traffic noise at 10 and 6
    # dB SNR, 89.4% came out whole and 0 false against energy's 67.3% and 31 false (babble
    # merged commands); clean 50 of 52 against 52 (bench/bench_endpoint.py)
    detector: str = "silero"  # what says a frame is speech: silero (audio/vad.py), or energy
    speech_probability: float = 0.5  # silero: a frame is speech at this probability or more

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "frame_ms", "start_ms", "end_ms", "tail_ms", "complete_tail_ms")
        require_positive_number(self, "margin_db", "floor_seconds", "cut_after_seconds")
        if self.min_level_db >= 0:
            raise ConfigError(f"min_level_db={self.min_level_db} must be below 0 dB full scale")
        if self.pre_roll_ms < 0 or self.min_speech_ms < 0:
            raise ConfigError(
                f"pre_roll_ms={self.pre_roll_ms} and min_speech_ms={self.min_speech_ms} "
                "must be >= 0"
            )
        if not self.complete_tail_ms <= self.tail_ms <= self.end_ms:
            raise ConfigError(
                f"complete_tail_ms={self.complete_tail_ms} <= tail_ms={self.tail_ms} <= "
                f"end_ms={self.end_ms} must hold"
            )
        if self.detector not in DETECTORS:
            raise ConfigError(f"detector={self.detector!r} must be one of {', '.join(DETECTORS)}")
        if not 0.0 < self.speech_probability < 1.0:  # also refuses nan
            raise ConfigError(f"speech_probability={self.speech_probability} must be in (0, 1)")
        if not 0.0 <= self.end_likely <= 1.0:  # also refuses nan
            raise ConfigError(f"end_likely={self.end_likely} must be between 0 and 1")


@dataclass(frozen=True)
class Command:
    """One endpointed stretch of the stream.

    Shapes:
        waveform: (L,), L = end - start
    """

    waveform: np.ndarray
    start: int  # the stream's sample index where the kept audio begins (pre-roll included)
    end: int  # the sample index just after it (tail_ms after the last speech frame)
    speech_ms: int  # how much of it was speech frames
    speech_end: int  # the sample index just after the last speech frame


def frame_level(frame: np.ndarray) -> float:
    """The frame's mean power in dB relative to a full-scale square wave (0 dB).

    Example: a constant 0.1 -> -20.0 dB
    """
    power = float(np.mean(frame.astype(np.float64) ** 2))
    return 10 * math.log10(power + 1e-12)


def warn_once_without_silero() -> None:
    """Say once per process that the energy rule runs in Silero's place, and how to fix it."""
    import logging

    from glassformer.audio.vad import INSTALL_HINT

    if not getattr(warn_once_without_silero, "said", False):
        warn_once_without_silero.said = True  # type: ignore[attr-defined]
        logging.getLogger(__name__).warning(
            "Silero VAD is not installed: endpointing by energy, which merges commands in "
            "babble (%s)",
            INSTALL_HINT,
        )


class Endpointer:
    """Feed it a stream's chunks in order; it returns each command once the command ended."""

    def __init__(self, config: EndpointConfig | None = None) -> None:
        self.config = c = config or EndpointConfig()
        self.frame = SAMPLE_RATE * c.frame_ms // 1000  # samples per frame
        self.start_frames = math.ceil(c.start_ms / c.frame_ms)
        self.end_frames = math.ceil(c.end_ms / c.frame_ms)
        self.tail_frames = math.ceil(c.tail_ms / c.frame_ms)
        self.max_frames = int(c.cut_after_seconds * 1000 / c.frame_ms)
        self.levels: deque[float] = deque(maxlen=max(1, int(c.floor_seconds * 1000 / c.frame_ms)))
        before = math.ceil(c.pre_roll_ms / c.frame_ms) + self.start_frames
        self.recent: deque[np.ndarray] = deque(maxlen=before)  # frames before a start
        self.pending = np.zeros(0, dtype=np.float32)  # samples short of a whole frame
        self.command: list[np.ndarray] = []  # frames of the command under way
        self.position = 0  # samples consumed as whole frames so far
        self.speech_run = self.silence_run = self.speech_frames = 0
        self.last_speech = 0  # index in self.command of the frame after the last speech frame
        self.vad = None
        if c.detector == "silero":
            from glassformer.audio.vad import SileroVAD, has_silero

            if has_silero():
                self.vad = SileroVAD()
            else:
                warn_once_without_silero()

    @property
    def in_command(self) -> bool:
        return bool(self.command)

    def whole_frames(self, ms: int) -> int:
        """`ms` rounded up to whole frames, in ms (the clip lengths a pause passes through)."""
        return math.ceil(ms / self.config.frame_ms) * self.config.frame_ms

    @property
    def silence_ms(self) -> int:
        """How long the command under way has been silent (0 outside a command)."""
        return self.silence_run * self.config.frame_ms if self.command else 0

    def feed(self, chunk: np.ndarray) -> list[Command]:
        """Take the next samples (float, 16 kHz mono, any length); the commands that ended.

        Shapes:
            chunk: (L,)
        """
        ended = []
        for frame in self.frames(chunk):
            command = self.step(frame)
            if command is not None:
                ended.append(command)
        return ended

    def frames(self, chunk: np.ndarray) -> list[np.ndarray]:
        """The whole frames `chunk` completes (the rest waits for the next chunk)."""
        samples = np.concatenate([self.pending, np.asarray(chunk, dtype=np.float32)])
        whole = len(samples) // self.frame * self.frame
        self.pending = samples[whole:]
        return [samples[i : i + self.frame] for i in range(0, whole, self.frame)]

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
        if self.vad is not None:  # the latest 32-ms window's probability
            self.vad.feed(frame)
            is_speech = self.vad.probability >= c.speech_probability and level > c.min_level_db
        else:
            is_speech = level > max(min(self.levels) + c.margin_db, c.min_level_db)
        self.position += len(frame)
        if not self.command:
            self.recent.append(frame)
            self.speech_run = self.speech_run + 1 if is_speech else 0
            if self.speech_run >= self.start_frames:
                self.command = list(self.recent)
                self.speech_frames, self.silence_run = self.speech_run, 0
                self.last_speech = len(self.command)
            return None
        self.command.append(frame)
        self.speech_frames += is_speech
        self.silence_run = 0 if is_speech else self.silence_run + 1
        if is_speech:
            self.last_speech = len(self.command)
        if self.silence_run >= self.end_frames or len(self.command) >= self.max_frames:
            return self.finish()
        return None

    def heard(self, tail_ms: int | None = None) -> tuple[np.ndarray, int]:
        """The command under way as it would end now: its audio (up to tail_ms after the
        last speech frame; None: the config's) and the stream index where it starts.

        Shapes:
            returns: (L,), int
        """
        tail = self.tail_frames if tail_ms is None else math.ceil(tail_ms / self.config.frame_ms)
        kept = self.command[: self.last_speech + tail]
        start = self.position - len(self.command) * self.frame
        return np.concatenate(kept), start

    def finish(self, tail_ms: int | None = None) -> Command | None:
        """End the command under way, its audio tail_ms after its last speech frame (None:
        the config's); None when it had too little speech to count."""
        waveform, start = self.heard(tail_ms)  # (L,)
        speech_end = start + self.last_speech * self.frame
        speech_ms = self.speech_frames * self.config.frame_ms
        self.command, self.speech_run, self.silence_run, self.speech_frames = [], 0, 0, 0
        self.recent.clear()
        if speech_ms < self.config.min_speech_ms:
            return None
        return Command(waveform, start, start + len(waveform), speech_ms, speech_end)
