"""Parallel data for translation: reading and cleaning, the Ding extraction and its cache, the
train/valid split, and token-budget batches."""

from __future__ import annotations

import gzip
import itertools
import os
import random
from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.tasks.translation import data as parallel
from glassformer.tasks.translation.data import (
    DING_ORIGIN,
    DING_PATH,
    ParallelCorpus,
    default_corpus,
    extract_ding_sentences,
    read_parallel,
    split_pairs,
    token_batches,
)
from tests.installed import needs

# A Ding excerpt: each line says what the extraction must keep or reject, and why.
DING_EXCERPT = "\n".join(
    [
        "# Version :: devel 2023-01-30",  # comment
        # headword skipped, "/" alternative rejected, the last example kept
        "blank {adj} | Es war purer Zufall. | Das ist blanker Unsinn. :: "
        "sheer | It was sheer/pure coincidence. | That is sheer nonsense.",
        "Aal {m} [cook.] :: eel",  # no sentence
        # two words rejected; the notes in parentheses removed
        "Auf Wiedersehen! | Ich bin Amerikaner (Kanadier). :: "
        "See you (again)! | I am an American (a Canadian).",
        # synonyms "; " rejected
        "Das ist die Höhe!; Das schießt den Vogel ab! [übtr.] :: That takes the cake! [fig.]",
        # 2 German entries, 3 English: not aligned, skipped
        "Achtung! | Sie hat leichte Kopfschmerzen. :: "
        "Attention! | She has a slight headache. | Watch out!",
        "Bei etw. ist das letzte Wort nicht gesprochen. :: The jury is still out on sth.",
        "Er sagte … gar nichts. :: He said … nothing at all.",  # ellipsis
        "der Aachener Dom ist alt. :: The Aachen Cathedral is old.",  # lower case
        "Das ist [ugs. falsch. :: That is wrong indeed.",  # unclosed annotation
        "Wunde {f} | Die Wunde {f} blutete heftig. [med.] :: wound | The wound bled copiously.",
        "a line without the separator.",
        "Unsinn {m} | Das ist blanker Unsinn. :: nonsense | That is sheer nonsense.",  # repeat
    ]
)
DING_KEPT = [
    ("That is sheer nonsense.", "Das ist blanker Unsinn."),
    ("I am an American.", "Ich bin Amerikaner."),
    ("The wound bled copiously.", "Die Wunde blutete heftig."),
]


def write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_tsv_is_cleaned_and_drops_are_counted(tmp_path: Path) -> None:
    lines = [
        "Hello  world .\t Hallo   Welt . ",  # whitespace collapsed
        "",  # blank line: empty
        "only source\t",  # empty target
        "a\tb\tc",  # extra tab: malformed
        "no tab here",  # malformed
        "x" * 15 + "\tshort",  # too long for max_chars=14
        "Good.\tGut.",
    ]
    corpus = read_parallel(write(tmp_path / "data.tsv", "\n".join(lines) + "\n"), max_chars=14)
    assert corpus.pairs == [("Hello world .", "Hallo Welt ."), ("Good.", "Gut.")]
    assert corpus.dropped == {"malformed": 2, "empty": 2, "too_long": 1, "duplicate": 0}
    corpus = read_parallel(tmp_path / "data.tsv", max_chars=10)
    assert corpus.dropped["too_long"] == 2
    assert corpus.summary() == (
        f"1 pair from {tmp_path / 'data.tsv'} "
        "(dropped: 2 malformed, 2 empty, 2 too long (> 10 chars))"
    )


