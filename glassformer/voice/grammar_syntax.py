"""Reading and checking command grammars before they are used (grammar.py uses them).

A grammar file is YAML in the Rhino context format (see grammar.py): a mapping with
`context.expressions` (intent -> list of expression strings) and `context.slots` (slot type ->
list of phrases). Everything a user can get wrong is one GlassformerError naming the file:

    not UTF-8, not YAML, not a mapping at the top level, no expressions
    a YAML alias (*name): refused while composing, before anything is copied, so a
        "billion laughs" of nested aliases never expands
    an intent's or a slot type's entries written as a mapping or a single string, not a list
    an expression or phrase that is not text (a YAML date or null: quote it)
    an expression that is a bare YAML number or boolean (`- 12`, `- yes`: quote it)
    a key written twice in one mapping (YAML keeps the last silently): refused with its lines
    an unbalanced or nested "(" or "[", a "$" that is not "$type:name" ("$w:w:extra")

Messages show values through `shown`, which cuts them short: a value is never written out
whole into an error.

Not here: what an expression means (grammar.py parses it), and whether a slot type exists
(grammar.py knows the slots table when it parses).
"""

from __future__ import annotations

import re
import reprlib
from pathlib import Path

from glassformer.errors import GlassformerError, first_line
from glassformer.textfiles import read_utf8

MAX_GRAMMAR_BYTES = 4 << 20  # a grammar file: the Picovoice coffee maker's is 24 KB; 50 MB of
# YAML took 1.35 GB to parse before any other limit could be checked
CLOSING = {"(": ")", "[": "]"}  # the two kinds of group: optional words, alternatives
SLOT = re.compile(r"[A-Za-z0-9_]+:[A-Za-z0-9_]+")  # what follows "$" in a slot reference
SHOWN = reprlib.Repr()  # values in messages: 60-character strings, 3 items, 1 level deep
SHOWN.maxstring, SHOWN.maxother, SHOWN.maxlist, SHOWN.maxdict, SHOWN.maxlevel = 60, 60, 3, 3, 1


class Unquoted(str):
    """An unquoted YAML word that YAML 1.1 would read as a number or a boolean (12, yes, off).

    It stays text (slot phrases like `[yes, no, 7]` are common command words), but an
    expression written so is refused: `- 12` or `- yes` is most likely a slip, and quoting it
    says it is meant.
    """

    kind: str = "number"  # or "boolean"


class UnquotedBoolean(Unquoted):
    kind = "boolean"


def load_yaml_strings(text: str) -> object:
    """Safe YAML where every scalar stays text: `yes`, `no`, `on`, `off` (YAML 1.1 booleans)
    and numbers become Unquoted strings, so a caller can still tell they were bare.

    Raises:
        ValueError: the text is not valid YAML, uses an alias or writes a key twice.
    """
    return load_checked_yaml(text, words=True, kind="a grammar")


def load_yaml_plain(text: str, kind: str = "this file") -> object:
    """Safe YAML with its own types (numbers stay numbers: a home file, Home Assistant's
    custom sentences), aliases and keys written twice refused as load_yaml_strings does.

    Raises:
        ValueError: the text is not valid YAML, uses an alias or writes a key twice.
    """
    return load_checked_yaml(text, words=False, kind=kind)


