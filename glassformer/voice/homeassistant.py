"""Home Assistant's own sentences, in the user's language, with a home's names: a CommandGrammar.

    HomeAssistantGrammar.load("fr", home)     the speech subset of home-assistant-intents for
                                              French (its `speech_to_phrase/` folder), filled
                                              with the home's areas, floors and devices
    .load("en", home, sentences="full")       every English sentence Home Assistant knows
    .load("en", home, custom=["my/"])         and a user's custom_sentences/<lang>/*.yaml

The sentences are hassil's templates, parsed by hassil (no parser of ours), compiled into a
character network (voice/sentence_network.py): the constraint never writes a sentence out.
A device's name may follow only the sentences whose required domain it has (requires_context,
excludes_context: "open the {name}" names covers and valves, not lights); sentences that take
their area from the microphone's room ("turn on the lights") are commands with or without
`area`. Numbers ({brightness} 0-100, a timer's minutes) read as digits or as the language's
words (hassil's unicode-rbnf), wildcards ({search_query}) as free text between the words on
either side. The text the beam writes is read back by hassil itself into Home Assistant's
intent and its slots, so the result is what Home Assistant's own agent would make of it.

Texts are folded before the network reads them (`fold`: NFC, lower case, ’ as ', letters,
marks, digits and ' % ° - kept, the rest a space): no character of a language is assumed, and
a language without spaces (Chinese) has none in its templates either.

Not here: the home's file (voice/homes.py) or a running Home Assistant (voice/ha_client.py).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from glassformer.errors import GlassformerError, first_line
from glassformer.voice.commands import Command
from glassformer.voice.hassil_text import Compiler, fold_chunk, is_grammar_character
from glassformer.voice.homes import Home
from glassformer.voice.network_walks import PathCounts, count_paths, sample_text
from glassformer.voice.sentence_network import ANY, Chart, NetworkRunner

SENTENCE_SETS = ("speech", "full")  # the curated speech subset, or every sentence
MICROPHONE_AREA = "\x00the microphone's room"  # the area context when none is named
PREFIX_MEMORY = 200_000  # prefixes whose configurations are remembered
MAX_CUSTOM_BYTES = 4 << 20  # one custom sentences file


def fold(text: str) -> str:
    """A transcript as the network reads it (hassil_text.fold_chunk, its ends trimmed).

    Example: "Turn ON the Kitchen-Light!" -> "turn on the kitchen-light"
    """
    return fold_chunk(text).strip()


def languages() -> list[str]:
    import home_assistant_intents

    return list(home_assistant_intents.get_languages())


def intents_document(language: str, sentences: str) -> tuple[dict, str]:
    """home-assistant-intents' sentences for a language, and which set they are: the speech
    subset, or the full set where the language has no subset (said in the second value).

    Raises:
        GlassformerError: an unknown language (the known ones listed) or sentence set.
    """
    import home_assistant_intents

    if sentences not in SENTENCE_SETS:
        raise GlassformerError(f"sentences={sentences!r}: give {' or '.join(SENTENCE_SETS)}")
    if language not in languages():
        known = ", ".join(languages())
        raise GlassformerError(f"{language!r}: Home Assistant has no sentences for it ({known})")
    if sentences == "speech":
        subset = home_assistant_intents.get_speech_to_phrase_intents(language)
        if subset is not None:
            return subset, "speech"
    return home_assistant_intents.get_intents(language), (
        "full" if sentences == "full" else "full (no speech subset for this language)"
    )


def custom_documents(paths: list[str], language: str) -> list[tuple[str, dict]]:
    """Each custom sentences file (a folder: its *.yaml), read and checked by hassil alone, so
    that an error names its file."""
    from hassil import Intents

    from glassformer.textfiles import read_utf8
    from glassformer.voice.grammar_syntax import load_yaml_plain

    files: list[Path] = []
    for given in map(Path, paths):
        files += sorted(given.glob("*.yaml")) if given.is_dir() else [given]
    documents = []
    for file in files:
        text = read_utf8(file, "custom sentences", MAX_CUSTOM_BYTES)
        try:
            document = load_yaml_plain(text, "custom sentences")
        except ValueError as error:
            raise GlassformerError(f"{file}: not valid YAML ({first_line(error)})") from None
        if not isinstance(document, dict) or not isinstance(document.get("intents", {}), dict):
            raise GlassformerError(f"{file}: expected a mapping with intents (custom sentences)")
        try:  # hassil parses templates when first asked for them: ask now
            parsed = Intents.from_dict({"language": language, **document})
            for intent in parsed.intents.values():
                for data in intent.data:
                    data.sentences  # noqa: B018 - parsing is what is asked
        except Exception as error:  # noqa: BLE001 - hassil raises many kinds for a bad file
            raise GlassformerError(f"{file}: hassil cannot read it ({first_line(error)})") from None
        documents.append((str(file), document))
    return documents


def slot_text(value: object) -> str:
    """A slot's value as text: a whole number without its ".0" (hassil gives 40.0 for "40")."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def where_in_custom(message: str, files: list[str]) -> str:
    """A message about a template ("'turn on {x}' uses the list {x}, ...") prefixed with the
    custom sentences file and line that hold the template, when one does."""
    from glassformer.textfiles import read_utf8

    if not message.startswith("'") or "'" not in message[1:]:
        return message
    template = message[1 : message.index("'", 1)]
    for file in files:
        for number, line in enumerate(read_utf8(file, "custom sentences").splitlines(), 1):
            if template in line:
                return f"{file}:{number}: {message}"
    return message


