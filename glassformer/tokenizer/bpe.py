"""Byte-level BPE: the model that turns one pre-tokenized chunk into ids, and back.

The base vocabulary is the 256 byte values, so any text encodes: misspellings, new words,
emoji, Chinese. Merge i (a pair of existing ids) creates id 256 + i; special tokens come
after the last merge. No token is longer than MAX_TOKEN_BYTES, and all tokens together hold
at most MAX_VOCAB_BYTES: a merge list is a compact description (each merge can double a
token, and a few bytes of JSON can name a 1 KB token), so a small file could otherwise
describe a vocabulary larger than any memory. Both are checked before the bytes are made,
and the trainers never learn a merge past either bound.

Encoding a chunk replays the training: repeatedly merge the adjacent pair with the lowest
rank (the earliest-learned merge), every non-overlapping occurrence left to right, until no
adjacent pair is a learned merge (`encode_chunk`, the reference). `encode_chunk_fast` gives the
same ids with the scans done by C builtins. Chunks repeat a lot in real text ("the", " and"),
so each chunk's ids are cached: most of encoding is then one regex pass and dictionary lookups.

`save` writes, beside the JSON file, NAME.vocab: one line per id with the bytes it stands for
and the pair it was merged from, for people only (it is never read back).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import reduce
from itertools import pairwise, repeat
from operator import iadd, itemgetter
from pathlib import Path

from glassformer.tokenizer.base import Tokenizer
from glassformer.tokenizer.pretokenize import (
    PATTERNS,
    check_special_tokens,
    check_unicode,
    chunker,
    resolve_pattern,
)

N_BYTES = 256  # ids 0-255 are the raw bytes
MAX_TOKEN_BYTES = 1024  # bytes; the longest token a merge may make (GPT-2's longest is 128)
MAX_VOCAB_BYTES = 64 << 20  # bytes of all tokens together; GPT-2's 50,257 hold about 0.4 MB
CACHE_LIMIT = 1 << 18  # chunks kept in the encode cache before it is cleared
NO_MERGE = 1 << 62  # the rank of a pair that is not a learned merge: above every real rank


def merge_pair(ids: list[int], a: int, b: int, new_id: int) -> list[int]:
    """Replace every non-overlapping (a, b) in `ids`, left to right, with `new_id`."""
    out: list[int] = []
    i, n = 0, len(ids)
    while i < n:
        if i + 1 < n and ids[i] == a and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPETokenizer(Tokenizer):
    """Byte-level BPE with regex pre-tokenization and special tokens.

    Args:
        merges: learned pairs in order; merge i creates id 256 + i.
        pattern: "gpt2", "gpt4" or a regex for pre-tokenization (text between a custom
            regex's matches is chunked too, so nothing is dropped).
        special_tokens: distinct, non-empty texts such as "<eos>"; they get the ids after the
            merges, in order.

    Raises:
        ValueError: an invalid pattern or special token, a merge of an undefined id, or one
            that makes a token longer than MAX_TOKEN_BYTES.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int]],
        pattern: str = "gpt4",
        special_tokens: Iterable[str] = (),
    ) -> None:
        self.pattern = resolve_pattern(pattern)
        self.pattern_name = pattern if pattern in PATTERNS else None
        self.split = chunker(pattern)
        self.merges: list[tuple[int, int]] = []  # each checked before it is kept: a hostile
        self.vocab = [bytes([i]) for i in range(N_BYTES)]  # file is refused before it is held
        specials = check_special_tokens(special_tokens)
        total = N_BYTES + sum(len(s.encode("utf-8", "surrogatepass")) for s in specials)
        for rank, (a, b) in enumerate(merges):
            if not (0 <= a < N_BYTES + rank and 0 <= b < N_BYTES + rank):
                raise ValueError(f"merge {rank} ({a}, {b}) uses an id not yet defined")
            size = len(self.vocab[a]) + len(self.vocab[b])  # checked before the bytes are made
            if size > MAX_TOKEN_BYTES:  # merges that double a token 40 times would take 1 TB
                raise ValueError(
                    f"merge {rank} ({a}, {b}) makes a token of {size} bytes, more than "
                    f"MAX_TOKEN_BYTES={MAX_TOKEN_BYTES}"
                )
            total += size
            if total > MAX_VOCAB_BYTES:  # 1 KB tokens from 14-byte merges: 20 MB -> 2.6 GB
                raise ValueError(
                    f"merge {rank} brings the tokens to more than MAX_VOCAB_BYTES="
                    f"{MAX_VOCAB_BYTES:,} bytes in all"
                )
            self.vocab.append(self.vocab[a] + self.vocab[b])
            self.merges.append((a, b))
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        first_special = N_BYTES + len(self.merges)
        self.special_tokens = {s: first_special + i for i, s in enumerate(specials)}
        self.special_bytes = {i: s.encode("utf-8") for s, i in self.special_tokens.items()}
        self.cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return N_BYTES + len(self.merges) + len(self.special_tokens)

    def encode_chunk(self, chunk: bytes) -> list[int]:
        """BPE on one chunk: merge the lowest-rank adjacent pair until none is a learned merge."""
        ids = list(chunk)
        ranks = self.ranks
        while len(ids) > 1:
            best_rank, best_pair = None, None
            for pair in pairwise(ids):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best_rank, best_pair = rank, pair
            if best_pair is None:
                break
            ids = merge_pair(ids, best_pair[0], best_pair[1], N_BYTES + best_rank)
        return ids

    def encode_chunk_fast(self, chunk: bytes) -> list[int]:
        """`encode_chunk`'s ids, merging one pair at a time with C builtins doing the scans.

        Merging only the leftmost lowest-rank pair per step gives the reference's ids: a pair
        that contains the new id was learned after it, so it ranks higher, and the other
        occurrences of the same pair are merged next, left to right, as the reference does.
        """
        ids = list(chunk)
        rank_of = self.ranks.get
        ranks = list(map(rank_of, pairwise(ids), repeat(NO_MERGE)))  # ranks[i]: ids[i:i+2]
        while ranks:
            best = min(ranks)
            if best == NO_MERGE:
                break
            i = ranks.index(best)  # the leftmost occurrence
            ids[i : i + 2] = [N_BYTES + best]
            del ranks[i]
            if i > 0:  # the pairs on either side of the new id
                ranks[i - 1] = rank_of((ids[i - 1], ids[i]), NO_MERGE)
            if i < len(ranks):
                ranks[i] = rank_of((ids[i], ids[i + 1]), NO_MERGE)
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids for `text` with no special tokens: split into chunks, BPE each (cached)."""
        try:
            chunks = self.split(text)
            ids_of = self.cache.__getitem__
            try:  # usually every chunk was seen before; reduce(iadd) extends one new list in C
                return reduce(iadd, map(ids_of, chunks), [])
            except KeyError:
                self.cache_chunks(chunks)
                return reduce(iadd, map(ids_of, chunks), [])
        except UnicodeEncodeError:
            check_unicode(text)  # raises a ValueError naming the lone surrogate
            raise

    def cache_chunks(self, chunks: list[str]) -> None:
        """Encode the chunks not in the cache yet, each distinct chunk once."""
        if len(self.cache) > CACHE_LIMIT:
            self.cache.clear()
        for chunk in set(chunks).difference(self.cache):
            self.cache[chunk] = self.encode_chunk_fast(chunk.encode("utf-8"))

    def token_bytes(self, token: int) -> bytes:
        if token < 0:
            raise IndexError(token)
        if token < len(self.vocab):
            return self.vocab[token]
        return self.special_bytes[token]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """Fast path for ordinary ids (one list lookup each); specials and errors via the base."""
        try:
            if len(ids) > 1 and min(ids) >= 0:  # negative ids would silently index from the end
                return b"".join(itemgetter(*ids)(self.vocab))
        except (IndexError, TypeError):
            pass
        return super().decode_bytes(ids)

    def to_json(self) -> dict:
        return {
            "type": "bpe",
            "pattern": self.pattern_name or self.pattern,
            "merges": [list(pair) for pair in self.merges],
            "special_tokens": list(self.special_tokens),
        }

    def files(self, path: Path) -> dict[Path, str]:
        return {**super().files(path), vocabulary_view_path(path): vocabulary_view(self)}


def vocabulary_view_path(path: Path) -> Path:
    """Where `save` writes the .vocab view of a tokenizer saved at `path`: NAME.vocab beside
    NAME.json (so `--out t.vocab` is refused: the view would overwrite the tokenizer)."""
    return path.with_suffix(".vocab")


def printable(token: bytes) -> str:
    """Bytes shown readably: valid UTF-8 as text (with escapes), other bytes as \\xNN."""
    return repr(token.decode("utf-8", errors="backslashreplace"))[1:-1]


def vocabulary_view(tokenizer: BPETokenizer) -> str:
    """The .vocab file: each id's bytes, and for a merge the two pieces it joined.

    Example line: `300\\t[ the]\\t<- [ t] + [he]` (fields separated by tabs)
    """
    counts = f"256 bytes, {len(tokenizer.merges)} merges, {len(tokenizer.special_tokens)} specials"
    lines = [f"# {tokenizer.vocab_size} ids: {counts}. For people only; the .json is the file."]
    for token, piece in enumerate(tokenizer.vocab):
        if token < N_BYTES:
            lines.append(f"{token}\t[{printable(piece)}]")
        else:
            a, b = tokenizer.merges[token - N_BYTES]
            parts = f"[{printable(tokenizer.vocab[a])}] + [{printable(tokenizer.vocab[b])}]"
            lines.append(f"{token}\t[{printable(piece)}]\t<- {parts}")
    lines += [f"{token}\t{text}\t(special)" for text, token in tokenizer.special_tokens.items()]
    return "\n".join(lines) + "\n"
