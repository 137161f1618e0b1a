"""Pre-tokenization: cut text into chunks before BPE, and cut special tokens out first.

BPE never merges across a chunk boundary, so the split pattern decides what a token can be:
with GPT-2's pattern a space attaches to the word after it (" the"), letters never merge with
digits or punctuation, and digits run together; GPT-4's pattern also caps digit runs at three
and lets one punctuation character lead a word. Both come from OpenAI's published tokenizers
(gpt2 and cl100k_base) and need the `regex` package for the \\p{L} / \\p{N} Unicode classes.

Special tokens (e.g. <eos>) are found in the text before the pattern runs, and only when the
caller allows them; otherwise the same characters are ordinary text.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}


def resolve_pattern(pattern: str) -> str:
    """A named pattern ("gpt2", "gpt4") or a user regex, checked to compile."""
    pattern = PATTERNS.get(pattern, pattern)
    try:
        regex.compile(pattern)
    except regex.error as error:
        raise ValueError(f"pattern {pattern!r} is not a valid regex: {error}") from None
    return pattern


def split_special(text: str, specials: Iterable[str]) -> list[tuple[str, bool]]:
    """Split `text` into (piece, is_special) around occurrences of the given special tokens.

    Longer specials win where they overlap (e.g. "<|end|>" before "<|e"). No specials: one piece.
    """
    specials = sorted(set(specials), key=len, reverse=True)
    if not specials:
        return [(text, False)] if text else []
    splitter = regex.compile("(" + "|".join(regex.escape(s) for s in specials) + ")")
    pieces = splitter.split(text)  # odd indices are the captured specials
    return [(piece, i % 2 == 1) for i, piece in enumerate(pieces) if piece]


def split_at_safe_boundaries(text: str, block_chars: int) -> list[str]:
    """Cut `text` into blocks of about `block_chars`, each ending just after a newline that
    is followed by a letter.

    Both built-in patterns always put a chunk boundary there, so pre-tokenizing block by block
    gives exactly the chunks of the whole text. (A custom pattern may not: give it whole texts.)
    A text with no such newline stays one block.
    """
    blocks, start = [], 0
    while len(text) - start > block_chars:
        cut = text.rfind("\n", start, start + block_chars)
        while cut >= start and not text[cut + 1 : cut + 2].isalpha():
            cut = text.rfind("\n", start, cut)
        if cut < start:
            cut = text.find("\n", start + block_chars)
            while cut != -1 and not text[cut + 1 : cut + 2].isalpha():
                cut = text.find("\n", cut + 1)
            if cut == -1:
                break
        blocks.append(text[start : cut + 1])
        start = cut + 1
    blocks.append(text[start:])
    return [block for block in blocks if block]


def check_unicode(text: str) -> bytes:
    """The text's UTF-8 bytes; a lone surrogate (not valid Unicode) is a clear error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = text[error.start]
        raise ValueError(
            f"text has a lone surrogate U+{ord(char):04X} at index {error.start}: "
            "not valid Unicode, so it has no UTF-8 bytes to encode"
        ) from None
