"""Tokenizer files: our versioned JSON, a human-readable vocabulary view, HF and tiktoken exports.

Our format (one JSON file):

    {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe",
     "pattern": "gpt4", "merges": [[101, 32], ...], "special_tokens": ["<eos>"]}

merges[i] creates id 256 + i; special tokens follow the merges in order. `save` also writes
NAME.vocab beside NAME.json: one line per id with the bytes it stands for and the pair it was
merged from, for people only (it is never read back).

Exports rebuild the same tokenizer in a peer's terms, giving identical ids:
  * Hugging Face `tokenizers` tokenizer.json: a BPE model over GPT-2's byte-to-unicode
    alphabet, a Split(regex, isolated) + ByteLevel pre-tokenizer, the specials as added tokens.
  * tiktoken: mergeable ranks (token bytes -> id; a merge's id is its rank) written as a
    .tiktoken file (base64 bytes and rank per line) plus PATH.json with the pattern and
    specials; `to_tiktoken` builds the Encoding in memory. Nothing is downloaded.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from glassformer.errors import GlassformerError
from glassformer.files import write_text_atomically
from glassformer.tokenizer.base import Tokenizer
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.char import CharTokenizer

FORMAT = "glassformer.tokenizer"
FORMAT_VERSION = 1



def save_tokenizer(tokenizer: Tokenizer, path: str | Path) -> None:
    """Write the JSON file, and for BPE the .vocab view beside it."""
    path = Path(path)
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, **tokenizer.to_json()}
    write_text_atomically(path, json.dumps(document, ensure_ascii=False) + "\n")
    if isinstance(tokenizer, BPETokenizer):
        write_text_atomically(path.with_suffix(".vocab"), vocabulary_view(tokenizer))


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Read a tokenizer JSON file; any problem is one GlassformerError naming the file."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GlassformerError(f"{path}: no such tokenizer file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GlassformerError(f"{path}: not valid JSON ({error})") from None
    except IsADirectoryError:
        raise GlassformerError(f"{path}: is a directory, not a tokenizer file") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise GlassformerError(f"{path}: not a glassformer tokenizer file (no format={FORMAT!r})")
    if document.get("format_version") != FORMAT_VERSION:
        version = document.get("format_version")
        raise GlassformerError(f"{path}: format_version={version!r}, expected {FORMAT_VERSION}")
    try:
        return tokenizer_from_json(document)
    except (KeyError, TypeError, ValueError) as error:
        raise GlassformerError(f"{path}: invalid tokenizer ({error})") from None


def tokenizer_from_json(document: dict[str, Any]) -> Tokenizer:
    specials = document.get("special_tokens", [])
    if document["type"] == "bpe":
        merges = [(int(a), int(b)) for a, b in document["merges"]]
        return BPETokenizer(merges, document["pattern"], specials)
    if document["type"] == "char":
        return CharTokenizer(document["chars"], specials)
    raise ValueError(f"type={document['type']!r} is not one of ['bpe', 'char']")


def printable(token: bytes) -> str:
    """Bytes shown readably: valid UTF-8 as text (with escapes), other bytes as \\xNN."""
    return repr(token.decode("utf-8", errors="backslashreplace"))[1:-1]


def vocabulary_view(tokenizer: BPETokenizer) -> str:
    counts = f"256 bytes, {len(tokenizer.merges)} merges, {len(tokenizer.special_tokens)} specials"
    lines = [f"# {tokenizer.vocab_size} ids: {counts}. For people only; the .json is the file."]
    for token, piece in enumerate(tokenizer.vocab):
        if token < 256:
            lines.append(f"{token}\t[{printable(piece)}]")
        else:
            a, b = tokenizer.merges[token - 256]
            parts = f"[{printable(tokenizer.vocab[a])}] + [{printable(tokenizer.vocab[b])}]"
            lines.append(f"{token}\t[{printable(piece)}]\t<- {parts}")
    lines += [f"{token}\t{text}\t(special)" for text, token in tokenizer.special_tokens.items()]
    return "\n".join(lines) + "\n"


# --- Hugging Face tokenizers ----------------------------------------------------------------


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character, so byte strings become text.

    Printable Latin-1 bytes map to themselves; the other 68 bytes (controls, space, ...) map to
    characters from U+0100 up, in byte order.
    """
    printable_bytes = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    mapping = {b: chr(b) for b in printable_bytes}
    shifted = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shifted)
            shifted += 1
    return mapping


def to_hf_json(tokenizer: BPETokenizer) -> dict[str, Any]:
    """A tokenizer.json document that Hugging Face `tokenizers` loads with identical ids."""
    byte_map = bytes_to_unicode()

    def as_text(token: int) -> str:
        return "".join(byte_map[b] for b in tokenizer.vocab[token])

    added = [
        {
            "id": token,
            "content": text,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for text, token in tokenizer.special_tokens.items()
    ]
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": True,
        "use_regex": False,
    }
    split = {
        "type": "Split",
        "pattern": {"Regex": tokenizer.pattern},
        "behavior": "Isolated",
        "invert": False,
    }
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": False,
        "vocab": {as_text(token): token for token in range(len(tokenizer.vocab))},
        "merges": [[as_text(a), as_text(b)] for a, b in tokenizer.merges],
    }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, byte_level]},
        "post_processor": None,
        "decoder": byte_level,
        "model": model,
    }


# --- tiktoken -------------------------------------------------------------------------------


def tiktoken_ranks(tokenizer: BPETokenizer) -> dict[bytes, int]:
    """tiktoken's mergeable ranks: each token's bytes -> its id (a merge's id is its rank)."""
    return {piece: token for token, piece in enumerate(tokenizer.vocab)}


def to_tiktoken(tokenizer: BPETokenizer, name: str = "glassformer") -> Any:
    """A tiktoken.Encoding built in memory from our merges (needs the tiktoken package)."""
    try:
        import tiktoken
    except ImportError:
        raise GlassformerError(
            "tiktoken export needs the tiktoken package: pip install tiktoken"
        ) from None
    return tiktoken.Encoding(
        name,
        pat_str=tokenizer.pattern,
        mergeable_ranks=tiktoken_ranks(tokenizer),
        special_tokens=dict(tokenizer.special_tokens),
    )


def export_tokenizer(tokenizer: Tokenizer, to: str, out: str | Path) -> list[Path]:
    """Write `tokenizer` for a peer: to="hf" (tokenizer.json) or "tiktoken" (ranks + JSON)."""
    if not isinstance(tokenizer, BPETokenizer):
        raise GlassformerError("only BPE tokenizers can be exported")
    out = Path(out)
    if to == "hf":
        write_text_atomically(out, json.dumps(to_hf_json(tokenizer), ensure_ascii=False) + "\n")
        return [out]
    if to == "tiktoken":
        lines = [
            f"{base64.b64encode(piece).decode()} {rank}"
            for piece, rank in tiktoken_ranks(tokenizer).items()
        ]
        write_text_atomically(out, "\n".join(lines) + "\n")
        sidecar = out.with_name(out.name + ".json")
        settings = {"pat_str": tokenizer.pattern, "special_tokens": tokenizer.special_tokens}
        write_text_atomically(sidecar, json.dumps(settings, ensure_ascii=False) + "\n")
        return [out, sidecar]
    raise GlassformerError(f"--to {to!r} is not one of ['hf', 'tiktoken']")
