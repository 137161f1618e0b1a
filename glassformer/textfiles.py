"""Reading files we are given, each checked before it is read: text in blocks, small files whole.

    read_text_blocks(path)         the file's text in blocks cut at safe boundaries
    split_at_safe_boundaries(t, n) where those cuts go: after a newline followed by a letter
    require_files(paths)           every path is a regular file, else one error naming it
    open_regular_file(path, kind)  a binary file object, only on a regular file
    read_bytes(path, kind, limit)  a small file's bytes, at most `limit` of them
    read_utf8(path, kind, limit)   a small file's whole text, with one-line errors naming it
    read_json(path, kind, limit)   a small JSON file; parse_json for JSON text from elsewhere

Only regular files are read: a FIFO would wait for a writer forever and a character device
(/dev/zero, /dev/urandom) never ends, so both are one GlassformerError naming the path, as
is a file over the size limit its caller gives for its kind (a tokenizer, a config, labels).

Text is decoded strictly: a file that is not UTF-8 is one GlassformerError naming the file and
the byte offset of the first bad byte, never a silently replaced character. Line endings are
kept as written (\\r\\n stays \\r\\n), so the blocks joined are exactly the file's text. JSON
nested past the parser's recursion limit, or with a number of more than 4,300 digits, is one
error like any other malformed JSON.

Torch-free and tokenizer-free: the tokenizer trainer, the language-model data and the
character tokenizer all read through here.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from glassformer.errors import GlassformerError, first_line
from glassformer.files import keep_if_regular, kind_of

BLOCK_BYTES = 1 << 20  # bytes read from a file at a time (about as many characters of text)
MAX_SMALL_FILE_BYTES = 16 << 20  # a file read whole unless its caller says otherwise: a
# grammar, labels, a JSON state file (each a few KB to a few hundred KB in practice)


def split_at_safe_boundaries(text: str, block_chars: int) -> list[str]:
    """Cut `text` into blocks of about `block_chars`, each ending just after a newline that
    is followed by a letter.

    Both built-in pre-tokenizer patterns (tokenizer/pretokenize.py) always put a chunk boundary
    there, so pre-tokenizing block by block gives exactly the chunks of the whole text. (A
    custom pattern may not: give it whole texts.) A text with no such newline stays one block.

    Example: ("ab\\ncd\\nef", 3) -> ["ab\\n", "cd\\n", "ef"]
    """
    blocks, start = [], 0
    while len(text) - start > block_chars:
        cut = text.rfind("\n", start, start + block_chars)
        while cut >= start and not text[cut + 1 : cut + 2].isalpha():
            cut = text.rfind("\n", start, cut)
        if cut < start:
            cut = text.find("\n", start + block_chars)
            while cut != -1 and not text[cut + 1 : cut + 2].isalpha():
                cut = text.find("\n", cut + 1)
            if cut == -1:
                break
        blocks.append(text[start : cut + 1])
        start = cut + 1
    blocks.append(text[start:])
    return [block for block in blocks if block]


def decode_blocks(path: Path, block_bytes: int) -> Iterator[str]:
    """The file's text, `block_bytes` at a time, decoded strictly (errors name the offset)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    offset = 0  # bytes of the file read before the current block
    with open_regular_file(path, "") as handle:
        while True:
            data = handle.read(block_bytes)
            held = len(decoder.getstate()[0])  # a character's first bytes, carried over
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as error:
                at = offset - held + error.start
                raise GlassformerError(
                    f"{path}: not UTF-8 text (byte offset {at}: {error.reason})"
                ) from None
            if text:
                yield text
            if not data:
                return
            offset += len(data)


