"""Progress of long work, wherever its output goes.

On a terminal: tqdm's bar, redrawn in place. Anywhere else (a log file, CI, nohup, systemd's
journal), a bar redrawn with carriage returns is one endless line, or nothing at all until
the end; there a plain line is printed every PLAIN_EVERY_S seconds instead, with the same
numbers (done, total, speed, time left), so a run that takes minutes says so as it goes.
Work done sooner prints nothing there: a log (or an error's one line) is not cluttered.

    from glassformer.progress import progress_bar
    with progress_bar(total=2000, desc="training", unit="step") as bar: ...
"""

from __future__ import annotations

import io
import sys
import time
from typing import Any, TextIO

PLAIN_EVERY_S = 10.0  # not on a terminal: a line this often (tqdm's mininterval)


class PlainLines(io.TextIOBase):
    """A text stream that writes each of tqdm's redraws as a line of its own, from
    `quiet_s` seconds after it was made (work that ends sooner writes nothing)."""

    def __init__(self, stream: TextIO, quiet_s: float = 0.0) -> None:
        self.stream, self.quiet_until = stream, time.monotonic() + quiet_s

    def write(self, text: str) -> int:
        line = text.replace("\r", "").replace("\x1b[A", "").strip()
        if line and time.monotonic() >= self.quiet_until:
            self.stream.write(line + "\n")
            self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(enabled: bool = True, stream: TextIO | None = None, **options: Any) -> Any:
    """A tqdm bar on `stream` (stderr): drawn in place on a terminal, plain lines every
    PLAIN_EVERY_S seconds elsewhere, nothing when not `enabled`. `options` are tqdm's."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    if not enabled:
        return tqdm(disable=True, **options)
    if stream.isatty():
        return tqdm(file=stream, dynamic_ncols=True, **options)
    lines = PlainLines(stream, quiet_s=PLAIN_EVERY_S)
    return tqdm(file=lines, mininterval=PLAIN_EVERY_S, ncols=100, **options)
