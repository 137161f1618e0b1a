"""Parallel text for translation: sentence pairs read and cleaned, the default corpus, a seeded
train/valid split, and length-bucketed batches by token count.

Pairs come from a TSV or two line-aligned files (optionally gzipped), or by default from the
example sentences of the Ding dictionary (Debian package trans-de-en), English -> German.
Batching follows the Annotated Transformer and fairseq: sort by length, cut by a token budget.
Does not tokenize, pad or build tensors (train/data.py does), and never downloads anything.
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from glassformer.corpora import default_cache_root
from glassformer.errors import GlassformerError
from glassformer.files import write_text_atomically

DING_PATH = Path("/usr/share/trans/de-en")  # installed by the Debian package trans-de-en
DING_ORIGIN = "trans-de-en (Ding) example sentences"
EXTRACTOR_VERSION = 1  # part of the cache key: bump when extract_ding_sentences changes
DROP_REASONS = ("malformed", "empty", "too_long", "duplicate")


@dataclass(frozen=True)
class ParallelCorpus:
    pairs: list[tuple[str, str]]  # (source, target), stripped, whitespace collapsed
    dropped: dict[str, int]  # reason -> lines dropped, every reason of DROP_REASONS present
    origin: str  # where the pairs came from, for messages: "data.tsv", "train.en + train.de"
    max_chars: int = 400  # the length limit "too_long" refers to, in characters per side

    def summary(self) -> str:
        """One line, e.g. "29,000 pairs from a.tsv (dropped: 3 empty, 2 too long (> 400 chars))"."""
        words = {"too_long": f"too long (> {self.max_chars:,} chars)"}
        counts = [(self.dropped.get(reason, 0), reason) for reason in DROP_REASONS]
        parts = [f"{count:,} {words.get(reason, reason)}" for count, reason in counts if count]
        dropped = f" (dropped: {', '.join(parts)})" if parts else ""
        noun = "pair" if len(self.pairs) == 1 else "pairs"
        return f"{len(self.pairs):,} {noun} from {self.origin}{dropped}"


def read_parallel(
    data: str | Path | None = None,
    src: str | Path | None = None,
    tgt: str | Path | None = None,
    *,
    max_chars: int = 400,
    dedupe: bool = False,
) -> ParallelCorpus:
    """Sentence pairs, in file order, from a TSV, two line-aligned files, or default_corpus().

    Args:
        data: a UTF-8 TSV, `source<TAB>target` a line; lines without exactly one tab are
            dropped as "malformed". Files ending in `.gz` are decompressed.
        src, tgt: two UTF-8 files; line i of `tgt` translates line i of `src`.
        max_chars: pairs with a longer side (after collapsing whitespace) are dropped as
            "too_long"; pairs with an empty side as "empty".
        dedupe: drop repeats of an earlier pair as "duplicate".

    Raises:
        GlassformerError: missing or unreadable file, bad argument combination, files with
            different line counts, a TSV without tabs, or nothing left after cleaning.
    """
    if max_chars < 1:
        raise GlassformerError(f"max_chars must be at least 1, got {max_chars}")
    if data is not None and (src is not None or tgt is not None):
        raise GlassformerError("pass either --data (a TSV) or --src and --tgt, not both")
    if (src is None) != (tgt is None):
        given, missing = ("--src", "--tgt") if tgt is None else ("--tgt", "--src")
        raise GlassformerError(f"{given} needs {missing}: two line-aligned files, or --data TSV")
    if data is None and src is None:
        return default_corpus(max_chars=max_chars, dedupe=dedupe)
    if data is not None:
        return _clean(*_read_tsv(Path(data)), str(data), max_chars, dedupe)
    sources, targets = list(_read_lines(Path(src))), list(_read_lines(Path(tgt)))
    if len(sources) != len(targets):
        raise GlassformerError(
            f"misaligned parallel files: {src} has {len(sources):,} lines but {tgt} has "
            f"{len(targets):,}; line i of one must translate line i of the other"
        )
    return _clean(list(zip(sources, targets, strict=True)), 0, f"{src} + {tgt}", max_chars, dedupe)


def _read_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 (optionally .gz) file without line endings; errors name the line."""
    from glassformer.textfiles import open_regular_file

    if not path.exists():
        raise GlassformerError(f"no such file: {path}")
    handle = open_regular_file(path, "text")  # a FIFO or /dev/zero: one line, never a hang
    line_number = 0
    try:
        with handle, gzip.open(handle) if path.suffix == ".gz" else handle as file:
            for line_number, raw in enumerate(file, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    message = f"{path}, line {line_number}: not UTF-8 text ({error.reason})"
                    raise GlassformerError(message) from None
                if line_number == 1:
                    line = line.removeprefix("\ufeff")  # a byte-order mark is not text
                yield line.rstrip("\r\n")
    except (OSError, EOFError) as error:  # includes gzip.BadGzipFile and truncated archives
        raise GlassformerError(f"cannot read {path} after line {line_number}: {error}") from None


def _read_tsv(path: Path) -> tuple[list[tuple[str, str]], int]:
    """The (source, target) fields of each line and the count of lines without exactly one tab."""
    pairs, malformed, has_tab = [], 0, False
    for line in _read_lines(path):
        fields = line.split("\t")
        has_tab = has_tab or len(fields) > 1
        if len(fields) == 2:
            pairs.append((fields[0], fields[1]))
        elif line.strip():
            malformed += 1
        else:
            pairs.append(("", ""))  # a blank line counts as empty, not malformed
    if not has_tab and malformed:
        raise GlassformerError(
            f"{path} is not a TSV: no line has a tab between source and target "
            "(use --src and --tgt for two line-aligned files)"
        )
    return pairs, malformed


def _clean(
    raw_pairs: list[tuple[str, str]], malformed: int, origin: str, max_chars: int, dedupe: bool
) -> ParallelCorpus:
    """Collapse whitespace, then drop and count empty, over-long and (optionally) repeated pairs."""
    dropped = {**dict.fromkeys(DROP_REASONS, 0), "malformed": malformed}
    pairs, seen = [], set()
    for source, target in raw_pairs:
        pair = (" ".join(source.split()), " ".join(target.split()))
        if not pair[0] or not pair[1]:
            dropped["empty"] += 1
        elif len(pair[0]) > max_chars or len(pair[1]) > max_chars:
            dropped["too_long"] += 1
        elif dedupe and pair in seen:
            dropped["duplicate"] += 1
        else:
            pairs.append(pair)
            seen.add(pair)
    corpus = ParallelCorpus(pairs, dropped, origin, max_chars)
    if not pairs:
        raise GlassformerError(f"no usable sentence pairs: {corpus.summary()}")
    return corpus


# Ding lines read "German :: English"; " | " separates aligned entries (headword, forms,
# examples), "; " synonyms. Annotations: {f} gender/POS, [ugs.] usage, (...) notes, <...> keywords.
_ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>|\([^()]*\)")
# "etw." (etwas), "jdm." (jemandem), "sth.", "sb.": a phrase with slots, not a sentence
_PLACEHOLDER = re.compile(r"\b(?:etw|jd[mns]?|sth|sb)\.")
_SPACE_BEFORE_PUNCTUATION = re.compile(r" ([.,!?:])")  # "room (left)." leaves "room ."
_REJECT_CHARS = set("{}[]<>()/;…")


def _strip_annotations(text: str) -> str:
    """Remove bracketed annotations (innermost first, so nesting works) and tidy the spacing."""
    while (stripped := _ANNOTATION.sub(" ", text)) != text:
        text = stripped
    text = " ".join(text.split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def is_sentence(text: str) -> bool:
    """A full sentence of at least 3 words, with no alternatives, synonyms or placeholders left.

    Example: "Sie hat leichte Kopfschmerzen." -> True; "It was sheer/pure luck." -> False
    """
    return (
        len(text.split()) >= 3
        and text[0].isupper()
        and text[-1] in ".!?"
        and "..." not in text
        and not _REJECT_CHARS.intersection(text)
        and not _PLACEHOLDER.search(text)
    )


def extract_ding_sentences(path: str | Path) -> list[tuple[str, str]]:
    """(english, german) example sentences of a Ding file, once each, in file order.

    Both sides are split on " | " into aligned entries (skipping lines where the counts
    differ); entries that are sentences on both sides once annotations are removed are kept.

    Example: "blank {adj} | Es war purer Zufall. :: sheer | It was pure coincidence."
        -> [("It was pure coincidence.", "Es war purer Zufall.")]
    """
    pairs: dict[tuple[str, str], None] = {}  # used as an ordered set
    for line in _read_lines(Path(path)):
        if line.startswith("#") or line.count(" :: ") != 1:
            continue
        german, english = line.split(" :: ")
        german_parts, english_parts = german.split(" | "), english.split(" | ")
        if len(german_parts) != len(english_parts):
            continue
        for german_part, english_part in zip(german_parts, english_parts, strict=True):
            if not any(mark in english_part for mark in ".!?"):
                continue  # a quick filter: most entries are words, not sentences
            en, de = _strip_annotations(english_part), _strip_annotations(german_part)
            if is_sentence(en) and is_sentence(de):
                pairs[(en, de)] = None
    return list(pairs)


def default_corpus(
    *, max_chars: int = 400, dedupe: bool = False, source: str | Path | None = None
) -> ParallelCorpus:
    """The Ding example sentences (English -> German) from `source` (default DING_PATH).

    Extracted once and cached as a TSV named by the file's size, mtime and EXTRACTOR_VERSION,
    so an updated package or extractor re-extracts; written to a temporary file, then renamed,
    so an interrupted run never leaves half a cache. `max_chars`, `dedupe`: as read_parallel.
    """
    source = Path(DING_PATH if source is None else source)
    if not source.is_file():
        raise GlassformerError(
            "the default corpus needs the Debian package trans-de-en (make setup installs it); "
            "or pass --data/--src/--tgt"
        )
    stat = source.stat()
    cache_dir = default_cache_root() / "translation"
    cached = cache_dir / f"ding-en-de-v{EXTRACTOR_VERSION}-{stat.st_size}-{stat.st_mtime_ns}.tsv"
    if not cached.is_file():
        pairs = extract_ding_sentences(source)
        write_text_atomically(cached, "".join(f"{en}\t{de}\n" for en, de in pairs))
    return _clean(*_read_tsv(cached), DING_ORIGIN, max_chars, dedupe)


def split_pairs(
    pairs: Sequence[tuple[str, str]], valid_size: int, seed: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, valid) after a seeded shuffle; repeated pairs may land in both without dedupe."""
    if not 0 <= valid_size < len(pairs):
        message = f"valid_size={valid_size} must be >= 0 and leave training pairs"
        raise GlassformerError(f"{message} (the corpus has {len(pairs):,})")
    shuffled = random.Random(seed).sample(list(pairs), len(pairs))
    return shuffled[valid_size:], shuffled[:valid_size]


def token_batches(
    src_lengths: Sequence[int],
    tgt_lengths: Sequence[int],
    max_tokens: int,
    *,
    shuffle: bool,
    seed: int = 0,
) -> list[list[int]]:
    """Each index once, in batches of similar lengths whose padded size fits `max_tokens`.

    Sort by (source length, target length), ties broken at random when `shuffle`, and cut
    greedily so that batch size * longest side in the batch <= max_tokens (an example over the
    budget is a batch alone); then shuffle the batch order when `shuffle` (seed = epoch).

    Shapes:
        src_lengths, tgt_lengths: (N,) token counts per example, as the model will see them
        returns: batches of indices into range(N)

    Example: src [5, 1, 5, 2], tgt [5, 1, 4, 2], max_tokens=10 -> [[1, 3], [2, 0]] unshuffled
    """
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"{len(src_lengths)} source lengths but {len(tgt_lengths)} target lengths")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    rng = random.Random(seed)
    tie_break = [rng.random() for _ in src_lengths] if shuffle else range(len(src_lengths))
    order = sorted(
        range(len(src_lengths)), key=lambda i: (src_lengths[i], tgt_lengths[i], tie_break[i])
    )
    batches, batch, longest = [], [], 0  # longest: longest side in the current batch
    for index in order:
        length = max(src_lengths[index], tgt_lengths[index])
        if batch and (len(batch) + 1) * max(longest, length) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(index)
        longest = max(longest, length)
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches
