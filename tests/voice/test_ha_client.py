"""A running Home Assistant read through its WebSocket API (voice/ha_client.py), against a
server that speaks the protocol as Home Assistant does (auth_required, auth, results by id):
exposed devices only, names and aliases, areas from devices; and every way it fails is one
line, the token never in it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.voice.ha_client import TOKEN_VARIABLE, fetch_home, read_token, websocket_url

TOKEN = "a-long-lived-token-of-the-test"
TABLES = {
    "config/area_registry/list": [
        {"area_id": "kitchen", "name": "Kitchen", "floor_id": "ground"},
        {"area_id": "study", "name": "Study", "floor_id": None},
    ],
    "config/floor_registry/list": [{"floor_id": "ground", "name": "Ground Floor"}],
    "config/device_registry/list": [
        {"id": "d1", "area_id": "study", "name": "Lamp device", "name_by_user": None}
    ],
    "config/entity_registry/list": [
        {
            "entity_id": "light.ceiling",
            "name": None,
            "original_name": "Ceiling",
            "area_id": "kitchen",
            "device_id": None,
            "aliases": ["Top Light"],
        },
        {"entity_id": "light.desk", "name": "Desk Lamp", "area_id": None, "device_id": "d1"},
        {"entity_id": "switch.secret", "name": "Secret Switch", "area_id": "study"},
    ],  # fmt: skip
    "homeassistant/expose_entity/list": {
        "exposed_entities": {
            "light.ceiling": {"conversation": True},
            "light.desk": {"conversation": True},
            "switch.secret": {"conversation": False},
        }
    },
    "get_states": [{"entity_id": "light.ceiling", "attributes": {"friendly_name": "Ceiling"}}],
}


@pytest.fixture()
def home_assistant() -> Iterator[tuple[str, list]]:
    """A server speaking Home Assistant's WebSocket API on a free loopback port; yields its
    URL and the messages it received."""
    from websockets.sync.server import serve

    received: list = []

    def handler(socket) -> None:  # noqa: ANN001
        socket.send(json.dumps({"type": "auth_required", "ha_version": "2026.12"}))
        auth = json.loads(socket.recv())
        received.append(auth)
        if auth.get("access_token") != TOKEN:
            socket.send(json.dumps({"type": "auth_invalid", "message": "Invalid access"}))
            return
        socket.send(json.dumps({"type": "auth_ok"}))
        for message in socket:
            command = json.loads(message)
            received.append(command)
            result = TABLES.get(command["type"])
            answer = {"id": command["id"], "type": "result", "success": result is not None}
            socket.send(json.dumps(answer | {"result": result}))

    with serve(handler, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}", received
        server.shutdown()


def test_the_home_is_what_is_exposed_to_assist(home_assistant: tuple[str, list]) -> None:
    url, received = home_assistant
    home = fetch_home(url, TOKEN)
    assert home.areas == {"kitchen": "Kitchen", "study": "Study"}
    assert home.floors == {"ground": "Ground Floor"} and home.area_floors == {"kitchen": "ground"}
    named = {e.entity_id: (e.names, e.domain, e.area) for e in home.entities}
    assert named == {
        "light.ceiling": (("Ceiling", "Top Light"), "light", "kitchen"),  # an alias: a form
        "light.desk": (("Desk Lamp",), "light", "study"),  # its device's area
    }  # the switch is not exposed to Assist: not read
    assert received[0] == {"type": "auth", "access_token": TOKEN}


def test_a_refused_token_an_unreachable_server_and_a_bad_url_are_one_line(
    home_assistant: tuple[str, list],
) -> None:
    url, _ = home_assistant
    with pytest.raises(GlassformerError, match="refused the token") as refused:
        fetch_home(url, "not-the-token")
    assert "not-the-token" not in str(refused.value)
    with pytest.raises(GlassformerError, match="cannot reach Home Assistant"):
        fetch_home("http://127.0.0.1:9", TOKEN)
    with pytest.raises(GlassformerError, match="give http://HOST:PORT"):
        websocket_url("ftp://ha")
    assert websocket_url("https://ha.local:8123/") == "wss://ha.local:8123/api/websocket"


def test_the_token_is_read_from_a_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    with pytest.raises(GlassformerError, match=TOKEN_VARIABLE):
        read_token(None)
    monkeypatch.setenv(TOKEN_VARIABLE, " from-the-environment\n")
    assert read_token(None) == "from-the-environment"
    path = tmp_path / "token"
    path.write_text("from-a-file\n")
    assert read_token(str(path)) == "from-a-file"
    with pytest.raises(GlassformerError, match="no such token file"):
        read_token(str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(GlassformerError, match="the token file is empty"):
        read_token(str(tmp_path / "empty"))


@pytest.mark.parametrize(
    ("command", "answer", "message"),
    [
        ("config/entity_registry/list", [{"no entity_id": 1}], "unexpected shape"),
        ("get_states", "not a list of states", "unexpected shape"),
        ("config/floor_registry/list", None, r"config/floor_registry/list failed"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_one_line(
    home_assistant: tuple[str, list],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    answer: object,
    message: str,
) -> None:
    url, _ = home_assistant
    monkeypatch.setitem(TABLES, command, answer)
    with pytest.raises(GlassformerError, match=message) as raised:
        fetch_home(url, TOKEN)
    assert "\n" not in str(raised.value) and TOKEN not in str(raised.value)
