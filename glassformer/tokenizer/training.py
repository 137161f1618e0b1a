"""Learning BPE merges: the article's "find the most common pair, give it a new code, repeat".

Both trainers work on the unique pre-tokenized chunks and how often each occurs, counted once
up front, so memory is bounded by the number of distinct chunks, not the corpus size.

Tie-breaking (both trainers, documented and tested): the pair with the highest count wins;
among equal counts, the smallest pair (first id, then second id) wins. So training is
deterministic and independent of the order the text arrives in. A pair whose token would be
longer than bpe.MAX_TOKEN_BYTES is never merged (a run of 5,000 dashes stops at 1,024-byte
tokens), and training stops before the tokens together pass bpe.MAX_VOCAB_BYTES, so every
trained tokenizer can be loaded again.

  train_merges_reference  recounts every pair after every merge. Slow, obviously right:
                          kept for teaching and as the oracle for the fast trainer.
  train_merges            counts pairs once, then after each merge updates only the chunks
                          that contain the merged pair, with a heap of pair counts whose
                          stale entries are skipped (or re-pushed) when they reach the top.
"""

from __future__ import annotations

import heapq
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import pairwise
from pathlib import Path

from glassformer.errors import ConfigError
from glassformer.textfiles import read_text_blocks, require_files
from glassformer.tokenizer.bpe import (
    MAX_TOKEN_BYTES,
    MAX_VOCAB_BYTES,
    N_BYTES,
    BPETokenizer,
    merge_pair,
)
from glassformer.tokenizer.pretokenize import check_special_tokens, check_unicode, chunker

Pair = tuple[int, int]
BUDGET = MAX_VOCAB_BYTES - N_BYTES  # bytes the merged tokens may hold in all, by default


def count_chunks(texts: Iterable[str], pattern: str = "gpt4") -> Counter[bytes]:
    """How often each pre-tokenized chunk occurs, as UTF-8 bytes.

    Example: count_chunks(["ab ab"], "gpt2") -> Counter({b"ab": 1, b" ab": 1})
    """
    split = chunker(pattern)
    counts: Counter[str] = Counter()
    for text in texts:
        check_unicode(text)
        counts.update(split(text))
    return Counter({chunk.encode("utf-8"): n for chunk, n in counts.items()})


def pair_counts_of(words: list[list[int]], counts: list[int]) -> Counter[Pair]:
    """Weighted count of every adjacent pair over all chunks."""
    pairs: Counter[Pair] = Counter()
    for word, n in zip(words, counts, strict=True):
        for pair in pairwise(word):
            pairs[pair] += n
    return pairs


def train_merges_reference(
    chunk_counts: Mapping[bytes, int], n_merges: int, budget: int = BUDGET
) -> list[Pair]:
    """Recount all pairs, merge the most frequent, repeat (the readable trainer); stop
    before the merged tokens hold more than `budget` bytes in all."""
    words = [list(chunk) for chunk in chunk_counts]
    counts = list(chunk_counts.values())
    lengths = [1] * N_BYTES  # bytes of each token so far
    merges: list[Pair] = []
    for _ in range(n_merges):
        pairs = pair_counts_of(words, counts)
        allowed = [pair for pair in pairs if lengths[pair[0]] + lengths[pair[1]] <= MAX_TOKEN_BYTES]
        if not allowed:
            break  # every chunk is a single token (or too long a one): nothing left to merge
        best = min(allowed, key=lambda pair: (-pairs[pair], pair))  # most frequent, then smallest
        budget -= lengths[best[0]] + lengths[best[1]]
        if budget < 0:
            break  # the vocabulary is full (bpe.MAX_VOCAB_BYTES)
        new_id = N_BYTES + len(merges)
        words = [merge_pair(word, *best, new_id) for word in words]
        merges.append(best)
        lengths.append(lengths[best[0]] + lengths[best[1]])
    return merges


