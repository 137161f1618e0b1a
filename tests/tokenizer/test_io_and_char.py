"""Save/load round trips, clear errors for bad files, and the character-level tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.char import CharTokenizer
from glassformer.tokenizer.io import bytes_to_unicode, load_tokenizer
from tests.helpers import MULTILINGUAL


def test_bpe_save_load_round_trip(multilingual_tokenizer: BPETokenizer, tmp_path: Path) -> None:
    path = tmp_path / "tok.json"
    multilingual_tokenizer.save(path)
    loaded = load_tokenizer(path)
    assert isinstance(loaded, BPETokenizer)
    assert loaded.merges == multilingual_tokenizer.merges
    assert loaded.special_tokens == multilingual_tokenizer.special_tokens
    assert loaded.pattern == multilingual_tokenizer.pattern
    assert loaded.encode(MULTILINGUAL) == multilingual_tokenizer.encode(MULTILINGUAL)
    view = (tmp_path / "tok.vocab").read_text()
    assert "<- [" in view and "(special)" in view
    assert json.loads(path.read_text())["format_version"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such tokenizer file"),
        ("{", "not valid JSON"),
        ('{"merges": []}', "not a glassformer tokenizer file"),
        ('{"format": "glassformer.tokenizer", "format_version": 7}', "format_version=7"),
        (
            '{"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe", "pattern": '
            '"gpt4", "merges": [[300, 1]]}',
            "uses an id not yet defined",
        ),
        (
            '{"format": "glassformer.tokenizer", "format_version": 1, "type": "wordpiece"}',
            "type='wordpiece'",
        ),
    ],
)
def test_bad_tokenizer_files_give_one_line_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "tok.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(GlassformerError, match=message) as error:
        load_tokenizer(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_gpt2_byte_map_is_a_bijection_onto_printable_characters() -> None:
    mapping = bytes_to_unicode()
    assert len(set(mapping.values())) == 256
    assert mapping[ord("A")] == "A" and mapping[ord(" ")] == "Ġ" and mapping[ord("\n")] == "Ċ"
    assert all(not c.isspace() and c.isprintable() for c in mapping.values())


def test_char_tokenizer_round_trip_and_specials(tmp_path: Path) -> None:
    tokenizer = CharTokenizer.train(["hello world"], special_tokens=["<eos>"])
    assert tokenizer.chars == sorted(set("hello world")) and tokenizer.vocab_size == 9
    ids = tokenizer.encode("hello<eos>", allowed_special="all")
    assert ids[-1] == 8 and tokenizer.decode(ids) == "hello<eos>"
    tokenizer.save(tmp_path / "char.json")
    loaded = load_tokenizer(tmp_path / "char.json")
    assert isinstance(loaded, CharTokenizer) and loaded.encode("world") == tokenizer.encode("world")


def test_char_tokenizer_errors() -> None:
    tokenizer = CharTokenizer.train(["abc"])
    with pytest.raises(ValueError, match=r"character 'z' \(U\+007A\) is not in the vocabulary"):
        tokenizer.encode("abz")
    with pytest.raises(ValueError, match=r"token id 3 is not in \[0, 3\)"):
        tokenizer.decode([0, 3])
    with pytest.raises(ValueError, match="training text is empty"):
        CharTokenizer.train([""])
