"""A home as Home Assistant knows it: its floors, areas and the devices (entities) in them.

    Home.from_yaml(path)     the fixture format of Home Assistant's intent tests:

        floors:   [{name: Upstairs, id: upstairs}]
        areas:    [{name: Kitchen, id: kitchen, floor: upstairs}]
        entities: [{name: Ceiling Light, id: light.ceiling, area: kitchen},
                   {name: [Wohnzimmerlampe, Wohnzimmerlampen], id: light.lamp}]

An entity's `name` may be a list of the forms a language inflects it into; its domain is the
`domain` field or the part of `id` before the dot. Names are what people say: the grammar
(voice/homeassistant.py) offers each where its sentences' required domain allows it. Every way
a file can be wrong is one GlassformerError naming the file and the entry.

Not here: reading a running Home Assistant (voice/ha_client.py), the sentences (hassil).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from glassformer.errors import GlassformerError

MAX_HOME_BYTES = 8 << 20  # a home file: 10,000 entities take about 1 MB
MAX_NAME_CHARS = 200  # one name of an area, floor or entity
MAX_ENTRIES = 50_000  # floors, areas and entities together


@dataclass(frozen=True)
class Entity:
    names: tuple[str, ...]  # what people call it: a name, or several inflected forms
    domain: str  # light, switch, cover, media_player, ...
    area: str | None = None  # the id of its area
    entity_id: str = ""  # light.kitchen


@dataclass(frozen=True)
class Home:
    floors: dict[str, str] = field(default_factory=dict)  # id -> name
    areas: dict[str, str] = field(default_factory=dict)  # id -> name
    area_floors: dict[str, str] = field(default_factory=dict)  # area id -> floor id
    entities: tuple[Entity, ...] = ()
    source: str = "home"  # where it came from, for messages

    @property
    def sha256(self) -> str:
        """What the home holds (not where it came from)."""
        content = {k: v for k, v in asdict(self).items() if k != "source"}
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    @classmethod
    def from_yaml(cls, path: str | Path) -> Home:
        """Read a home file (module docstring); any problem is one error naming it."""
        from glassformer.textfiles import read_utf8
        from glassformer.voice.grammar_syntax import first_line, load_yaml_plain

        text = read_utf8(path, "home", MAX_HOME_BYTES)
        try:
            document = load_yaml_plain(text)
        except ValueError as error:
            raise GlassformerError(f"{path}: not valid YAML ({first_line(error)})") from None
        return cls.from_dict(document, str(path))

    @classmethod
    def from_dict(cls, document: object, source: str) -> Home:
        """A home from the fixture format's mapping (from_yaml's document, or a test's)."""
        if not isinstance(document, dict):
            raise GlassformerError(f"{source}: expected a mapping of floors, areas, entities")
        unknown = sorted(set(map(str, document)) - {"language", "floors", "areas", "entities"})
        if unknown:
            raise GlassformerError(
                f"{source}: unknown key(s) {unknown}; expected floors, areas, entities"
            )
        floors = dict(entries(document, "floors", source, with_floor=False))
        areas, area_floors = {}, {}
        for area_id, name, floor in entries(document, "areas", source, with_floor=True):
            areas[area_id] = name
            if floor is not None:
                if floor not in floors:
                    raise GlassformerError(
                        f"{source}: area {name!r} is on floor {floor!r}, which no floor has as id"
                    )
                area_floors[area_id] = floor
        things = tuple(
            entity(row, n, source, areas)
            for n, row in enumerate(rows(document, "entities", source))
        )
        if len(floors) + len(areas) + len(things) > MAX_ENTRIES:
            raise GlassformerError(
                f"{source}: more than {MAX_ENTRIES:,} floors, areas and entities"
            )
        return cls(floors, areas, area_floors, things, source)


def rows(document: dict, key: str, source: str) -> list[dict]:
    """The list under `key` (absent: none), each row a mapping."""
    value = document.get(key) or []
    if not isinstance(value, list) or len(value) > MAX_ENTRIES:
        raise GlassformerError(f"{source}: {key} must be a list (of at most {MAX_ENTRIES:,})")
    for n, row in enumerate(value):
        if not isinstance(row, dict):
            raise GlassformerError(f"{source}: {key}[{n}] must be a mapping with a name")
    return value


def name_of(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS:
        raise GlassformerError(f"{where}: a name must be text of 1 to {MAX_NAME_CHARS} characters")
    return value.strip()


def entries(document: dict, key: str, source: str, with_floor: bool):  # noqa: ANN201
    """(id, name) of each floor, or (id, name, floor id) of each area; the id defaults to
    the name."""
    for n, row in enumerate(rows(document, key, source)):
        where = f"{source}: {key}[{n}]"
        name = name_of(row.get("name"), where)
        identifier = str(row.get("id") or name)
        if with_floor:
            floor = row.get("floor")
            yield identifier, name, None if floor is None else str(floor)
        else:
            yield identifier, name


def entity(row: dict, n: int, source: str, areas: dict[str, str]) -> Entity:
    where = f"{source}: entities[{n}]"
    raw = row.get("name")
    names = tuple(name_of(v, where) for v in (raw if isinstance(raw, list) else [raw]))
    if not names:
        raise GlassformerError(f"{where}: no name")
    entity_id = str(row.get("id") or "")
    domain = row.get("domain") or (entity_id.split(".", 1)[0] if "." in entity_id else None)
    if not isinstance(domain, str) or not domain:
        raise GlassformerError(
            f"{where} ({names[0]!r}): no domain (give domain, or an id such as light.kitchen)"
        )
    area = row.get("area")
    if area is not None and str(area) not in areas:
        raise GlassformerError(f"{where} ({names[0]!r}): area {area!r} is no area's id")
    return Entity(names, domain, None if area is None else str(area), entity_id)
