"""BPE encoding's fast paths give exactly the reference's chunks and ids.

The references: `regex` findall with the published pattern (pre-tokenization) and
BPETokenizer.encode_chunk (the merge loop written out). The fast paths: the same pattern run
by Python's `re` with the classes spelled out, and encode_chunk_fast.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import pytest
import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.pretokenize import (
    GPT2_PATTERN,
    GPT4_PATTERN,
    bmp_fast_path,
    chunker,
    stdlib_pattern,
)
from glassformer.tokenizer.training import train_bpe_tokenizer
from tests.helpers import MULTILINGUAL

SHAKESPEARE = Path(__file__).resolve().parents[3] / "shared/data/text/tinyshakespeare.txt"
BMP = "".join(map(chr, range(0x10000)))  # every character U+0000-U+FFFF, surrogates included
# Any Unicode string Python can encode as UTF-8, often with characters above U+FFFF.
unicode_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=200)
bmp_text = st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"]), max_size=200)
spaces_and_letters = st.text(st.sampled_from(" \t\r\n\x0b\x85\u00a0\u3000'sSaé1²!"), max_size=60)
PATTERNS = [GPT2_PATTERN, GPT4_PATTERN]


def reference_encode(tokenizer: BPETokenizer, text: str) -> list[int]:
    """Ids by the references alone: `regex` chunks, each through encode_chunk (memoized)."""
    chunks = regex.findall(tokenizer.pattern, text)
    ids = {chunk: tokenizer.encode_chunk(chunk.encode("utf-8")) for chunk in set(chunks)}
    return list(chain.from_iterable(ids[chunk] for chunk in chunks))


@pytest.mark.parametrize("pattern", PATTERNS, ids=["gpt2", "gpt4"])
def test_stdlib_pattern_splits_every_bmp_character_as_regex_does(pattern: str) -> None:
    fast = stdlib_pattern(pattern)
    assert fast is not None, "Python >= 3.11 has possessive quantifiers"
    arrangements = [BMP, "'" + "'".join(BMP), " ".join(BMP), "\n ".join(BMP), "  \n".join(BMP)]
    for text in arrangements:  # each class member next to spaces, newlines and apostrophes
        assert fast.findall(text) == regex.findall(pattern, text)


@pytest.mark.parametrize("pattern", PATTERNS, ids=["gpt2", "gpt4"])
@settings(max_examples=200, deadline=None)
@given(text=st.one_of(unicode_text, bmp_text, spaces_and_letters))
def test_chunker_equals_regex(pattern: str, text: str) -> None:
    assert chunker(pattern)(text) == regex.findall(pattern, text)


def test_without_stdlib_pattern_regex_does_the_work() -> None:
    findall = regex.compile(GPT4_PATTERN).findall
    assert bmp_fast_path(findall, None) is findall


@settings(max_examples=300, deadline=None)
@given(chunk=st.binary(max_size=40))
def test_fast_merge_loop_equals_reference(
    multilingual_tokenizer: BPETokenizer, chunk: bytes
) -> None:
    tokenizer = multilingual_tokenizer
    assert tokenizer.encode_chunk_fast(chunk) == tokenizer.encode_chunk(chunk)


def test_fast_merge_loop_on_overlapping_pairs() -> None:
    """Runs of one byte: merges of a pair with itself overlap, left to right wins."""
    tokenizer = train_bpe_tokenizer(["a" * 7, "aa aaa aaaaa", "ab" * 5], 256 + 8)
    for n in range(20):
        for chunk in (b"a" * n, b"ab" * n, b"b" + b"a" * n):
            assert tokenizer.encode_chunk_fast(chunk) == tokenizer.encode_chunk(chunk), chunk


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(unicode_text, bmp_text))
def test_encode_equals_reference_with_specials(
    multilingual_tokenizer: BPETokenizer, text: str
) -> None:
    tokenizer = multilingual_tokenizer
    assert tokenizer.encode_ordinary(text) == reference_encode(tokenizer, text)
    assume(not any(special in text for special in tokenizer.special_tokens))  # "<pad>" is one
    with_specials = f"<eos>{text}<pad>{text[:5]}<bos>"
    expected = [tokenizer.special_tokens["<eos>"], *reference_encode(tokenizer, text)]
    expected += [tokenizer.special_tokens["<pad>"], *reference_encode(tokenizer, text[:5])]
    expected += [tokenizer.special_tokens["<bos>"]]
    assert tokenizer.encode(with_specials, allowed_special="all") == expected
    assert tokenizer.decode(expected) == with_specials


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason="tinyshakespeare is not on this machine")
def test_tinyshakespeare_ids_equal_reference() -> None:
    text = SHAKESPEARE.read_text(encoding="utf-8")
    tokenizer = train_bpe_tokenizer([text], 1024, "gpt4")
    assert tokenizer.split(text) == regex.findall(GPT4_PATTERN, text)
    ids = tokenizer.encode_ordinary(text)
    assert ids == reference_encode(tokenizer, text)
    assert tokenizer.encode_ordinary(text) == ids, "a warm cache gives the same ids"
    assert tokenizer.decode(ids) == text


def test_multilingual_text_uses_both_splitters() -> None:
    """Text with an emoji (above U+FFFF) goes to `regex`; the same ids either way."""
    tokenizer = train_bpe_tokenizer([MULTILINGUAL], 256 + 100)
    for text in (MULTILINGUAL, MULTILINGUAL + "🙂", "🙂" + MULTILINGUAL.replace(" ", "  ")):
        assert tokenizer.encode_ordinary(text) == reference_encode(tokenizer, text)
