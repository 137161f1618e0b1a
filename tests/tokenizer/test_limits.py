"""Tokenizer files are bounded by the data's own limits: the longest token a merge list may
build (bpe.MAX_TOKEN_BYTES), checked before any byte string is made, and the largest id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.tokenizer.bpe import MAX_TOKEN_BYTES, MAX_VOCAB_BYTES, BPETokenizer
from glassformer.tokenizer.io import MAX_TOKENIZER_BYTES, load_tokenizer
from glassformer.tokenizer.pretokenize import MAX_SPECIAL_TOKENS
from glassformer.tokenizer.renumbered import MAX_ID, RenumberedTokenizer
from glassformer.tokenizer.training import count_chunks, train_merges, train_merges_reference

DOUBLINGS = 40  # "a" doubled 40 times would be a token of 1 TiB


def doubling_merges(n: int) -> list[list[int]]:
    """Merge i joins the previous token with itself: "aa", "aaaa", ... (2**(i+1) bytes)."""
    return [[97, 97]] + [[256 + i, 256 + i] for i in range(n - 1)]


def test_merges_past_the_longest_token_are_refused_before_they_are_built(tmp_path: Path) -> None:
    path = tmp_path / "tok.json"
    document = {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe"}
    document |= {"pattern": "gpt2", "merges": doubling_merges(DOUBLINGS)}
    path.write_text(json.dumps(document))
    assert path.stat().st_size < 1000
    with pytest.raises(GlassformerError, match="MAX_TOKEN_BYTES=1024") as caught:
        load_tokenizer(path)
    assert str(caught.value).startswith(f"{path}: invalid tokenizer (merge 10 ")
    assert "\n" not in str(caught.value)


def test_a_token_of_exactly_the_longest_length_loads() -> None:
    merges = [tuple(pair) for pair in doubling_merges(10)]  # the last makes 2**10 bytes
    tokenizer = BPETokenizer(merges)
    assert len(tokenizer.vocab[-1]) == MAX_TOKEN_BYTES
    with pytest.raises(ValueError, match="makes a token of 2048 bytes"):
        BPETokenizer(merges + [(merges[-1][0] + 1, merges[-1][0] + 1)])


def test_trainers_stop_growing_tokens_at_the_bound_and_agree() -> None:
    counts = count_chunks(["-" * 5000 + " " + "ab" * 700] * 3, "gpt2")
    merges = train_merges(counts, 40)
    assert merges == train_merges_reference(counts, 40)
    tokenizer = BPETokenizer(merges, "gpt2")  # what training makes loads again
    assert max(map(len, tokenizer.vocab)) == MAX_TOKEN_BYTES


def test_peer_ids_above_the_largest_are_refused() -> None:
    bpe = BPETokenizer([])
    with pytest.raises(ValueError, match=f"token id {10**15} is above the largest allowed"):
        RenumberedTokenizer(bpe, [*range(255), 10**15])
    with pytest.raises(ValueError, match="above the largest allowed"):
        RenumberedTokenizer(bpe, range(256), {MAX_ID + 1: b"x"})
    assert RenumberedTokenizer(bpe, [*range(255), MAX_ID]).vocab_size == MAX_ID + 1


# --- issue 26: the total of all tokens, special tokens' lengths, files' sizes -----------------


def kilobyte_merges(n: int) -> list[list[int]]:
    """A 1,024-byte token in 10 doublings, then `n` more merges each making another one."""
    doublings = doubling_merges(10)
    half = 256 + 8  # the 512-byte token
    return doublings + [[half, half]] * n


def test_the_tokens_together_are_bounded_before_they_are_built() -> None:
    n = MAX_VOCAB_BYTES // MAX_TOKEN_BYTES  # 1 KB each: this many pass the total
    with pytest.raises(ValueError, match=f"more than MAX_VOCAB_BYTES={MAX_VOCAB_BYTES:,}"):
        BPETokenizer([tuple(pair) for pair in kilobyte_merges(n)])
    assert BPETokenizer([tuple(p) for p in kilobyte_merges(10)]).vocab_size == 256 + 20


def test_extra_tokens_of_a_peer_keep_to_the_same_bounds() -> None:
    bpe = BPETokenizer([])
    with pytest.raises(ValueError, match="more than MAX_TOKEN_BYTES"):
        RenumberedTokenizer(bpe, range(256), {300: b"x" * (MAX_TOKEN_BYTES + 1)})
    many = {300 + i: b"x" * MAX_TOKEN_BYTES for i in range(MAX_VOCAB_BYTES // MAX_TOKEN_BYTES)}
    with pytest.raises(ValueError, match="more than MAX_VOCAB_BYTES"):
        RenumberedTokenizer(bpe, range(256), many)


def test_special_tokens_are_bounded_in_length_and_number() -> None:
    with pytest.raises(ValueError, match="more than MAX_SPECIAL_TOKEN_CHARS=256"):
        BPETokenizer([], special_tokens=["<" + "x" * 300 + ">"])
    with pytest.raises(ValueError, match=f"more than {MAX_SPECIAL_TOKENS:,}"):
        BPETokenizer([], special_tokens=[f"<{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)])
    BPETokenizer([], special_tokens=["<" + "x" * 254 + ">"])  # exactly the longest


def test_training_stops_when_the_vocabulary_is_full_and_both_trainers_agree() -> None:
    counts = count_chunks(["-" * 3000 + " " + "ab" * 700] * 3, "gpt2")
    budget = 5000  # bytes the merged tokens may hold
    merges = train_merges(counts, 100, budget=budget)
    assert merges == train_merges_reference(counts, 100, budget=budget)
    tokenizer = BPETokenizer(merges, "gpt2")
    assert sum(map(len, tokenizer.vocab[256:])) <= budget
    unbounded = train_merges(counts, 100)
    assert unbounded[: len(merges)] == merges and len(unbounded) > len(merges)


def test_a_tokenizer_file_over_its_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "tok.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_TOKENIZER_BYTES + 1)  # sparse: no disk, and never read
    with pytest.raises(GlassformerError, match="more than a tokenizer file may hold"):
        load_tokenizer(path)
