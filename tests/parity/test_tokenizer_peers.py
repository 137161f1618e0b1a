"""Our BPE ids == Hugging Face tokenizers' ids == tiktoken's ids, from our exported merges.

Both peers are built from *our* merges (nothing downloads): HF loads the tokenizer.json we
write, tiktoken gets an Encoding built in memory and one loaded from the exported ranks file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.io import export_tokenizer, to_tiktoken
from tests.helpers import MULTILINGUAL
from tests.installed import import_or_missing

tokenizers = import_or_missing("tokenizers")
tiktoken = import_or_missing("tiktoken")
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

TEXTS = [
    MULTILINGUAL,
    "Hello, world! How's it going? I'll be there at 10:30.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "我能吞下玻璃而不伤身体。天下大事，必作于细。",
    "🎉🎉🎉 🤖 + 👩🏽‍💻 = ❤️‍🔥",
    "   leading spaces, trailing spaces   \n\n\n and 1234567890 digits",
    "mixed<eos>special<pad>tokens",
]


@pytest.fixture
def hf_tokenizer(multilingual_tokenizer: BPETokenizer, tmp_path: Path):  # noqa: ANN201
    path = tmp_path / "tokenizer.json"
    export_tokenizer(multilingual_tokenizer, "hf", path)
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("text", TEXTS)
def test_hf_tokenizers_gives_our_ids(multilingual_tokenizer, hf_tokenizer, text: str) -> None:  # noqa: ANN001
    ours = multilingual_tokenizer.encode(text, allowed_special="all")  # HF always splits specials
    assert hf_tokenizer.encode(text, add_special_tokens=False).ids == ours
    assert hf_tokenizer.decode(ours, skip_special_tokens=False) == text


@pytest.mark.parametrize("text", TEXTS)
def test_tiktoken_gives_our_ids(multilingual_tokenizer: BPETokenizer, text: str) -> None:
    encoding = to_tiktoken(multilingual_tokenizer)
    assert encoding.encode_ordinary(text) == multilingual_tokenizer.encode(text)
    ours = multilingual_tokenizer.encode(text, allowed_special="all")
    assert encoding.encode(text, allowed_special="all") == ours
    assert encoding.decode(ours) == text


def test_tiktoken_from_the_exported_files(
    multilingual_tokenizer: BPETokenizer, tmp_path: Path
) -> None:
    import json

    ranks_path, settings_path = export_tokenizer(
        multilingual_tokenizer, "tiktoken", tmp_path / "ours.tiktoken"
    )
    settings = json.loads(settings_path.read_text())
    encoding = tiktoken.Encoding(
        "ours",
        pat_str=settings["pat_str"],
        mergeable_ranks=load_tiktoken_bpe(str(ranks_path)),
        special_tokens=settings["special_tokens"],
    )
    for text in TEXTS:
        assert encoding.encode_ordinary(text) == multilingual_tokenizer.encode(text)
