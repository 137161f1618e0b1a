"""README.md's Python examples run as written (issue 29, part 1).

Every ```python block of the README is executed, in order, in one namespace per section,
from a fresh folder that holds what the README says the reader has: the clone's packaged
grammars (`glassformer/...` paths), `command.wav` made as the README says
(`espeak-ng -w command.wav "monday at nine a m"`), a Hugging Face GPT-2 (`hf_model`) and some
`text`. The live microphone's `sounddevice` is stood in for by one that reads command.wav's
bytes and then a second of silence, and then closes (the README's loop runs forever). A block
added to the README without a case here fails `test_every_python_block_is_run`.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.installed import needs_espeak, needs_whisper

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def block_with(words: str) -> str:
    """The one README block whose code contains `words`."""
    found = [block for block in blocks() if words in block]
    assert len(found) == 1, f"{len(found)} README blocks contain {words!r}"
    return found[0]


LISTENER, MICROPHONE = "listener.understand_file(", "sounddevice.RawInputStream("
LIBRARY, TOKENIZER = "glassformer.from_hf_gpt2(", "train_bpe_tokenizer(["


def test_every_python_block_is_run() -> None:
    cases = [block_with(words) for words in (LISTENER, MICROPHONE, LIBRARY, TOKENIZER)]
    assert sorted(cases) == sorted(blocks()), "a README block no test here runs"


class MicrophoneClosed(Exception):
    """The stand-in microphone has no more to give (ends the README's `while True`)."""


def microphone_reading(pcm: bytes) -> types.ModuleType:
    """A `sounddevice` whose RawInputStream gives `pcm` (16-bit mono), then closes."""
    module = types.ModuleType("sounddevice")

    class RawInputStream:
        def __init__(self, samplerate: int, channels: int, dtype: str) -> None:
            assert (samplerate, channels, dtype) == (16_000, 1, "int16")
            self.left = pcm

        def __enter__(self) -> RawInputStream:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self, frames: int) -> tuple[bytes, bool]:
            if not self.left:
                raise MicrophoneClosed
            piece, self.left = self.left[: 2 * frames], self.left[2 * frames :]
            return piece, False

    module.RawInputStream = RawInputStream
    return module


def run(code: str, namespace: dict, until: type[Exception] | None = None) -> str:
    """Execute a block as the reader would paste it; what it printed. `until`: the exception
    that must end it (a block that loops forever)."""
    printed = io.StringIO()
    ending = pytest.raises(until) if until else contextlib.nullcontext()
    with contextlib.redirect_stdout(printed), ending:
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    return printed.getvalue()


@needs_whisper
@needs_espeak
def test_the_listener_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from glassformer.audio.io import load_audio

    (tmp_path / "glassformer").symlink_to(ROOT / "glassformer")  # paths in the clone
    monkeypatch.chdir(tmp_path)
    subprocess.run(["espeak-ng", "-w", "command.wav", "monday at nine a m"], check=True)
    namespace: dict = {}
    printed = run(block_with(LISTENER), namespace)
    lines = printed.splitlines()
    assert len(lines) == 2, printed  # the file's result, then the stream's (at its end)
    assert "intent='book'" in lines[0] and "'day': 'monday'" in lines[0], lines[0]
    assert lines[1].startswith("book {'day': 'monday'"), lines[1]

    samples = load_audio("command.wav")
    heard = np.concatenate([samples, np.zeros(16_000, np.float32)])  # then a second of quiet
    pcm = (np.clip(heard, -1, 1) * 32767).astype("<i2").tobytes()
    monkeypatch.setitem(sys.modules, "sounddevice", microphone_reading(pcm))
    said = run(block_with(MICROPHONE), namespace, until=MicrophoneClosed).splitlines()
    assert len(said) == 1 and "monday" in said[0].lower(), said  # one command, heard whole


@needs_whisper
def test_the_library_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    monkeypatch.chdir(tmp_path)
    config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    namespace = {"hf_model": GPT2LMHeadModel(config).eval()}  # "a GPT-2 you already have"
    run(block_with(LIBRARY), namespace)
    assert namespace["logits"].shape == (2, 10, namespace["model"].config.vocab_size)
    assert (tmp_path / "runs" / "tiny" / "model.safetensors").is_file()
    assert type(namespace["speech"]).__name__ == "SpeechTransformer"


def test_the_tokenizer_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = {"text": (ROOT / "README.md").read_text(encoding="utf-8")}  # "some text"
    with warnings.catch_warnings():  # a README is too short for 4,096 ids: said, not failed
        warnings.simplefilter("ignore", UserWarning)
        run(block_with(TOKENIZER), namespace)
    assert namespace["tokenizer"].decode(namespace["ids"]) == "To be, or not to be"
    assert (tmp_path / "tok.json").is_file() and (tmp_path / "tok.vocab").is_file()