def train_merges(
    chunk_counts: Mapping[bytes, int], n_merges: int, progress: bool = False, budget: int = BUDGET
) -> list[Pair]:
    """The same merges as train_merges_reference, with incremental pair counts.

    State: `pair_count[p]` is the exact weighted count of pair p now; `where[p]` is a superset
    of the chunks containing p (entries go stale, which only costs a wasted scan); `heap`
    holds (-count, pair) entries whose count is >= the true one. When the top entry is stale
    it is re-pushed with its true count, so a valid pop is exactly the max-count, smallest pair.
    """
    from glassformer.progress import progress_bar

    words = [list(chunk) for chunk in chunk_counts]
    counts = list(chunk_counts.values())
    pair_count = pair_counts_of(words, counts)
    where: dict[Pair, set[int]] = {}
    for index, word in enumerate(words):
        for pair in pairwise(word):
            where.setdefault(pair, set()).add(index)
    heap = [(-n, pair) for pair, n in pair_count.items()]
    heapq.heapify(heap)

    lengths = [1] * N_BYTES  # bytes of each token so far
    merges: list[Pair] = []
    bar = progress_bar(progress, total=n_merges, desc="BPE merges", unit="merge")
    while heap and len(merges) < n_merges:
        negative_count, pair = heapq.heappop(heap)
        current = pair_count.get(pair, 0)
        if -negative_count != current:  # stale: the pair lost occurrences since it was pushed
            if current > 0:
                heapq.heappush(heap, (-current, pair))
            continue
        if lengths[pair[0]] + lengths[pair[1]] > MAX_TOKEN_BYTES:
            continue  # never merged; never pushed again either (only pairs with new ids are)
        budget -= lengths[pair[0]] + lengths[pair[1]]
        if budget < 0:
            break  # the vocabulary is full, as in the reference
        new_id = N_BYTES + len(merges)
        merges.append(pair)
        lengths.append(lengths[pair[0]] + lengths[pair[1]])
        bar.update()
        grown: set[Pair] = set()  # pairs containing new_id, whose counts only went up
        for index in where.pop(pair):
            word = words[index]
            merged = merge_pair(word, pair[0], pair[1], new_id)
            if len(merged) == len(word):
                continue  # stale membership: this chunk no longer holds the pair
            n = counts[index]
            for old in pairwise(word):
                pair_count[old] -= n
            for new in pairwise(merged):
                pair_count[new] += n
                if new_id in new:
                    where.setdefault(new, set()).add(index)
                    grown.add(new)
            words[index] = merged
        del pair_count[pair]
        for new in grown:
            heapq.heappush(heap, (-pair_count[new], new))
    bar.close()
    return merges


def train_bpe_tokenizer(
    texts: Iterable[str],
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens: Iterable[str] = (),
    progress: bool = False,
) -> BPETokenizer:
    """Learn a byte-level BPE tokenizer of `vocab_size` ids (256 bytes + merges + specials).

    Warns (UserWarning) and returns a smaller vocabulary when the text allows fewer merges.

    Raises:
        ValueError: vocab_size below 256 + the special tokens, a text with no chunks, an
            invalid pattern, or an empty or repeated special token.
    """
    special_tokens = check_special_tokens(special_tokens)
    chunker(pattern)  # an invalid pattern fails here, before any text is read
    minimum = N_BYTES + len(special_tokens)
    if vocab_size < minimum:
        raise ConfigError(
            f"vocab_size={vocab_size} is below 256 bytes + {len(special_tokens)} special "
            f"tokens = {minimum}"
        )
    chunk_counts = count_chunks(texts, pattern)
    if not chunk_counts:
        raise ConfigError("the training text is empty: no chunks to learn merges from")
    n_merges = vocab_size - minimum
    budget = BUDGET - sum(len(token.encode("utf-8")) for token in special_tokens)
    merges = train_merges(chunk_counts, n_merges, progress, budget)
    if len(merges) < n_merges:
        warnings.warn(
            f"only {len(merges)} merges are possible on this text ({n_merges} requested): "
            f"the vocabulary has {minimum + len(merges)} ids, not {vocab_size}",
            stacklevel=2,
        )
    return BPETokenizer(merges, pattern, special_tokens)


def train_bpe_from_files(
    paths: Iterable[str | Path],
    vocab_size: int,
    pattern: str = "gpt4",
    special_tokens: Iterable[str] = (),
    progress: bool = False,
) -> BPETokenizer:
    """train_bpe_tokenizer over UTF-8 text files, read in blocks (textfiles.read_text_blocks).

    Raises:
        GlassformerError: a file is missing or not UTF-8 (naming the file and byte offset).
    """
    paths = require_files(paths)
    texts = (block for path in paths for block in read_text_blocks(path))
    return train_bpe_tokenizer(texts, vocab_size, pattern, special_tokens, progress)
