"""The one writer: every file and directory glassformer writes goes through here, whole or not
at all, and never over something that is not ours to replace.

    atomic_file(path)                 a context manager: write to the temporary path it yields;
                                      on success it is renamed over `path`, on error removed
    write_text_atomically(path, s)    the common case of one text file
    open_for_append(path)             a file that grows line by line (metrics.jsonl)
    open_regular(path, flags)         a descriptor on a regular file (the run lock)
    write_directory_atomically(d, w)  w(tmp) fills a fresh sibling directory, renamed to d
    check_output_file(path)           before long work: will writing `path` succeed?
    check_output_files(paths)         the same for a file and the files beside it (all distinct)
    check_output_directory(d, names)  the same for a directory

The same rules hold for a command's main output and for every file it writes beside it (a
run's loss.png, metrics.jsonl, .lock; a tokenizer's .vocab view):
- Only regular files (and directories, where a directory is written) are ever replaced or
  appended to: a target that exists as something else (/dev/null, a FIFO, a socket) is
  refused with a GlassformerError, since a rename would put a plain file where the device
  was, and a write to a FIFO waits for a reader forever.
- A symbolic link is followed, so the file it points to is replaced and the link stays; a link
  to a device is refused like the device.
- An empty path is refused: Path("") is the current directory.
- A directory is replaced whole only if it holds nothing but what the new version writes (or
  the names its writer declares its own), so a folder of the user's given as the output is
  refused, never swept away.
The check and the rename are two steps; a path swapped for a device between them by someone
with write access to its folder is not caught (appends check the opened file itself).

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
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from glassformer.errors import GlassformerError


def output_path(path: str | Path) -> Path:
    """`path` as a Path; an empty one is refused, since Path("") is the current directory.

    Example: output_path("") raises "an empty path names no file; give a file or folder".
    """
    if str(path) == "":
        raise GlassformerError(f"{path!r}: an empty path names no file; give a file or folder")
    return Path(path)


def refuse_unless(path: Path, is_kind: Callable[[int], bool], kind: str) -> None:
    """Raise GlassformerError if `path` exists (through links) as something other than `kind`.

    Example: refuse_unless(Path("/dev/null"), stat.S_ISREG, "regular file") raises
    "/dev/null: is a character device, not a regular file; refusing to replace it".
    """
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
    path = output_path(path)
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
        GlassformerError: `path` is empty, or exists and is not a regular file (checked on
            entry and again just before the rename).
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


def open_regular(path: str | Path, flags: int) -> int:
    """A descriptor on `path` opened with `flags` (os.O_WRONLY | os.O_CREAT | ...), checked to
    be a regular file on the descriptor itself, so a FIFO swapped in after the check is still
    refused. The open never blocks (a FIFO without a reader would wait forever).

    Raises:
        GlassformerError: `path` is empty or is not a regular file (through links).
    """
    path = real_target(path)
    refuse_unless(path, stat.S_ISREG, "regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:  # ENXIO: a FIFO nobody reads appeared after the check
        raise GlassformerError(f"{path}: cannot be written ({error.strerror})") from None
    return keep_if_regular(descriptor, lambda kind: f"{path}: is {kind}, not a regular file")


def keep_if_regular(descriptor: int, refusal: Callable[[str], str]) -> int:
    """`descriptor`, opened without blocking, made blocking again if it is a regular file;
    else closed and GlassformerError(refusal(what it is)). Checked on the open file, not the
    path: nothing can be swapped in between."""
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise GlassformerError(refusal(kind_of(mode)))
    os.set_blocking(descriptor, True)
    return descriptor


def open_for_append(path: str | Path) -> TextIO:
    """`path` opened to add UTF-8 lines at its end (created if missing), as open(path, "a")
    would, but only if it is a regular file (see open_regular)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    return os.fdopen(open_regular(path, flags), "a", encoding="utf-8")


def foreign_entries(directory: Path, own_names: Collection[str]) -> list[str]:
    """Entries of an existing `directory` that are not regular files named in `own_names`."""
    if not directory.is_dir():
        return []
    return sorted(
        entry.name
        for entry in os.scandir(directory)
        if entry.name not in own_names or not entry.is_file(follow_symlinks=False)
    )


