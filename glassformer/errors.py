"""Errors a user can fix. The CLI prints their message on one line and exits with status 2."""

from __future__ import annotations


class GlassformerError(ValueError):
    """Bad input from the user (a file, a flag, a config); the message says what and where."""


class CheckpointError(GlassformerError):
    """A checkpoint directory is missing, truncated or does not match its config."""
