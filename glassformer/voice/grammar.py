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

No question searches exponentially, whatever the grammar: `can_continue` and `accepts` run
a word automaton (all paths at once, time linear in the text; 40 `[a, a a]` choices made a
backtracking regex try 2**40 ways), `parse` remembers the positions it has failed from, and
`count` multiplies instead of enumerating. A grammar's words are letters and apostrophes only
(what a normalized transcript holds: a decoder cannot write "a1"), and its size with every
slot written out in place is at most MAX_GRAMMAR_WORDS, checked before anything is built.

A Grammar is one source of the engine's CommandGrammar (voice/commands.py): the decoder and
every door see only that interface. Not here: reading and checking the file
(grammar_syntax.py); an expression's parts and the word automaton (expressions.py). A bad
grammar is one GlassformerError naming its file.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path

from glassformer.errors import GlassformerError
from glassformer.voice.commands import Command
from glassformer.voice.expressions import (
    Alternative,
    Element,
    Slot,
    WordAutomaton,
    check_words,
    normalize,
    parse_expression,
)
from glassformer.voice.grammar_syntax import (
    check_tables,
    read_grammar_file,
    shown,
)

PREFIX_MEMORY = 1_000_000  # prefixes whose can_continue answer is remembered, at most
STATE_MEMORY = 100_000  # word prefixes whose automaton states are remembered, at most
MAX_GRAMMAR_WORDS = 1_000_000  # words, each slot reference counted as all its phrases' words

DEFAULT_GRAMMAR = Path(__file__).resolve().parent / "grammars" / "desktop.yaml"  # the article's


