"""hassil's parsed templates compiled into a sentence network (voice/sentence_network.py).

    Compiler(intents, home_lists, language).compile_all()  -> [(template graph, intent)]

hassil parses (`IntentData.sentences`: Sequence, Alternative, Permutation, TextChunk,
ListReference, RuleReference); this module only turns its tree into states and edges:

    TextChunk "turn on "   a chain of character edges (folded: voice/homeassistant.fold)
    Sequence a b c         their graphs one after another
    Alternative [a|b]      each from the same start to the same end ([the] has an empty one)
    Permutation (a;b)      each order, hassil's spaces between the items
    <rule>                 a call into the rule's graph (built once per sentence block)
    {list}                 a call into the list's graph: its values, those whose context the
                           block's requires_context allows; a range as digits and the
                           language's number words; a wildcard as any text

Not here: running the network (sentence_network.py), hassil's parser, the home.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from dataclasses import dataclass
from typing import Any

from glassformer.errors import GlassformerError
from glassformer.voice.sentence_network import Graph, Network

MAX_PERMUTED = 5  # items of one permutation: 5! = 120 orders at most
APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})
EXTRA_CHARACTERS = frozenset("'%°-/")  # besides letters, marks and digits ("1/2 an hour")


def is_grammar_character(char: str) -> bool:
    """Letters, marks, digits and ' % ° - /: what a folded sentence is made of (and spaces)."""
    return char in EXTRA_CHARACTERS or unicodedata.category(char)[0] in "LMN"


def fold_chunk(text: str) -> str:
    """A template's text as the network reads it: NFC, lower case, ’ as ', what is not a
    grammar character a space, runs of spaces one (a space at either end kept: it separates
    this chunk from the next). Example: " What's up? " -> " what's up "."""
    text = unicodedata.normalize("NFC", text).lower().translate(APOSTROPHES)
    kept = "".join(
        c if is_grammar_character(c) else " " for c in text if unicodedata.category(c) != "Cf"
    )
    words = kept.split()
    if not words:
        return " " if kept else ""
    return (" " if kept[0] == " " else "") + " ".join(words) + (" " if kept[-1] == " " else "")


def template_or_text(text: str) -> Any:  # noqa: ANN401 - a hassil Expression
    """A name as hassil reads it: a template ("Trader Joe[']s") parsed, plain text as is."""
    from hassil import TextChunk, is_template, parse_sentence

    return parse_sentence(text).expression if is_template(text) else TextChunk(text)


@dataclass(frozen=True)
class Block:
    """What one IntentData block's templates see: its rules and lists (the language's, the
    home's, its own), the context its {name} values must fit, and its wildcard lists."""

    rules: dict
    lists: dict
    requires: dict
    excludes: dict
    wildcards: frozenset[str]
    key: str  # the same key: the same graphs of rules and lists (built once)


