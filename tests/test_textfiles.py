"""Text files in blocks: exact text back, bounded blocks, and one-line errors naming the file."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.errors import GlassformerError
from glassformer.textfiles import (
    parse_json,
    read_json,
    read_text_blocks,
    read_utf8,
    require_files,
    split_at_safe_boundaries,
)
from tests.helpers import MULTILINGUAL


def test_blocks_join_to_the_file_text_with_line_endings_kept(tmp_path: Path) -> None:
    text = (MULTILINGUAL + "windows line\r\nold mac\r") * 40
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    blocks = list(read_text_blocks(path, block_bytes=256))
    assert len(blocks) > 10 and "".join(blocks) == text
    assert all(len(block) < 4 * 256 for block in blocks), "memory stays bounded"
    assert all(block.endswith("\n") for block in blocks[:-1]), "cut after a newline"


@settings(max_examples=50, deadline=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=400))
def test_any_utf8_text_comes_back_exactly(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.txt"
        path.write_bytes(text.encode("utf-8"))
        assert "".join(read_text_blocks(path, block_bytes=7)) == text


def test_split_at_safe_boundaries_example() -> None:
    assert split_at_safe_boundaries("ab\ncd\nef", 3) == ["ab\n", "cd\n", "ef"]
    assert split_at_safe_boundaries("ab\n1\n2", 3) == ["ab\n1\n2"], "no newline before a letter"


@pytest.mark.parametrize("bad_at", [0, 5, 255, 256, 257, 1000])
def test_not_utf8_names_the_file_and_the_byte_offset(tmp_path: Path, bad_at: int) -> None:
    data = bytearray("é".encode() * 600)  # two bytes a character: blocks cut characters
    data[bad_at] = 0xFF
    path = tmp_path / "latin.txt"
    path.write_bytes(bytes(data))
    with pytest.raises(GlassformerError) as error:
        list(read_text_blocks(path, block_bytes=256))
    message = str(error.value)
    assert "\n" not in message and str(path) in message and "not UTF-8" in message
    with pytest.raises(UnicodeDecodeError) as whole:  # the reference: decoding the whole file
        bytes(data).decode("utf-8")
    assert f"byte offset {whole.value.start}:" in message, message
    assert whole.value.start in (bad_at, bad_at - 1)  # 0xFF, or the character it cut


def test_truncated_character_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "cut.txt"
    path.write_bytes(b"abc" + "é".encode()[:1])
    with pytest.raises(GlassformerError, match="byte offset 3"):
        list(read_text_blocks(path, block_bytes=2))


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(GlassformerError, match="no such file"):
        list(read_text_blocks(tmp_path / "nope.txt"))
    with pytest.raises(GlassformerError, match="is a directory"):
        require_files([tmp_path])
    (tmp_path / "a.txt").write_text("a")
    assert require_files([str(tmp_path / "a.txt")]) == [tmp_path / "a.txt"]


# --- only regular files, within their kind's size limit (issue 26) --------------------------


def test_a_fifo_or_a_device_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # nobody writes: a reader would wait forever
    for path, kind in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device")):
        for read in (
            lambda p: read_utf8(p, "grammar"),
            lambda p: read_json(p, "labels"),
            lambda p: list(read_text_blocks(p)),
            require_files_of_one,
        ):
            with pytest.raises(GlassformerError, match=f"^{re.escape(f'{path}: is {kind}')}, not"):
                read(path)


def require_files_of_one(path: Path) -> None:
    require_files([path])


def test_a_file_over_its_kinds_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(1 << 40)  # sparse: a terabyte that takes no disk
    with pytest.raises(GlassformerError, match=r"big.json: 1,099,511,627,776 bytes, more than"):
        read_utf8(path, "tokenizer", limit=1 << 20)
    path.write_text("12345")
    assert read_utf8(path, "tokenizer", limit=5) == "12345"
    with pytest.raises(GlassformerError, match="more than a tokenizer file may hold"):
        read_utf8(path, "tokenizer", limit=4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 5000 + "]" * 5000, "not valid JSON (nested too deeply)"),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "not valid JSON (nested too deeply)"),
        ("9" * 5000, "not valid JSON (Exceeds the limit"),
        ("{", "not valid JSON (Expecting property name"),
    ],
    ids=["arrays", "objects", "digits", "cut"],
)
def test_json_that_python_cannot_take_is_one_error(text: str, expected: str) -> None:
    with pytest.raises(GlassformerError) as caught:
        parse_json(text, "x.json")
    assert str(caught.value).startswith(f"x.json: {expected}"), caught.value


def test_json_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"é": 1}'.encode("latin-1"))
    with pytest.raises(GlassformerError, match=r"latin1.json: not valid JSON \(not UTF-8 text"):
        read_json(path, "labels")
