"""Atomic writes: every file and directory glassformer writes appears whole or not at all.

    atomic_file(path)                 a context manager: write to the temporary path it yields;
                                      on success it is renamed over `path`, on error removed
    write_text_atomically(path, s)    the common case of one text file
    write_directory_atomically(d, w)  w(tmp) fills a fresh sibling directory, renamed to d
    check_output_file(path)           before long work: will writing `path` succeed?

A crash leaves the previous version (or nothing), never half a file. Only regular files (and,
for write_directory_atomically, directories) are ever replaced: a target that exists as
something else (/dev/null, a FIFO, a socket) is refused with a GlassformerError, since a
rename would put a plain file where the device was. A symbolic link is followed, so the file
it points to is replaced and the link stays. The check and the rename are two steps; a path
swapped for a device between them by someone with write access to its folder is not caught.

Files get the mode an ordinary `open()` would give (0666 less the user's umask):
`tempfile.mkstemp` creates them 0600, which would make every checkpoint, tokenizer and clip
private to its writer.

Torch-free, so tokenizer and audio code can use it without importing torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def refuse_unless(path: Path, is_kind: Callable[[int], bool], kind: str) -> None:
    """Raise GlassformerError if `path` exists (through links) as something other than `kind`.

    Example: refuse_unless(Path("/dev/null"), stat.S_ISREG, "regular file") raises
    "/dev/null: is a character device, not a regular file; refusing to replace it".
    """
    from glassformer.errors import GlassformerError

    try:
        mode = os.stat(path).st_mode  # follows links: a link to /dev/null is /dev/null
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there (or a dangling link): a new file is made
    except OSError as error:
        raise GlassformerError(f"{path}: cannot be written ({error.strerror})") from None
    if not is_kind(mode):
        raise GlassformerError(f"{path}: is {kind_of(mode)}, not a {kind}; refusing to replace it")


def kind_of(mode: int) -> str:
    """What a st_mode says the file is, for a message ("a character device", ...)."""
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    ]
    return next((name for is_kind, name in kinds if is_kind(mode)), "not a regular file")


def real_target(path: str | Path) -> Path:
    """`path` with symbolic links resolved, so a rename replaces the file, not the link."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


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

    Raises:
        GlassformerError: `path` exists and is not a regular file (checked on entry and again
            just before the rename).
    """
    path = real_target(path)
    refuse_unless(path, stat.S_ISREG, "regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, default_file_mode())
        refuse_unless(path, stat.S_ISREG, "regular file")  # it may have appeared meanwhile
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

    Raises:
        GlassformerError: `directory` exists and is not a directory.
    """
    directory = real_target(directory)
    refuse_unless(directory, stat.S_ISDIR, "directory")
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
    refuse_unless(directory, stat.S_ISDIR, "directory")
    if directory.exists():
        old = directory.parent / f".{directory.name}.old-{os.getpid()}"
        os.replace(directory, old)
        os.replace(tmp, directory)
        shutil.rmtree(old)
    else:
        os.replace(tmp, directory)


def check_output_file(path: str | Path) -> None:
    """Raise GlassformerError unless atomic_file can write `path`: a new path or a regular
    file (through links), its nearest existing ancestor a writable folder (atomic_file
    creates the folders missing). Commands call it before long work whose result goes to
    `path`, not after.

    os.access says yes to everything for root, so the kind of file is checked from its
    mode: a root user's `--out /dev/null` is refused like anyone else's.
    """
    from glassformer.errors import GlassformerError

    path = real_target(path)
    refuse_unless(path, stat.S_ISREG, "regular file")
    if path.exists() and not os.access(path, os.W_OK):
        raise GlassformerError(f"{path}: not writable")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise GlassformerError(f"{path}: cannot be written, {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise GlassformerError(f"{path}: cannot be written, {folder} is not writable")
