"""What the speech engine asks of a command grammar, wherever the grammar came from.

    CommandGrammar   the interface: a constraint on text (can_continue, accepts, can_extend),
                     its reading (parse -> Command), the phrases a model is shown as context
    Command          one sentence and what it means: the text, an intent, its slots

A Rhino context YAML (voice/grammar.py) is one source of a CommandGrammar; the decoder, the
Listener and every door see only this interface, so another source (Home Assistant's
sentences) plugs in beside it and gives the same constraint and the same result.

Texts here are normalized transcripts: lower case, the grammar's own characters. Not here:
how a grammar is written down or parsed from its file (each source's module).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Command:
    """One sentence and what it means."""

    text: str  # normalized words
    intent: str
    slots: dict[str, str] = field(default_factory=dict)  # slot name -> normalized value


@runtime_checkable
class CommandGrammar(Protocol):
    """A closed set of sentences, each with an intent and slots.

    can_continue and accepts must answer in time linear in the text, whatever the grammar:
    the beam asks them for every candidate token of every step.
    """

    name: str  # what messages and the server call it (a file's path, a language)
    sha256: str  # of its content: the same grammar, however it was written down

    def can_continue(self, text: str) -> bool:
        """Whether some sentence starts with `text` (which may end inside a word)."""
        ...

    def accepts(self, text: str) -> bool:
        """Whether `text` is a whole sentence."""
        ...

    def can_extend(self, text: str) -> bool:
        """Whether a longer sentence starts with the whole sentence `text` (more words may
        follow it): the streaming end rule waits for them."""
        ...

    def next_characters(self, text: str) -> frozenset[str] | None:
        """The characters that may follow `text` in some sentence (" " between words);
        None: any character (free text may come next)."""
        ...

    def parse(self, text: str) -> Command | None:
        """The intent and slots of a whole sentence; None for text the grammar cannot say."""
        ...

    def phrases(self) -> list[str]:
        """A few of the grammar's words or phrases, for a model that reads a text context."""
        ...

    def sample(self, rng: random.Random) -> Command:
        """One sentence drawn at random (training data, `intents --sample`)."""
        ...

    def intents(self) -> list[str]:
        """The intents it can mean, sorted."""
        ...
