"""Hostile files at the command line: nothing is destroyed, nothing takes the machine.

Each probe runs glassformer in a child process whose address space is capped (RLIMIT_AS), so
a regression fails the test (a MemoryError, a traceback) instead of eating the machine, and
checks the answer: one line `glassformer: error: ...` naming the problem, exit status 2, no
traceback. Issue 21's kinds 1-3: outputs that are devices, tokenizers whose merges double a
token, audio headers with absurd rates or channels, YAML aliases, grammars that backtrack or
that a decoder can never finish.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

MEMORY = 1 << 30  # bytes of address space a probe may take: each asked for tens of GB
TIMEOUT = 30  # seconds; each probe answers in about one
RUN_CLI = "from glassformer.cli import main; sys.exit(main(sys.argv[1:]))"
LIMIT = "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0}))"
GRAMMAR = "context:\n  expressions:\n    go:\n      - {}\n  slots:\n    id: {}\n"


def run_limited(code: str, *args: str, memory: int = MEMORY) -> subprocess.CompletedProcess:
    """`python -c code args` with at most `memory` bytes of address space, one thread each."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", f"{LIMIT.format(memory)}; {code}", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )


def assert_one_line_error(done: subprocess.CompletedProcess, *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("glassformer: error: "), done.stderr
    assert all(words in lines[0] for words in expected), lines[0]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(" ".join(f"word{i} {i * i}" for i in range(2000)) + "\n")  # 300 ids' worth
    return path


# --- 1. destroying files ---------------------------------------------------------------------


def is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_tokenizer_train_refuses_a_device_as_its_output(corpus: Path, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"{device} is missing on this machine")
    done = run_limited(
        RUN_CLI, "tokenizer", "train", str(corpus), "--vocab-size", "300", "--out", device
    )
    assert_one_line_error(done, f"{device}: is a character device", "refusing to replace it")
    assert is_char_device(Path(device))
    assert not Path(device).with_suffix(".vocab").exists()


def test_tokenizer_export_refuses_a_fifo_and_a_link_to_dev_null(
    corpus: Path, tmp_path: Path
) -> None:
    tokenizer = tmp_path / "tok.json"
    train = ["tokenizer", "train", str(corpus), "--vocab-size", "260", "--out", str(tokenizer)]
    assert run_limited(RUN_CLI, *train).returncode == 0
    fifo, link = tmp_path / "pipe", tmp_path / "link.json"
    os.mkfifo(fifo)
    link.symlink_to("/dev/null")
    for target in (fifo, link):
        export = ["tokenizer", "export", str(tokenizer), "--to", "hf", "--out", str(target)]
        assert_one_line_error(run_limited(RUN_CLI, *export), "refusing to replace it")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert is_char_device(Path("/dev/null"))


# --- 2. small files that would take the whole machine ----------------------------------------


def test_a_tokenizer_whose_merges_double_a_token_is_one_line(tmp_path: Path) -> None:
    merges = [[97, 97]] + [[256 + i, 256 + i] for i in range(39)]  # "a" * 2**40 at the end
    document = {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe"}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(document | {"pattern": "gpt2", "merges": merges}))
    for command in (["show", str(path), "aaaa"], ["encode", str(path), "aaaa"]):
        done = run_limited(RUN_CLI, "tokenizer", *command)
        assert_one_line_error(done, str(path), "MAX_TOKEN_BYTES=1024")


def audio_file(path: Path, waveform: np.ndarray, rate: int, fmt: str = "WAV") -> Path:
    buffer = io.BytesIO()
    soundfile.write(buffer, waveform, rate, format=fmt)
    path.write_bytes(buffer.getvalue())
    return path


READ_AUDIO = (
    "from glassformer.audio.io import load_audio; from glassformer.errors import GlassformerError\n"
    "try:\n    load_audio(sys.argv[1])\nexcept GlassformerError as error:\n"
    "    sys.exit(f'glassformer: error: {error}')"  # prints it, exit status 1
)


def test_audio_headers_are_held_to_their_limits_before_decoding(tmp_path: Path) -> None:
    """A 100 MHz WAV asked the resampler for 15 GiB; a 64-channel OGG decoded to 0.7 GB."""
    tone = (0.3 * np.sin(np.arange(8000) / 3.0)).astype(np.float32)
    cases = [
        (audio_file(tmp_path / "rate.wav", tone, 100_000_007), "100000007 Hz, outside"),
        (
            audio_file(tmp_path / "wide.ogg", np.zeros((96_000, 64), np.float32), 96_000, "OGG"),
            "64 channels",
        ),
        (audio_file(tmp_path / "one.wav", tone[:1], 16_000), "shorter than the 0.1 s"),
    ]
    for path, expected in cases:
        assert path.stat().st_size < 40_000
        done = run_limited(READ_AUDIO, str(path))
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == done.stderr.strip().splitlines()[0]
        assert f"{path}: " in done.stderr and expected in done.stderr, done.stderr


def test_a_billion_laughs_grammar_is_one_line(tmp_path: Path) -> None:
    laughs = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    laughs += [
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(laughs) + "\ncontext:\n  expressions:\n    go: [*i]\n")
    assert path.stat().st_size < 600
    done = run_limited(
        RUN_CLI, "voice", "synth", "--grammar", str(path), "--out", str(tmp_path / "d")
    )
    assert_one_line_error(done, str(path), "aliases are not allowed in a grammar")
    assert not (tmp_path / "d").exists()


# --- 2 and 3. grammars that backtrack, or that a decoder can never finish ---------------------


def test_a_grammar_a_transcript_cannot_match_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "digits.yaml"
    path.write_text(GRAMMAR.format("'say $id:id'", "[a1, b2, c3]"))
    done = run_limited(
        RUN_CLI, "voice", "synth", "--grammar", str(path), "--out", str(tmp_path / "d")
    )
    assert_one_line_error(done, str(path), "the phrase 'a1' has '1'", "write numbers as words")


def test_forty_ambiguous_choices_answer_at_once() -> None:
    check = (
        "import time; from glassformer.voice.grammar import Grammar\n"
        "g = Grammar({'go': [' '.join(['[a, a a]'] * 40) + ' b']}, {})\n"
        "started = time.perf_counter()\n"
        "assert not g.accepts(' '.join(['a'] * 81)) and not g.can_continue('a ' * 81 + 'b')\n"
        "assert g.parse(' '.join(['a'] * 81 + ['b'])) is None\n"
        "sys.exit(0 if time.perf_counter() - started < 1.0 else 3)"
    )
    done = run_limited(check)
    assert done.returncode == 0, done.stderr


def test_evaluate_refuses_dev_null_for_its_hypotheses_before_translating(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """In process (torch would not start under MEMORY): the output is checked before any work."""
    from glassformer.cli import main
    from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig
    from glassformer.tasks.translation.training import train_translation
    from glassformer.train.config import TrainConfig
    from tests.helpers import reversal_pairs

    model, train, data = TRANSLATION_PRESETS["tiny"].tables()
    config = TrainConfig(**{**train, "steps": 2, "eval_every": 2, "device": "cpu"})
    run = tmp_path / "translation"
    pairs = reversal_pairs(100)
    train_translation(
        pairs, None, model, config, TranslationDataConfig(**data), run, progress=False
    )
    (tmp_path / "src.txt").write_text("red cat\n")
    (tmp_path / "ref.txt").write_text("cat red\n")
    capsys.readouterr()
    evaluate = ["evaluate", str(run), "--src", str(tmp_path / "src.txt")]
    evaluate += ["--ref", str(tmp_path / "ref.txt"), "--hypotheses", "/dev/null"]
    assert main(evaluate) == 2
    err = capsys.readouterr().err
    assert (
        err.strip() == "glassformer: error: /dev/null: is a character device, not a regular "
        "file; refusing to replace it"
    )
    assert is_char_device(Path("/dev/null"))


# --- issue 26: readers that trusted what they were given ---------------------------------------


def test_a_tokenizer_of_kilobyte_merges_is_bounded_in_all(tmp_path: Path) -> None:
    """20 MB of merges that each make a 1 KB token asked for 2.6 GB; MAX_VOCAB_BYTES stops it."""
    merges = [[97, 97]] + [[256 + i, 256 + i] for i in range(9)]  # a 1 KB token ...
    merges += [[264, 264]] * 1_700_000  # ... and 1.7 million more of them
    document = {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe"}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(document | {"pattern": "gpt2", "merges": merges}))
    assert 19e6 < path.stat().st_size < 25e6
    done = run_limited(RUN_CLI, "tokenizer", "encode", str(path), "aaaa")
    assert_one_line_error(done, str(path), "MAX_VOCAB_BYTES")


def test_a_ten_megabyte_special_token_is_refused_at_load(tmp_path: Path) -> None:
    document = {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe"}
    document |= {"pattern": "gpt2", "merges": [], "special_tokens": ["<" + "s" * 10**7 + ">"]}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(document))
    done = run_limited(RUN_CLI, "tokenizer", "encode", "--allow-special", str(path), "s" * 1000)
    assert_one_line_error(done, str(path), "MAX_SPECIAL_TOKEN_CHARS=256")


def test_endless_and_silent_inputs_are_refused_unread(corpus: Path, tmp_path: Path) -> None:
    """/dev/zero never ends (read whole, it took all memory); a FIFO nobody writes never
    starts (read, it hung): both are one line, in bounded time and memory."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (["tokenizer", "encode", "/dev/zero", "hi"], "/dev/zero: is a character device"),
        (["tokenizer", "decode", str(fifo), "1"], f"{fifo}: is a FIFO"),
        (["ladder", "--corpus", "/dev/urandom", "--out", str(tmp_path / "l")], "character device"),
        (
            [
                "tokenizer",
                "train",
                "/dev/zero",
                "--vocab-size",
                "300",
                "--out",
                str(tmp_path / "t"),
            ],
            "/dev/zero: is a character device",
        ),
    ]
    for argv, expected in cases:
        assert_one_line_error(run_limited(RUN_CLI, *argv), expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_a_config_edited_to_a_billion_parameters_allocates_nothing(tmp_path: Path) -> None:
    """config.json said 1.2B parameters; the model was built (5 GB) before the weights were
    checked. Now the safetensors header's shapes are checked first, against a model on the
    meta device. The child may take 3 GB: enough for torch, far from the 5 GB."""
    from glassformer.models.configs import GPTConfig
    from glassformer.models.gpt import GPT
    from glassformer.train.checkpoint import save_checkpoint

    directory = save_checkpoint(GPT(GPTConfig.tiny()), tmp_path / "ckpt")
    header = json.loads((directory / "config.json").read_text())
    huge = {"d_model": 2048, "n_heads": 16, "n_layers": 24, "d_ff": 8192, "max_len": 1024}
    header["config"] |= huge
    (directory / "config.json").write_text(json.dumps(header))
    done = run_limited(RUN_CLI, "info", str(directory), memory=3 << 30)
    assert_one_line_error(done, "model.safetensors: missing tensors decoder.blocks.")
    header["config"] |= {"n_layers": GPTConfig.tiny().n_layers}  # the same names, wider
    (directory / "config.json").write_text(json.dumps(header))
    done = run_limited(RUN_CLI, "info", str(directory), memory=3 << 30)
    assert_one_line_error(done, "model.safetensors: tensor", "config.json implies (")
