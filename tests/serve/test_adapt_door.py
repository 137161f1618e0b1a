"""A door's `--adapt DIR` (serve/adaptation.py): the grammar served zero-shot at once, adapted
in a child process, switched without a request going unanswered; a failed child said in one
line; a finished DIR served from the start; the child stopped with the door; bad flags one
line each. The child here is a stand-in (a few lines of Python that copy a tiny checkpoint to
DIR/best, or fail), not the six-minute `glassformer adapt`."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from glassformer.audio.endpoint import SAMPLE_RATE, EndpointConfig
from glassformer.cli import main
from glassformer.serve.adaptation import (
    LOG_FILE,
    NICENESS,
    Adaptation,
    adapt_command,
    child_environment,
)
from glassformer.serve.app import create_app
from glassformer.serve.models import ServedModels, load_models
from glassformer.tasks.speech.config import ListenerConfig
from tests.installed import has_whisper, import_or_missing, needs_whisper
from tests.serve.conftest import GRAMMAR, tone, wav_bytes

WAV = {"content-type": "audio/wav"}
NAME = "coffee"  # the grammar's name: its file's stem
# The stand-in for `glassformer adapt`: once the file argv[3] exists, DIR/best is a copy of
# a tiny checkpoint (argv[1] -> argv[2]/best) and it exits 0; or it says so and exits argv[4].
FAKE_ADAPT = """
import os, shutil, sys, time
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
status = int(sys.argv[4])
if status == 0:
    shutil.copytree(sys.argv[1], sys.argv[2] + "/best")
print("fake adapt:", "done" if status == 0 else "broken", flush=True)
sys.exit(status)
"""
# A child that runs until it is stopped, with a grandchild in its process group (as adapt's
# espeak-ng is); argv[1]: where it writes the grandchild's pid.
LONG_ADAPT = """
import subprocess, sys, time
sleeper = subprocess.Popen(["sleep", "60"])
open(sys.argv[1], "w").write(str(sleeper.pid))
time.sleep(60)
"""


def fake_adapt(checkpoint: Path, out: Path, go: Path, status: int = 0) -> list[str]:
    """The stand-in's argv: it finishes once `go` exists."""
    return [sys.executable, "-c", FAKE_ADAPT, str(checkpoint), str(out), str(go), str(status)]


@pytest.fixture
def grammar(tmp_path: Path) -> Path:
    path = tmp_path / f"{NAME}.yaml"
    path.write_text(GRAMMAR)  # the tiny checkpoint's own grammar
    return path


@pytest.fixture
def config(checkpoints: dict[str, Path]) -> ListenerConfig:
    # tones stand in for speech: the energy rule hears them, Silero (the default) not
    return ListenerConfig(str(checkpoints["speech"]), endpoint=EndpointConfig(detector="energy"))


def serve_zero_shot(config: ListenerConfig, grammar: Path) -> ServedModels:
    return load_models(config, [str(grammar)], None, None)


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.05)


def transcribe(client: TestClient) -> None:
    clip = wav_bytes(tone(0.5))
    answer = client.post(f"/v1/transcribe?grammar={NAME}", content=clip, headers=WAV)
    assert answer.status_code == 200, answer.text


def pcm(waveform: np.ndarray) -> bytes:
    return (np.clip(waveform, -1, 1) * 32767).astype("<i2").tobytes()


