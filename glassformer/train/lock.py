"""One training run per run directory at a time: an advisory lock held for the whole run.

Two runs writing to one OUT would interleave their rows in one metrics.jsonl and overwrite
each other's checkpoints without a word. So a run takes an exclusive flock(2) on OUT/.lock
(which holds its pid, for the message the second run prints) and keeps it until it ends. The
kernel releases the lock when the process exits, however it exits, so a crash never leaves a
stale lock; the file itself stays (removing it would let two runs lock two different files).

Not here: locks on other machines' view of a network file system (flock there depends on the
server), and Windows (no fcntl).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from glassformer.errors import GlassformerError
from glassformer.files import open_regular
from glassformer.train.outputs import LOCK_FILE


@contextlib.contextmanager
def run_directory_lock(
    out: Path, lock_file: str = LOCK_FILE, holder_kind: str = "training run"
) -> Iterator[None]:
    """Hold OUT/`lock_file` for the block; a second holder gets a GlassformerError at once.
    A command that runs several steps in one OUT (`adapt`: synthesis, then training) holds
    its own lock file around the training run's.

    Raises:
        GlassformerError: "OUT is in use by another training run (pid N)", or the lock file
            is not a regular file.
    """
    out.mkdir(parents=True, exist_ok=True)
    descriptor = open_regular(out / lock_file, os.O_RDWR | os.O_CREAT)  # never a FIFO or device
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
            raise GlassformerError(
                f"{out} is in use by another {holder_kind} (pid {holder}); wait for it or "
                "choose another --out"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # closing the last descriptor releases the lock
