"""Rhino-format grammars: expansion, sampling, parsing back, and clear errors."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
EXPRESSIONS = "context:\n  expressions:\n    go:\n      {}\n  slots:\n    dir: [up, down]\n"


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
        ("- a\n- b\n", "expected a mapping with context.expressions at the top level"),
        ("just words", "not text"),
        ("", "not null"),
        (EXPRESSIONS.format("- 12"), "the expression '12' is a bare YAML number: quote it"),
        (EXPRESSIONS.format("- yes"), "the expression 'yes' is a bare YAML boolean: quote it"),
        (EXPRESSIONS.format("- 1.5"), "the expression '1.5' is a bare YAML number"),
        (EXPRESSIONS.format("- ~"), "intent 'go': None is null, not text \\(quote it\\)"),
        (EXPRESSIONS.format("- 2024-01-01"), "is a date, not text"),
        (EXPRESSIONS.format("- [a, b]"), "is a list, not text"),
        (EXPRESSIONS.format("- {a: b}"), "is a mapping, not text"),
        (EXPRESSIONS.format("- 'turn (on'"), "unbalanced '\\(' in 'turn \\(on'"),
        (EXPRESSIONS.format("- 'turn [on, off'"), "unbalanced '\\['"),
        (EXPRESSIONS.format("- 'turn on)'"), "unbalanced '\\)'"),
        (EXPRESSIONS.format("- 'a ] b'"), "unbalanced '\\]'"),
        (EXPRESSIONS.format("- '[a, (b)]'"), "groups do not nest"),
        (EXPRESSIONS.format("- 'play $media'"), "'\\$media' in 'play \\$media' is not a slot"),
        (EXPRESSIONS.format("- 'say ()'"), "empty optional"),
        (EXPRESSIONS.format("- '(please)'"), "every word of '\\(please\\)' is optional"),
        (EXPRESSIONS.format("- '$size:s' "), "unknown slot type \\$size"),
        (EXPRESSIONS.format("{a: b}"), "intent 'go': expected a list .* not a mapping"),
        (EXPRESSIONS.format("'turn on'"), "intent 'go': expected a list .* not text"),
        (EXPRESSIONS.format("[]"), "intent 'go': the list is empty"),
        ("context:\n  expressions: {}\n", "no expressions"),
        ("context:\n  expressions:\n    go: [x]\n  slots:\n    s: {a: 1}\n", "not a mapping"),
        ("context:\n  expressions:\n    go: [x]\n  slots:\n    s: small\n", "not text"),
        ("context:\n  expressions:\n    go: [x]\n  slots: [a]\n", "slots must be a mapping"),
        ("context:\n  expressions:\n    go: [x]\n  slots:\n    s: [~]\n", "None is null"),
        ("context:\n  expressions:\n    ~: [x]\n", "name must be text, not null"),
        ("context: {expressions: {go: [x]}}\n!!int x", "not valid YAML"),
    ],
)
def test_bad_grammars_give_one_line_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(content)
    with pytest.raises(GlassformerError, match=message) as error:
        Grammar.from_yaml(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_unreadable_grammar_files(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_bytes(b"context: \xff\xfe")
    with pytest.raises(GlassformerError, match="not UTF-8 text \\(byte offset 9"):
        Grammar.from_yaml(path)
    with pytest.raises(GlassformerError, match="no such grammar file"):
        Grammar.from_yaml(tmp_path / "missing.yaml")
    with pytest.raises(GlassformerError, match="is a directory"):
        Grammar.from_yaml(tmp_path)


@pytest.mark.parametrize(
    ("expressions", "slots", "message"),
    [
        ({"go": [12]}, {}, "intent 'go': 12 is a number, not text"),
        ({"go": [True]}, {}, "True is a boolean"),
        ({"go": "turn on"}, {}, "expected a list"),
        ({"go": ["$s:s"]}, {"s": {"small": 1}}, "slot type 's': expected a list"),
        ({}, {}, "no expressions"),
        ([], {}, "expressions must be a mapping, not a list"),
    ],
)
def test_bad_grammars_in_code(expressions: object, slots: object, message: str) -> None:
    with pytest.raises(GlassformerError, match=message):
        Grammar(expressions, slots, "mine")  # type: ignore[arg-type]


def test_content_hash_ignores_layout_but_not_content(tmp_path: Path) -> None:
    one, two, other = tmp_path / "one.yaml", tmp_path / "two.yaml", tmp_path / "other.yaml"
    one.write_text(EXPRESSIONS.format("- 'turn [on, off]'"))
    two.write_text("# same grammar\n" + EXPRESSIONS.format('["turn [on, off]"]'))
    other.write_text(EXPRESSIONS.format("- 'turn [off, on]'"))
    hashes = [Grammar.from_yaml(path).sha256 for path in (one, two, other)]
    assert hashes[0] == hashes[1] != hashes[2]
    assert Grammar.from_yaml(one).path == one.resolve()


YAML_PIECES = [
    "context:", "expressions:", "slots:", "go:", "size:", "\n", "  ", "- ", "[", "]", "{", "}",
    ", ", ": ", "a", "turn on", "$size:s", "(", ")", "'", '"', "~", "12", "yes", "2024-01-01",
    "2024-13-45", "!!int ", "!!float ", "!!binary ", "!!timestamp ", "!!set ", "!!omap ",
    "!!python/name:os.system ", "&x ", "*x", "? ", "|", ">", "#", "---\n", "<<: ", "%YAML 1.1\n",
    "\t", "\x00", "\ufeff", "é",
]  # fmt: skip
yaml_soup = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map("".join)
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner)
)


@st.composite
def damaged_grammars(draw: st.DrawFn) -> str:
    """A valid grammar's YAML with one part replaced by a random value."""
    import yaml

    document = {
        "context": {
            "expressions": {"go": ["turn $dir:dir (please)"], "stop": ["[stop, halt]"]},
            "slots": {"dir": ["up", "down"]},
        }
    }
    context = document["context"]
    where = draw(st.sampled_from(["top", "context", "expressions", "go", "slots", "dir"]))
    value = draw(values)
    if where == "top":
        return yaml.safe_dump(value)
    if where == "context":
        context[draw(st.sampled_from(["expressions", "slots"]))] = value
    elif where in ("expressions", "slots"):
        context[where][draw(st.text(max_size=4))] = value
    else:
        table = context["expressions" if where == "go" else "slots"][where]
        table[draw(st.integers(0, len(table) - 1))] = value
    return yaml.safe_dump(document)


