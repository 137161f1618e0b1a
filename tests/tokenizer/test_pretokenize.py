"""Pre-tokenization: custom patterns keep every character, and bad patterns or specials fail."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.pretokenize import (
    GPT2_PATTERN,
    GPT4_PATTERN,
    check_special_tokens,
    chunker,
)
from glassformer.tokenizer.training import train_bpe_tokenizer
from tests.helpers import MULTILINGUAL

# Any Unicode string Python can encode as UTF-8: everything but lone surrogates (Cs).
unicode_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=200)
CUSTOM_PATTERNS = ["x", r"\d+", r"[a-z]+", r"\d*", r"(?=a)"]  # the last two also match ""
TRAINED: dict[str, BPETokenizer] = {}


def trained_on(pattern: str) -> BPETokenizer:
    """A BPE tokenizer with `pattern`, trained once per pattern on the multilingual text."""
    if pattern not in TRAINED:
        TRAINED[pattern] = train_bpe_tokenizer([MULTILINGUAL * 2, "xx12 abc x9"], 320, pattern)
    return TRAINED[pattern]


def test_gaps_between_matches_are_chunks_too() -> None:
    assert chunker("x")("abxxc") == ["ab", "x", "x", "c"]
    assert chunker(r"\d+")("a12 b3") == ["a", "12", " b", "3"]
    assert chunker(r"\d*")("a12b") == ["a", "12", "b"], "empty matches are skipped"
    assert chunker("x")("") == []


@pytest.mark.parametrize("pattern", CUSTOM_PATTERNS)
@settings(max_examples=60, deadline=None)
@given(text=unicode_text)
def test_custom_pattern_round_trips_any_text(pattern: str, text: str) -> None:
    tokenizer = trained_on(pattern)
    assert "".join(chunker(pattern)(text)) == text
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN])
@settings(max_examples=60, deadline=None)
@given(text=unicode_text)
def test_builtin_patterns_cover_every_character(pattern: str, text: str) -> None:
    """The findall fast path is only right because these patterns leave no gaps."""
    assert "".join(chunker(pattern)(text)) == text


def test_custom_pattern_training_counts_the_gaps() -> None:
    tokenizer = train_bpe_tokenizer(["abab x abab x"], 257, pattern="x")
    assert tokenizer.merges == [(ord("a"), ord("b"))], "ab occurs only in the gaps"


@pytest.mark.parametrize("pattern", ["(unclosed", "[a-", "*", "a{2,1}"])
def test_invalid_pattern_is_a_one_line_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="is not a valid regex") as error:
        BPETokenizer([], pattern=pattern)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="is not a valid regex"):
        train_bpe_tokenizer(["abc"], 300, pattern=pattern)


@pytest.mark.parametrize(
    ("specials", "message"),
    [
        ([""], "special token '' is empty"),
        (["<eos>", ""], "special token '' is empty"),
        (["<eos>", "<pad>", "<eos>"], "special token '<eos>' is given twice"),
        ([3], "is not a string"),
    ],
)
def test_bad_special_tokens(specials: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_special_tokens(specials)
    with pytest.raises(ValueError, match=message):
        train_bpe_tokenizer(["abc"], 300, special_tokens=specials)
    with pytest.raises(ValueError, match=message):
        BPETokenizer([], special_tokens=specials)


def test_good_special_tokens_keep_their_order() -> None:
    assert check_special_tokens(["<pad>", "<bos>", "<eos>"]) == ["<pad>", "<bos>", "<eos>"]
    assert check_special_tokens("<eos>") == ["<eos>"], "one string is one token, not five"