def refuse_foreign(directory: Path, own_names: Collection[str], what: str) -> None:
    """Raise GlassformerError if `directory` holds anything but `own_names` (regular files)."""
    foreign = foreign_entries(directory, own_names)
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise GlassformerError(
            f"{directory}: holds {shown}, not part of a {what}; refusing to replace the folder "
            "(move them away, or choose another output)"
        )


def write_directory_atomically(
    directory: str | Path,
    write: Callable[[Path], None],
    own_names: Collection[str] | None = None,
    what: str = "checkpoint",
) -> None:
    """Call write(tmp) on a fresh sibling directory, then rename it to `directory`.

    An existing `directory` is replaced only if it holds nothing but regular files that the
    new version writes or that `own_names` names (a `what`'s files); anything else is the
    user's, and the folder is refused before the rename (and, when `own_names` is given,
    before any work).
    Replacing takes two renames (old out of the way, new into place); a crash between them
    leaves the complete old version at `.NAME.old-PID`, which the checkpoint loader points to.

    Raises:
        GlassformerError: `directory` is empty, exists and is not a directory, or holds files
            that are not a `what`'s.
    """
    directory = real_target(directory)
    refuse_unless(directory, stat.S_ISDIR, "directory")
    if own_names is not None:
        refuse_foreign(directory, own_names, what)  # before the work, not after
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes it 0700
        for file in tmp.iterdir():
            os.chmod(file, default_file_mode())
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
        refuse_unless(directory, stat.S_ISDIR, "directory")
        refuse_foreign(directory, {*(own_names or ()), *os.listdir(tmp)}, what)
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
    """Raise GlassformerError unless atomic_file can write `path`: a new path or a regular
    file (through links), its nearest existing ancestor a writable folder (atomic_file
    creates the folders missing). Commands call it before long work whose result goes to
    `path`, not after.

    os.access says yes to everything for root, so the kind of file is checked from its
    mode: a root user's `--out /dev/null` is refused like anyone else's.
    """
    path = real_target(path)
    refuse_unless(path, stat.S_ISREG, "regular file")
    if path.exists() and not os.access(path, os.W_OK):
        raise GlassformerError(f"{path}: not writable")
    check_writable_folder(path)


def check_writable_folder(path: Path) -> None:
    """Raise GlassformerError unless the nearest existing ancestor of `path` is a writable
    folder (the writers create the folders missing below it)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise GlassformerError(f"{path}: cannot be written, {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise GlassformerError(f"{path}: cannot be written, {folder} is not writable")


def check_output_files(paths: Iterable[str | Path]) -> None:
    """check_output_file for a file and the files written beside it, which must all differ:
    `tokenizer train --out t.vocab` would otherwise write its .vocab view over the tokenizer.

    Raises:
        GlassformerError: a target check_output_file refuses, or two that are one file.
    """
    seen: dict[str, Path] = {}
    for path in paths:
        check_output_file(path)
        key = os.path.realpath(path)
        if key in seen:
            raise GlassformerError(
                f"{path}: is also where {seen[key]} goes; an output and the files written "
                "beside it must be different files"
            )
        seen[key] = Path(path)


def refuse_inputs_as_outputs(outputs: Iterable[str | Path], inputs: Iterable[str | Path]) -> None:
    """Raise GlassformerError if a command would write one of the files it reads
    (`tokenizer export tok.json --out tok.json`, `tokenizer train corpus.txt --out
    corpus.txt`): the input would be gone the moment the output is written.

    Example: (["t.json"], ["./t.json"]) raises "t.json: is also an input of this command".
    """
    read = {os.path.realpath(path) for path in inputs}
    for path in outputs:
        if os.path.realpath(path) in read:
            raise GlassformerError(
                f"{path}: is also an input of this command; write the output elsewhere"
            )


def check_output_directory(
    directory: str | Path, own_names: Collection[str] = (), what: str = "checkpoint"
) -> None:
    """Raise GlassformerError unless write_directory_atomically can write `directory` with
    files named `own_names`: a new path, or a directory holding only those (through links)."""
    directory = real_target(directory)
    refuse_unless(directory, stat.S_ISDIR, "directory")
    refuse_foreign(directory, own_names, what)
    check_writable_folder(directory)