def say_command(socket) -> None:  # noqa: ANN001
    """A tone between silences on the listening socket, and its result."""
    silence = np.zeros(SAMPLE_RATE // 2, np.float32)
    data = pcm(np.concatenate([silence, tone(1.0), silence, silence]))
    for start in range(0, len(data), 3200):
        socket.send_bytes(data[start : start + 3200])
    assert socket.receive_json()["type"] == "speech_start"
    assert socket.receive_json()["type"] == "result"


def is_gone(pid: int) -> bool:
    """The process has ended (a zombie nobody has reaped yet counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def test_requests_are_answered_before_during_and_after_the_switch(
    config: ListenerConfig,
    grammar: Path,
    checkpoints: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    served = serve_zero_shot(config, grammar)
    zero_shot = served.speech[NAME]
    out, go = tmp_path / "adapted", tmp_path / "go"
    command = fake_adapt(checkpoints["speech"], out, go)
    served.adaptation = Adaptation(served.speech, config, grammar, out, command=command)
    served.adaptation.start()
    started = capsys.readouterr().out
    assert f"adapting the model to {NAME} in the background" in started
    assert str(out / LOG_FILE) in started
    answered = {"adapting": 0, "adapted": 0}
    with TestClient(create_app(served)) as client:
        with client.websocket_connect(f"/v1/listen?grammar={NAME}") as socket:
            assert socket.receive_json()["type"] == "ready"
            say_command(socket)  # a stream begun zero-shot
            models = client.get("/v1/models").json()["speech"]
            assert models["adaptation"]["state"] == "adapting"
            for _ in range(3):  # the child is under way
                transcribe(client)
                answered[served.adaptation.state] += 1
            go.touch()  # it finishes: the watcher loads DIR/best while requests go on
            deadline = time.monotonic() + 30
            while served.adaptation.state == "adapting" or answered["adapted"] < 3:
                assert time.monotonic() < deadline, served.adaptation.state
                state = served.adaptation.state
                transcribe(client)
                answered[state] = answered.get(state, 0) + 1
            say_command(socket)  # the same stream goes on, on the Listener it took
        with client.websocket_connect(f"/v1/listen?grammar={NAME}") as socket:
            assert socket.receive_json()["type"] == "ready"
            say_command(socket)
        models = client.get("/v1/models").json()["speech"]
        assert models["adaptation"] == {
            "grammar": NAME,
            "state": "adapted",
            "model": str(out / "best"),
            "log": str(out / LOG_FILE),
        }
        assert list(models["grammars"]) == [NAME]
    assert answered["adapting"] >= 3 and answered["adapted"] >= 3, answered
    adapted = served.speech[NAME]
    assert adapted is not zero_shot and adapted.config.model == str(out / "best")
    assert adapted.config == dataclasses.replace(zero_shot.config, model=str(out / "best"))
    assert zero_shot.understand(tone(0.5)).text is not None  # still usable by who holds it
    assert f"switched {NAME} to the adapted model {out / 'best'}" in capsys.readouterr().out
    assert "fake adapt: done" in (out / LOG_FILE).read_text()


def test_a_failing_child_leaves_the_zero_shot_model_and_says_why(
    config: ListenerConfig,
    grammar: Path,
    checkpoints: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    served = serve_zero_shot(config, grammar)
    zero_shot = served.speech[NAME]
    out = tmp_path / "adapted"
    (tmp_path / "go").touch()
    command = fake_adapt(checkpoints["speech"], out, tmp_path / "go", status=1)
    adaptation = Adaptation(served.speech, config, grammar, out, command=command)
    adaptation.start()
    adaptation.watcher.join(30)
    assert adaptation.state == "failed" and served.speech[NAME] is zero_shot
    [line] = [x for x in capsys.readouterr().out.splitlines() if "failed" in x]
    assert "exited with status 1" in line and str(out / LOG_FILE) in line, line
    assert "fake adapt: broken" in (out / LOG_FILE).read_text()


@pytest.mark.parametrize(("step", "finished"), [(200, True), (100, False)])
def test_a_finished_adaptation_is_served_from_the_start_and_an_unfinished_one_resumed(
    config: ListenerConfig,
    grammar: Path,
    checkpoints: dict[str, Path],
    tmp_path: Path,
    step: int,
    finished: bool,
) -> None:
    out = tmp_path / "adapted"
    shutil.copytree(checkpoints["speech"], out / "best")
    (out / "last").mkdir()
    (out / "last" / "train_state.json").write_text(json.dumps({"step": step}))  # adapt's: 200
    served = serve_zero_shot(config, grammar)
    zero_shot = served.speech[NAME]
    ran = tmp_path / "ran"
    command = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    adaptation = Adaptation(served.speech, config, grammar, out, command=command)
    adaptation.start()
    if finished:
        assert adaptation.child is None and adaptation.state == "adapted"
        assert served.speech[NAME].config.model == str(out / "best")
    else:
        assert adaptation.child is not None and served.speech[NAME] is zero_shot
        adaptation.watcher.join(30)
        assert adaptation.state == "adapted"  # the stand-in left DIR/best as it was
    assert ran.exists() is not finished


def test_shutting_down_the_server_stops_a_running_child_and_its_own(
    config: ListenerConfig, grammar: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    served = serve_zero_shot(config, grammar)
    out, pid_file = tmp_path / "adapted", tmp_path / "grandchild.pid"
    command = [sys.executable, "-c", LONG_ADAPT, str(pid_file)]
    served.adaptation = Adaptation(served.speech, config, grammar, out, command=command)
    served.adaptation.start()
    with TestClient(create_app(served)) as client:
        transcribe(client)
        wait_for(pid_file.exists)
        wait_for(lambda: pid_file.read_text() != "")
    child = served.adaptation.child
    assert child.poll() is not None and served.adaptation.state == "stopped"
    wait_for(lambda: is_gone(int(pid_file.read_text())), 5)  # signalled with its group
    assert "stopped adapting coffee; the next start resumes it" in capsys.readouterr().out
    served.adaptation.stop()  # a second stop (cmd_serve's finally) does nothing more


@pytest.mark.parametrize("moment", ["popen", "watcher"])
def test_a_sigterm_while_the_child_starts_still_stops_it(
    moment: str,
    config: ListenerConfig,
    grammar: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The races CI and a loaded suite once lost: the door's SIGTERM inside Popen (after the
    fork, before the child is recorded) left a child that nobody stopped; inside the
    watcher's Thread.start, the door's `finally` could not join a thread never started
    (a traceback, exit 1). Here it comes at each moment."""
    served = serve_zero_shot(config, grammar)
    out, pid_file = tmp_path / "adapted", tmp_path / "grandchild.pid"
    command = [sys.executable, "-c", LONG_ADAPT, str(pid_file)]
    real_popen, real_start = subprocess.Popen, threading.Thread.start

    def popen_then_sigterm(*args: object, **kwargs: object) -> subprocess.Popen:
        child = real_popen(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # handled at once, were it not held
        return child

    def sigterm_then_start(thread: threading.Thread) -> None:
        if thread.name == "glassformer-adapt":
            os.kill(os.getpid(), signal.SIGTERM)
        real_start(thread)

    def exit_143(number: int, _: object) -> None:
        raise SystemExit(128 + number)

    if moment == "popen":
        monkeypatch.setattr(subprocess, "Popen", popen_then_sigterm)
    else:
        monkeypatch.setattr(threading.Thread, "start", sigterm_then_start)
    previous = signal.signal(signal.SIGTERM, exit_143)  # the door's (cli/serve.exit_on_sigterm)
    adaptation = Adaptation(served.speech, config, grammar, out, command=command)
    try:
        with pytest.raises(SystemExit):
            adaptation.start()
        assert adaptation.child is not None  # recorded before the exit unwound
    finally:
        signal.signal(signal.SIGTERM, previous)
        adaptation.stop()  # the door's `finally`
    assert adaptation.child.poll() is not None and adaptation.state == "stopped"


def test_the_wyoming_door_switches_its_listeners(
    config: ListenerConfig, grammar: Path, checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    import asyncio

    import_or_missing("wyoming")
    from wyoming.asr import Transcribe
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe

    from glassformer.serve.model_thread import ModelThread
    from glassformer.serve.models import load_speech
    from glassformer.serve.wyoming import Service
    from tests.serve.test_wyoming import until, with_server

    listeners = load_speech(config, [str(grammar)])
    service = Service(listeners, config.model, ModelThread(), quiet=True)
    out = tmp_path / "adapted"
    go = tmp_path / "go"
    command = fake_adapt(checkpoints["speech"], out, go)
    adaptation = Adaptation(service.listeners, config, grammar, out, command=command)

    async def ask(uri: str) -> tuple[str, str]:
        async with AsyncTcpClient.from_uri(uri) as client:
            await client.write_event(Describe().event())
            info = await until(client, "info")
            await client.write_event(Transcribe(name=NAME).event())
            await client.write_event(AudioStart(16_000, 2, 1).event())
            await client.write_event(AudioChunk(16_000, 2, 1, pcm(tone(0.5))).event())
            await client.write_event(AudioStop().event())
            return info.type, (await until(client, "transcript")).type

    async def talk(uri: str) -> list[tuple[str, str]]:
        answers = [await ask(uri)]  # zero-shot
        go.touch()
        while adaptation.state == "adapting":  # and while the adapted model loads
            answers.append(await ask(uri))
        return [*answers, await ask(uri)]  # adapted

    adaptation.start()
    try:
        answers = asyncio.run(with_server(service, talk))
    finally:
        adaptation.stop()
    assert set(answers) == {("info", "transcript")} and len(answers) >= 2
    assert adaptation.state == "adapted"
    assert service.listeners[NAME].config.model == str(out / "best")


def test_the_child_runs_glassformer_adapt_with_one_thread(tmp_path: Path) -> None:
    argv = adapt_command(tmp_path / "g.yaml", tmp_path / "run", "whisper-tiny.en", "noise")
    start = argv.index(sys.executable)
    assert argv[start:] == [
        sys.executable,
        *("-m", "glassformer", "adapt", "--grammar", str(tmp_path / "g.yaml")),
        *("--out", str(tmp_path / "run"), "--model", "whisper-tiny.en", "--noise-dir", "noise"),
    ]
    assert argv[:start] in ([], ["nice", "-n", str(NICENESS)])
    assert child_environment()["OMP_NUM_THREADS"] == "1"
    assert "--noise-dir" not in adapt_command(tmp_path, tmp_path, "whisper-tiny.en", None)


WHISPER = pytest.mark.skipif(not has_whisper(), reason="whisper-tiny.en is not installed")


@pytest.mark.parametrize(
    ("door", "flags", "words"),
    [
        ("serve", ["--speech", "{speech}", "--grammar", "{g}", "--adapt", "{out}"], "is not one"),
        ("wyoming", ["--speech", "{speech}", "--grammar", "{g}", "--adapt", "{out}"], "not one"),
        ("wyoming", ["--adapt", "{out}"], "give exactly one --grammar G.yaml (given 0)"),
        ("wyoming", ["--grammar", "{g}", "--grammar", "{g2}", "--adapt", "{out}"], "(given 2)"),
        ("wyoming", ["--grammar", "{g}", "--adapt-noise-dir", "{out}"], "goes with --adapt"),
        (
            "wyoming",
            ["--grammar", "{g}", "--adapt", "{out}", "--adapt-noise-dir", "{out}/none"],
            "--adapt-noise-dir {out}/none: no such folder",
        ),
        ("wyoming", ["--grammar", "{other}", "--adapt", "{held}"], "another grammar"),
        ("wyoming", ["--grammar", "{g}", "--adapt", "{file}"], "not a directory"),
        pytest.param(
            "serve",
            ["--speech", "whisper-tiny.en", "--grammar", "{g}", "--adapt", "{out}"]
            + ["--workers", "2"],
            "--workers 2",
            marks=WHISPER,
        ),
        ("serve", ["--lm", "{lm}", "--adapt", "{out}"], "--adapt needs a speech model"),
    ],
)
def test_bad_flag_combinations_are_one_line_before_anything_loads(
    door: str,
    flags: list[str],
    words: str,
    checkpoints: dict[str, Path],
    grammar: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    import_or_missing("wyoming")
    other = tmp_path / "other.yaml"
    other.write_text(GRAMMAR.replace("stop", "halt"))
    held = tmp_path / "held"
    shutil.copytree(checkpoints["speech"], held / "best")  # adapted to the tiny grammar
    (tmp_path / "file").write_text("")
    names = {
        "speech": str(checkpoints["speech"]),
        "lm": str(checkpoints["lm"]),
        "g": str(grammar),
        "g2": str(other),
        "other": str(other),
        "out": str(tmp_path / "out"),
        "held": str(held),
        "file": str(tmp_path / "file"),
    }
    args = [door, *(flag.format(**names) for flag in flags)]
    started = time.perf_counter()
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and words.format(**names) in lines[0], lines
    assert not (tmp_path / "out").exists()  # nothing made
    assert time.perf_counter() - started < 5  # no model loaded first


@needs_whisper
@pytest.mark.parametrize("door", ["serve", "wyoming"])
def test_sigterm_stops_the_door_and_its_adapting_child(
    door: str, grammar: Path, tmp_path: Path
) -> None:
    if door == "wyoming":
        import_or_missing("wyoming")
    out = tmp_path / "adapted"
    where = ["--port", "0"] if door == "serve" else ["--uri", f"unix://{tmp_path}/wyoming.sock"]
    argv = [sys.executable, "-m", "glassformer", door, "--grammar", str(grammar)]
    argv += ["--speech", "whisper-tiny.en", "--adapt", str(out), *where]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    pid = None
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            for line in process.stdout:
                if "in the background (pid " in line:
                    pid = int(line.split("(pid ")[1].split(",")[0])
                    break
            else:
                pytest.fail(f"the door ended without starting its child ({process.wait()})")
            niced = min(os.nice(0) + NICENESS, 19)  # `nice` lowers it just after it starts
            wait_for(lambda: is_gone(pid) or os.getpriority(os.PRIO_PROCESS, pid) >= niced, 5)
            process.send_signal(signal.SIGTERM)  # its handler came before the child
            process.wait(30)
        finally:
            process.kill()
            if pid is not None and not is_gone(pid):  # the test failed: leave nothing behind
                os.killpg(pid, signal.SIGKILL)
        rest = process.stdout.read()
    # 143: our handler's exit (serve: uvicorn raises the signal again once it has stopped);
    # 0: a server that stops by itself on SIGTERM (recent wyoming packages)
    assert process.returncode in (0, 128 + signal.SIGTERM), rest
    assert is_gone(pid), rest
    assert "the next start resumes it" in rest or "failed" in rest, rest
