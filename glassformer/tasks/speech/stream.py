"""One live stream of a Listener: its endpointer, and each command decoded in its pauses.

    stream = listener.stream()
    result = stream.process(frame)     # None until a command has ended
    result = stream.flush()            # the stream ended: a command under way ends here

The Listener is shared; a Stream is one microphone's state (Vosk's recognizer to its model).
How a command is decoded ahead in the speaker's pause is told in listener.py's docstring.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from glassformer.audio.endpoint import SAMPLE_RATE, Command, EndpointConfig, Endpointer
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.result import Result, as_samples


class Stream:
    """One live stream: its endpointer, the command decoded ahead in a pause, and the results
    of ended commands not yet returned. Made by Listener.stream(); one per microphone.

    Args:
        endpoint: when a command starts and ends.
        understand: a whole clip -> its Result (the Listener's).
        is_complete: whether a Result is a command that may end now (the Listener's).
    """

    def __init__(
        self,
        endpoint: EndpointConfig,
        understand: Callable[[np.ndarray], Result],
        is_complete: Callable[[Result], bool],
    ) -> None:
        self.endpoint, self.understand, self.is_complete = endpoint, understand, is_complete
        self.endpointer = Endpointer(endpoint)
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

    def process(self, frame: np.ndarray | bytes) -> Result | None:
        """The next frame of a live stream (samples, or 16-bit PCM bytes as a microphone
        gives them) -> the Result of a command that ended, else None. Call flush() when the
        stream ends: a command that does not end in a pause is answered there.

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
        endpointer, c = self.endpointer, self.endpoint
        tails = [c.tail_ms, *([c.complete_tail_ms] if c.grammar_aware else [])]
        tail = next((t for t in tails if endpointer.silence_ms == endpointer.whole_frames(t)), None)
        if tail is None:
            return None  # only when a clip is fixed (speech resumed: again at the next pause)
        waveform, start = endpointer.heard(tail)
        key = (start, start + len(waveform))
        if self.early is None or self.early[0] != key:
            try:
                self.early = (key, self.understand(waveform))
            except GlassformerError:
                return None  # the final clip's own attempt will say what is wrong
        if c.grammar_aware and self.is_complete(self.early[1]):
            return endpointer.finish(tail)
        return None

    def answer(self, command: Command, called: float) -> None:
        """Queue the Result of an ended command: the one computed ahead if its clip is the
        same (nothing for a click or hum no model can hear)."""
        key = (command.start, command.end)
        early = self.early[1] if self.early is not None and self.early[0] == key else None
        self.early = None
        try:
            result = early or self.understand(command.waveform)
        except GlassformerError:
            return  # a click or hum no model can hear: nothing was said
        heard_after = (self.endpointer.position - command.speech_end) / SAMPLE_RATE * 1000
        latency = heard_after + (time.perf_counter() - called) * 1000
        self.ready.append(
            dataclasses.replace(result, latency_ms=latency, start=command.start, end=command.end)
        )
