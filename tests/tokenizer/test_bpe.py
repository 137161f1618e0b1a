"""Byte-level BPE: golden cases, exact round trips, errors, the two trainers agree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.textfiles import read_text_blocks, split_at_safe_boundaries
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.parallel import encode_parallel
from glassformer.tokenizer.training import (
    count_chunks,
    train_bpe_tokenizer,
    train_merges,
    train_merges_reference,
)
from tests.helpers import MULTILINGUAL

# Any Unicode string Python can encode as UTF-8: everything but lone surrogates (Cs).
unicode_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=200)


def test_wikipedia_example_aaabdaaabac() -> None:
    """Z = aa, Y = ab, X = ZY; the text becomes XdXac (en.wikipedia.org/wiki/Byte_pair_encoding)."""
    tokenizer = train_bpe_tokenizer(["aaabdaaabac"], 256 + 3)
    a, b = ord("a"), ord("b")
    assert tokenizer.merges == [(a, a), (a, b), (256, 257)]  # Z, Y (tie with Za: smaller pair)
    assert tokenizer.encode("aaabdaaabac") == [258, ord("d"), 258, a, ord("c")]
    assert tokenizer.token_bytes(258) == b"aaab"


def test_special_tokens_only_when_allowed() -> None:
    tokenizer = train_bpe_tokenizer(["aaabdaaabac"], 256 + 3 + 2, special_tokens=["<pad>", "<eos>"])
    assert tokenizer.special_tokens == {"<pad>": 259, "<eos>": 260}
    text = "aaab<eos><pad>"
    plain = tokenizer.encode(text)  # default: specials are ordinary text
    assert 259 not in plain and 260 not in plain
    assert plain == [
        258,
        ord("<"),
        ord("e"),
        ord("o"),
        ord("s"),
        ord(">"),
        ord("<"),
        ord("p"),
        ord("a"),
        ord("d"),
        ord(">"),
    ]
    assert tokenizer.encode(text, allowed_special="all") == [258, 260, 259]
    assert tokenizer.encode(text, allowed_special={"<eos>"})[:2] == [258, 260]
    assert 259 not in tokenizer.encode(text, allowed_special={"<eos>"})
    assert tokenizer.decode([258, 260, 259]) == text
    with pytest.raises(ValueError, match="not special tokens"):
        tokenizer.encode(text, allowed_special={"<unk>"})


@settings(max_examples=200, deadline=None)
@given(text=unicode_text)
def test_round_trip_any_unicode(multilingual_tokenizer: BPETokenizer, text: str) -> None:
    assert multilingual_tokenizer.decode(multilingual_tokenizer.encode(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "🎉",
        "你好世界",
        "   \t\n\n  ",
        "e\u0301\u0302",
        "\x00\x01\x7f",
        "<eos>",
        MULTILINGUAL,
    ],
)
def test_round_trip_edge_strings(multilingual_tokenizer: BPETokenizer, text: str) -> None:
    assert multilingual_tokenizer.decode(multilingual_tokenizer.encode(text)) == text


def test_merges_compress_the_text_they_were_trained_on(
    multilingual_tokenizer: BPETokenizer,
) -> None:
    assert len(multilingual_tokenizer.encode(MULTILINGUAL)) < len(MULTILINGUAL.encode()) / 2


def test_ids_splitting_a_character_decode_to_replacement_characters(
    multilingual_tokenizer: BPETokenizer,
) -> None:
    assert multilingual_tokenizer.decode([0xE4, 0xBD]) == "\ufffd"  # 2 of 3 bytes of 你
    assert multilingual_tokenizer.decode([0xE4, 0xBD, 0xA0]) == "你"


def test_lone_surrogate_is_a_clear_error(multilingual_tokenizer: BPETokenizer) -> None:
    with pytest.raises(ValueError, match=r"lone surrogate U\+D800 at index 1"):
        multilingual_tokenizer.encode("a\ud800b")


def test_unknown_ids_are_errors(multilingual_tokenizer: BPETokenizer) -> None:
    size = multilingual_tokenizer.vocab_size
    for bad in (size, -1):
        with pytest.raises(ValueError, match=rf"token id {bad} is not in \[0, {size}\)"):
            multilingual_tokenizer.decode([1, bad])


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="ab c\néü🎉", max_size=40), min_size=1, max_size=6)
    | st.lists(unicode_text, min_size=1, max_size=3),
    n_merges=st.integers(1, 40),
)
def test_fast_trainer_learns_the_reference_merges(texts: list[str], n_merges: int) -> None:
    counts = count_chunks(texts)
    assert train_merges(counts, n_merges) == train_merges_reference(counts, n_merges)


def test_fast_trainer_equals_reference_on_real_text() -> None:
    counts = count_chunks([MULTILINGUAL * 2])
    assert train_merges(counts, 200) == train_merges_reference(counts, 200)


def test_training_is_independent_of_text_order() -> None:
    lines = MULTILINGUAL.splitlines(keepends=True)
    forward = train_bpe_tokenizer(lines, 300).merges
    assert train_bpe_tokenizer(lines[::-1], 300).merges == forward


def test_fewer_merges_than_requested_stops_and_says_so() -> None:
    with pytest.warns(UserWarning, match="only 3 merges are possible"):
        tokenizer = train_bpe_tokenizer(["aaab"], 300)
    assert tokenizer.vocab_size == 259


@pytest.mark.parametrize(
    ("texts", "vocab_size", "specials", "message"),
    [
        (["abc"], 257, ["<a>", "<b>"], "vocab_size=257 is below 256 bytes \\+ 2 special"),
        ([""], 300, [], "training text is empty"),
        ([], 300, [], "training text is empty"),
    ],
)
def test_bad_training_input(texts: list, vocab_size: int, specials: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        train_bpe_tokenizer(texts, vocab_size, special_tokens=specials)


def test_custom_pattern_and_bad_pattern() -> None:
    tokenizer = train_bpe_tokenizer(["ab ab ab"], 257, pattern=r"\S+|\s+")
    assert tokenizer.pattern_name is None and tokenizer.decode(tokenizer.encode("ab ba")) == "ab ba"
    with pytest.raises(ValueError, match="not a valid regex"):
        BPETokenizer([], pattern="(unclosed")


def test_safe_blocks_give_the_same_chunks(tmp_path) -> None:  # noqa: ANN001
    text = MULTILINGUAL * 20
    blocks = split_at_safe_boundaries(text, 300)
    assert len(blocks) > 5 and "".join(blocks) == text
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    assert count_chunks(read_text_blocks(path, block_bytes=500)) == count_chunks([text])


def test_parallel_encoding_equals_serial(multilingual_tokenizer: BPETokenizer) -> None:
    text = MULTILINGUAL * 30
    serial = multilingual_tokenizer.encode_ordinary(text)
    assert encode_parallel(multilingual_tokenizer, text, processes=2, min_chars=0) == serial
