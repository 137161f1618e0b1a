"""A running Home Assistant's home, read through its WebSocket API: areas, floors, and the
devices exposed to Assist, with their names and aliases.

    fetch_home("http://homeassistant.local:8123", token)   -> Home (voice/homes.py)
    read_token(path)   the long-lived access token: a file, else GLASSFORMER_HA_TOKEN

The token is read from a file or the environment, never from a command-line flag (a flag
shows in `ps` and in shell history) and never written to a log line. Only what Home
Assistant exposes to its conversation agent (Settings, Voice assistants, Expose) is read:
the same names its own agent understands. Every way it can fail (no such host, a refusal,
a bad token, an answer of the wrong shape, a silence past TIMEOUT_S) is one GlassformerError.

The protocol (Home Assistant's developer documentation, "WebSocket API"): the server sends
auth_required; we send {"type": "auth", "access_token": ...}; it answers auth_ok or
auth_invalid; then each command carries an id and is answered by a "result" of that id.
Not here: the sentences (voice/homeassistant.py).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from glassformer.errors import GlassformerError, first_line
from glassformer.voice.homes import Entity, Home

TOKEN_VARIABLE = "GLASSFORMER_HA_TOKEN"  # where the token is read when no file is given
TIMEOUT_S = 10.0  # to connect, and for each answer
MAX_MESSAGE_BYTES = 64 << 20  # one answer (a registry of 10,000 entities is a few MB)
MAX_TOKEN_BYTES = 4096  # a long-lived access token is about 180 characters
COMMANDS = {  # what is read, by the command that answers it
    "areas": "config/area_registry/list",
    "floors": "config/floor_registry/list",
    "devices": "config/device_registry/list",
    "entities": "config/entity_registry/list",
    "exposed": "homeassistant/expose_entity/list",
    "states": "get_states",
}


def read_token(path: str | None) -> str:
    """The access token from `path`, else from the environment (TOKEN_VARIABLE).

    Raises:
        GlassformerError: no token, a file that cannot be read, or one that holds none.
    """
    from glassformer.textfiles import read_utf8

    if path is not None:
        token = read_utf8(path, "token", MAX_TOKEN_BYTES).strip()
        if not token:
            raise GlassformerError(f"{path}: the token file is empty")
        return token
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise GlassformerError(
            f"a Home Assistant token is needed: give --ha-token-file FILE or set {TOKEN_VARIABLE}"
        )
    return token


def websocket_url(url: str) -> str:
    """Home Assistant's address as its WebSocket endpoint.

    Example: "http://ha.local:8123" -> "ws://ha.local:8123/api/websocket"
    """
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.hostname:
        raise GlassformerError(f"--ha-url {url}: give http://HOST:PORT (or https://)")
    path = parts.path.rstrip("/")
    path = path if path.endswith("/api/websocket") else f"{path}/api/websocket"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


def fetch_home(url: str, token: str) -> Home:
    """The home a running Home Assistant exposes to Assist (module docstring)."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    address = websocket_url(url)
    try:
        with connect(address, open_timeout=TIMEOUT_S, max_size=MAX_MESSAGE_BYTES) as socket:
            authenticate(socket)
            send = lambda message: socket.send(json.dumps(message))  # noqa: E731
            send({"type": "auth", "access_token": token})
            answer = receive(socket)
            if answer.get("type") != "auth_ok":
                raise GlassformerError(f"{url}: Home Assistant refused the token")
            tables = {}
            for number, (name, command) in enumerate(COMMANDS.items(), start=1):
                send({"id": number, "type": command})
                tables[name] = result_of(receive(socket), number, command, url)
    except (OSError, TimeoutError, ValueError, WebSocketException) as error:
        raise GlassformerError(
            f"{url}: cannot reach Home Assistant ({first_line(error)})"
        ) from None
    return home_from_tables(tables, url)


def authenticate(socket: Any) -> None:  # noqa: ANN401 - a websockets connection
    """The first message must be auth_required (else this is not Home Assistant)."""
    if receive(socket).get("type") != "auth_required":
        raise GlassformerError(f"{socket.request.path}: not Home Assistant's WebSocket API")


def receive(socket: Any) -> dict:  # noqa: ANN401
    message = json.loads(socket.recv(timeout=TIMEOUT_S))
    if not isinstance(message, dict):
        raise GlassformerError("Home Assistant answered with something that is no message")
    return message


def result_of(message: dict, number: int, command: str, url: str) -> Any:  # noqa: ANN401
    if message.get("id") != number or message.get("type") != "result":
        raise GlassformerError(f"{url}: an answer out of order to {command}")
    if not message.get("success"):
        error = (message.get("error") or {}).get("message", "refused")
        raise GlassformerError(f"{url}: {command} failed ({error})")
    return message.get("result")


def home_from_tables(tables: dict, url: str) -> Home:
    """A Home from the registries: exposed entities only, named by their registry name, else
    their device's, else the state's friendly name; aliases are further forms of the name;
    an entity without an area takes its device's."""
    try:
        exposed = {
            entity_id
            for entity_id, assistants in (tables["exposed"].get("exposed_entities") or {}).items()
            if (assistants or {}).get("conversation")
        }
        friendly = {
            s["entity_id"]: (s.get("attributes") or {}).get("friendly_name")
            for s in tables["states"]
        }
        device_areas = {d["id"]: d.get("area_id") for d in tables["devices"]}
        device_names = {d["id"]: d.get("name_by_user") or d.get("name") for d in tables["devices"]}
        floors = {f["floor_id"]: f["name"] for f in tables["floors"] or []}
        areas = {a["area_id"]: a["name"] for a in tables["areas"]}
        area_floors = {a["area_id"]: a["floor_id"] for a in tables["areas"] if a.get("floor_id")}
        entities = []
        for row in tables["entities"]:
            entity_id = row["entity_id"]
            if entity_id not in exposed or row.get("disabled_by"):
                continue
            name = row.get("name") or friendly.get(entity_id) or row.get("original_name")
            name = name or device_names.get(row.get("device_id"))
            if not name:
                continue
            aliases = [a for a in row.get("aliases") or [] if isinstance(a, str) and a.strip()]
            area = row.get("area_id") or device_areas.get(row.get("device_id"))
            entities.append(
                Entity(
                    (name, *aliases),
                    entity_id.split(".", 1)[0],
                    area if area in areas else None,
                    entity_id,
                )
            )
    except (KeyError, TypeError, AttributeError) as error:
        raise GlassformerError(f"{url}: a registry of an unexpected shape ({error!r})") from None
    return Home(floors, areas, area_floors, tuple(entities), url)


def home_file_or_server(entities: str | None, url: str | None, token_file: str | None) -> Home:
    """The home a config names: its file, or a running Home Assistant, or none."""
    if entities and url:
        raise GlassformerError("give --entities HOME.yaml or --ha-url URL, not both")
    if url:
        return fetch_home(url, read_token(token_file))
    if token_file:
        raise GlassformerError("--ha-token-file goes with --ha-url")
    return Home.from_yaml(entities) if entities else Home(source="no home")
