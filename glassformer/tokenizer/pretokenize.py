"""Pre-tokenization: cut text into chunks before BPE, and cut special tokens out first.

BPE never merges across a chunk boundary, so the split pattern decides what a token can be:
with GPT-2's pattern a space attaches to the word after it (" the"), letters never merge with
digits or punctuation, and digits run together; GPT-4's pattern also caps digit runs at three
and lets one punctuation character lead a word. Both come from OpenAI's published tokenizers
(gpt2 and cl100k_base) and need the `regex` package for the \\p{L} / \\p{N} Unicode classes.

A custom pattern need not match every character: the text between its matches becomes
chunks too (as Hugging Face's Split(..., "isolated") does), so no text is ever dropped and
decode(encode(text)) == text for any pattern. Empty matches are skipped.

Special tokens (e.g. <eos>) are found in the text before the pattern runs, and only when the
caller allows them; otherwise the same characters are ordinary text.

Speed: Python's own `re` runs the built-in patterns about twice as fast as `regex`, but has no
\\p{L}. So the classes are written out as explicit ranges, taken from `regex` itself (so the
two agree for any installed version); only the Basic Multilingual Plane is listed, because a
class with characters above U+FFFF is a slow linear scan in `re`. Text with such a character
(emoji, some CJK) is split by `regex`, the reference; tests check that the two agree.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

import regex

from glassformer.errors import ConfigError, first_line

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}


def resolve_pattern(pattern: str) -> str:
    """A named pattern ("gpt2", "gpt4") or a user regex, checked to compile.

    Raises:
        ValueError: not a string, or not a valid regex (one line, naming the pattern).
    """
    if not isinstance(pattern, str):
        raise ConfigError(f"pattern {pattern!r} is not a string")
    pattern = PATTERNS.get(pattern, pattern)
    try:
        regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError) as error:
        reason = first_line(error)
        raise ConfigError(f"pattern {pattern!r} is not a valid regex: {reason}") from None
    return pattern


def chunker(pattern: str) -> Callable[[str], list[str]]:
    """The function that cuts text into chunks for `pattern` (a name or a regex).

    The built-in patterns match every character (each of letters, digits, spaces and the rest
    has a branch), so their chunks are simply `findall`, the fast path. A custom pattern's
    chunks are its matches and the gaps between them, in order.

    Example: chunker("x")("abxxc") -> ["ab", "x", "x", "c"]
    """
    splitter = regex.compile(resolve_pattern(pattern))
    if pattern in PATTERNS or pattern in PATTERNS.values():
        return bmp_fast_path(splitter.findall, stdlib_pattern(splitter.pattern))

    def split_with_gaps(text: str) -> list[str]:
        chunks, end = [], 0
        for match in splitter.finditer(text):
            start, stop = match.span()
            if start > end:
                chunks.append(text[end:start])  # text the pattern skipped over
            if stop > start:
                chunks.append(text[start:stop])
            end = max(end, stop)
        if end < len(text):
            chunks.append(text[end:])
        return chunks

    return split_with_gaps


ABOVE_BMP = re.compile("[\\U00010000-\\U0010ffff]")  # a character outside U+0000-U+FFFF
CLASS_SYNTAX = re.compile(r"(\\p\{[LN]\}|\\[sS]|\[\^?|\]|\\.)")  # the pieces translated


@functools.cache
def bmp_members(name: str) -> str:
    """The BMP characters `regex` puts in class `name` (r"\\p{L}", r"\\p{N}" or r"\\s"), as
    ranges for an `re` character class.

    Example: bmp_members(r"\\s") -> "\\u0009-\\u000d\\u0020\\u0085..." (escapes, not characters)
    """
    bmp = "".join(map(chr, range(0x10000)))
    ranges = []
    for run in regex.finditer(name + "+", bmp):  # each run of members is one range
        first, last = run.start(), run.end() - 1
        ranges.append(f"\\u{first:04x}" + (f"-\\u{last:04x}" if last > first else ""))
    return "".join(ranges)


def stdlib_pattern(pattern: str) -> re.Pattern | None:
    """A built-in `regex` pattern for Python's `re`, right for text without characters above
    U+FFFF; None where `re` lacks a construct (possessive quantifiers before Python 3.11).

    Example: r"\\p{L}+" -> r"[\\u0041-\\u005a\\u0061-\\u007a...]+"
    """
    out, in_class = [], False
    for piece in CLASS_SYNTAX.split(pattern):
        if piece in (r"\p{L}", r"\p{N}", r"\s"):
            members = bmp_members(piece)
            out.append(members if in_class else f"[{members}]")
        elif piece == r"\S":  # only used outside a class, as in (?!\S)
            out.append("[^" + bmp_members(r"\s") + "]")
        else:
            in_class = piece.startswith("[") or (in_class and piece != "]")
            out.append(piece)
    try:
        return re.compile("".join(out))
    except re.error:
        return None


def bmp_fast_path(
    findall: Callable[[str], list[str]], stdlib: re.Pattern | None
) -> Callable[[str], list[str]]:
    """`findall`, run by `stdlib` (Python's `re`) whenever the text stays within the BMP."""
    if stdlib is None:
        return findall
    fast = stdlib.findall

    def split(text: str) -> list[str]:
        if text.isascii() or ABOVE_BMP.search(text) is None:  # isascii() costs nothing
            return fast(text)
        return findall(text)

    return split


MAX_SPECIAL_TOKEN_CHARS = 256  # characters; Whisper's longest is 21 ("<|startoftranscript|>")
MAX_SPECIAL_TOKENS = 4096  # Whisper has 1,611 (languages, tasks, 1,501 timestamps)


def check_special_tokens(special_tokens: Iterable[str]) -> list[str]:
    """The special tokens as a list, after checking each is a distinct non-empty string of
    at most MAX_SPECIAL_TOKEN_CHARS, and that there are at most MAX_SPECIAL_TOKENS.

    Finding special tokens in text is one regex of all of them, so a megabyte-long one (or a
    million of them) would make every encode crawl; both bounds are far above any real set.

    Raises:
        ValueError: an empty or over-long token, a token given twice, one that is not a
            string, or too many tokens.
    """
    tokens = list(special_tokens) if not isinstance(special_tokens, str) else [special_tokens]
    if len(tokens) > MAX_SPECIAL_TOKENS:
        raise ConfigError(f"{len(tokens):,} special tokens, more than {MAX_SPECIAL_TOKENS:,}")
    seen: set[str] = set()
    for token in tokens:
        if not isinstance(token, str):
            raise ConfigError(f"special token {token!r} is not a string")
        if not token:
            raise ConfigError("special token '' is empty: a special token needs some text")
        if len(token) > MAX_SPECIAL_TOKEN_CHARS:
            raise ConfigError(
                f"special token {token[:20]!r}... has {len(token):,} characters, more than "
                f"MAX_SPECIAL_TOKEN_CHARS={MAX_SPECIAL_TOKEN_CHARS}"
            )
        if token in seen:
            raise ConfigError(f"special token {token!r} is given twice")
        seen.add(token)
    return tokens


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


def check_unicode(text: str) -> bytes:
    """The text's UTF-8 bytes; a lone surrogate (not valid Unicode) is a clear error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = text[error.start]
        raise ConfigError(
            f"text has a lone surrogate U+{ord(char):04X} at index {error.start}: "
            "not valid Unicode, so it has no UTF-8 bytes to encode"
        ) from None