def test_summary_formats_counts_and_omits_nothing_dropped() -> None:
    dropped = {"malformed": 0, "empty": 3, "too_long": 0, "duplicate": 1200}
    corpus = ParallelCorpus([("a", "b")] * 29_000, dropped, "data.tsv")
    assert corpus.summary() == "29,000 pairs from data.tsv (dropped: 3 empty, 1,200 duplicate)"
    clean = ParallelCorpus([("a", "b")], dict.fromkeys(dropped, 0), "x + y")
    assert clean.summary() == "1 pair from x + y"


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_tsv_and_two_files_read_plain_and_gzip(tmp_path: Path, suffix: str) -> None:
    data = write(tmp_path / f"data.tsv{suffix}", "\ufeffone\teins\ntwo\tzwei\r\n")
    src = write(tmp_path / f"train.en{suffix}", "one\ntwo\n")
    tgt = write(tmp_path / f"train.de{suffix}", "eins\nzwei")  # no final newline
    expected = [("one", "eins"), ("two", "zwei")]
    assert read_parallel(data).pairs == expected
    corpus = read_parallel(src=src, tgt=tgt)
    assert corpus.pairs == expected
    assert corpus.origin == f"{src} + {tgt}"


def test_misaligned_files_name_both_files_and_counts(tmp_path: Path) -> None:
    src = write(tmp_path / "train.en", "one\ntwo\nthree\n")
    tgt = write(tmp_path / "train.de", "eins\nzwei\n")
    with pytest.raises(GlassformerError, match="misaligned") as error:
        read_parallel(src=src, tgt=tgt)
    message = str(error.value)
    assert f"{src} has 3 lines" in message and f"{tgt} has 2" in message
    assert "\n" not in message


def test_dedupe_drops_and_counts_repeats(tmp_path: Path) -> None:
    data = write(tmp_path / "data.tsv", "a\tb\na  \tb\nc\td\na\tb\n")
    assert len(read_parallel(data).pairs) == 4
    corpus = read_parallel(data, dedupe=True)
    assert corpus.pairs == [("a", "b"), ("c", "d")]
    assert corpus.dropped["duplicate"] == 2


def test_bad_arguments_and_files_give_one_line_errors(tmp_path: Path) -> None:
    data = write(tmp_path / "data.tsv", "a\tb\n")
    cases = [
        ({"data": tmp_path / "missing.tsv"}, "no such file"),
        ({"data": data, "src": data}, "not both"),
        ({"src": data}, "--src needs --tgt"),
        ({"tgt": data}, "--tgt needs --src"),
        ({"data": data, "max_chars": 0}, "max_chars"),
        ({"data": write(tmp_path / "plain.txt", "no tabs\nat all\n")}, "is not a TSV"),
        ({"data": write(tmp_path / "blank.tsv", "\n\t\n")}, "no usable sentence pairs"),
    ]
    for kwargs, expected in cases:
        with pytest.raises(GlassformerError, match=expected) as error:
            read_parallel(**kwargs)
        assert "\n" not in str(error.value)


def test_decode_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "data.tsv"
    path.write_bytes(b"a\tb\nc\t\xff\xfe\n")
    with pytest.raises(GlassformerError, match=r"data.tsv, line 2: not UTF-8"):
        read_parallel(path)
    broken = tmp_path / "broken.tsv.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(GlassformerError, match="cannot read"):
        read_parallel(broken)


def test_extract_ding_sentences_keeps_only_aligned_full_sentences(tmp_path: Path) -> None:
    path = write(tmp_path / "de-en", DING_EXCERPT)
    assert extract_ding_sentences(path) == DING_KEPT


def test_default_corpus_extracts_once_and_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLASSFORMER_CACHE", str(tmp_path / "cache"))
    source = write(tmp_path / "de-en", DING_EXCERPT)
    corpus = default_corpus(source=source)
    assert corpus.pairs == DING_KEPT and corpus.origin == DING_ORIGIN
    cached = list((tmp_path / "cache" / "translation").iterdir())
    assert len(cached) == 1 and cached[0].suffix == ".tsv"  # no temporary file left behind

    def fail(path: Path) -> list:
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(parallel, "extract_ding_sentences", fail)
    assert default_corpus(source=source, max_chars=20).pairs == DING_KEPT[1:2]
    monkeypatch.setattr(parallel, "extract_ding_sentences", extract_ding_sentences)
    os.utime(source, ns=(0, 10**18))  # a new mtime: an updated package is extracted again
    default_corpus(source=source)
    assert len(list((tmp_path / "cache" / "translation").iterdir())) == 2