def load_checked_yaml(text: str, words: bool, kind: str) -> object:
    """yaml.safe_load, refusing aliases (a "billion laughs" never expands) and keys written
    twice (YAML keeps the last silently); with `words` every scalar stays text."""
    import yaml

    class CheckedLoader(yaml.SafeLoader):
        def compose_node(self, parent: object, index: object) -> object:
            if self.check_event(yaml.AliasEvent):  # *name: a reference that would expand
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the alias *{event.anchor} on line {event.start_mark.line + 1}: aliases "
                    f"are not allowed in {kind} (write the entries out)",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
            lines: dict[object, int] = {}  # a key -> the line it first appears on
            for key_node, _ in node.value:
                key, line = self.construct_object(key_node, deep=deep), key_node.start_mark.line
                try:
                    first = lines.setdefault(key, line)
                except TypeError:  # an unhashable key: the constructor refuses it itself
                    continue
                if first != line:  # YAML would keep the last and drop the rest, silently
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"the key {shown(str(key))} appears twice, on lines {first + 1} and "
                        f"{line + 1}: write its entries under one key",
                        key_node.start_mark,
                    )
            return super().construct_mapping(node, deep)

    if words:
        renamed = {"bool": "!unquoted-boolean", "int": "!unquoted-number"}
        renamed["float"] = "!unquoted-number"
        CheckedLoader.yaml_implicit_resolvers = {
            first: [(renamed.get(tag.rsplit(":", 1)[-1], tag), pattern) for tag, pattern in rules]
            for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        CheckedLoader.add_constructor(
            "!unquoted-boolean", lambda loader, node: UnquotedBoolean(loader.construct_scalar(node))
        )
        CheckedLoader.add_constructor(
            "!unquoted-number", lambda loader, node: Unquoted(loader.construct_scalar(node))
        )
    # PyYAML's constructors fail in their own ways on explicitly tagged junk ("!!int ",
    # "!!timestamp x": IndexError, AttributeError, ...): all of them mean "not valid YAML".
    broken = (yaml.YAMLError, ArithmeticError, AttributeError, LookupError, RecursionError)
    try:
        return yaml.load(text, Loader=CheckedLoader)  # noqa: S506 - a SafeLoader subclass
    except (*broken, TypeError, ValueError) as error:
        raise ValueError(str(error) or type(error).__name__) from None


def read_grammar_file(path: Path) -> tuple[object, object]:
    """The (expressions, slots) tables of a grammar file, checked only for their place.

    Raises:
        GlassformerError: the file is missing, unreadable, not UTF-8, not YAML, or has no
            `context.expressions` mapping.
    """
    text = read_utf8(path, "grammar", MAX_GRAMMAR_BYTES)
    try:
        document = load_yaml_strings(text)
    except ValueError as error:
        raise GlassformerError(f"{path}: not valid YAML ({first_line(error)})") from None
    if not isinstance(document, dict):
        raise GlassformerError(
            f"{path}: expected a mapping with context.expressions at the top level "
            f"(Rhino context format), not {kind_of(document)}"
        )
    context = document.get("context")
    if not isinstance(context, dict) or not isinstance(context.get("expressions"), dict):
        raise GlassformerError(f"{path}: expected context.expressions (Rhino context format)")
    return context["expressions"], context.get("slots") or {}


def check_tables(
    expressions: object, slots: object, name: str
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The two tables, checked: mappings from names to non-empty lists of text.

    Raises:
        GlassformerError: "NAME: ..." for the first entry of the wrong shape.
    """
    tables = []
    for table, what in [(expressions, "expressions"), (slots, "slots")]:
        if not isinstance(table, dict):
            raise GlassformerError(f"{name}: {what} must be a mapping, not {kind_of(table)}")
        for key, entries in table.items():
            where = f"{name}: {'intent' if what == 'expressions' else 'slot type'} {shown(key)}"
            if not isinstance(key, str):
                raise GlassformerError(f"{where}: the name must be text, not {kind_of(key)}")
            if not isinstance(entries, list):
                raise GlassformerError(
                    f"{where}: expected a list (- item lines or [a, b]), not {kind_of(entries)}"
                )
            if not entries:
                raise GlassformerError(f"{where}: the list is empty")
            for entry in entries:
                if not isinstance(entry, str):
                    raise GlassformerError(
                        f"{where}: {shown(entry)} is {kind_of(entry)}, not text (quote it)"
                    )
                if isinstance(entry, Unquoted) and what == "expressions":
                    raise GlassformerError(
                        f"{where}: the expression {shown(str(entry))} is a bare YAML {entry.kind}: "
                        f'quote it ("{entry}") if it is meant as words'
                    )
        tables.append(table)
    if not tables[0]:
        raise GlassformerError(f"{name}: no expressions")
    return tables[0], tables[1]


def check_expression(expression: str, where: str) -> None:
    """Brackets balanced and not nested, every "$" a "$type:name".

    Example: "turn (on" -> GlassformerError("...: unbalanced '(' in 'turn (on'")
    """
    opened = None  # the bracket of the group we are in, if any
    for char in expression:
        if char in CLOSING:
            if opened:
                raise GlassformerError(
                    f"{where}: {char!r} inside {opened!r}...{CLOSING[opened]!r} in "
                    f"{shown(expression)} (groups do not nest)"
                )
            opened = char
        elif char in CLOSING.values():
            if opened is None or CLOSING[opened] != char:
                raise GlassformerError(f"{where}: unbalanced {char!r} in {shown(expression)}")
            opened = None
    if opened:
        raise GlassformerError(f"{where}: unbalanced {opened!r} in {shown(expression)}")
    for dollar in re.finditer(r"\$", expression):
        reference = SLOT.match(expression, dollar.end())
        after = expression[reference.end() : reference.end() + 1] if reference else ""
        if not reference or not (after == "" or after.isspace() or after in ",)]"):
            word = expression[dollar.start() :].split()[0]
            raise GlassformerError(
                f"{where}: {shown(word)} in {shown(expression)} is not a slot ($type:name)"
            )


def kind_of(value: object) -> str:
    """How to name a YAML value's kind in a message: "a mapping", "a date", "null"."""
    names = {dict: "a mapping", list: "a list", str: "text", type(None): "null"}
    names |= {bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), f"a {type(value).__name__}")


def shown(value: object) -> str:
    """repr(value), cut short: strings of 60 characters, 3 items, 1 level deep (see SHOWN).

    Example: shown([["deep"]] * 9) -> "[[...], [...], [...], ...]"
    """
    return SHOWN.repr(value)
