"""Giving freed memory back (glassformer/malloc.py), and the server doing it when idle."""

from __future__ import annotations

import asyncio
import platform

import numpy as np
import pytest

from glassformer import malloc


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt and malloc_trim")
def test_large_blocks_are_mapped_and_free_pages_go_back() -> None:
    assert malloc.map_large_blocks()
    chunks = [np.ones(300_000 // 8) for _ in range(200)]  # 60 MB in blocks over the threshold
    del chunks
    assert isinstance(malloc.give_back_free_memory(), bool)


def test_the_model_thread_gives_memory_back_when_it_goes_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A burst's last call trims, the calls before it (others waiting) do not: the trim
    costs milliseconds, once per burst."""
    import threading

    from glassformer.serve import model_thread

    trims: list[int] = []
    monkeypatch.setattr(model_thread, "give_back_free_memory", lambda: trims.append(1))
    thread = model_thread.ModelThread()
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        started.set()
        release.wait(5)

    async def burst() -> None:
        one = asyncio.ensure_future(thread.run(first))
        await asyncio.to_thread(started.wait, 5)
        two = asyncio.ensure_future(thread.run(lambda: None))  # waits for the turn
        await asyncio.sleep(0.2)
        release.set()
        await asyncio.gather(one, two)

    asyncio.run(burst())
    assert len(trims) == 1, "one trim, after the second call, when nobody waited"
    asyncio.run(thread.run(lambda: None))
    assert len(trims) == 2
    thread.close()
