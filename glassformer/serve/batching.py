"""Concurrent transcriptions share one encoder pass: where a CPU server's throughput comes from.

    request 1 ──┐  wait up to batch_wait_ms (or until max_batch are waiting)
    request 2 ──┼──> listener.understand_many([w1, w2, w3]) ──> each request gets its result
    request 3 ──┘    (one encoder forward over the stacked features, then one beam search)

While a batch runs, new requests queue up and form the next batch at once, so under load
batches fill by themselves and the wait only matters for a lone request. Requests are
grouped by grammar: a batch reads one grammar.

A batch runs as one call on the ModelThread (serve/model_thread.py: the models run one call
at a time, in turns). The clips of a batch are decoded together too: one beam search over all
their beams (tasks/speech/search.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from glassformer.errors import GlassformerError

if TYPE_CHECKING:
    from glassformer.serve.model_thread import ModelThread
    from glassformer.tasks.speech.listener import Listener, Result


@dataclass
class Job:
    waveform: np.ndarray  # (L,) 16 kHz mono
    done: asyncio.Future[tuple[Result, int]]  # the clip's Result and its batch's size


def transcribe_batch(listener: Listener, waveforms: list[np.ndarray]) -> list[Result]:
    """The listener's Results for several clips, their encoder run as one batch."""
    return listener.understand_many(waveforms)


def transcribe_each(listener: Listener, waveforms: list[np.ndarray]) -> list[Result | Exception]:
    """Clip by clip, each result or its GlassformerError (after a batch failed: whose clip?)."""
    results: list[Result | Exception] = []
    for waveform in waveforms:
        try:
            results.append(transcribe_batch(listener, [waveform])[0])
        except GlassformerError as error:
            results.append(error)
    return results


class TranscriptionBatcher:
    """Gathers concurrent transcription requests of one grammar into understand_many calls."""

    def __init__(self, thread: ModelThread, wait_ms: float, max_batch: int) -> None:
        self.thread, self.wait_s, self.max_batch = thread, wait_ms / 1000, max_batch
        self.queues: dict[int, list[Job]] = {}  # id(Listener) -> jobs waiting
        self.full: dict[int, asyncio.Event] = {}  # set when max_batch jobs are waiting
        self.collectors: dict[int, asyncio.Task] = {}

    async def transcribe(self, listener: Listener, waveform: np.ndarray) -> tuple[Result, int]:
        """One clip's Result, and how many clips shared its encoder pass."""
        key = id(listener)
        job = Job(waveform, asyncio.get_running_loop().create_future())
        queue = self.queues.setdefault(key, [])
        queue.append(job)
        full = self.full.setdefault(key, asyncio.Event())
        if len(queue) >= self.max_batch:
            full.set()
        if key not in self.collectors:
            self.collectors[key] = asyncio.create_task(self.collect(listener))
        return await job.done

    async def collect(self, listener: Listener) -> None:
        """Run batches for one grammar until nobody is waiting."""
        key = id(listener)
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
                await self.run_batch(listener, jobs)
        finally:
            del self.collectors[key]

    async def run_batch(self, listener: Listener, jobs: list[Job]) -> None:
        """One understand_many for the jobs; on a bad clip, each clip alone (to tell whose)."""
        waveforms = [job.waveform for job in jobs]
        try:
            results = await self.thread.run(transcribe_batch, listener, waveforms)
        except GlassformerError:
            results = await self.thread.run(transcribe_each, listener, waveforms)
        except Exception as error:  # noqa: BLE001 - a bug: every waiting request hears of it
            results = [error] * len(jobs)
        for job, result in zip(jobs, results, strict=True):
            if job.done.done():  # the client went away
                continue
            if isinstance(result, Exception):
                job.done.set_exception(result)
            else:
                job.done.set_result((result, len(jobs)))
