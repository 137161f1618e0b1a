"""Concurrent transcriptions share one encoder pass: where a CPU server's throughput comes from.

    request 1 ──┐  wait up to batch_wait_ms (or until max_batch are waiting)
    request 2 ──┼──> transcribe_many(speech, [w1, w2, w3]) ──> each request gets its result
    request 3 ──┘    (one encoder forward over the stacked features, then a beam per clip)

While a batch runs, new requests queue up and form the next batch at once, so under load
batches fill by themselves and the wait only matters for a lone request. Requests are
grouped by grammar: a batch reads one grammar.

Every model call (transcription, generation, translation, attention) runs on ModelThread, one
worker thread: torch uses its own threads inside an operation, the event loop stays free to
accept requests, and the attention hooks of one request never see another's forward pass.
Before each call a ThreadGovernor (threads.py) gives torch's threads up while other processes
use the cores, as the trainer does. The clips of a batch are decoded together too: one beam
search over all their beams (tasks/speech/inference.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from glassformer.errors import GlassformerError
from glassformer.threads import ThreadGovernor

Result = TypeVar("Result")


class ModelThread:
    """The one thread that runs the models; `await run(f, ...)` from the event loop."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="glassformer-model")
        self.governor: ThreadGovernor | None = None  # made on the worker, where torch runs

    async def run(self, function: Callable[..., Result], *args: Any) -> Result:
        loop = asyncio.get_running_loop()
        call = functools.partial(self.call, function, *args)
        return await loop.run_in_executor(self.executor, call)

    def call(self, function: Callable[..., Result], *args: Any) -> Result:
        """On the worker: fit torch's threads to the idle cores, then run `function`."""
        if self.governor is None:
            self.governor = ThreadGovernor()
        self.governor.tick()
        return function(*args)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


@dataclass
class Job:
    waveform: np.ndarray  # (L,) 16 kHz mono
    done: asyncio.Future  # -> (Transcript, batch size)


def transcribe_batch(speech: Any, waveforms: list[np.ndarray], beam_size: int) -> list[Any]:
    """Grammar-constrained transcriptions of several clips, their encoder run as one batch."""
    from glassformer.tasks.speech.inference import transcribe_many

    return transcribe_many(speech, waveforms, beam_size, constrain=True)


def transcribe_each(speech: Any, waveforms: list[np.ndarray], beam_size: int) -> list[Any]:
    """Clip by clip, each result or its GlassformerError (after a batch failed: whose clip?)."""
    results: list[Any] = []
    for waveform in waveforms:
        try:
            results.append(transcribe_batch(speech, [waveform], beam_size)[0])
        except GlassformerError as error:
            results.append(error)
    return results


class TranscriptionBatcher:
    """Gathers concurrent transcription requests of one grammar into transcribe_many calls."""

    def __init__(self, thread: ModelThread, wait_ms: float, max_batch: int, beam_size: int) -> None:
        self.thread, self.wait_s, self.max_batch = thread, wait_ms / 1000, max_batch
        self.beam_size = beam_size
        self.queues: dict[int, list[Job]] = {}  # id(SpeechModel) -> jobs waiting
        self.full: dict[int, asyncio.Event] = {}  # set when max_batch jobs are waiting
        self.collectors: dict[int, asyncio.Task] = {}

    async def transcribe(self, speech: Any, waveform: np.ndarray) -> tuple[Any, int]:
        """One clip's Transcript, and how many clips shared its encoder pass."""
        key = id(speech)
        job = Job(waveform, asyncio.get_running_loop().create_future())
        queue = self.queues.setdefault(key, [])
        queue.append(job)
        full = self.full.setdefault(key, asyncio.Event())
        if len(queue) >= self.max_batch:
            full.set()
        if key not in self.collectors:
            self.collectors[key] = asyncio.create_task(self.collect(speech))
        return await job.done

    async def collect(self, speech: Any) -> None:
        """Run batches for one grammar until nobody is waiting."""
        key = id(speech)
        try:
            while self.queues.get(key):
                if len(self.queues[key]) < self.max_batch:
                    with contextlib.suppress(TimeoutError):  # a lone request waits for company
                        await asyncio.wait_for(self.full[key].wait(), self.wait_s)
                jobs = self.queues[key][: self.max_batch]
                del self.queues[key][: len(jobs)]
                self.full[key].clear()
                if len(self.queues[key]) >= self.max_batch:
                    self.full[key].set()
                await self.run_batch(speech, jobs)
        finally:
            del self.collectors[key]

    async def run_batch(self, speech: Any, jobs: list[Job]) -> None:
        """One transcribe_many for the jobs; on a bad clip, each clip alone (to tell whose)."""
        waveforms = [job.waveform for job in jobs]
        try:
            results = await self.thread.run(transcribe_batch, speech, waveforms, self.beam_size)
        except GlassformerError:
            results = await self.thread.run(transcribe_each, speech, waveforms, self.beam_size)
        except Exception as error:  # noqa: BLE001 - a bug: every waiting request hears of it
            results = [error] * len(jobs)
        for job, result in zip(jobs, results, strict=True):
            if job.done.done():  # the client went away
                continue
            if isinstance(result, Exception):
                job.done.set_exception(result)
            else:
                job.done.set_result((result, len(jobs)))
