"""Classic word-level byte pair encoding (Sennrich et al. 2016), the article's worked example.

Words are split into characters plus an end-of-word marker `</w>`, so a pair never spans two
words and a suffix ("est</w>") can be told from the same letters inside a word. Each step
counts every adjacent pair of symbols, weighted by the word's frequency, and merges the most
frequent pair everywhere into one new symbol.

Ties go to the pair seen first, reading the words in their given order and each word from left
to right: this is what Sennrich's reference code does (`max` over a dict filled in that order).
On {old: 7, older: 3, finest: 9, lowest: 4} the first merges are (e, s) 13, (es, t) 13,
(est, </w>) 13, (o, l) 10, (ol, d) 10: the article's "est" and "old".

This is a teaching function. glassformer's real tokenizer is byte-level (tokenizer/bpe.py).
Does not handle: pre-tokenization, special tokens, encoding new text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

END_OF_WORD = "</w>"


@dataclass(frozen=True)
class MergeStep:
    pair: tuple[str, str]  # the two symbols merged
    count: int  # how often the pair occurred, weighted by word frequency
    tokens: dict[str, int]  # every symbol in use after the merge, with its frequency


def split_words(word_counts: Mapping[str, int]) -> dict[tuple[str, ...], int]:
    """Each word as its characters and the end marker.

    Example: {"old": 7} -> {("o", "l", "d", "</w>"): 7}
    """
    return {(*word, END_OF_WORD): count for word, count in word_counts.items()}


def count_pairs(words: Mapping[tuple[str, ...], int]) -> Counter[tuple[str, str]]:
    """Weighted counts of adjacent symbol pairs; insertion order = first occurrence."""
    pairs: Counter[tuple[str, str]] = Counter()
    for symbols, count in words.items():
        for pair in zip(symbols, symbols[1:], strict=False):
            pairs[pair] += count
    return pairs


def merge_pair(
    words: Mapping[tuple[str, ...], int], pair: tuple[str, str]
) -> dict[tuple[str, ...], int]:
    """Replace every occurrence of `pair` (left to right, not overlapping) by one symbol.

    Example: {("e", "s", "t"): 9}, ("e", "s") -> {("es", "t"): 9}
    """
    merged = {}
    for symbols, count in words.items():
        out: list[str] = []
        i = 0
        while i < len(symbols):
            if symbols[i : i + 2] == pair:
                out.append(pair[0] + pair[1])
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        merged[tuple(out)] = count
    return merged


def token_counts(words: Mapping[tuple[str, ...], int]) -> dict[str, int]:
    """Frequency of each symbol in the current segmentation."""
    tokens: Counter[str] = Counter()
    for symbols, count in words.items():
        for symbol in symbols:
            tokens[symbol] += count
    return dict(tokens)


def learn_merges(
    word_counts: Mapping[str, int], n_merges: int
) -> tuple[list[MergeStep], dict[tuple[str, ...], int]]:
    """Run up to `n_merges` BPE steps (fewer if every word becomes one symbol).

    Returns:
        the steps in order, and the final segmentation of each word with its count.
    """
    words = split_words(word_counts)
    steps = []
    for _ in range(n_merges):
        pairs = count_pairs(words)
        if not pairs:
            break
        best = max(pairs, key=pairs.__getitem__)  # the first pair seen wins a tie
        words = merge_pair(words, best)
        steps.append(MergeStep(best, pairs[best], token_counts(words)))
    return steps, words
