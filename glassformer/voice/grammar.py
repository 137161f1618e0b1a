"""Command grammars in the Picovoice Rhino context format: expand, sample, parse.

    context:
      expressions:
        orderDrink:
          - "[can I get, I want] a $size:size (hot) coffee"
      slots:
        size: [small, medium, large]

An expression is a sequence of:
    word            a literal word ("coffee")
    [a, b c, ...]   exactly one of the alternatives (each may be several words)
    (words)         optional words
    $type:name      one phrase of slot type `type`, reported as slot `name`

From a grammar we can enumerate or sample sentences with their labels (the training data:
what the synthesizer says and what the model must write), and parse a transcript back into
an intent and slot values: an exact match of some path through the grammar, after
normalization (lower case, punctuation other than apostrophes removed).

Not here: reading and checking the file (grammar_syntax.py); a bad grammar is one
GlassformerError naming its file.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import regex

from glassformer.errors import GlassformerError
from glassformer.voice.grammar_syntax import check_expression, check_tables, read_grammar_file

PREFIX_MEMORY = 1_000_000  # prefixes whose can_continue answer is remembered, at most
TOKEN_PATTERN = re.compile(r"\[[^\]]*\]|\([^)]*\)|\$[A-Za-z0-9_]+:[A-Za-z0-9_]+|[^\s\[\]()$]+")


def normalize(text: str) -> str:
    """Lower case, apostrophes kept, other punctuation dropped, single spaces."""
    text = re.sub(r"[^\w\s']", " ", text.lower())
    return " ".join(text.split())


@dataclass(frozen=True)
class Slot:
    type: str  # the slot type: a key of the grammar's slots table
    name: str  # the name the parsed slot value is reported under


# An element is a tuple of alternatives, each alternative a tuple of words or a Slot.
Alternative = tuple[str | Slot, ...]
Element = tuple[Alternative, ...]


@dataclass(frozen=True)
class Command:
    """One sentence and what it means."""

    text: str  # normalized words
    intent: str
    slots: dict[str, str] = field(default_factory=dict)  # slot name -> normalized value


def parse_expression(expression: str, slot_types: set[str], where: str) -> list[Element]:
    """Tokenize one Rhino expression into elements (alternatives of word/slot sequences).

    Raises:
        GlassformerError: bad syntax, an unknown slot type, or nothing that must be said.
    """
    check_expression(expression, where)
    elements: list[Element] = []
    for token in TOKEN_PATTERN.findall(expression):
        if token.startswith("["):
            options = [normalize(o).split() for o in token[1:-1].split(",")]
            if any(not o for o in options):
                raise GlassformerError(f"{where}: empty alternative in {token!r}")
            elements.append(tuple(tuple(o) for o in options))
        elif token.startswith("("):
            items: list[str | Slot] = []  # words, or a slot: "(please)", "($period:period)"
            for part in token[1:-1].split():
                items += (
                    [slot(part, slot_types, expression, where)]
                    if part.startswith("$")
                    else normalize(part).split()
                )
            if not items:
                raise GlassformerError(f"{where}: empty optional {token!r} in {expression!r}")
            elements.append(((), tuple(items)))  # optional: nothing, or the items
        elif token.startswith("$"):
            elements.append(((slot(token, slot_types, expression, where),),))
        else:
            for word in normalize(token).split():
                elements.append(((word,),))
    if not elements:
        raise GlassformerError(f"{where}: empty expression")
    if all(() in element for element in elements):
        raise GlassformerError(f"{where}: every word of {expression!r} is optional")
    return elements


def slot(token: str, slot_types: set[str], expression: str, where: str) -> Slot:
    """ "$type:name" -> Slot(type, name), the type checked against the grammar's slots."""
    slot_type, _, name = token[1:].partition(":")
    if slot_type not in slot_types or not name:
        raise GlassformerError(f"{where}: unknown slot type ${slot_type} in {expression!r}")
    return Slot(slot_type, name)