class HomeAssistantGrammar:
    """A language's Home Assistant sentences with a home's names (a CommandGrammar).

    Args:
        document: home-assistant-intents' JSON for the language (custom sentences merged).
        home: the areas, floors and devices whose names the sentences may say.
        area: the room of the microphone: the area slot of sentences that name none.
        sentence_set: which sentences these are, for messages ("speech", "full").
    """

    def __init__(
        self, document: dict, home: Home, area: str | None = None, sentence_set: str = "speech"
    ) -> None:
        from hassil import Intents

        try:
            self.sentences = Intents.from_dict(document)  # hassil's: intents, rules, lists
        except Exception as error:  # noqa: BLE001
            raise GlassformerError(
                f"hassil cannot read the sentences ({first_line(error)})"
            ) from None
        self.language, self.home, self.area = document["language"], home, area
        self.sentence_set = sentence_set
        self.name = f"homeassistant-{self.language}"
        content = json.dumps([document, home.sha256, area], sort_keys=True, default=str)
        self.sha256 = hashlib.sha256(content.encode()).hexdigest()
        self.slot_lists = home_slot_lists(home)
        compiler = Compiler(self.sentences, self.slot_lists, self.language)
        self.templates = compiler.compile_all()
        self.left_out = compiler.left_out  # templates that begin with free text
        self.network = compiler.network
        starts = [graph for graph, _ in self.templates]
        self.runner = NetworkRunner(self.network, starts, is_grammar_character)
        self.prefix_charts: dict[str, Chart] = {"": self.runner.initial}
        self.paths = PathCounts(self.network, {graph.end for graph in starts})

    @classmethod
    def load(
        cls,
        language: str,
        home: Home,
        sentences: str = "speech",
        custom: list[str] | None = None,
        area: str | None = None,
    ) -> HomeAssistantGrammar:
        """The sentences of `language` (module docstring), a user's custom sentences merged
        in; an error in a custom template names its file and line.

        Raises:
            GlassformerError: an unknown language, a file hassil rejects, a template that
                uses a list or rule nothing defines, a home that does not fit.
        """
        from hassil import merge_dict

        document, which = intents_document(language, sentences)
        extras = custom_documents(list(custom or []), language)
        for _, extra in extras:
            document = json.loads(json.dumps(document))  # merge into a copy, not the package's
            merge_dict(document, extra)
        try:
            return cls(document, home, area, which)
        except GlassformerError as error:
            raise GlassformerError(where_in_custom(str(error), [f for f, _ in extras])) from None

    # -- the constraint ---------------------------------------------------------------------

    def charts(self, text: str) -> list[Chart]:
        """The network's chart after each prefix of `text` (each prefix's remembered)."""
        if len(self.prefix_charts) >= PREFIX_MEMORY:
            self.prefix_charts = {"": self.runner.initial}
        charts = [self.runner.initial]
        for end in range(1, len(text) + 1):
            prefix = text[:end]
            chart = self.prefix_charts.get(prefix)
            if chart is None:
                chart = self.prefix_charts[prefix] = self.runner.step(charts, text[end - 1])
            charts.append(chart)
            if not chart.items:
                break
        return charts

    def can_continue(self, text: str) -> bool:
        return bool(self.charts(text)[-1].items)

    def accepts(self, text: str) -> bool:
        charts = self.charts(text)
        return (
            len(charts) == len(text) + 1
            and bool(charts[-1].items)
            and (self.runner.is_final(charts))
        )

    def next_characters(self, text: str) -> frozenset[str] | None:
        reads = self.charts(text)[-1].reads
        return None if ANY in reads else frozenset(reads)

    def can_extend(self, text: str) -> bool:
        return bool(self.charts(text + " ")[-1].items)

    # -- the reading --------------------------------------------------------------------------

    def parse(self, text: str) -> Command | None:
        """hassil's reading of the text: Home Assistant's intent and its slots."""
        from hassil import recognize

        area = self.area or MICROPHONE_AREA  # sentences of the microphone's room need one
        context = {"area": {"value": area, "text": area}}
        result = recognize(
            text,
            self.sentences,
            slot_lists=self.slot_lists,
            intent_context=context,
            language=self.language,
        )
        if result is None:
            return None
        slots = {
            name: slot_text(entity.value)
            for name, entity in result.entities.items()
            if entity.value not in (None, MICROPHONE_AREA)  # no --area: the room is not named
        }
        return Command(fold(text), result.intent.name, slots)

    def phrases(self) -> list[str]:
        """The home's names (what a zero-shot Whisper should expect to hear)."""
        names = [*self.home.areas.values(), *self.home.floors.values()]
        names += [n for entity in self.home.entities for n in entity.names[:1]]
        return list(dict.fromkeys(names))

    def sample(self, rng: random.Random) -> Command:
        """A template drawn at random (one with a sentence), then one of its sentences."""
        live = [(g, i) for g, i in self.templates if self.paths(g.start) > 0]
        graph, intent = rng.choice(live)
        text = sample_text(self.network, graph, rng, self.paths)
        command = self.parse(text)
        return command or Command(text, intent, {})

    def intents(self) -> list[str]:
        return sorted({intent for _, intent in self.templates})

    def count(self) -> int:
        """Sentences (paths through the network, free text counted once each)."""
        return sum(count_paths(self.network, graph, self.paths) for graph, _ in self.templates)


def home_slot_lists(home: Home) -> dict[str, Any]:
    """The lists hassil reads a home's names with: area, floor, and name, each name's value
    carrying its domain as context (so requires_context can choose sentences by domain)."""
    from hassil import TextSlotList, TextSlotValue

    from glassformer.voice.hassil_text import template_or_text

    areas = [TextSlotValue(template_or_text(n), n, {"area": i}) for i, n in home.areas.items()]
    floors = [TextSlotValue(template_or_text(n), n) for n in home.floors.values()]
    names = [  # every form of a name is read as the device's (first) name
        TextSlotValue(template_or_text(form), entity.names[0], {"domain": entity.domain})
        for entity in home.entities
        for form in entity.names
    ]
    return {
        "area": TextSlotList(name="area", values=areas),
        "floor": TextSlotList(name="floor", values=floors),
        "name": TextSlotList(name="name", values=names),
    }
