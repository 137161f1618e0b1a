"""The server against hostile clients: bad generation settings are 4xx before any event,
another site's Host or Origin is refused (DNS rebinding), and a client that dribbles its body
gets 408 within the bound while others are served."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from glassformer.serve.app import create_app
from glassformer.serve.config import ServeConfig
from glassformer.serve.models import load_models


@pytest.fixture(scope="module")
def served(checkpoints: dict[str, Path]):  # noqa: ANN201
    return load_models(None, [], str(checkpoints["lm"]), None)


@pytest.fixture(scope="module")
def client(served) -> TestClient:  # noqa: ANN001
    app = create_app(served, ServeConfig(), allowed_hosts=["127.0.0.1", "glass.example"])
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"temperature": 1e-300}, "temperature=1e-300"),
        ({"top_p": 1e-300}, "top_p=1e-300"),
        ({"seed": 10**30}, "seed=1000000000000000000000000000000"),
        ({"seed": -1}, "seed=-1"),
        ({"prompt": "\u4e2d"}, "not in the vocabulary"),
    ],
)
def test_bad_generation_settings_are_422_before_the_stream(
    client: TestClient, fields: dict, words: str
) -> None:
    response = client.post("/v1/generate", json={"max_new_tokens": 2, **fields})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert words in response.json()["error"], response.json()


def test_good_generation_still_streams(client: TestClient) -> None:
    response = client.post("/v1/generate", json={"prompt": "ab", "max_new_tokens": 2})
    assert response.status_code == 200 and "event: done" in response.text, response.text


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example"}, 403),  # a rebound name
        ({"host": "evil.example:8000"}, 403),
        ({"host": "localhost:8000"}, 200),
        ({"host": "[::1]:8000"}, 200),
        ({"host": "glass.example"}, 200),  # --allow-host
        ({"host": "192.168.1.7:8000"}, 200),  # an address, which rebinding cannot forge
    ],
)
def test_host_must_name_this_server(client: TestClient, headers: dict, status: int) -> None:
    response = client.get("/healthz", headers=headers)
    assert response.status_code == status, response.text
    if status == 403:
        assert "is not a name of this server" in response.json()["error"]


@pytest.mark.parametrize(
    ("origin", "status"),
    [("http://evil.example", 403), ("null", 403), ("http://127.0.0.1:8000", 200), (None, 200)],
)
def test_a_post_from_another_sites_page_is_refused(
    client: TestClient, origin: str | None, status: int
) -> None:
    headers = {"origin": origin} if origin else {}
    body = {"prompt": "ab", "max_new_tokens": 1}
    response = client.post("/v1/generate", json=body, headers=headers)
    assert response.status_code == status, response.text


def test_a_websocket_from_another_site_is_closed_with_1008(client: TestClient) -> None:
    evil = {"origin": "http://evil.example"}
    with (
        pytest.raises(WebSocketDisconnect) as closed,
        client.websocket_connect("/v1/listen", headers=evil),
    ):
        pass
    assert closed.value.code == 1008


def serve_in_thread(app) -> tuple[int, object]:  # noqa: ANN001
    """A real uvicorn server on a free loopback port, in a thread; returns (port, server)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=1))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    return sock.getsockname()[1], server


def read_whole_response(sock: socket.socket, first: bytes) -> bytes:
    """The rest of one HTTP response: the server may send its head and body in two segments."""
    answer = first
    while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
        next(
            (
                line.split(b":")[1]
                for line in answer.partition(b"\r\n\r\n")[0].lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            ),
            b"0",
        )
    ):
        more = sock.recv(4096)
        if not more:
            break
        answer += more
    return answer


def test_a_dribbled_body_gets_408_in_time_while_others_are_served(served) -> None:  # noqa: ANN001
    import httpx

    bound = 1.0  # seconds
    app = create_app(served, ServeConfig(body_timeout_s=bound), allowed_hosts=[])
    port, server = serve_in_thread(app)
    try:
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(
            b"POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )  # then nothing more, as a slow-loris client
        started = time.monotonic()
        other = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        assert other.status_code == 200 and time.monotonic() - started < bound
        slow.settimeout(bound + 5)
        answer = slow.recv(4096)
        elapsed = time.monotonic() - started
        answer = read_whole_response(slow, answer).decode()
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "did not arrive within 1 s" in answer and elapsed < bound + 3, (elapsed, answer)
        slow.close()
    finally:
        server.should_exit = True