def loads_or_fails_in_one_line(content: bytes) -> None:
    """Loading `content` as a grammar file succeeds or gives a one-line GlassformerError
    naming the file; any other exception fails the test."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grammar.yaml"
        path.write_bytes(content)
        try:
            grammar = Grammar.from_yaml(path)
        except GlassformerError as error:
            assert str(path) in str(error) and "\n" not in str(error), str(error)
            return
        command = grammar.sample(random.Random(0))  # a grammar that loads is usable
        assert grammar.parse(command.text) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=st.binary(max_size=300))
def test_random_bytes_as_a_grammar_give_glassformer_error(content: bytes) -> None:
    loads_or_fails_in_one_line(content)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=yaml_soup)
def test_random_yaml_as_a_grammar_gives_glassformer_error(content: str) -> None:
    loads_or_fails_in_one_line(content.encode("utf-8", errors="surrogatepass"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=damaged_grammars())
def test_damaged_grammars_give_glassformer_error(content: str) -> None:
    loads_or_fails_in_one_line(content.encode("utf-8", errors="surrogatepass"))


def test_quoted_yes_is_an_expression_and_digits_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(EXPRESSIONS.format("- 'twelve'\n      - \"yes\""))
    assert [c.text for c in Grammar.from_yaml(path).expand()] == ["twelve", "yes"]
    path.write_text(EXPRESSIONS.format("- '12'"))
    with pytest.raises(GlassformerError, match="the word '12' in '12' has '1', which no trans"):
        Grammar.from_yaml(path)


def test_yes_no_on_off_stay_words_and_numbers_stay_text(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "context:\n  expressions:\n    w: ['$w:w']\n  slots:\n    w: [yes, no, on, off, seven]\n"
    )
    grammar = Grammar.from_yaml(path)
    assert grammar.slots["w"] == ["yes", "no", "on", "off", "seven"]
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


def test_a_slot_may_be_optional() -> None:
    """Rhino's "($type:name)": the slot is said or not; said, it is reported (it was read
    as the words "type name" before)."""
    grammar = Grammar(
        {"book": ["at $hour:hour ($period:period)"]},
        {"hour": ["one", "two"], "period": ["a m", "o'clock"]},
    )
    assert grammar.parse("at two").slots == {"hour": "two"}
    assert grammar.parse("at one a m").slots == {"hour": "one", "period": "a m"}
    assert grammar.parse("at one period period") is None
    assert grammar.count() == 6 and grammar.can_continue("at one o")
    with pytest.raises(GlassformerError, match="unknown slot type"):
        Grammar({"book": ["at ($minute:minute)"]}, {"hour": ["one"]})
    appointments = DESKTOP.parent / "appointments.yaml"
    command = Grammar.from_yaml(appointments).parse("tomorrow at ten a m")
    assert command.slots == {"day": "tomorrow", "hour": "ten", "period": "a m"}


# --- hostile grammars: bounded by their own structure, answered in linear time --------------

LAUGHS = "".join(
    [
        "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        *(
            f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n"
            for a, b in zip("abcdefgh", "bcdefghi", strict=True)
        ),
        "context:\n  expressions:\n    go: [*i]\n",
    ]
)


def test_yaml_aliases_are_refused_before_they_expand(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)  # 9**9 = 387 million "lol"s if the aliases were followed
    with pytest.raises(
        GlassformerError, match="the alias \\*a on line 2: aliases are not"
    ) as error:
        Grammar.from_yaml(path)
    assert "\n" not in str(error.value) and len(str(error.value)) < 300


def test_a_value_is_never_written_out_whole_into_a_message() -> None:
    nested = [["x" * 10_000] * 1000] * 1000
    with pytest.raises(GlassformerError, match="is a list, not text") as error:
        Grammar({"go": [nested]}, {})  # type: ignore[list-item]
    assert len(str(error.value)) < 300


def test_phrases_a_transcript_cannot_hold_are_refused_naming_them() -> None:
    with pytest.raises(GlassformerError, match="slot type 'id': the phrase 'b2' has '2'"):
        Grammar({"go": ["say $id:id"]}, {"id": ["a", "b2", "c3"]}, "g.yaml")
    with pytest.raises(GlassformerError, match="the word 'snake_case' in .* has '_'"):
        Grammar({"go": ["say [it, snake_case]"]}, {})
    assert Grammar({"go": ["it's naïve"]}, {}).accepts("it's naïve")


def test_the_grammar_size_is_bounded_before_anything_is_built() -> None:
    letters = "abcdefghijklmnopqrstuvwxyz"
    phrases = [a + b + c for a in letters for b in letters for c in letters[:3]]  # 2,028
    expressions = {f"i{n}": ["$w:w"] * 500 for n in range(1)}  # 500 references * 2,028 words
    with pytest.raises(GlassformerError, match="1,014,000 words with every slot written out"):
        Grammar(expressions, {"w": phrases})


def test_ambiguous_choices_answer_in_linear_time() -> None:
    """40 `[a, a a]` choices: a backtracking matcher tries 2**40 splits of a text that fails."""
    import time

    grammar = Grammar({"go": [" ".join(["[a, a a]"] * 40) + " b"]}, {})
    started = time.perf_counter()
    assert grammar.accepts(" ".join(["a"] * 60 + ["b"]))
    assert not grammar.accepts(" ".join(["a"] * 81 + ["b"]))
    assert not grammar.can_continue(" ".join(["a"] * 81))
    assert grammar.can_continue(" ".join(["a"] * 80) + " b")
    assert grammar.parse(" ".join(["a"] * 81 + ["b"])) is None
    assert grammar.parse(" ".join(["a"] * 41 + ["b"])).intent == "go"
    assert grammar.count() == 2**40
    assert next(grammar.expand()).text == " ".join(["a"] * 40 + ["b"])
    assert time.perf_counter() - started < 1.0


WORDS = st.sampled_from(["a", "b", "a b", "ab"])
ELEMENTS = st.lists(
    st.one_of(
        WORDS,
        st.lists(WORDS, min_size=1, max_size=3).map(lambda o: "[" + ", ".join(o) + "]"),
        WORDS.map(lambda w: f"({w})"),
        st.just("$s:s"),
        st.just("($s:s)"),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(ELEMENTS.map(" ".join), min_size=1, max_size=3), st.text("ab ", max_size=8))
def test_the_automaton_answers_as_the_expanded_sentences_do(
    expressions: list[str], text: str
) -> None:
    if all(e.startswith("(") and e.endswith(")") and " " not in e for e in expressions):
        return
    try:
        grammar = Grammar({"go": expressions}, {"s": ["a", "b a"]})
    except GlassformerError:
        return  # every word optional
    sentences = {c.text for c in grammar.expand()}
    assert grammar.count() == len(list(grammar.expand()))
    prefixes = [s[:cut] for s in sentences for cut in range(len(s))]
    odd = [" " + p for p in prefixes] + [p.replace(" ", "  ") for p in prefixes]  # never allowed
    for candidate in [text, *sentences, *prefixes, *odd]:
        assert grammar.accepts(candidate) == (candidate in sentences), candidate
        assert grammar.can_continue(candidate) == any(s.startswith(candidate) for s in sentences)
        assert (grammar.parse(candidate) is not None) == (normalize(candidate) in sentences)


def test_a_slot_inside_a_choice_is_a_slot() -> None:
    """`[$w:w, two]` is the slot or the word: it was read as the words "w w"."""
    grammar = Grammar({"n": ["[$w:w, two] please"]}, {"w": ["one", "three"]})
    assert grammar.parse("three please") == Command("three please", "n", {"w": "three"})
    assert grammar.parse("two please") == Command("two please", "n", {})
    assert grammar.parse("w w please") is None
    assert sorted(c.text for c in grammar.expand()) == [
        "one please",
        "three please",
        "two please",
    ]


@pytest.mark.parametrize(
    ("expressions", "message"),
    [
        ({"n": ["$w:w:extra"]}, "'$w:w:extra' in '$w:w:extra' is not a slot"),  # was "one extra"
        ({"n": ["$w:a $w:a"]}, "the slot name 'a' appears twice"),  # was one slot reported
        ({"n": ["[$w:a] and ($w:a)"]}, "the slot name 'a' appears twice"),
        ({"n": ["[$w:a $w:a, two]"]}, "the slot name 'a' appears twice"),
    ],
)
def test_grammars_that_would_change_without_a_word_are_refused(
    expressions: dict, message: str
) -> None:
    with pytest.raises(GlassformerError, match=re.escape(message)):
        Grammar(expressions, {"w": ["one"]})


def test_alternatives_of_one_choice_may_share_a_slot_name() -> None:
    grammar = Grammar({"n": ["[$w:a, $v:a] now"]}, {"w": ["one"], "v": ["two"]})
    assert grammar.parse("two now") == Command("two now", "n", {"a": "two"})


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys and drops the first without a word."""
    path = tmp_path / "g.yaml"
    path.write_text("context:\n  expressions:\n    a:\n      - one\n    a:\n      - two\n")
    with pytest.raises(GlassformerError, match="the key 'a' appears twice, on lines 3 and 5"):
        Grammar.from_yaml(path)


