"""Giving freed memory back to the operating system, where the C library allows it.

    map_large_blocks()        blocks of 256 KB and more get pages of their own, returned on free
    give_back_free_memory()   every arena's free pages returned now (malloc_trim)

A server's resting memory is what its busiest moment left behind. glibc serves a large block
from its own mapping (returned to the system when freed) only while the block is over a
threshold that it raises to the size of every such block freed: after a first batch, the
1.6 MB logits of each decode step and the encoder's activations come from the heap, where
a few small blocks still in use pin everything freed around them. A burst of concurrent 30-s
uploads left `glassformer serve` 480 MB larger for good, and each batch 330 MB larger until
it went idle (docs/benchmarks.md). A fixed threshold keeps large blocks mapped; a trim when
the server goes idle returns what the arenas still hold (a few milliseconds: not per call).

Elsewhere than glibc (musl, macOS) neither exists and both do nothing. Torch-free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc's malloc.h)
MAPPED_BLOCK_BYTES = 256 * 1024  # blocks this large or larger are mapped on their own


@functools.cache
def glibc_function(name: str):  # noqa: ANN201 - a ctypes function or None
    """A function of glibc's malloc (malloc_trim, mallopt), or None where there is none."""
    path = ctypes.util.find_library("c")
    try:
        library = ctypes.CDLL(path) if path else None
    except OSError:
        return None
    return getattr(library, name, None)


def map_large_blocks(threshold: int = MAPPED_BLOCK_BYTES) -> bool:
    """Serve every block of `threshold` bytes or more from a mapping of its own, for good
    (setting it turns glibc's rising threshold off); whether the C library took it.
    Measured: a batch's peak 994 -> 820 MB, resting after it 944 -> 640 MB."""
    mallopt = glibc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))


def give_back_free_memory() -> bool:
    """Return every arena's free pages to the operating system; whether any was returned."""
    trim = glibc_function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
