"""Reading a Hugging Face tokenizer.json of a byte-level BPE (GPT-2, Whisper) as our tokenizer.

The file holds a BPE model over GPT-2's byte-to-unicode alphabet (io.bytes_to_unicode: each
byte is a printable character, the space is "Ġ"): a vocabulary of token strings with the
file's ids, merges as pairs of strings in rank order, a pre-tokenizer, and "added_tokens"
(Whisper's <|endoftext|>, <|startoftranscript|>, <|en|>, <|transcribe|>, <|notimestamps|>).
We translate each string back to bytes, the merges to pairs of our ids, build a
BPETokenizer, and renumber its ids to the file's (renumbered.py).

Hugging Face encodes the same way our BPETokenizer does: it cuts out added tokens, splits the
rest with the pre-tokenizer's regex, then merges the lowest-ranked pair until none is left;
so our ids equal `tokenizers.Tokenizer.encode(text, add_special_tokens=False).ids` when we
encode with allowed_special="all" (Hugging Face always cuts out its added tokens).

Does not handle (each is one GlassformerError naming the file): normalizers,
add_prefix_space, BPE dropout or subword prefixes/suffixes, ignore_merges, added tokens with
lstrip/rstrip/single_word, two merges that make the same token. The post-processor (Whisper's
template <|startoftranscript|> <|notimestamps|> ... <|endoftext|>) is not applied: which
special tokens frame a text is the decoder's choice, not the tokenizer's.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from glassformer.errors import GlassformerError, first_line
from glassformer.textfiles import parse_json, read_utf8
from glassformer.tokenizer.bpe import N_BYTES, BPETokenizer
from glassformer.tokenizer.io import MAX_TOKENIZER_BYTES, bytes_to_unicode
from glassformer.tokenizer.pretokenize import GPT2_PATTERN
from glassformer.tokenizer.renumbered import RenumberedTokenizer, is_id

BYTE_OF = {char: byte for byte, char in bytes_to_unicode().items()}  # "Ġ" -> 32
UNSUPPORTED_MODEL_OPTIONS = {  # BPE fields whose non-default values change the ids
    "dropout": (None, 0, 0.0),
    "continuing_subword_prefix": (None, ""),
    "end_of_word_suffix": (None, ""),
    "ignore_merges": (None, False),
}


def tokenizer_from_hf_json(path: str | Path) -> RenumberedTokenizer:
    """Read a byte-level BPE tokenizer.json; its ids are the file's ids.

    Example: with Whisper tiny.en's file,
        encode("<|en|> Hello", allowed_special="all") -> [50258, 18435]

    Raises:
        GlassformerError: one line naming the file: missing, not JSON, or a tokenizer this
            reader does not handle (see the module docstring).
    """
    path = Path(path)
    document = parse_json(read_utf8(path, "tokenizer.json", MAX_TOKENIZER_BYTES), str(path))
    try:
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        return tokenizer_from_hf_document(document)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        reason = first_line(error)
        raise GlassformerError(f"{path}: not a supported tokenizer.json ({reason})") from None


def tokenizer_from_hf_document(document: dict[str, Any]) -> RenumberedTokenizer:
    """The tokenizer a parsed tokenizer.json describes (ValueError naming the field if not)."""
    if document.get("normalizer") is not None:
        raise ValueError(f"normalizer {document['normalizer'].get('type')!r} is not supported")
    pattern = split_pattern(document.get("pre_tokenizer"))
    model = document.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError("model is not a BPE model")
    for key, defaults in UNSUPPORTED_MODEL_OPTIONS.items():
        if model.get(key) not in defaults:
            raise ValueError(f"model.{key}={model[key]!r} is not supported")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not all(is_id(i) for i in vocab.values()):
        raise ValueError("model.vocab is not a map from token strings to ids")
    merges, ids = merges_and_ids(vocab, [merge_pair(m) for m in model.get("merges", [])])
    specials = added_tokens(document.get("added_tokens", []), vocab)
    made = set(ids)  # file ids our BPE produces; the other vocabulary ids decode from text
    extra_tokens = {i: token_to_bytes(s) for s, i in vocab.items() if i not in made}
    for text, token in specials.items():
        extra_tokens.pop(token, None)  # an added token may also be in the vocabulary
        if token in made:
            raise ValueError(f"added token {text!r} has id {token}, which a merge makes")
    bpe = BPETokenizer(merges, pattern, list(specials))
    return RenumberedTokenizer(bpe, ids + list(specials.values()), extra_tokens)


def split_pattern(pre_tokenizer: Any) -> str:
    """Our pattern for ByteLevel (GPT-2's regex) or Split(regex, isolated) + ByteLevel."""
    steps = [pre_tokenizer]
    if isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "Sequence":
        steps = pre_tokenizer.get("pretokenizers")
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise ValueError(f"pre_tokenizer {pre_tokenizer!r} is not ByteLevel")
    *splits, byte_level = steps
    if byte_level.get("type") != "ByteLevel" or byte_level.get("add_prefix_space"):
        raise ValueError("the pre_tokenizer must end in ByteLevel without add_prefix_space")
    if not splits:
        if byte_level.get("use_regex", True):
            return GPT2_PATTERN  # the regex Hugging Face's ByteLevel splits with
        raise ValueError("a ByteLevel pre_tokenizer without a regex is not supported")
    split = splits[0]
    regex = split.get("pattern", {}).get("Regex")
    if len(splits) > 1 or split.get("type") != "Split" or not isinstance(regex, str):
        raise ValueError("only one Split(Regex) may come before ByteLevel")
    if split.get("behavior") != "Isolated" or split.get("invert") or byte_level.get("use_regex"):
        raise ValueError("Split must be Isolated, not inverted, with ByteLevel use_regex=false")
    return regex


def merge_pair(merge: Any) -> tuple[str, str]:
    """A merge as two strings: "a b" (older files) or ["a", "b"]."""
    parts = merge.split(" ") if isinstance(merge, str) else merge
    if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        raise ValueError(f"merge {merge!r} is not a pair of tokens")
    return parts[0], parts[1]


def merges_and_ids(
    vocab: dict[str, int], merges: list[tuple[str, str]]
) -> tuple[list[tuple[int, int]], list[int]]:
    """Our merges (pairs of our ids) and the file's id for each of our ids, bytes first.

    A merge whose token can never occur (a part no byte or merge makes) never fires, in
    Hugging Face or here, so it is left out; the kept merges keep their order (their ranks).
    Such merges chain: multilingual Whisper's "Ġt h" needs "Ġt", which no merge makes, so
    "Ġth e" can never fire either (1,168 of its 49,999 merges are left out this way).

    Example: merges [("Ġ", "t")] -> our merge (32, 116) making our id 256 = vocab["Ġt"]
    """
    byte_chars = bytes_to_unicode()  # byte -> its character in the file's strings
    missing = [char for char in byte_chars.values() if char not in vocab]
    if missing:
        raise ValueError(f"model.vocab lacks the byte token {missing[0]!r}")
    ours = dict(BYTE_OF)  # token string -> our id; bytes first
    ids = [vocab[byte_chars[byte]] for byte in range(N_BYTES)]
    reachable = reachable_tokens(set(ours), merges)
    kept: list[tuple[int, int]] = []
    for rank, (a, b) in enumerate(merges):
        if a not in reachable or b not in reachable:
            continue  # a part that nothing makes: the merge can never apply
        if a not in ours or b not in ours:
            raise ValueError(f"merge {rank} ({a!r}, {b!r}) uses a token a later merge makes")
        token = a + b
        if token in ours:
            raise ValueError(f"merge {rank} ({a!r}, {b!r}) makes {token!r} a second time")
        if token not in vocab:
            raise ValueError(f"merge {rank} makes {token!r}, which is not in model.vocab")
        ours[token] = N_BYTES + len(kept)
        kept.append((ours[a], ours[b]))
        ids.append(vocab[token])
    return kept, ids


def reachable_tokens(tokens: set[str], merges: list[tuple[str, str]]) -> set[str]:
    """The tokens BPE can ever make from `tokens` (the bytes) with these merges.

    A worklist: each merge is tried when it is read and again when a part it waits for is
    made, so the time is linear in the merges whatever their order (a pass over all of them
    per level went quadratic on a file listing a chain of merges last to first).

    Example: {"a", "b"} with merges [("a", "b"), ("c", "a"), ("ab", "a")] -> adds "ab", "aba"
    """
    reachable = set(tokens)
    waiting: dict[str, list[int]] = {}  # a part not made yet -> the merges that need it
    made: deque[str] = deque()

    def try_merge(index: int) -> None:
        a, b = merges[index]
        if a in reachable and b in reachable and a + b not in reachable:
            reachable.add(a + b)
            made.append(a + b)

    for index, (a, b) in enumerate(merges):
        for part in {a, b} - reachable:
            waiting.setdefault(part, []).append(index)
        try_merge(index)
    while made:
        for index in waiting.pop(made.popleft(), ()):
            try_merge(index)
    return reachable


def added_tokens(entries: Any, vocab: dict[str, int]) -> dict[str, int]:
    """The added tokens as text -> file id, checked to behave as plain special tokens.

    Hugging Face gives an added token its vocabulary id if it has one, and otherwise the next
    id after the vocabulary and the added tokens before it, in list order, whatever id the
    file states; a file whose ids differ from that numbering is refused rather than guessed.
    """
    if not isinstance(entries, list):
        raise ValueError("added_tokens is not a list")
    vocab_text = {token: text for text, token in vocab.items()}
    specials: dict[str, int] = {}
    for entry in entries:
        text, token = entry.get("content"), entry.get("id")
        if not isinstance(text, str) or not text or not is_id(token):
            raise ValueError(f"added token {entry!r} has no content or id")
        for flag in ("lstrip", "rstrip", "single_word"):
            if entry.get(flag):
                raise ValueError(f"added token {text!r} with {flag}=true is not supported")
        if text in specials:
            raise ValueError(f"added token {text!r} is given twice")
        top = max(specials.values(), default=-1)
        expected = vocab.get(text, top + 1 if top >= len(vocab) else len(vocab))
        if token != expected:
            raise ValueError(f"added token {text!r} has id {token}; Hugging Face gives {expected}")
        if vocab_text.get(token, text) != text:
            raise ValueError(f"added token {text!r} has the id of {vocab_text[token]!r}")
        specials[text] = token
    return specials


def token_to_bytes(token: str) -> bytes:
    """A vocabulary string's bytes, as Hugging Face's ByteLevel decoder gives them.

    Example: "Ġthe" -> b" the"; "<|endoftext|>" -> b"<|endoftext|>"
    """
    if all(char in BYTE_OF for char in token):
        return bytes(BYTE_OF[char] for char in token)
    return token.encode("utf-8")  # a character outside the alphabet: the text as written
