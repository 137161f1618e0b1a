"""Token files on disk and random blocks from them, for language-model training.

Text is tokenized once into a flat binary file of ids (uint16 when the vocabulary fits, else
uint32), read back as a numpy memory map: a corpus larger than memory is paged in as blocks are
sampled, never loaded whole. The first part of the stream is for training, the last part for
validation (nanoGPT's split). Prepared files are cached under a key made of the tokenizer and
the source files' paths, sizes and modification times, so a second run starts at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from glassformer.errors import GlassformerError
from glassformer.files import atomic_file, write_text_atomically

TOKENS_FILE = "tokens.bin"
META_FILE = "meta.json"


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds every id."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


@dataclass(frozen=True)
class TokenData:
    """A prepared token file: the memory map and where validation starts."""

    tokens: np.ndarray  # (n,) memory-mapped ids
    n_train: int  # ids [0, n_train) are for training, the rest for validation
    val_bytes: int  # UTF-8 bytes the validation ids stand for (for bits per byte)

    @property
    def train(self) -> np.ndarray:
        return self.tokens[: self.n_train]

    @property
    def val(self) -> np.ndarray:
        return self.tokens[self.n_train :]


def cache_key(files: Iterable[Path], tokenizer_json: dict, val_fraction: float) -> str:
    """Changes whenever the tokenizer, the split or any source file (path, size, mtime) does."""
    digest = hashlib.sha256(json.dumps(tokenizer_json, sort_keys=True).encode())
    digest.update(repr(val_fraction).encode())
    for path in files:
        stat = path.stat()
        # the path as the bytes the OS holds: a name need not be UTF-8 (str() would hold
        # surrogates, which .encode() refuses)
        digest.update(os.fsencode(path.resolve()) + f"|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def write_token_file(
    directory: Path,
    id_chunks: Iterable[list[int]],
    dtype: np.dtype,
    check: Callable[[int], None] | None = None,
) -> int:
    """Stream ids into directory/tokens.bin through a temporary file; returns how many.

    `check(count)` runs before the file is renamed into place: if it raises, no tokens.bin
    appears.
    """
    count = 0
    with atomic_file(directory / TOKENS_FILE) as tmp, open(tmp, "wb") as file:
        for ids in id_chunks:  # a unique temporary name: concurrent writers are safe
            np.asarray(ids, dtype=dtype).tofile(file)
            count += len(ids)
        if check is not None:
            check(count)
    return count


def open_token_data(directory: Path) -> TokenData:
    """A prepared cache entry; a damaged meta.json is one error naming it."""
    from glassformer.textfiles import read_json

    meta = read_json(directory / META_FILE, "token cache")
    tokens = np.memmap(directory / TOKENS_FILE, dtype=np.dtype(meta["dtype"]), mode="r")
    return TokenData(tokens, meta["n_train"], meta["val_bytes"])


def prepare_token_data(
    files: list[Path], tokenizer, cache_root: Path, val_fraction: float = 0.1
) -> TokenData:  # noqa: ANN001 - any Tokenizer
    """Tokenize `files` into a cached token file (or reuse the cached one)."""
    from glassformer.textfiles import read_text_blocks

    directory = cache_root / cache_key(files, tokenizer.to_json(), val_fraction)
    if (directory / META_FILE).is_file():
        return open_token_data(directory)
    dtype = token_dtype(tokenizer.vocab_size)
    chunks = (
        tokenizer.encode_ordinary(block) for path in files for block in read_text_blocks(path)
    )

    def check_split(count: int) -> None:
        n_train = int(count * (1 - val_fraction))
        if n_train < 2 or count - n_train < 2:
            raise GlassformerError(
                f"val_fraction={val_fraction} of {count:,} tokens leaves {n_train:,} for "
                f"training and {count - n_train:,} for validation; each needs at least 2: "
                "give more text or another val_fraction"
            )

    try:
        count = write_token_file(directory, chunks, dtype, check_split)
    except BaseException:
        with contextlib.suppress(OSError):
            directory.rmdir()  # if empty: a failed run leaves no half cache entry
        raise
    n_train = int(count * (1 - val_fraction))
    tokens = np.memmap(directory / TOKENS_FILE, dtype=dtype, mode="r")
    val_bytes = len(tokenizer.decode_bytes(tokens[n_train:].tolist()))
    meta = {
        "dtype": dtype.name,
        "n_tokens": count,
        "n_train": n_train,
        "val_bytes": val_bytes,
        "files": [str(p) for p in files],
    }
    # last: its presence means the cache entry is whole
    write_text_atomically(directory / META_FILE, json.dumps(meta, indent=1) + "\n")
    return open_token_data(directory)


def sample_blocks(
    tokens: np.ndarray, batch_size: int, block_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of block_size + 1 ids: inputs and the same shifted by one (targets).

    Shapes:
        returns: x (B, T), y (B, T) int64, with y[:, t] = x[:, t + 1] along the stream
    """
    if len(tokens) <= block_size:
        raise GlassformerError(f"{len(tokens)} tokens cannot fill one block of {block_size} + 1")
    starts = torch.randint(len(tokens) - block_size, (batch_size,), generator=generator)  # (B,)
    index = starts.numpy()[:, None] + np.arange(block_size + 1)  # (B, T + 1)
    window = torch.from_numpy(tokens[index].astype(np.int64))  # (B, T + 1)
    return window[:, :-1], window[:, 1:]
