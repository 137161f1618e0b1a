"""A Rhino expression's parts: its words, slots, choices and optional words, read into
elements; and the word automaton that runs a grammar's sentences all at once.

    parse_expression("[can I get, I want] a $size:size (hot) coffee", {"size"}, where)
        -> [(("can", "i", "get"), ("i", "want")), (("a",),), ((Slot("size", "size"),),),
            ((), ("hot",)), (("coffee",),)]

An element is a tuple of alternatives, each alternative a tuple of words or a Slot; an
optional element has the empty alternative. Not here: the grammar (voice/grammar.py: its
tables, sampling, parsing a transcript), checking the file's syntax (grammar_syntax.py).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

import regex

from glassformer.errors import GlassformerError
from glassformer.voice.grammar_syntax import check_expression, shown

LETTERS = r"\p{L}\p{M}"  # letters with their combining marks ("i̇stanbul": i, then a dot)
WORD = regex.compile(rf"[{LETTERS}']+")  # a word of a grammar: letters and apostrophes
ACCEPT = -1  # the automaton's state after a whole sentence
MAX_WORD_CHARS = 100  # letters in one word: German and Finnish compounds stay well under it;
# one 100,000-letter word took the grammar's BPE tokenizer over two minutes to encode
MAX_ELEMENTS = 200  # words and groups in one expression: a spoken command, not a speech
TOKEN_PATTERN = re.compile(r"\[[^\]]*\]|\([^)]*\)|\$[A-Za-z0-9_]+:[A-Za-z0-9_]+|[^\s\[\]()$]+")
APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})  # ’ and ʼ read as '
NOT_WORD = regex.compile(r"[^\w\s']")  # \w of the regex module: letters, marks, digits, _


def normalize(text: str) -> str:
    """Lower case, apostrophes kept (’ read as '), other punctuation dropped, single spaces.

    Composed (NFC) first, so that "é" written as e + an accent is the one "é"; combining marks
    stay part of their word ("İstanbul" lowers to "i̇stanbul", never "i stanbul"); invisible
    format characters (a zero-width joiner, a soft hyphen) are dropped, never a word break.

    Example: "Turn ON the T.V.!" -> "turn on the t v"; "İstanbul" -> "i̇stanbul"
    """
    text = unicodedata.normalize("NFC", text).lower().translate(APOSTROPHES)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(NOT_WORD.sub(" ", text).split())


@dataclass(frozen=True)
class Slot:
    type: str  # the slot type: a key of the grammar's slots table
    name: str  # the name the parsed slot value is reported under


# An element is a tuple of alternatives, each alternative a tuple of words or a Slot.
Alternative = tuple[str | Slot, ...]
Element = tuple[Alternative, ...]


def parse_expression(expression: str, slot_types: set[str], where: str) -> list[Element]:
    """Tokenize one Rhino expression into elements (alternatives of word/slot sequences).

    Raises:
        GlassformerError: bad syntax, an unknown slot type, or nothing that must be said.
    """
    check_expression(expression, where)
    elements: list[Element] = []
    for token in TOKEN_PATTERN.findall(expression):
        if token.startswith("["):  # each choice words or slots: "[$size:size, large]"
            options = [items_of(o, slot_types, expression, where) for o in token[1:-1].split(",")]
            if any(not o for o in options):
                raise GlassformerError(f"{where}: empty alternative in {shown(token)}")
            elements.append(tuple(tuple(o) for o in options))
        elif token.startswith("("):
            items = items_of(token[1:-1], slot_types, expression, where)  # "($period:period)"
            if not items:
                raise GlassformerError(
                    f"{where}: empty optional {shown(token)} in {shown(expression)}"
                )
            elements.append(((), tuple(items)))  # optional: nothing, or the items
        elif token.startswith("$"):
            elements.append(((slot(token, slot_types, expression, where),),))
        else:
            for word in normalize(token).split():
                elements.append(((word,),))
    if not elements:
        raise GlassformerError(f"{where}: empty expression")
    if len(elements) > MAX_ELEMENTS:
        raise GlassformerError(
            f"{where}: {len(elements)} words and groups in {shown(expression)}; a command has "
            f"at most {MAX_ELEMENTS}"
        )
    if all(() in element for element in elements):
        raise GlassformerError(f"{where}: every word of {shown(expression)} is optional")
    for alternative in itertools.chain.from_iterable(elements):
        for item in alternative:
            if isinstance(item, str):
                check_words(item, f"the word {shown(item)} in {shown(expression)}", where)
    check_slot_names(elements, expression, where)
    return elements


def items_of(text: str, slot_types: set[str], expression: str, where: str) -> list[str | Slot]:
    """The words and slots of one choice or optional group, in order."""
    items: list[str | Slot] = []
    for part in text.split():
        if part.startswith("$"):
            items.append(slot(part, slot_types, expression, where))
        else:
            items += normalize(part).split()
    return items


def check_slot_names(elements: list[Element], expression: str, where: str) -> None:
    """Raise if one sentence of the expression could fill a slot name twice ("$w:a $w:a"):
    its value would be reported once, the other lost. Alternatives of one choice may share a
    name (only one of them is said)."""
    taken: set[str] = set()
    for element in elements:
        names: set[str] = set()
        for alternative in element:
            mine = [item.name for item in alternative if isinstance(item, Slot)]
            twice = {name for name in mine if mine.count(name) > 1} | (taken & set(mine))
            if twice:
                raise GlassformerError(
                    f"{where}: the slot name {shown(min(twice))} appears twice in "
                    f"{shown(expression)} (each slot of a sentence needs its own name)"
                )
            names.update(mine)
        taken |= names


def check_words(phrase: str, what: str, where: str) -> None:
    """Raise unless each word of a (normalized) phrase is letters and apostrophes only.

    Example: check_words("a1", "the phrase 'a1'", "g.yaml: slot type 'x'") raises
    "g.yaml: slot type 'x': the phrase 'a1' has '1', which no transcript holds (...)"
    """
    for word in phrase.split():
        if len(word) > MAX_WORD_CHARS:
            raise GlassformerError(
                f"{where}: {what} has a word of {len(word):,} letters; at most {MAX_WORD_CHARS}"
            )
        if not WORD.fullmatch(word):
            bad = next(char for char in word if not WORD.fullmatch(char))
            raise GlassformerError(
                f"{where}: {what} has {bad!r}, which no transcript holds (letters and "
                "apostrophes only: write numbers as words)"
            )


def slot(token: str, slot_types: set[str], expression: str, where: str) -> Slot:
    """ "$type:name" -> Slot(type, name), the type checked against the grammar's slots."""
    slot_type, _, name = token[1:].partition(":")
    if slot_type not in slot_types or not name:
        raise GlassformerError(
            f"{where}: unknown slot type ${shown(slot_type)[1:-1]} in {shown(expression)}"
        )
    return Slot(slot_type, name)


class WordAutomaton:
    """A grammar as a nondeterministic automaton over words, run on every path at once.

    State s reads the word words[s] and then may be in any state of follow[s]; ACCEPT ends a
    sentence. Built from the end of each expression backwards, so an optional element or a
    choice is just a union of the states that may come next. Running it keeps a set of states,
    never a stack of choices: time is linear in the text, whatever the grammar.

    Example: "[a, a b] c" -> states 0:"a" 1:"a" 2:"b" 3:"c"; starts {0, 1};
        follow: 0 -> {3}, 1 -> {2}, 2 -> {3}, 3 -> {ACCEPT}
    """

    def __init__(self, sentences: list[list[Element]], slots: dict[str, list[str]]) -> None:
        self.words: list[str] = []
        self.follow: list[frozenset[int]] = []
        self.slots = slots
        self.starts = frozenset().union(
            *(self.add_elements(elements, frozenset([ACCEPT])) for elements in sentences)
        )

    def add_elements(self, elements: list[Element], then: frozenset[int]) -> frozenset[int]:
        """States that start the elements, each path continuing into `then`."""
        for element in reversed(elements):
            then = frozenset().union(*(self.add_alternative(a, then) for a in element))
        return then  # an empty alternative (an optional element) leaves `then` as it is

    def add_alternative(self, alternative: Alternative, then: frozenset[int]) -> frozenset[int]:
        for item in reversed(alternative):
            phrases = self.slots[item.type] if isinstance(item, Slot) else [item]
            starts = []
            for phrase in phrases:
                first = then
                for word in reversed(phrase.split()):
                    self.words.append(word)
                    self.follow.append(first)
                    first = frozenset([len(self.words) - 1])
                starts.append(first)
            then = frozenset().union(*starts)
        return then

    def transitions(self, states: frozenset[int]) -> dict[str, frozenset[int]]:
        """Word -> the states reading it leads to, from a set of states; "" -> ACCEPT's state
        when a sentence may end here."""
        following: dict[str, set[int]] = {}
        for state in states:
            if state == ACCEPT:
                following[""] = set()
            else:
                following.setdefault(self.words[state], set()).update(self.follow[state])
        return {word: frozenset(next_states) for word, next_states in following.items()}