def read_text_blocks(path: str | Path, block_bytes: int = BLOCK_BYTES) -> Iterator[str]:
    """A UTF-8 text file in blocks of about `block_bytes`, cut at safe boundaries (see
    split_at_safe_boundaries), so memory stays bounded on large corpora.

    Raises:
        GlassformerError: the file is missing, a directory, or not UTF-8 (naming the offset).
    """
    path = Path(path)
    require_files([path])
    pending = ""
    for text in decode_blocks(path, block_bytes):
        *ready, pending = split_at_safe_boundaries(pending + text, block_bytes // 2) or [""]
        yield from ready
    if pending:
        yield pending


def file_noun(kind: str) -> str:
    """'tokenizer file' for kind 'tokenizer'; 'file' for no kind."""
    return f"{kind} file" if kind else "file"


def open_regular_file(path: str | Path, kind: str) -> IO[bytes]:
    """`path` opened for reading in binary, checked on the open file itself to be a regular
    file. The open never blocks (a FIFO without a writer would wait forever).

    Example: open_regular_file("/dev/zero", "tokenizer") raises
    "/dev/zero: is a character device, not a tokenizer file".

    Raises:
        GlassformerError: missing, a directory, a FIFO, device or socket, or unreadable.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise GlassformerError(f"{path}: no such {file_noun(kind)}") from None
    except OSError as error:
        raise GlassformerError(f"{path}: cannot be read ({error.strerror})") from None
    keep_if_regular(descriptor, lambda what: f"{path}: is {what}, not a {file_noun(kind)}")
    return os.fdopen(descriptor, "rb")


def read_bytes(path: str | Path, kind: str, limit: int = MAX_SMALL_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (checked before reading, and
    again while reading, in case it grows).

    Raises:
        GlassformerError: as open_regular_file, or the file is larger than `limit`.
    """
    with open_regular_file(path, kind) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        size = max(size, len(data))
        raise GlassformerError(
            f"{path}: {size:,} bytes, more than a {file_noun(kind)} may hold ({limit:,})"
        )
    return data


def read_utf8(path: str | Path, kind: str, limit: int = MAX_SMALL_FILE_BYTES) -> str:
    """The whole text of a small file (a grammar, a tokenizer, labels), strictly decoded.

    Example: read_utf8("g.yaml", "grammar") on a missing file raises
    GlassformerError("g.yaml: no such grammar file").

    Raises:
        GlassformerError: the file is missing, not a regular file, over `limit` bytes, or not
            UTF-8 (with the offset).
    """
    try:
        return read_bytes(path, kind, limit).decode("utf-8")
    except UnicodeDecodeError as error:
        raise GlassformerError(
            f"{path}: not UTF-8 text (byte offset {error.start}: {error.reason})"
        ) from None


def read_json(
    path: str | Path,
    kind: str,
    limit: int = MAX_SMALL_FILE_BYTES,
    error: type[GlassformerError] = GlassformerError,
) -> Any:
    """A small JSON file's value; every way it can be broken is one `error` naming the file.

    Raises:
        GlassformerError: as read_bytes (always this class: the file is not there or not a
            file), or `error`: not UTF-8, not JSON, nested too deeply.
    """
    data = read_bytes(path, kind, limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:  # JSON is UTF-8 (RFC 8259)
        reason = f"not UTF-8 text at byte offset {bad.start}: {bad.reason}"
        raise error(f"{path}: not valid JSON ({reason})") from None
    return parse_json(text, str(path), error)


def parse_json(text: str, where: str, error: type[GlassformerError] = GlassformerError) -> Any:
    """json.loads, with malformed JSON, a number of over 4,300 digits (a ValueError) and
    nesting deeper than Python's recursion limit (a RecursionError) as one `error`.

    Example: parse_json("[" * 5000, "x.json") raises "x.json: not valid JSON (nested too deeply)".
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{where}: not valid JSON (nested too deeply)") from None
    except ValueError as bad:  # json.JSONDecodeError is one
        raise error(f"{where}: not valid JSON ({first_line(bad)})") from None


def require_files(paths: Iterable[str | Path]) -> list[Path]:
    """The paths as Paths, after checking each is an existing regular file (through links).

    Raises:
        GlassformerError: "PATH: no such file" (or "is a directory", "is a FIFO ...") for the
            first bad path.
    """
    checked = []
    for path in map(Path, paths):
        try:
            mode = os.stat(path).st_mode
        except OSError:
            raise GlassformerError(f"{path}: no such file") from None
        if stat.S_ISDIR(mode):
            raise GlassformerError(f"{path}: is a directory, not a text file")
        if not stat.S_ISREG(mode):
            raise GlassformerError(f"{path}: is {kind_of(mode)}, not a text file")
        checked.append(path)
    return checked
