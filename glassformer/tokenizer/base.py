"""The interface every tokenizer shares: encode, decode, vocabulary size, special tokens, save.

Stages, named as Hugging Face tokenizers names them: special tokens are cut out first (only
when the caller allows them), then pre-tokenization splits text into chunks, then the model
(characters, or BPE merges) maps each chunk to ids; decoding maps ids back to bytes or
characters.

The file format is written here (`save`) and read by io.py, which knows every kind of
tokenizer; this module imports none of them, so the package has no import circle.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal

from glassformer.errors import ConfigError
from glassformer.tokenizer.pretokenize import split_special

AllowedSpecial = Literal["all", "none"] | Collection[str]
FORMAT = "glassformer.tokenizer"  # the "format" field of every tokenizer file
FORMAT_VERSION = 1  # bumped when a change would make old readers misread a file


class Tokenizer(ABC):
    """Base class: subclasses define the model; special tokens are handled here."""

    special_tokens: dict[str, int]  # special token text -> id; ids follow the ordinary tokens

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, special tokens included (V)."""

    @abstractmethod
    def encode_ordinary(self, text: str) -> list[int]:
        """Ids for `text`, treating special-token strings as plain text."""

    @abstractmethod
    def token_bytes(self, token: int) -> bytes:
        """The UTF-8 bytes one id stands for (a piece of a character for some BPE ids)."""

    @abstractmethod
    def to_json(self) -> dict:
        """Everything needed to rebuild this tokenizer (see io.py for the file format)."""

    def encode(self, text: str, allowed_special: AllowedSpecial = "none") -> list[int]:
        """Ids for `text`. Special tokens become their ids only where `allowed_special` says.

        Args:
            allowed_special: "none" (default: special-token strings in the text are ordinary
                text, so user text can never inject an <eos>), "all", or a set of names.
        """
        allowed = self.resolve_allowed(allowed_special)
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        for piece, is_special in split_special(text, allowed):
            ids.extend([self.special_tokens[piece]] if is_special else self.encode_ordinary(piece))
        return ids

    def resolve_allowed(self, allowed_special: AllowedSpecial) -> set[str]:
        if allowed_special == "none":
            return set()
        if allowed_special == "all":
            return set(self.special_tokens)
        unknown = set(allowed_special) - set(self.special_tokens)
        if unknown:
            raise ConfigError(f"not special tokens of this tokenizer: {sorted(unknown)}")
        return set(allowed_special)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes the ids stand for, concatenated; an unknown id is an error."""
        try:
            return b"".join([self.token_bytes(i) for i in ids])
        except (IndexError, KeyError, TypeError):
            bad = next(i for i in ids if not self.is_valid_id(i))
            raise ConfigError(f"token id {bad!r} is not in [0, {self.vocab_size})") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text for the ids. Ids that split a UTF-8 character decode to U+FFFD, never raise."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def is_valid_id(self, token: object) -> bool:
        return isinstance(token, int) and 0 <= token < self.vocab_size

    def files(self, path: Path) -> dict[Path, str]:
        """What `save` writes: the versioned JSON file (subclasses add views beside it)."""
        document = {"format": FORMAT, "format_version": FORMAT_VERSION, **self.to_json()}
        return {path: json.dumps(document, ensure_ascii=False) + "\n"}

    def save(self, path: str | Path) -> None:
        """Write the versioned JSON file (and, for BPE, a human-readable .vocab view beside it).

        Each file is written atomically: a crash leaves the old file or the new, never half.
        Every target is checked before any is written, so a refused one (a device, a
        folder, a path that is also the .vocab view's) leaves no partial set behind.

        Raises:
            GlassformerError: an empty path, a target that exists and is not a regular file
                or cannot be written, or two targets that are one file.
        """
        from glassformer.files import (
            check_output_file,
            check_output_files,
            output_path,
            write_text_atomically,
        )

        path = output_path(path)
        check_output_file(path)  # first: a folder given as `path` has no .vocab name
        files = self.files(path)
        check_output_files(files)
        for target, text in files.items():
            write_text_atomically(target, text)
