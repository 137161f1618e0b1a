"""Save/load round trips, clear errors for bad files, and the character-level tokenizer."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glassformer.errors import GlassformerError
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.char import CharTokenizer
from glassformer.tokenizer.io import bytes_to_unicode, load_tokenizer
from tests.helpers import MULTILINGUAL

HEADER = '{"format": "glassformer.tokenizer", "format_version": 1, '


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


def test_saved_files_get_the_users_umask(
    multilingual_tokenizer: BPETokenizer, tmp_path: Path
) -> None:
    old = os.umask(0o022)
    try:
        multilingual_tokenizer.save(tmp_path / "tok.json")
    finally:
        os.umask(old)
    for name in ("tok.json", "tok.vocab"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.json", "tok.vocab"]


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
        (HEADER + '"type": "bpe", "pattern": "gpt4", "merges": [[1, 2, 3]]}', "not a pair"),
        (HEADER + '"type": "bpe", "pattern": "gpt4", "merges": [["1", 2]]}', "not a pair"),
        (HEADER + '"type": "bpe", "pattern": "gpt4", "merges": 5}', "merges must be a list"),
        (HEADER + '"type": "bpe", "pattern": ["gpt4"], "merges": []}', "pattern must be a str"),
        (HEADER + '"type": "bpe", "pattern": "(", "merges": []}', "not a valid regex"),
        (HEADER + '"type": "bpe", "merges": []}', "no 'pattern' field"),
        (HEADER + '"type": "char", "chars": ["a"], "special_tokens": [1]}', "not a string"),
        (HEADER + '"type": "char", "chars": ["a"], "special_tokens": ""}', "must be a list"),
        (HEADER + '"type": "char", "chars": ["a", "a"], "special_tokens": [""]}', "is empty"),
        (HEADER + '"type": "char", "chars": ["ab"]}', "not a single character"),
        (HEADER + '"type": ["char"]}', "type must be a str"),
        ('{"format": "glassformer.tokenizer", "format_version": true}', "format_version=True"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (b"\xff{}", "not UTF-8 text \\(byte offset 0"),
    ],
)
def test_bad_tokenizer_files_give_one_line_errors(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "tok.json"
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(GlassformerError, match=message) as error:
        load_tokenizer(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


json_scalars = st.none() | st.booleans() | st.integers(-5, 600) | st.floats() | st.text(max_size=3)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
VALID_DOCUMENTS = [
    {"type": "bpe", "pattern": "gpt4", "merges": [[97, 98], [256, 99]], "special_tokens": ["<e>"]},
    {"type": "char", "chars": ["a", "b"], "special_tokens": ["<e>"]},
]


@st.composite
def damaged_documents(draw: st.DrawFn) -> dict:
    """A valid tokenizer document with one field replaced by a random JSON value, or removed."""
    document = {"format": "glassformer.tokenizer", "format_version": 1}
    document.update(draw(st.sampled_from(VALID_DOCUMENTS)))
    key = draw(st.sampled_from(list(document)))
    if draw(st.integers(0, 3)) == 0:
        del document[key]
    else:
        document[key] = draw(json_scalars | st.lists(json_scalars, max_size=3) | json_values)
    return document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.binary(max_size=200))
def test_random_bytes_as_a_tokenizer_file_give_glassformer_error(content: bytes) -> None:
    assert not loads_or_fails_in_one_line(content)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=damaged_documents())
def test_damaged_tokenizer_documents_load_or_give_glassformer_error(document: dict) -> None:
    loads_or_fails_in_one_line(json.dumps(document).encode())


def loads_or_fails_in_one_line(content: bytes) -> bool:
    """True if `content` loads as a tokenizer; False after a one-line GlassformerError naming
    the file. Any other exception propagates and fails the test."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tok.json"
        path.write_bytes(content)
        try:
            load_tokenizer(path)
        except GlassformerError as error:
            assert "\n" not in str(error) and str(path) in str(error), str(error)
            return False
        return True


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
