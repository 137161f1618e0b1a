"""Reading UTF-8 text files in blocks, so a large corpus never sits in memory whole.

    read_text_blocks(path)         the file's text in blocks cut at safe boundaries
    split_at_safe_boundaries(t, n) where those cuts go: after a newline followed by a letter
    require_files(paths)           every path is a file, else one error naming the first that isn't
    read_utf8(path, kind)          a small file's whole text, with one-line errors naming it

Text is decoded strictly: a file that is not UTF-8 is one GlassformerError naming the file and
the byte offset of the first bad byte, never a silently replaced character. Line endings are
kept as written (\\r\\n stays \\r\\n), so the blocks joined are exactly the file's text.

Torch-free and tokenizer-free: the tokenizer trainer, the language-model data and the
character tokenizer all read through here.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from pathlib import Path

from glassformer.errors import GlassformerError

BLOCK_BYTES = 1 << 20  # bytes read from a file at a time (about as many characters of text)


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
    with open(path, "rb") as handle:
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


def read_utf8(path: str | Path, kind: str) -> str:
    """The whole text of a small file (a grammar, a tokenizer, labels), strictly decoded.

    Example: read_utf8("g.yaml", "grammar") on a missing file raises
    GlassformerError("g.yaml: no such grammar file").

    Raises:
        GlassformerError: the file is missing, a directory, or not UTF-8 (with the offset).
    """
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise GlassformerError(f"{path}: no such {kind} file") from None
    except IsADirectoryError:
        raise GlassformerError(f"{path}: is a directory, not a {kind} file") from None
    except UnicodeDecodeError as error:
        raise GlassformerError(
            f"{path}: not UTF-8 text (byte offset {error.start}: {error.reason})"
        ) from None


def require_files(paths: Iterable[str | Path]) -> list[Path]:
    """The paths as Paths, after checking each is an existing file.

    Raises:
        GlassformerError: "PATH: no such file" (or "is a directory") for the first bad path.
    """
    checked = []
    for path in map(Path, paths):
        if path.is_dir():
            raise GlassformerError(f"{path}: is a directory, not a text file")
        if not path.is_file():
            raise GlassformerError(f"{path}: no such file")
        checked.append(path)
    return checked
