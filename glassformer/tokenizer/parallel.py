"""Encoding a large text across processes.

The text is cut where the built-in split patterns always cut (textfiles.py), each block is
encoded in a worker process with its own chunk cache, and the ids are joined in order: the
result is exactly `tokenizer.encode_ordinary(text)`. Worth it only for large inputs; small
ones are encoded in this process.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from itertools import chain

from glassformer.textfiles import split_at_safe_boundaries
from glassformer.tokenizer.bpe import BPETokenizer

MIN_PARALLEL_CHARS = 4_000_000  # below this, starting processes costs more than it saves
WORKER: BPETokenizer | None = None  # each worker process's own tokenizer (and cache)


def start_worker(document: dict) -> None:
    global WORKER
    from glassformer.tokenizer.io import tokenizer_from_json

    WORKER = tokenizer_from_json(document)


def encode_block(block: str) -> list[int]:
    return WORKER.encode_ordinary(block)


def encode_parallel(
    tokenizer: BPETokenizer, text: str, processes: int = 2, min_chars: int = MIN_PARALLEL_CHARS
) -> list[int]:
    """`tokenizer.encode_ordinary(text)`, computed in `processes` worker processes.

    Falls back to this process for short texts, one process, or a custom split pattern
    (whose chunk boundaries are not known to be safe to cut at).
    """
    if processes <= 1 or len(text) < min_chars or tokenizer.pattern_name is None:
        return tokenizer.encode_ordinary(text)
    blocks = split_at_safe_boundaries(text, max(len(text) // (4 * processes), 1))
    # fork starts fast and needs no importable __main__; workers never touch torch or threads.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(processes, context, start_worker, (tokenizer.to_json(),)) as pool:
        return list(chain.from_iterable(pool.map(encode_block, blocks)))
