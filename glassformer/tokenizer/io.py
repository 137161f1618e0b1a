"""Tokenizer files: loading our versioned JSON of any kind, and HF and tiktoken exports.

Our format (one JSON file):

    {"format": "glassformer.tokenizer", "format_version": 1, "type": "bpe",
     "pattern": "gpt4", "merges": [[101, 32], ...], "special_tokens": ["<eos>"]}

merges[i] creates id 256 + i; special tokens follow the merges in order. `Tokenizer.save`
writes it (base.py), with a people-only NAME.vocab view beside it for BPE (bpe.py); this
module reads it back, for every kind of tokenizer, and a broken file is one GlassformerError
naming the file.

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

from glassformer.errors import GlassformerError, first_line
from glassformer.files import check_output_files, output_path, write_text_atomically
from glassformer.textfiles import parse_json, read_utf8
from glassformer.tokenizer.base import FORMAT, FORMAT_VERSION, Tokenizer
from glassformer.tokenizer.bpe import BPETokenizer
from glassformer.tokenizer.char import CharTokenizer
from glassformer.tokenizer.renumbered import RenumberedTokenizer

MAX_TOKENIZER_BYTES = 32 << 20  # a tokenizer file read whole; GPT-4's 100k merges: about 2 MB


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Read a tokenizer JSON file of any kind (bpe, char, renumbered_bpe).

    Raises:
        GlassformerError: one line naming the file: missing, not a regular file, larger than
            MAX_TOKENIZER_BYTES, not UTF-8, not JSON (or nested too deeply), or not a valid
            glassformer tokenizer (wrong structure or values, tokens past the BPE bounds).
    """
    path = Path(path)
    document = parse_json(read_utf8(path, "tokenizer", MAX_TOKENIZER_BYTES), str(path))
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise GlassformerError(f"{path}: not a glassformer tokenizer file (no format={FORMAT!r})")
    version = document.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool | float):
        raise GlassformerError(f"{path}: format_version={version!r}, expected {FORMAT_VERSION}")
    try:
        return tokenizer_from_json(document)
    except ValueError as error:
        raise GlassformerError(f"{path}: invalid tokenizer ({first_line(error)})") from None


def tokenizer_from_json(document: dict[str, Any]) -> Tokenizer:
    """The tokenizer a (format-checked) document describes; loading by kind lives only here.

    Raises:
        ValueError: a missing field or a value of the wrong type or range (naming the field).
    """
    kind = require(document, "type", str)
    specials = document.get("special_tokens", [])
    if not isinstance(specials, list):
        raise ValueError(f"special_tokens must be a list, not {type(specials).__name__}")
    if kind == "bpe":
        pattern = require(document, "pattern", str)
        merges = require(document, "merges", list)
        if not all(is_pair_of_ids(pair) for pair in merges):
            bad = next(pair for pair in merges if not is_pair_of_ids(pair))
            raise ValueError(f"merges: {bad!r} is not a pair of non-negative integer ids")
        return BPETokenizer(merges, pattern, specials)  # it makes each pair a tuple, once
    if kind == "char":
        chars = require(document, "chars", list)
        if not all(isinstance(c, str) and len(c) == 1 for c in chars):
            bad = next(c for c in chars if not (isinstance(c, str) and len(c) == 1))
            raise ValueError(f"chars: {bad!r} is not a single character")
        return CharTokenizer(chars, specials)
    if kind == "renumbered_bpe":  # a peer's numbering of a BPE vocabulary (renumbered.py)
        bpe = tokenizer_from_json(require(document, "bpe", dict))
        if not isinstance(bpe, BPETokenizer):
            raise ValueError("bpe must be a tokenizer of type 'bpe'")
        extra = require(document, "extra_tokens", dict)
        if not all(isinstance(piece, str) for piece in extra.values()):
            raise ValueError("extra_tokens must map ids to hex strings of bytes")
        extra_tokens = {int(token): bytes.fromhex(piece) for token, piece in extra.items()}
        return RenumberedTokenizer(bpe, require(document, "ids", list), extra_tokens)
    raise ValueError(f"type={kind!r} is not one of ['bpe', 'char', 'renumbered_bpe']")


def require(document: dict[str, Any], key: str, kind: type) -> Any:
    """document[key], checked to be of `kind` (a ValueError naming the field otherwise)."""
    if key not in document:
        raise ValueError(f"no {key!r} field")
    value = document[key]
    if not isinstance(value, kind):
        raise ValueError(f"{key} must be a {kind.__name__}, not {type(value).__name__}")
    return value


def is_pair_of_ids(pair: object) -> bool:
    """[a, b] with two non-negative ints (JSON true/false are not ids)."""
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in pair)
    )


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
    """Write `tokenizer` for a peer: to="hf" (tokenizer.json) or "tiktoken" (ranks + JSON).

    Raises:
        GlassformerError: not a BPE tokenizer, an unknown `to`, or an output that exists and
            is not a regular file (checked for every file before any is written).
    """
    if not isinstance(tokenizer, BPETokenizer):
        raise GlassformerError("only BPE tokenizers can be exported")
    out = output_path(out)
    check_output_files([out, out.with_name(out.name + ".json")] if to == "tiktoken" else [out])
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