def test_default_corpus_without_the_package_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(GlassformerError, match="trans-de-en .*or pass --data/--src/--tgt"):
        default_corpus(source=tmp_path / "absent")


@needs(DING_PATH.is_file(), "the Ding dictionary (Debian package trans-de-en)")
def test_read_parallel_without_data_reads_the_real_ding_file() -> None:
    corpus = read_parallel()  # the conftest points the cache at a temporary directory
    assert corpus.origin == DING_ORIGIN
    assert len(corpus.pairs) > 10_000
    assert ("He fell in love with her.", "Er verliebte sich in sie.") in corpus.pairs
    assert read_parallel().pairs == corpus.pairs  # second time from the cache


def test_split_pairs_is_a_seeded_partition() -> None:
    pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    train, valid = split_pairs(pairs, 10, seed=1)
    assert len(train) == 90 and len(valid) == 10
    assert sorted(train + valid) == sorted(pairs)
    assert split_pairs(pairs, 10, seed=1) == (train, valid)
    assert split_pairs(pairs, 10, seed=2) != (train, valid)
    assert split_pairs(pairs, 0, seed=1)[1] == []
    for bad in (-1, 100):
        with pytest.raises(GlassformerError, match="valid_size"):
            split_pairs(pairs, bad, seed=1)


def padded_tokens(batches: list[list[int]], src: list[int], tgt: list[int]) -> int:
    """Positions the padded source and target tensors of all batches occupy."""
    return sum(len(b) * (max(src[i] for i in b) + max(tgt[i] for i in b)) for b in batches)


def test_token_batches_cover_each_index_once_within_budget() -> None:
    rng = random.Random(0)
    src = [rng.randint(1, 60) for _ in range(1000)]
    tgt = [max(1, s + rng.randint(-5, 5)) for s in src]
    src[7] = 500  # longer than the budget on its own
    batches = token_batches(src, tgt, 256, shuffle=True, seed=3)
    assert sorted(i for batch in batches for i in batch) == list(range(1000))
    assert [7] in batches
    for batch in batches:
        if batch != [7]:
            assert len(batch) * max(max(src[i], tgt[i]) for i in batch) <= 256
    assert token_batches(src, tgt, 256, shuffle=True, seed=3) == batches
    assert token_batches(src, tgt, 256, shuffle=True, seed=4) != batches


def test_token_batches_unshuffled_are_sorted_by_length() -> None:
    assert token_batches([5, 1, 5, 2], [5, 1, 4, 2], 10, shuffle=False) == [[1, 3], [2, 0]]
    with pytest.raises(ValueError, match="max_tokens"):
        token_batches([1], [1], 0, shuffle=False)
    with pytest.raises(ValueError, match="target lengths"):
        token_batches([1, 2], [1], 10, shuffle=False)


def test_token_batches_waste_less_padding_than_random_batches() -> None:
    rng = random.Random(0)
    src = [rng.randint(1, 100) for _ in range(2000)]
    tgt = [max(1, round(s * 1.1 + rng.gauss(0, 3))) for s in src]  # translations: correlated
    bucketed = token_batches(src, tgt, 2000, shuffle=True, seed=0)
    order = rng.sample(range(2000), 2000)  # the same batch sizes, filled at random
    ends = list(itertools.accumulate(len(batch) for batch in bucketed))
    random_batches = [order[start:end] for start, end in itertools.pairwise([0, *ends])]
    real = sum(src) + sum(tgt)
    bucketed_efficiency = real / padded_tokens(bucketed, src, tgt)
    random_efficiency = real / padded_tokens(random_batches, src, tgt)
    assert bucketed_efficiency > 0.9 > 0.6 > random_efficiency, (
        bucketed_efficiency,
        random_efficiency,
    )