def content_sha256(expressions: dict[str, list[str]], slots: dict[str, list[str]]) -> str:
    """sha256 of the grammar's tables as canonical JSON: what it says, not how it is laid out
    (comments, quoting and key order in the file do not change it)."""
    text = json.dumps({"expressions": expressions, "slots": slots}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class Grammar:
    """A parsed command grammar.

    Args:
        expressions: intent -> list of expression strings.
        slots: slot type -> list of phrases.
        name: for error messages (the file's path when read from one).

    Raises:
        GlassformerError: "NAME: ..." for the first thing wrong (see grammar_syntax.py).
    """

    def __init__(
        self, expressions: dict[str, list[str]], slots: dict[str, list[str]], name: str = "grammar"
    ) -> None:
        self.name = name
        expressions, slots = check_tables(expressions, slots, name)
        self.sha256 = content_sha256(expressions, slots)
        self.path: Path | None = None  # the file it was read from, if any
        self.slots = {t: [normalize(p) for p in phrases] for t, phrases in slots.items()}
        for slot_type, phrases in self.slots.items():
            if not phrases or any(not p for p in phrases):
                raise GlassformerError(f"{name}: slot type {slot_type!r} has an empty phrase")
        self.expressions = {
            intent: [
                parse_expression(e, set(self.slots), f"{name}: intent {intent!r}") for e in items
            ]
            for intent, items in expressions.items()
        }
        if not self.expressions:
            raise GlassformerError(f"{name}: no expressions")
        self.prefix_answers: dict[str, bool] = {}  # can_continue's memory

    @classmethod
    def from_yaml(cls, path: str | Path) -> Grammar:
        """Read a Rhino-format YAML file; any problem is one GlassformerError naming it."""
        path = Path(path)
        expressions, slots = read_grammar_file(path)
        grammar = cls(expressions, slots, str(path))
        grammar.path = path.resolve()
        return grammar

    @property
    def vocabulary(self) -> list[str]:
        """Every word the grammar can produce, sorted."""
        words = {w for phrases in self.slots.values() for p in phrases for w in p.split()}
        for elements in itertools.chain.from_iterable(self.expressions.values()):
            for alternative in itertools.chain.from_iterable(elements):
                for item in alternative:
                    if isinstance(item, str):
                        words.add(item)
        return sorted(words)

    def expand_elements(
        self, elements: list[Element]
    ) -> Iterator[tuple[list[str], dict[str, str]]]:
        """Every (words, slots) path through one expression."""
        choices = []
        for element in elements:
            options = []
            for alternative in element:
                options.extend(self.expand_alternative(alternative))
            choices.append(options)
        for combination in itertools.product(*choices):
            words, slots = [], {}
            for part_words, part_slots in combination:
                words += part_words
                slots.update(part_slots)
            yield words, slots

    def expand_alternative(self, alternative: Alternative) -> list[tuple[list[str], dict]]:
        paths: list[tuple[list[str], dict]] = [([], {})]
        for item in alternative:
            if isinstance(item, Slot):
                paths = [
                    (w + p.split(), {**s, item.name: p})
                    for w, s in paths
                    for p in self.slots[item.type]
                ]
            else:
                paths = [(w + [item], s) for w, s in paths]
        return paths

    def expand(self) -> Iterator[Command]:
        """Every sentence of the grammar (may be very many: see count())."""
        for intent, expressions in self.expressions.items():
            for elements in expressions:
                for words, slots in self.expand_elements(elements):
                    yield Command(" ".join(words), intent, slots)

    def count(self) -> int:
        """How many sentences expand() yields (paths, counting duplicates)."""
        total = 0
        for expressions in self.expressions.values():
            for elements in expressions:
                n = 1
                for element in elements:
                    n *= sum(len(self.expand_alternative(a)) for a in element)
                total += n
        return total

    def sample(self, rng: random.Random) -> Command:
        """One sentence: a uniform intent, a uniform expression of it, uniform choices."""
        intent = rng.choice(sorted(self.expressions))
        elements = rng.choice(self.expressions[intent])
        words, slots = [], {}
        for element in elements:
            alternative = rng.choice(element)
            for item in alternative:
                if isinstance(item, Slot):
                    phrase = rng.choice(self.slots[item.type])
                    words += phrase.split()
                    slots[item.name] = phrase
                else:
                    words.append(item)
        return Command(" ".join(words), intent, slots)

    @functools.cached_property
    def pattern(self) -> regex.Pattern:
        """The grammar's whole language as one regular expression over " " + normalized text.

        Every word is preceded by a space, so an optional element is simply an alternative
        that matches nothing. Matching with `partial=True` tells whether a text can still grow
        into a sentence of the grammar: what token-level constrained decoding asks each step.
        """

        def words(items: Alternative) -> str:
            parts = []
            for item in items:
                if isinstance(item, Slot):
                    phrases = sorted(self.slots[item.type], key=len, reverse=True)
                    parts.append("(?:" + "|".join(" " + regex.escape(p) for p in phrases) + ")")
                else:
                    parts.append(" " + regex.escape(item))
            return "".join(parts)

        sentences = [
            "".join("(?:" + "|".join(words(a) for a in element) + ")" for element in elements)
            for elements in itertools.chain.from_iterable(self.expressions.values())
        ]
        return regex.compile("(?:" + "|".join(sentences) + ")")

    def can_continue(self, text: str) -> bool:
        """Whether some sentence of the grammar starts with this (normalized) text.

        Remembered: decoding asks about the same prefixes again and again (every beam, every
        clip), and a large grammar's pattern takes tens of microseconds a question.
        """
        known = self.prefix_answers.get(text)
        if known is None:
            known = self.pattern.fullmatch(" " + text, partial=True) is not None
            if len(self.prefix_answers) < PREFIX_MEMORY:
                self.prefix_answers[text] = known
        return known

    def accepts(self, text: str) -> bool:
        """Whether the normalized text is a whole sentence of the grammar."""
        return self.pattern.fullmatch(" " + text) is not None

    def parse(self, text: str) -> Command | None:
        """The intent and slots of a transcript that exactly matches a grammar path, else None."""
        words = normalize(text).split()
        for intent, expressions in self.expressions.items():
            for elements in expressions:
                slots = self.match(elements, 0, words, 0)
                if slots is not None:
                    return Command(" ".join(words), intent, slots)
        return None

    def match(self, elements: list[Element], e: int, words: list[str], w: int) -> dict | None:
        """Slots of a match of elements[e:] against words[w:], or None (depth-first search)."""
        if e == len(elements):
            return {} if w == len(words) else None
        for alternative in elements[e]:
            for end, slots in self.match_alternative(alternative, words, w):
                rest = self.match(elements, e + 1, words, end)
                if rest is not None:
                    return {**slots, **rest}
        return None

    def match_alternative(
        self, alternative: Alternative, words: list[str], w: int
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Every way one alternative can match words starting at w: (end index, slots)."""
        states: list[tuple[int, dict[str, str]]] = [(w, {})]
        for item in alternative:
            next_states = []
            for position, slots in states:
                if isinstance(item, Slot):
                    for phrase in self.slots[item.type]:
                        parts = phrase.split()
                        if words[position : position + len(parts)] == parts:
                            next_states.append(
                                (position + len(parts), {**slots, item.name: phrase})
                            )
                elif position < len(words) and words[position] == item:
                    next_states.append((position + 1, slots))
            states = next_states
        yield from states