class Compiler:
    """hassil's templates for a language into one Network (module docstring)."""

    def __init__(self, intents: Any, home_lists: dict, language: str) -> None:  # noqa: ANN401
        self.intents, self.home_lists, self.language = intents, home_lists, language
        self.network = Network()
        self.built: dict[tuple[str, str, str], Graph] = {}  # (kind, name, block key) -> graph

    def compile_all(self) -> list[tuple[Graph, str]]:
        """Every template of every intent: its graph and its intent's name. A template that
        begins with free text ("{item} on my list") is left out (counted in self.left_out):
        with nothing on its left to hold it, its wildcard lets any speech in, and the full
        French set's "{command} in 1 second" turned every clip into a timer."""
        templates = []
        self.left_out = 0
        for intent in self.intents.intents.values():
            for number, data in enumerate(intent.data):
                block = self.block(intent.name, number, data)
                for sentence in data.sentences:
                    if self.starts_free(sentence.expression, block, 0):
                        self.left_out += 1
                        continue
                    graph = self.network.graph()
                    self.expression(sentence.expression, graph, block, sentence.text)
                    templates.append((graph, intent.name))
        return templates

    def block(self, intent: str, number: int, data: Any) -> Block:  # noqa: ANN401
        own = bool(data.expansion_rules or data.slot_lists)
        context = json.dumps([data.requires_context, data.excludes_context], sort_keys=True)
        return Block(
            {**self.intents.expansion_rules, **data.expansion_rules},
            {**self.intents.slot_lists, **self.home_lists, **data.slot_lists},
            dict(data.requires_context),
            dict(data.excludes_context),
            frozenset(data.wildcard_list_names),
            f"{intent}/{number}" if own else context,
        )

    def expression(self, expression: Any, graph: Graph, block: Block, where: str | None) -> None:  # noqa: ANN401
        """Edges from graph.start to graph.end that read what `expression` matches."""
        from hassil import (
            Alternative,
            ListReference,
            Permutation,
            RuleReference,
            Sequence,
            TextChunk,
        )

        net = self.network
        if isinstance(expression, TextChunk):
            net.text(fold_chunk(expression.text), graph)
        elif isinstance(expression, Alternative):
            for item in expression.items:
                self.expression(item, self.inner(graph), block, where)
        elif isinstance(expression, Permutation):
            if len(expression.items) > MAX_PERMUTED:
                raise GlassformerError(
                    f"{where!r}: a permutation of {len(expression.items)} items; at most "
                    f"{MAX_PERMUTED}"
                )
            for order in itertools.permutations(expression.items):
                self.sequence(list(order), self.inner(graph), block, where)
        elif isinstance(expression, Sequence):
            self.sequence(expression.items, graph, block, where)
        elif isinstance(expression, RuleReference):
            net.call(self.rule(expression.rule_name, block, where), graph)
        elif isinstance(expression, ListReference):
            self.list_reference(expression, graph, block, where)
        else:
            raise GlassformerError(f"{where!r}: hassil gave an expression of an unknown kind")

    def starts_free(self, expression: Any, block: Block, depth: int) -> bool:  # noqa: ANN401
        """Whether the expression can begin with a wildcard (free text)."""
        from hassil import (
            Alternative,
            ListReference,
            Permutation,
            RuleReference,
            Sequence,
        )

        if depth > 32:  # rules calling rules this deep: hassil's own limit is lower
            return False
        if isinstance(expression, ListReference):
            named = block.lists.get(expression.list_name)
            return expression.list_name in block.wildcards or type(named).__name__ == (
                "WildcardSlotList"
            )
        if isinstance(expression, RuleReference):
            rule = block.rules.get(expression.rule_name)
            return rule is not None and self.starts_free(rule.expression, block, depth + 1)
        if isinstance(expression, (Alternative, Permutation)):
            return any(self.starts_free(item, block, depth + 1) for item in expression.items)
        if isinstance(expression, Sequence):
            for item in expression.items:
                if self.starts_free(item, block, depth + 1):
                    return True
                if not can_be_empty(item):
                    return False
        return False

    def inner(self, graph: Graph) -> Graph:
        """A fresh graph between graph.start and graph.end (one alternative's)."""
        inner = self.network.graph()
        self.network.epsilon[graph.start].append(inner.start)
        self.network.epsilon[inner.end].append(graph.end)
        return inner

    def sequence(self, items: list, graph: Graph, block: Block, where: str | None) -> None:
        here = graph.start
        for position, item in enumerate(items):
            there = graph.end if position == len(items) - 1 else self.network.state()
            self.expression(item, Graph(here, there), block, where)
            here = there
        if not items:
            self.network.epsilon[graph.start].append(graph.end)

    def rule(self, name: str, block: Block, where: str | None) -> Graph:
        if name not in block.rules:
            raise GlassformerError(f"{where!r} uses the rule <{name}>, which nothing defines")
        key = ("rule", name, block.key)
        if key not in self.built:
            graph = self.built[key] = self.network.graph()
            self.expression(block.rules[name].expression, graph, block, f"<{name}>")
        return self.built[key]

    def list_reference(self, reference: Any, graph: Graph, block: Block, where: str | None) -> None:  # noqa: ANN401
        from hassil import RangeSlotList, TextSlotList, WildcardSlotList

        name = reference.list_name
        if reference.is_inline_range:
            start, stop, step = reference.get_inline_range()
            slot_list = RangeSlotList(name=None, start=start, stop=stop, step=step)
        elif name in block.lists:
            slot_list = block.lists[name]
        else:
            raise GlassformerError(f"{where!r} uses the list {{{name}}}, which nothing defines")
        if isinstance(slot_list, WildcardSlotList) or name in block.wildcards:
            self.network.any_text(graph)
            return
        key = ("list", name if not reference.is_inline_range else f"{start}..{stop},{step}", "")
        if isinstance(slot_list, TextSlotList):
            key = ("list", name, block.key)
        if key not in self.built:
            built = self.built[key] = self.network.graph()
            if isinstance(slot_list, TextSlotList):
                self.values(slot_list, built, block, name)
            else:
                self.numbers(slot_list, built)
        self.network.call(self.built[key], graph)

    def values(self, slot_list: Any, graph: Graph, block: Block, name: str) -> None:  # noqa: ANN401
        """A text list's values that fit the block: plain texts in one trie (200 device
        names are one state where the list starts, not 200), templates each their own."""
        from hassil import TextChunk

        plain = []
        for value in slot_list.values:
            if not fits(value.context, block):
                continue
            if isinstance(value.text_in, TextChunk):
                plain.append(fold_chunk(value.text_in.text).strip())
            else:
                self.expression(value.text_in, self.inner(graph), block, f"{{{name}}}")
        self.trie(sorted({text for text in plain if text}), graph)

    def numbers(self, slot_list: Any, graph: Graph) -> None:  # noqa: ANN401
        """A range's numbers as digits (whole numbers: Whisper writes "2.5" with a period,
        which no sentence holds) and as the language's words, in a trie of characters."""
        from hassil.numbers import get_rbnf_engine

        texts: set[str] = set()
        numbers = list(slot_list.get_numbers())
        if slot_list.digits:
            texts.update(str(n) for n in numbers if float(n).is_integer())
        if slot_list.words:
            try:
                engine = get_rbnf_engine(slot_list.words_language or self.language)
            except ValueError:
                engine = None  # a language without number words: digits only
            for number in numbers if engine is not None else []:
                result = engine.format_number(number)
                texts.update(fold_chunk(t).strip() for t in result.text_by_ruleset.values())
        self.trie(sorted(t for t in texts if t), graph)

    def trie(self, texts: list[str], graph: Graph) -> None:
        """Edges reading exactly the given texts, sharing their common beginnings."""
        net, children = self.network, {}  # (state, char) -> state
        for text in texts:
            here = graph.start
            for char in text:
                there = children.get((here, char))
                if there is None:
                    there = children[(here, char)] = net.state()
                    (
                        net.spaces[here] if char == " " else net.chars[here].setdefault(char, [])
                    ).append(there)
                here = there
            net.epsilon[here].append(graph.end)


def can_be_empty(expression: Any) -> bool:  # noqa: ANN401
    """Whether the expression may match no text (a blank, an optional part)."""
    from hassil import Alternative, Sequence, TextChunk

    if isinstance(expression, TextChunk):
        return not expression.text.strip()
    if isinstance(expression, Alternative):
        return any(can_be_empty(item) for item in expression.items)
    if isinstance(expression, Sequence):
        return all(can_be_empty(item) for item in expression.items)
    return False


def fits(context: dict | None, block: Block) -> bool:
    """Whether a list value with this context may appear in the block's sentences."""
    from hassil import check_excluded_context, check_required_context

    if not context:
        return True
    return check_required_context(block.requires, context, allow_missing_keys=True) and (
        check_excluded_context(block.excludes, context)
    )
