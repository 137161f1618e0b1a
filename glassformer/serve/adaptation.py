"""A door's background adaptation (`--adapt DIR`): serve the grammar zero-shot at once, fit
the model to it meanwhile, and switch to the fitted model when it is ready.

    start      DIR/best finished for this grammar? serve it now, start nothing
               else: `glassformer adapt --grammar G --out DIR` as a child process (one torch
               thread, a lower priority, its output in DIR/adapt.log)
    watcher    waits for the child; exit 0: loads DIR/best beside the serving model, then
               swaps it into the door's listeners (one dict assignment); else one line, and
               the zero-shot model goes on serving
    stop       the door stops: the child is interrupted (its whole process group, as Ctrl-C
               would) and waited for; adapt resumes where it stopped at the next start

The swap is one assignment to the grammar's entry in the dict every request reads its
Listener from: a request under way keeps the Listener it took, the next one gets the new one,
so the door never stops answering. Not here: adapting several grammars, or a model trained
here (adapt fine-tunes a published Whisper); a door killed with SIGKILL leaves its child to
finish on its own (it holds DIR/.adapt.lock, so a new door's child reports it in the log).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from glassformer.errors import GlassformerError, first_line
from glassformer.tasks.speech.config import GRAMMAR_FILE, made_for
from glassformer.voice.grammar import Grammar

if TYPE_CHECKING:
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

LOG_FILE = "adapt.log"  # DIR/adapt.log: the child's output, appended to at each start
NICENESS = 10  # the child's priority below the door's: requests come first
STOP_GRACE_S = 10.0  # s: an interrupted child's time to stop before it is killed


def check_adaptation(
    out: str, noise_dir: str | None, grammars: list[str], model: str, workers: int = 1
) -> None:
    """Every reason `--adapt OUT` cannot run, before any model loads (torch-free).

    Raises:
        GlassformerError: not exactly one grammar, a model that is no published Whisper,
            several server processes, a noise folder adapt cannot use, an OUT adapt cannot
            write or that holds another grammar's adaptation, a grammar no voice can say.
    """
    from glassformer.convert.whisper_sources import whisper_source_kind
    from glassformer.tasks.speech.adapt import check_noise_dir, check_speakable
    from glassformer.train.outputs import check_run_directory

    if len(grammars) != 1:
        raise GlassformerError(
            f"--adapt {out} fits the model to one grammar: give exactly one --grammar G.yaml "
            f"(given {len(grammars)})"
        )
    if whisper_source_kind(model) is None:
        raise GlassformerError(
            f"--adapt fine-tunes a published Whisper, and {model} is not one: serve "
            "whisper-tiny.en (the default), or serve this model without --adapt"
        )
    if workers != 1:
        raise GlassformerError(f"--adapt runs beside one server process: --workers {workers}")
    if noise_dir is not None:
        check_noise_dir(noise_dir, "--adapt-noise-dir")
    path = grammars[0]
    if not Path(path).is_file():
        raise GlassformerError(f"--grammar {path}: no such file")
    grammar = Grammar.from_yaml(path)
    check_speakable(grammar, path)
    check_run_directory(out)
    from glassformer.files import check_output_file

    check_output_file(Path(out) / LOG_FILE)
    held = held_grammar_sha256(Path(out))
    if held is not None and held != grammar.sha256:
        raise GlassformerError(
            f"--adapt {out}: holds an adaptation to another grammar than {path}; give another "
            "folder (or delete this one)"
        )


def held_grammar_sha256(out: Path) -> str | None:
    """The grammar an adaptation folder was made for (its checkpoints', else its clips'),
    or None for a new folder."""
    from glassformer.tasks.speech.adapt import DATA_DIR
    from glassformer.voice.synth import read_dataset_info

    for saved in (out / "last" / GRAMMAR_FILE, out / "best" / GRAMMAR_FILE):
        if saved.is_file():
            return Grammar.from_yaml(saved).sha256
    if (out / DATA_DIR).is_dir():
        return read_dataset_info(out / DATA_DIR).get("grammar_sha256")
    return None


def finished_model(out: Path, grammar: Grammar) -> Path | None:
    """OUT/best when adapt has finished there for `grammar` (OUT/last reached adapt's
    steps), else None: a run stopped early is resumed, not served."""
    from glassformer.tasks.speech.adapt import AdaptConfig
    from glassformer.train.outputs import steps_done

    done = (steps_done(out) or 0) >= AdaptConfig("").steps
    return out / "best" if done and made_for(out / "best", grammar) else None


def adapt_command(grammar: Path, out: Path, model: str, noise_dir: str | None) -> list[str]:
    """The child's argv: `glassformer adapt` by this Python, under `nice` where it exists.

    Example: ("g.yaml", "run", "whisper-tiny.en", None) -> ["nice", "-n", "10",
    sys.executable, "-m", "glassformer", "adapt", "--grammar", "g.yaml", "--out", "run",
    "--model", "whisper-tiny.en"]
    """
    nice = ["nice", "-n", str(NICENESS)] if shutil.which("nice") else []
    argv = [*nice, sys.executable, "-m", "glassformer", "adapt"]
    argv += ["--grammar", str(grammar), "--out", str(out), "--model", model]
    return argv + (["--noise-dir", noise_dir] if noise_dir else [])


def child_environment() -> dict[str, str]:
    """The door's environment with torch held to one thread that sleeps when idle: an extra
    torch process beside a server uses one thread (threads.py)."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


