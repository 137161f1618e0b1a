"""Home Assistant's sentences as a grammar (voice/homeassistant.py, hassil_text.py,
sentence_network.py): the network accepts what hassil reads, in every language, without
writing a sentence out; a home's names go where their domain allows; numbers, wildcards and
languages without spaces; custom sentences and homes, and their errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.voice.homeassistant import HomeAssistantGrammar, fold
from glassformer.voice.homes import Home

HOME = Path(__file__).parent / "homes" / "en.yaml"


@pytest.fixture(scope="module")
def home() -> Home:
    return Home.from_yaml(HOME)


@pytest.fixture(scope="module")
def english(home: Home) -> HomeAssistantGrammar:
    return HomeAssistantGrammar.load("en", home, "full")


@pytest.mark.parametrize(
    ("language", "sentences"),
    [("en", "speech"), ("en", "full"), ("fr", "speech"), ("de", "full"), ("zh-CN", "full")],
)
def test_every_sentence_the_network_holds_is_one_hassil_reads(
    home: Home, language: str, sentences: str
) -> None:
    """Sentences drawn from the network (every sentence equally likely) are whole sentences
    of it, every prefix of them can go on, and hassil reads each into an intent: the
    constraint and Home Assistant's own recognizer agree."""
    grammar = HomeAssistantGrammar.load(language, home, sentences)
    rng = random.Random(0)
    for _ in range(60):
        command = grammar.sample(rng)
        text = command.text
        assert grammar.accepts(text), text
        assert all(grammar.can_continue(text[:cut]) for cut in range(len(text))), text
        assert grammar.parse(text) is not None, text
    assert not grammar.accepts("this is no command at all")


def test_a_device_is_named_only_where_its_domain_is_allowed(english: HomeAssistantGrammar) -> None:
    assert english.parse("open the patio awning").slots == {"name": "Patio Awning"}
    assert english.accepts("open the patio awning")
    assert not english.accepts("open the ceiling light")  # a light has no "open"
    assert english.accepts("turn on the reading lamps")  # an inflected form of its name
    assert english.parse("turn on the reading lamps").slots == {"name": "Reading Lamp"}


def test_numbers_read_as_digits_or_words_and_slots_are_numbers(
    english: HomeAssistantGrammar,
) -> None:
    for said in ("50%", "fifty percent", "50 percent"):
        text = f"set the brightness of the ceiling light to {said}"
        assert english.accepts(text), text
        assert english.parse(text).slots == {"name": "Ceiling Light", "brightness": "50"}
    assert english.parse("set a timer for five minutes").slots == {"minutes": "5"}


def test_free_text_inside_a_sentence_is_held_on_both_sides(english: HomeAssistantGrammar) -> None:
    text = "add oat milk to my trader joe's list"
    assert english.accepts(text)
    assert english.parse(text).slots == {"item": "oat milk", "name": "Trader Joe[']s"}
    assert english.can_continue("add " + "x" * 39)
    assert not english.can_continue("add " + "x" * 41 + " to my")  # free text is bounded
    assert english.left_out > 0  # templates that begin with free text let anything in


def test_sentences_of_the_microphones_room_are_commands_with_or_without_an_area(
    home: Home,
) -> None:
    anywhere = HomeAssistantGrammar.load("en", home)
    assert anywhere.parse("turn on the lights").slots == {"domain": "light"}
    kitchen = HomeAssistantGrammar.load("en", home, area="Kitchen")
    assert kitchen.parse("turn on the lights").slots == {"domain": "light", "area": "Kitchen"}


def test_a_language_without_spaces(home: Home) -> None:
    chinese = HomeAssistantGrammar.load("zh-CN", home, "full")
    text = "打开所有的灯"
    assert chinese.accepts(text) and chinese.parse(text).intent == "HassTurnOn"
    assert chinese.next_characters("打开") and " " not in chinese.next_characters("打开所")


def test_sentences_are_counted_not_written_out(english: HomeAssistantGrammar) -> None:
    assert english.count() > 10**9  # billions, counted in a moment


def test_folding_keeps_what_sentences_are_made_of() -> None:
    assert fold("Turn ON the Kitchen-Light!") == "turn on the kitchen-light"
    assert fold("Régler à 50 %, s’il te plaît.") == "régler à 50 % s'il te plaît"


def test_custom_sentences_add_intents_and_lists(tmp_path: Path, home: Home) -> None:
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "coffee.yaml").write_text(
        "language: en\nintents:\n  BrewCoffee:\n    data:\n"
        "      - sentences:\n          - brew [a] {drink}\n"
        "lists:\n  drink:\n    values: [espresso, latte]\n"
    )
    grammar = HomeAssistantGrammar.load("en", home, custom=[str(custom)])
    assert grammar.parse("brew a latte").intent == "BrewCoffee"
    assert "BrewCoffee" in grammar.intents() and grammar.accepts("turn on the tv")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("intents: [1, 2]\n", "expected a mapping with intents"),
        ('language: en\nintents:\n  X:\n    data:\n      - sentences: ["(a"]\n', "hassil"),
        (
            "language: en\nintents:\n  X:\n    data:\n      - sentences:\n"
            "          - brew {nothing}\n",
            "custom/bad.yaml:6: 'brew {nothing}' uses the list {nothing}, which nothing defines",
        ),
        ("a: *b\n", "not valid YAML"),
    ],
)
def test_a_custom_sentences_file_that_cannot_be_used_is_one_line_naming_it(
    tmp_path: Path, home: Home, content: str, message: str
) -> None:
    (tmp_path / "custom").mkdir()
    path = tmp_path / "custom" / "bad.yaml"
    path.write_text(content)
    with pytest.raises(GlassformerError) as error:
        HomeAssistantGrammar.load("en", home, custom=[str(path)])
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(path) in str(error.value) or message == "hassil"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- a\n", "expected a mapping of floors, areas, entities"),
        ("rooms: []\n", "unknown key(s) ['rooms']"),
        ("entities:\n  - {id: light.x}\n", "a name must be text"),
        ("entities:\n  - {name: X}\n", "no domain"),
        ("entities:\n  - {name: X, id: light.x, area: attic}\n", "area 'attic' is no area's id"),
        ("areas:\n  - {name: A, floor: f9}\n", "on floor 'f9', which no floor has as id"),
        ("entities: *a\n", "not valid YAML"),
    ],
)
def test_a_home_file_of_the_wrong_shape_is_one_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "home.yaml"
    path.write_text(content)
    with pytest.raises(GlassformerError, match=None) as error:
        Home.from_yaml(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_an_unknown_language_lists_the_known_ones(home: Home) -> None:
    with pytest.raises(GlassformerError, match="'xx': Home Assistant has no sentences for it"):
        HomeAssistantGrammar.load("xx", home)
