"""The models run one call at a time, in turns: no request holds the others hostage.

    request A (generate 1000 tokens) ──┐
    request B (transcribe)           ──┼──> one turn at a time, first come first served;
    request C (listen, one frame)    ──┘    a long call gives its turn up every slice_s

Every model call (transcription, generation, translation, attention) runs on a worker thread
that first takes the turn: only its holder runs torch, so torch uses its own threads inside
one operation, the event loop stays free to accept requests, and the attention hooks of one
request never see another's forward pass. A call that takes many steps (a generation, token
by token) calls `share()` between them: once it has held the turn for `slice_s` while another
call waits, it goes to the back of the line and goes on when its turn comes again. So another
request waits at most about one slice per call ahead of it, not for the whole generation
(tests/serve/test_batching.py). Before each turn a ThreadGovernor (threads.py) gives torch's
threads up while other processes use the cores, as the trainer does (where torch runs: a
server of an exported model never imports it, tasks/speech/onnx_runtime.py).

Not here: a limit on how many calls wait at once (each waits on a worker thread: at most
`workers`, then in the executor's queue).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from glassformer.malloc import give_back_free_memory, map_large_blocks
from glassformer.threads import ThreadGovernor

Returned = TypeVar("Returned")  # what the function run on the model thread returns
SLICE_S = 0.05  # s: the longest a call keeps the turn while another waits
WORKERS = 32  # calls that may hold or wait for the turn at once


class ModelThread:
    """Model calls in turns; `await run(f, ...)` from the event loop, `share()` inside f."""

    def __init__(self, slice_s: float = SLICE_S, workers: int = WORKERS) -> None:
        map_large_blocks()  # a long-running server: what a call frees goes back at once
        self.slice_s = slice_s
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix="glassformer-model")
        self.governor: ThreadGovernor | None = None  # made by the first holder, where torch runs
        self.changed = threading.Condition()  # guards line, holder, since
        self.line: collections.deque[int] = collections.deque()  # waiting threads, in order
        self.holder: int | None = None  # the thread that runs the model now
        self.since = 0.0  # when the holder took the turn (time.monotonic)

    async def run(self, function: Callable[..., Returned], *args: object) -> Returned:
        loop = asyncio.get_running_loop()
        call = functools.partial(self.call, function, *args)
        return await loop.run_in_executor(self.executor, call)

    def call(self, function: Callable[..., Returned], *args: object) -> Returned:
        """On a worker: take the turn, fit torch's threads to the idle cores, run `function`."""
        self.take()
        try:
            if self.governor is None and "torch" in sys.modules:  # an exported model alone
                self.governor = ThreadGovernor()  # runs without torch: nothing to govern
            if self.governor is not None:
                self.governor.tick()
            return function(*args)
        finally:
            self.give()

    def share(self) -> None:
        """Between two steps of a long call: if another call has waited while this one held
        the turn for slice_s, give the turn to it and wait for the next. Elsewhere: nothing."""
        with self.changed:
            me = threading.get_ident()
            if self.holder != me or not self.line:
                return
            if time.monotonic() - self.since < self.slice_s:
                return
        self.give()
        self.take()

    def take(self) -> None:
        me = threading.get_ident()
        with self.changed:
            self.line.append(me)
            self.changed.wait_for(lambda: self.holder is None and self.line[0] == me)
            self.line.popleft()
            self.holder, self.since = me, time.monotonic()

    def give(self) -> None:
        with self.changed:
            self.holder = None
            idle = not self.line
            self.changed.notify_all()
        if idle:  # the last call of a burst: what it freed goes back (glassformer/malloc.py)
            give_back_free_memory()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
