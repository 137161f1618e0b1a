"""Rhino-format grammars: expansion, sampling, parsing back, and clear errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.voice.grammar import Command, Grammar, normalize

SMALL = {
    "expressions": {
        "order": ["[can I get, I want] a $size:size (hot) coffee (please)"],
        "cancel": ["cancel (my order)"],
    },
    "slots": {"size": ["small", "extra large"]},
}
DESKTOP = Path(__file__).parents[2] / "glassformer" / "voice" / "grammars" / "desktop.yaml"
SHARED = Path(__file__).parents[2] / "../shared/data/grammars/coffee_maker.yaml"


def small() -> Grammar:
    return Grammar(SMALL["expressions"], SMALL["slots"])


def test_expand_enumerates_every_path_with_labels() -> None:
    grammar = small()
    sentences = list(grammar.expand())
    assert len(sentences) == grammar.count() == 2 * 2 * 2 * 2 + 2
    assert (
        Command("i want a extra large hot coffee please", "order", {"size": "extra large"})
        in sentences
    )
    assert Command("cancel", "cancel", {}) in sentences


def test_every_expanded_and_sampled_sentence_parses_back() -> None:
    grammar = small()
    for command in grammar.expand():
        assert grammar.parse(command.text) == command
    rng = random.Random(0)
    desktop = Grammar.from_yaml(DESKTOP)
    for _ in range(300):
        command = desktop.sample(rng)
        assert desktop.parse(command.text) == command


def test_parse_normalizes_and_rejects_what_the_grammar_cannot_say() -> None:
    grammar = small()
    assert grammar.parse("Can I get a SMALL coffee, please?") == Command(
        "can i get a small coffee please", "order", {"size": "small"}
    )
    assert grammar.parse("can I get a medium coffee") is None
    assert grammar.parse("cancel my") is None


def test_the_articles_commands_are_in_the_default_grammar() -> None:
    grammar = Grammar.from_yaml(DESKTOP)
    for text in (
        "show me my directories please",
        "find my files",
        "check whether the battery ran down please",
        "check whether the program ran please",
        "check the program log and find out whether it ran please",
        "set the volume to ninety nine percent",
        "dial oh one two three",
    ):
        assert grammar.parse(text) is not None, text
    assert grammar.parse("check the battery log and find out whether it ran down please").slots == {
        "subject": "battery"
    }


@pytest.mark.skipif(not SHARED.is_file(), reason="../shared/data is not present")
def test_the_shared_coffee_maker_grammar_loads_and_round_trips() -> None:
    grammar = Grammar.from_yaml(SHARED)
    command = grammar.sample(random.Random(3))
    assert command.intent == "orderDrink" and grammar.parse(command.text) == command


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("context: [", "not valid YAML"),
        ("slots: {}", "expected context.expressions"),
        ("context:\n  expressions:\n    a: ['$nope:x']\n  slots: {}", "unknown slot type \\$nope"),
        ("context:\n  expressions:\n    a: ['[x, ]']", "empty alternative"),
    ],
)
def test_bad_grammars_give_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(content)
    with pytest.raises(GlassformerError, match=message):
        Grammar.from_yaml(path)


def test_yes_no_on_off_stay_words_and_numbers_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "context:\n  expressions:\n    w: ['$w:w']\n  slots:\n    w: [yes, no, on, off, 7]\n"
    )
    grammar = Grammar.from_yaml(path)
    assert grammar.slots["w"] == ["yes", "no", "on", "off", "7"]
    assert grammar.parse("turn... no").__class__ is type(None) and grammar.parse("off").slots == {
        "w": "off"
    }


def test_normalize() -> None:
    assert normalize("  I'd like a Latte, please!  ") == "i'd like a latte please"


@pytest.mark.parametrize("which", ["small", "desktop", "coffee"])
def test_pattern_accepts_exactly_the_grammar_and_its_prefixes(which: str) -> None:
    if which == "coffee" and not SHARED.is_file():
        pytest.skip("../shared/data is optional")
    grammar = {"small": small, "desktop": lambda: Grammar.from_yaml(DESKTOP)}.get(
        which, lambda: Grammar.from_yaml(SHARED)
    )()
    rng = random.Random(0)
    for _ in range(100):
        text = grammar.sample(rng).text
        assert grammar.accepts(text)
        assert all(grammar.can_continue(text[:cut]) for cut in range(len(text)))
        broken = text.rsplit(" ", 1)[0] + " zebra"
        assert grammar.accepts(broken) == (grammar.parse(broken) is not None) is False
        assert not grammar.can_continue(text + "zz")


def test_pattern_handles_optional_words_and_slots() -> None:
    grammar = small()
    assert grammar.accepts("cancel") and grammar.accepts("cancel my order")
    assert grammar.can_continue("cancel my") and not grammar.accepts("cancel my")
    assert grammar.can_continue("i want a extra l")
    assert not grammar.can_continue("i want a medium")
    assert not grammar.can_continue("want")