class Adaptation:
    """One grammar's adaptation beside a door: start() it, stop() it with the door.

    Args:
        listeners: the door's Listeners by grammar name, the dict its requests read.
        config: the door's ListenerConfig (its model: the published Whisper served now).
        grammar: the grammar file adapted to (one of the door's).
        out: adapt's run directory (DIR/best: the model switched to).
        noise_dir: the room's noise, passed to adapt's --noise-dir.
        command: the child's argv (None: adapt_command; tests give a stand-in).
    """

    def __init__(
        self,
        listeners: dict[str, Listener],
        config: ListenerConfig,
        grammar: str | Path,
        out: str | Path,
        noise_dir: str | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.listeners, self.config = listeners, config
        self.grammar_path, self.out = Path(grammar).resolve(), Path(out).resolve()
        self.name = Path(grammar).stem  # its key in `listeners` (serve/models.grammar_names)
        self.log = self.out / LOG_FILE
        self.command = command or adapt_command(
            self.grammar_path, self.out, config.model, noise_dir and str(Path(noise_dir).resolve())
        )
        self.state = "starting"
        self.child: subprocess.Popen | None = None
        self.watcher: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self) -> None:
        """Serve a finished DIR/best at once; else start the child and its watcher."""
        grammar = Grammar.from_yaml(self.grammar_path)
        finished = finished_model(self.out, grammar)
        if finished is not None:
            self.switch(finished, f"serving {self.name} with the model adapted to it, {finished}")
            return
        self.out.mkdir(parents=True, exist_ok=True)
        from glassformer.files import open_for_append

        # a SIGTERM or Ctrl-C inside Popen would leave a child nobody records, and one inside
        # Thread.start a watcher that stop() cannot join: held until both are done
        with open_for_append(self.log) as log, signals_held():  # the child holds its own fd
            self.child = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_environment(),
                start_new_session=True,  # its own process group: stop() signals it all
            )
            self.state = "adapting"
            say(
                f"adapting the model to {self.name} in the background (pid {self.child.pid}, "
                f"its log {self.log}); {self.name} is served zero-shot until then"
            )
            self.watcher = threading.Thread(
                target=self.watch, name="glassformer-adapt", daemon=True
            )
            self.watcher.start()

    def watch(self) -> None:
        """On the watcher thread: wait for the child, then switch or say why not."""
        status = self.child.wait()
        if self.stopping.is_set():
            return
        best = self.out / "best"
        try:
            if status != 0:
                self.fail(f"adapt exited with status {status}")
            elif not made_for(best, Grammar.from_yaml(self.grammar_path)):
                self.fail(f"adapt left no model for {self.name} in {best}")
            else:
                self.switch(best, f"switched {self.name} to the adapted model {best}")
        except Exception as error:  # noqa: BLE001 - whatever it is, the door serves on
            self.fail(f"{best} could not be loaded ({first_line(error)})")

    def switch(self, best: Path, line: str) -> None:
        """Load `best` as the grammar's Listener (off the request path), then swap it in: the
        door's config but for the model, and the door's grammar (serve/models.load_speech)."""
        from glassformer.tasks.speech.listener import Listener
        from glassformer.tasks.speech.loading import load_grammar

        config = dataclasses.replace(self.config, model=str(best))
        adapted = Listener(config).with_grammar(load_grammar(self.grammar_path))
        self.listeners[self.name] = adapted  # one assignment: the next request gets it
        self.state = "adapted"
        say(line)

    def fail(self, reason: str) -> None:
        self.state = "failed"
        say(f"adapting {self.name} failed: {reason} (see {self.log}); it stays zero-shot")

    def stop(self) -> None:
        """Interrupt a running child as Ctrl-C would, wait for it (killed after
        STOP_GRACE_S), and for the watcher."""
        self.stopping.set()
        child = self.child
        if child is not None and child.poll() is None:
            signal_group(child, signal.SIGINT)
            try:
                child.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                signal_group(child, signal.SIGKILL)
                child.wait()
            self.state = "stopped"
            say(f"stopped adapting {self.name}; the next start resumes it ({self.log})")
        if self.watcher is not None:
            self.watcher.join(STOP_GRACE_S)

    def describe(self) -> dict[str, str]:
        """What /v1/models tells of it: the grammar, its state, the model and the log."""
        best, log = str(self.out / "best"), str(self.log)
        return {"grammar": self.name, "state": self.state, "model": best, "log": log}


@contextlib.contextmanager
def signals_held(numbers: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Signals in `numbers` that arrive inside the block are acted on at its end, by the
    handlers that were there before: nothing interrupts the block halfway. Python runs signal
    handlers on the main thread only, so elsewhere this holds nothing (and needs not)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(number: int, _: object) -> None:
        arrived.append(number)

    previous = {number: signal.signal(number, hold) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in arrived:
            signal.raise_signal(number)


def signal_group(child: subprocess.Popen, number: int) -> None:
    """Send `number` to the child's process group (it leads its own: start_new_session)."""
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(child.pid, number)


def say(line: str) -> None:
    print(f"# {line}", flush=True)
