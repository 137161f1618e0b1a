"""Atomic writes: every file and directory glassformer writes appears whole or not at all.

    atomic_file(path)                 a context manager: write to the temporary path it yields;
                                      on success it is renamed over `path`, on error removed
    write_text_atomically(path, s)    the common case of one text file
    write_directory_atomically(d, w)  w(tmp) fills a fresh sibling directory, renamed to d
    check_output_file(path)           before long work: will writing `path` succeed?

A crash leaves the previous version (or nothing), never half a file. Files get the mode an
ordinary `open()` would give (0666 less the user's umask): `tempfile.mkstemp` creates them
0600, which would make every checkpoint, tokenizer and clip private to its writer.

Torch-free, so tokenizer and audio code can use it without importing torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def current_umask() -> int:
    """The process umask (the only portable way to read it is to set it, then restore it)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


def default_file_mode() -> int:
    """0666 less the umask: the mode open() gives a new file."""
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_file(path: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it over `path` when the block succeeds.

    Example: `with atomic_file("x.wav", ".wav") as tmp: soundfile.write(tmp, ...)`.
    `suffix` keeps an extension that a writer may read the format from.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, default_file_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomically(path: str | Path, text: str) -> None:
    """Write UTF-8 `text` to `path` atomically."""
    with atomic_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_directory_atomically(directory: str | Path, write: Callable[[Path], None]) -> None:
    """Call write(tmp) on a fresh sibling directory, then rename it to `directory`.

    Replacing an existing directory takes two renames (old out of the way, new into place);
    a crash between them leaves the complete old version at `.NAME.old-PID`, which the
    checkpoint loader points to.
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes it 0700
        for file in tmp.iterdir():
            os.chmod(file, default_file_mode())
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if directory.exists():
        old = directory.parent / f".{directory.name}.old-{os.getpid()}"
        os.replace(directory, old)
        os.replace(tmp, directory)
        shutil.rmtree(old)
    else:
        os.replace(tmp, directory)


def check_output_file(path: str | Path) -> None:
    """Raise GlassformerError unless `path` can be written as a file: not a folder, and its
    nearest existing ancestor a writable folder (atomic_file creates the folders missing).
    Commands call it before long work whose result goes to `path`, not after."""
    from glassformer.errors import GlassformerError

    path = Path(path)
    if path.is_dir():
        raise GlassformerError(f"{path}: is a directory, not a file to write")
    if path.exists() and not os.access(path, os.W_OK):
        raise GlassformerError(f"{path}: not writable")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise GlassformerError(f"{path}: cannot be written, {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise GlassformerError(f"{path}: cannot be written, {folder} is not writable")
