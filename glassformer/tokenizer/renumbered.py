"""A BPETokenizer with a peer's id numbering: same tokens and merges, the peer's ids.

Our BPETokenizer numbers ids by construction: bytes 0-255 in byte order, then merge i is
256 + i, then the special tokens. A published vocabulary (GPT-2's, Whisper's tokenizer.json)
numbers the same tokens its own way: GPT-2 puts "!" (byte 33) at id 0 and the byte " " at
id 220, and keeps tokens no merge makes (<|endoftext|> at 50256). RenumberedTokenizer runs
our BPE unchanged and maps each of our ids to the peer's through one table, so the model
weights that go with the vocabulary can be used as published.

Not here: reading the peer's file (hf_json.py). The table must be one-to-one: a vocabulary in
which two merges make the same token cannot be represented, and hf_json.py refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from glassformer.errors import ConfigError
from glassformer.tokenizer.base import Tokenizer
from glassformer.tokenizer.bpe import MAX_TOKEN_BYTES, MAX_VOCAB_BYTES, BPETokenizer

MAX_ID = (1 << 24) - 1  # the largest peer id accepted; real vocabularies stay under 300,000


class RenumberedTokenizer(Tokenizer):
    """Encode with `bpe`, then renumber: ids[our id] is the peer's id for the same token.

    Args:
        bpe: does the work (256 bytes, merges, special tokens in its own numbering).
        ids: the peer's id for each of bpe's ids, one per id, all distinct.
        extra_tokens: peer ids bpe never produces, with the bytes they decode to (e.g. a
            vocabulary entry that no merge makes).

    Raises:
        ValueError: `ids` of the wrong length or with repeats, an extra id that is also in
            `ids`, an id above MAX_ID (vocab_size is the largest id + 1, and a model built
            for a vocabulary of 10**15 ids would not fit any memory), or extra tokens past
            the BPE bounds (MAX_TOKEN_BYTES each, MAX_VOCAB_BYTES with bpe's in all).

    Example: ids = [188, 189, ...] maps our byte 0 to GPT-2's id 188 ("Ā").
    """

    def __init__(
        self,
        bpe: BPETokenizer,
        ids: Sequence[int],
        extra_tokens: Mapping[int, bytes] | None = None,
    ) -> None:
        self.bpe, self.ids = bpe, list(ids)
        extra_tokens = dict(extra_tokens or {})
        if len(self.ids) != bpe.vocab_size:
            raise ConfigError(f"{len(self.ids)} ids for a tokenizer of {bpe.vocab_size} ids")
        if any(not is_id(i) for i in self.ids) or len(set(self.ids)) != len(self.ids):
            raise ConfigError("ids must be distinct non-negative integers, one per token")
        both = sorted(set(extra_tokens) & set(self.ids))
        if both or not all(is_id(i) for i in extra_tokens):
            raise ConfigError(f"extra token ids must be new non-negative ids, not {both[:3]}")
        largest = max([*self.ids, *extra_tokens])
        if largest > MAX_ID:
            raise ConfigError(f"token id {largest} is above the largest allowed, {MAX_ID}")
        check_extra_tokens(bpe, extra_tokens)
        self.extra_tokens = extra_tokens
        self.special_tokens = {text: self.ids[i] for text, i in bpe.special_tokens.items()}
        self.pieces = {peer: bpe.token_bytes(ours) for ours, peer in enumerate(self.ids)}
        self.pieces.update(extra_tokens)  # peer id -> the bytes it decodes to

    @property
    def vocab_size(self) -> int:
        """One more than the largest id (a peer may leave ids unused; those do not decode)."""
        return max(self.pieces) + 1

    def encode_ordinary(self, text: str) -> list[int]:
        """Our BPE ids for `text`, each replaced by the peer's id."""
        table = self.ids
        return [table[i] for i in self.bpe.encode_ordinary(text)]

    def token_bytes(self, token: int) -> bytes:
        return self.pieces[token]

    def is_valid_id(self, token: object) -> bool:
        return is_id(token) and token in self.pieces

    def to_json(self) -> dict:
        return {
            "type": "renumbered_bpe",
            "bpe": self.bpe.to_json(),
            "ids": self.ids,
            "extra_tokens": {str(i): piece.hex() for i, piece in self.extra_tokens.items()},
        }


def check_extra_tokens(bpe: BPETokenizer, extra_tokens: Mapping[int, bytes]) -> None:
    """Raise ConfigError unless the extra tokens keep to the bounds bpe's own tokens keep."""
    total = sum(map(len, bpe.vocab)) + sum(map(len, bpe.special_bytes.values()))
    for token, piece in extra_tokens.items():
        if len(piece) > MAX_TOKEN_BYTES:
            raise ConfigError(
                f"token {token} has {len(piece):,} bytes, more than "
                f"MAX_TOKEN_BYTES={MAX_TOKEN_BYTES}"
            )
        total += len(piece)
    if total > MAX_VOCAB_BYTES:
        raise ConfigError(
            f"the tokens hold {total:,} bytes, more than MAX_VOCAB_BYTES={MAX_VOCAB_BYTES:,}"
        )


def is_id(token: object) -> bool:
    """A non-negative int (a JSON true/false or a float is not an id)."""
    return isinstance(token, int) and not isinstance(token, bool) and token >= 0
