"""Character-level tokenizer: one id per distinct character of the training text.

The article's fallback ("let individual characters be the building blocks"): tiny
vocabularies, no merges, and the same interface as BPE. It is nanoGPT's shakespeare_char
tokenizer. A character it never saw in training has no id, which is an error, not a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from glassformer.errors import ConfigError
from glassformer.tokenizer.base import Tokenizer
from glassformer.tokenizer.pretokenize import check_special_tokens


class CharTokenizer(Tokenizer):
    """Ids 0..n-1 are the characters in sorted order; special tokens follow.

    Args:
        chars: the alphabet (duplicates ignored).
        special_tokens: distinct, non-empty texts such as "<eos>", given the ids after the
            characters.

    Raises:
        ValueError: a character that is not a single character, or a bad special token.
    """

    def __init__(self, chars: Iterable[str], special_tokens: Iterable[str] = ()) -> None:
        self.chars = sorted(set(chars))
        if any(not isinstance(c, str) or len(c) != 1 for c in self.chars):
            raise ConfigError("a character tokenizer's alphabet must be single characters")
        self.ids = {c: i for i, c in enumerate(self.chars)}
        self.special_tokens = {
            s: len(self.chars) + i for i, s in enumerate(check_special_tokens(special_tokens))
        }
        self.id_to_text = self.chars + list(self.special_tokens)

    @classmethod
    def train(cls, texts: Iterable[str], special_tokens: Iterable[str] = ()) -> CharTokenizer:
        """The alphabet is every character that occurs in `texts`."""
        chars: set[str] = set()
        for text in texts:
            chars.update(text)
        if not chars:
            raise ConfigError("the training text is empty: no characters to build a vocabulary")
        return cls(chars, special_tokens)

    @property
    def vocab_size(self) -> int:
        return len(self.id_to_text)

    def encode_ordinary(self, text: str) -> list[int]:
        try:
            return [self.ids[c] for c in text]
        except KeyError as error:
            char = error.args[0]
            raise ConfigError(
                f"character {char!r} (U+{ord(char):04X}) is not in the vocabulary"
            ) from None

    def token_bytes(self, token: int) -> bytes:
        if token < 0:
            raise IndexError(token)
        return self.id_to_text[token].encode("utf-8", errors="surrogatepass")

    def decode(self, ids: Sequence[int]) -> str:
        if all(self.is_valid_id(i) for i in ids):
            return "".join([self.id_to_text[i] for i in ids])
        return super().decode(ids)  # raises naming the bad id

    def to_json(self) -> dict:
        return {"type": "char", "chars": self.chars, "special_tokens": list(self.special_tokens)}