def content_sha256(expressions: dict[str, list[str]], slots: dict[str, list[str]]) -> str:
    """sha256 of the grammar's tables as canonical JSON: what it says, not how it is laid out
    (comments, quoting and key order in the file do not change it)."""
    text = json.dumps({"expressions": expressions, "slots": slots}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class Grammar:
    """A parsed command grammar (a CommandGrammar, voice/commands.py).

    Args:
        expressions: intent -> list of expression strings.
        slots: slot type -> list of phrases.
        name: for error messages (the file's path when read from one).

    Raises:
        GlassformerError: "NAME: ..." for the first thing wrong (see grammar_syntax.py), a
            word that is not letters and apostrophes, or more than MAX_GRAMMAR_WORDS words.
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
            where = f"{name}: slot type {shown(slot_type)}"
            if not phrases or any(not p for p in phrases):
                raise GlassformerError(f"{where} has an empty phrase")
            for phrase in phrases:
                check_words(phrase, f"the phrase {shown(phrase)}", where)
        self.expressions = {
            intent: [
                parse_expression(e, set(self.slots), f"{name}: intent {intent!r}") for e in items
            ]
            for intent, items in expressions.items()
        }
        if not self.expressions:
            raise GlassformerError(f"{name}: no expressions")
        size = self.size()
        if size > MAX_GRAMMAR_WORDS:
            raise GlassformerError(
                f"{name}: {size:,} words with every slot written out in place, more than "
                f"MAX_GRAMMAR_WORDS={MAX_GRAMMAR_WORDS:,}"
            )
        self.prefix_answers: dict[str, bool] = {}  # can_continue's memory
        self.prefix_states: dict[str, dict[str, frozenset[int]]] = {}  # see `next_words`

    @classmethod
    def from_yaml(cls, path: str | Path) -> Grammar:
        """Read a Rhino-format YAML file; any problem is one GlassformerError naming it."""
        path = Path(path)
        expressions, slots = read_grammar_file(path)
        grammar = cls(expressions, slots, str(path))
        grammar.path = path.resolve()
        return grammar

    def all_expressions(self) -> Iterator[list[Element]]:
        return itertools.chain.from_iterable(self.expressions.values())

    def size(self) -> int:
        """Words in the grammar with each slot reference replaced by all its phrases' words:
        the automaton's states, computed from the structure without building anything."""
        slot_words = {t: sum(len(p.split()) for p in phrases) for t, phrases in self.slots.items()}
        return sum(
            slot_words[item.type] if isinstance(item, Slot) else 1
            for elements in self.all_expressions()
            for alternative in itertools.chain.from_iterable(elements)
            for item in alternative
        )

    def intents(self) -> list[str]:
        return sorted(self.expressions)

    def phrases(self, per_slot: int = 12) -> list[str]:
        """Up to `per_slot` phrases of each slot type, else (no slots) every word: what a
        model reading a text context is shown (a zero-shot Whisper then expects them)."""
        phrases = [p for values in self.slots.values() for p in values[:per_slot]]
        return list(dict.fromkeys(phrases)) or self.vocabulary

    @property
    def vocabulary(self) -> list[str]:
        """Every word the grammar can produce, sorted."""
        words = {w for phrases in self.slots.values() for p in phrases for w in p.split()}
        for elements in self.all_expressions():
            for alternative in itertools.chain.from_iterable(elements):
                words.update(item for item in alternative if isinstance(item, str))
        return sorted(words)

    def expand_elements(
        self, elements: list[Element]
    ) -> Iterator[tuple[list[str], dict[str, str]]]:
        """Every (words, slots) path through one expression, one at a time (depth first, the
        first element varying slowest), so a grammar of 10**12 sentences starts at once."""
        levels = [self.expand_element(elements[0])]  # levels[i] runs through element i's paths
        chosen: list[tuple[list[str], dict[str, str]]] = []  # the path of each level above
        while levels:
            path = next(levels[-1], None)
            if path is None:  # this element is done: the one before takes its next path
                levels.pop()
                if chosen:
                    chosen.pop()
            elif len(levels) < len(elements):
                chosen.append(path)
                levels.append(self.expand_element(elements[len(levels)]))
            else:
                words, slots = [], {}
                for part_words, part_slots in [*chosen, path]:
                    words += part_words
                    slots.update(part_slots)
                yield words, slots

    def expand_element(self, element: Element) -> Iterator[tuple[list[str], dict[str, str]]]:
        for alternative in element:
            yield from self.expand_alternative(alternative)

    def expand_alternative(self, alternative: Alternative) -> Iterator[tuple[list[str], dict]]:
        """Every (words, slots) path through one alternative (a product over its slots)."""
        choices = [self.slots[i.type] if isinstance(i, Slot) else [i] for i in alternative]
        for picked in itertools.product(*choices):
            words, slots = [], {}
            for item, phrase in zip(alternative, picked, strict=True):
                words += phrase.split()
                if isinstance(item, Slot):
                    slots[item.name] = phrase
            yield words, slots

    def expand(self) -> Iterator[Command]:
        """Every sentence of the grammar (may be very many: see count())."""
        for intent, expressions in self.expressions.items():
            for elements in expressions:
                for words, slots in self.expand_elements(elements):
                    yield Command(" ".join(words), intent, slots)

    def count(self) -> int:
        """How many sentences expand() yields (paths, counting duplicates), by arithmetic."""

        def paths(alternative: Alternative) -> int:
            return math.prod(len(self.slots[i.type]) for i in alternative if isinstance(i, Slot))

        return sum(
            math.prod(sum(map(paths, element)) for element in elements)
            for elements in self.all_expressions()
        )

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
    def automaton(self) -> WordAutomaton:
        return WordAutomaton(list(self.all_expressions()), self.slots)

    def next_words(self, words: str) -> dict[str, frozenset[int]] | None:
        """After the whole words of `words` ("" or "turn the "), each word that may come next
        and the states it leads to ("" if a sentence may end there); None if no sentence
        starts so. Each prefix is remembered: decoding asks about the same ones again and again.
        """
        following = self.prefix_states.get(words)
        if following is not None:
            return following
        following = self.prefix_states.get("")
        if following is None:
            following = self.prefix_states[""] = self.automaton.transitions(self.automaton.starts)
        prefix = ""
        for word in words.split(" ")[:-1]:
            prefix += word + " "
            known = self.prefix_states.get(prefix)
            if known is None:
                states = following.get(word) if word else None  # "": two spaces in a row
                if states is None:
                    return None
                known = self.automaton.transitions(states)
                if len(self.prefix_states) >= STATE_MEMORY:
                    self.prefix_states.clear()
                self.prefix_states[prefix] = known
            following = known
        return following

    def can_continue(self, text: str) -> bool:
        """Whether some sentence of the grammar starts with this (normalized) text.

        Example: with "[turn, set] the volume up": "tur" -> True, "turn the " -> True,
        "turn  the" -> False (two spaces), "turn up" -> False
        """
        known = self.prefix_answers.get(text)
        if known is None:
            cut = text.rfind(" ") + 1  # the whole words (with their spaces), then a part word
            following, partial = self.next_words(text[:cut]), text[cut:]
            known = following is not None and any(
                word.startswith(partial) for word in following if word
            )
            if len(self.prefix_answers) < PREFIX_MEMORY:
                self.prefix_answers[text] = known
        return known

    def next_characters(self, text: str) -> frozenset[str]:
        """The characters that may follow `text` ("" or a part word: the rest of words that
        start so; a whole word: a space, when another word may follow it)."""
        cut = text.rfind(" ") + 1
        following, partial = self.next_words(text[:cut]), text[cut:]
        if following is None:
            return frozenset()
        chars = {
            w[len(partial)] for w in following if len(w) > len(partial) and w.startswith(partial)
        }
        if partial and partial in following and self.can_extend(text):
            chars.add(" ")
        return frozenset(chars)

    def accepts(self, text: str) -> bool:
        """Whether the normalized text (words, single spaces) is a whole sentence of the grammar."""
        following = self.next_words(text + " ") if text else None
        return following is not None and "" in following

    def can_extend(self, text: str) -> bool:
        """Whether more words may follow the whole words of `text` in some sentence."""
        following = self.next_words(text + " ") if text else None
        return following is not None and any(following.keys() - {""})

    def parse(self, text: str) -> Command | None:
        """The intent and slots of a transcript that exactly matches a grammar path, else None."""
        words = normalize(text).split()
        for intent, expressions in self.expressions.items():
            for elements in expressions:
                slots = self.match(elements, 0, words, 0, set())
                if slots is not None:
                    return Command(" ".join(words), intent, slots)
        return None

    def match(
        self, elements: list[Element], e: int, words: list[str], w: int, failed: set
    ) -> dict | None:
        """Slots of a match of elements[e:] against words[w:], or None (depth-first search).

        `failed` holds the (e, w) already tried in vain, so each is searched once: without
        it, 40 `[a, a a]` elements tried 2**40 ways to split a sentence that does not match.
        """
        if e == len(elements):
            return {} if w == len(words) else None
        if (e, w) in failed:
            return None
        for alternative in elements[e]:
            for end, slots in self.match_alternative(alternative, words, w):
                rest = self.match(elements, e + 1, words, end, failed)
                if rest is not None:
                    return {**slots, **rest}
        failed.add((e, w))
        return None

    def match_alternative(
        self, alternative: Alternative, words: list[str], w: int
    ) -> Iterator[tuple[int, dict[str, str]]]:
        """Every end index one alternative can reach from w, with the first slots reaching it
        (what follows depends only on where the alternative ends)."""
        states: dict[int, dict[str, str]] = {w: {}}
        for item in alternative:
            next_states: dict[int, dict[str, str]] = {}
            for position, slots in states.items():
                if isinstance(item, Slot):
                    for phrase in self.slots[item.type]:
                        parts = phrase.split()
                        if words[position : position + len(parts)] == parts:
                            end = position + len(parts)
                            next_states.setdefault(end, {**slots, item.name: phrase})
                elif position < len(words) and words[position] == item:
                    next_states.setdefault(position + 1, slots)
            states = next_states
        yield from states.items()