def test_words_of_any_script_are_read_as_written() -> None:
    """ "İstanbul" lowers to i + a combining dot, which stays in its word (it became
    "i stanbul", a phrase no transcript could match); a zero-width joiner is no word break;
    a decomposed accent is the composed one; ’ is an apostrophe."""
    grammar = Grammar(
        {"go": ["go to $c:city", "don't stop"]},
        {"c": ["İstanbul", "Zürich", "Reykjavi\u0301k", "Kr\u200dakow"]},
    )
    assert grammar.parse("Go to İstanbul!").slots == {"city": "i\u0307stanbul"}
    assert grammar.parse("go to zu\u0308rich").slots == {"city": "zürich"}  # decomposed ü
    assert grammar.parse("go to Reykjavík").slots == {"city": "reykjavík"}
    assert grammar.parse("go to krakow").slots == {"city": "krakow"}
    assert grammar.parse("Don’t stop.") == Command("don't stop", "go", {})
    assert normalize("a\u00adb c\u200dd") == "ab cd"  # soft hyphen, zero-width joiner


@pytest.mark.parametrize(
    ("expressions", "slots", "message"),
    [
        ({"a": ["x" * 100_000]}, {}, "a word of 100,000 letters; at most 100"),  # BPE: minutes
        ({"a": ["go"]}, {"s": ["y" * 101]}, "a word of 101 letters"),
        ({"a": [" ".join(["go"] * 3000)]}, {}, "3000 words and groups"),  # a RecursionError
    ],
)
def test_a_grammar_is_bounded_where_it_is_read(
    expressions: dict, slots: dict, message: str
) -> None:
    with pytest.raises(GlassformerError, match=message):
        Grammar(expressions, slots)


def test_a_grammar_file_is_bounded_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("context:\n  expressions:\n    a:\n" + "      - go\n" * 500_000)  # 5.5 MB
    with pytest.raises(GlassformerError, match="more than a grammar file may hold"):
        Grammar.from_yaml(path)
