"""Errors a user can fix. The CLI prints their message on one line and exits with status 2.

Anything else that escapes a command (a KeyError, an AssertionError, ...) is a bug in
glassformer and shows its traceback: the CLI does not hide it behind a one-line message.
"""

from __future__ import annotations


class GlassformerError(Exception):
    """Bad input from the user (a file, a flag, a config); the message says what and where."""


class ConfigError(GlassformerError, ValueError):
    """An invalid setting or argument value (a config field, a vocabulary size, a token id).

    Also a ValueError, as Python code expects of a bad value: config dataclasses validate in
    __post_init__ and raise it with the field and the value."""


class CheckpointError(GlassformerError):
    """A checkpoint directory is missing, truncated or does not match its config."""


def first_line(message: BaseException | str, empty: str | None = None) -> str:
    """The first line of an error's message (or of a text), stripped: what every door shows
    of an error it did not write itself. An empty message gives `empty`, else the error's
    class name (a text: "").

    Example: first_line(ValueError("bad value\n  at line 3")) -> "bad value";
    first_line(KeyError()) -> "KeyError"
    """
    text = str(message).strip()
    if text:
        return text.splitlines()[0].strip()
    if empty is not None:
        return empty
    return type(message).__name__ if isinstance(message, BaseException) else ""
