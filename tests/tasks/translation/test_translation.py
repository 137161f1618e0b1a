"""Translation end to end: a reversal task learned in seconds, beam 1 == greedy, batched ==
one at a time, validation BLEU in the metrics, and the CLI with its clear errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

from glassformer.cli import main
from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig
from glassformer.tasks.translation.inference import (
    corpus_scores,
    load_translator,
    translate,
    translate_batch,
)
from glassformer.tasks.translation.training import train_translation
from glassformer.train.config import TrainConfig
from tests.helpers import reversal_pairs


@pytest.fixture(scope="module")
def reverser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny preset trained to reverse 2-4 word sequences (about 10 s on 2 cores)."""
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("reverser")
    model, train, data = TRANSLATION_PRESETS["tiny"].tables()
    train_translation(
        reversal_pairs(2000, seed=0),
        None,
        model,
        TrainConfig(**train),
        TranslationDataConfig(**data),
        out,
        progress=False,
    )
    return out


def test_a_reversal_task_is_learned_to_near_perfect_accuracy(reverser: Path) -> None:
    translator = load_translator(reverser)
    test = reversal_pairs(100, seed=1)
    written = translate(translator, [s for s, _ in test], beam_size=1)
    exact = sum(w == r for w, (_, r) in zip(written, test, strict=True)) / len(test)
    assert exact >= 0.9, (exact, list(zip(written, test, strict=True))[:5])
    rows = [json.loads(line) for line in (reverser / "metrics.jsonl").read_text().splitlines()]
    bleu = [r["val_bleu"] for r in rows if "val_bleu" in r]
    assert len(bleu) == 2 and bleu[-1] > 80  # validation BLEU is logged at each evaluation


def test_beam_of_one_is_greedy_and_batched_equals_one_at_a_time(reverser: Path) -> None:
    from glassformer.decoding.search import beam_search

    translator = load_translator(reverser)
    sources = [s for s, _ in reversal_pairs(12, seed=2)] + ["cat", "moon sun tree dog red"]
    for beam in (1, 4):
        batched = translate(translator, sources, beam_size=beam, batch_size=64)
        alone = [translate(translator, [s], beam_size=beam, batch_size=1)[0] for s in sources]
        assert batched == alone
    model, tokenizer = translator.model, translator.target_tokenizer
    eos, bos = tokenizer.special_tokens["<eos>"], tokenizer.special_tokens["<bos>"]
    for sentence in sources[:4]:
        ids = translator.source_tokenizer.encode(sentence) + [eos]
        greedy_ids = translate_batch(translator, [ids], beam_size=1, length_penalty=0.6)[0]
        memory, _ = model.encode(torch.tensor([ids]))
        beam_ids = (
            beam_search(
                lambda tokens, cache, m=memory: model.decode(tokens, m, None, cache),
                model.new_cache(),
                torch.tensor([[bos]]),
                1,
                20,
                eos,
                suppress=[tokenizer.special_tokens["<pad>"], bos],
            )
            .best[0, 1:]
            .tolist()
        )
        assert beam_ids[: len(greedy_ids) + 1] == [*greedy_ids, eos]


def test_corpus_scores_are_sacrebleus() -> None:
    scores = corpus_scores(["the cat sat on the mat"], ["the cat sat on the mat"])
    assert scores["bleu"] == pytest.approx(100.0) and scores["chrf"] == pytest.approx(100.0)
    assert scores["bleu_signature"].startswith("nrefs:1")


def write_pairs(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")


def test_cli_trains_translates_evaluates_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "pairs.tsv"
    write_pairs(data, reversal_pairs(300, seed=3))
    out = tmp_path / "run"
    common = ["--data", str(data), "--preset", "tiny", "--out", str(out)]
    assert main(["train", "translation", *common, "--steps", "6", "--eval-every", "3"]) == 0
    assert main(["train", "translation", *common, "--steps", "10", "--resume"]) == 0
    state = json.loads((out / "last" / "train_state.json").read_text())
    assert state["step"] == 10
    capsys.readouterr()
    assert main(["translate", str(out), "red cat", "sun moon", "--beam", "2", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["source"] for line in lines] == ["red cat", "sun moon"]
    monkeypatch.setattr("sys.stdin", io.StringIO("red cat\ndog\n"))
    assert main(["translate", str(out), "-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    src, ref = tmp_path / "test.src", tmp_path / "test.ref"
    test = reversal_pairs(5, seed=4)
    src.write_text("".join(s + "\n" for s, _ in test))
    ref.write_text("".join(r + "\n" for _, r in test))
    assert main(["evaluate", str(out), "--src", str(src), "--ref", str(ref), "--beam", "1"]) == 0
    printed = capsys.readouterr().out
    assert "BLEU" in printed and "nrefs:1" in printed and "chrF" in printed


def test_separate_vocabularies_are_an_option(tmp_path: Path) -> None:
    data = tmp_path / "pairs.tsv"
    write_pairs(data, [(s, t.upper()) for s, t in reversal_pairs(200, seed=5)])
    out = tmp_path / "run"
    args = ["--data", str(data), "--preset", "tiny", "--out", str(out), "--steps", "2"]
    assert main(["train", "translation", *args, "--no-shared-vocab"]) == 0
    assert (out / "best" / "source_tokenizer.json").is_file()
    translator = load_translator(out)
    assert translator.source_tokenizer is not translator.target_tokenizer
    assert not translator.model.config.share_embeddings
    assert len(translate(translator, ["red cat"], beam_size=2)) == 1


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\nthree\n")
    tgt.write_text("eins\nzwei\n")
    out = str(tmp_path / "run")
    args = ["train", "translation", "--src", str(src), "--tgt", str(tgt), "--out", out]
    assert main([*args, "--preset", "tiny"]) == 2
    error = capsys.readouterr().err
    assert "misaligned" in error and "3 lines" in error and "2" in error
    assert len(error.strip().splitlines()) == 1
    assert main(["train", "translation", "--src", str(src), "--preset", "tiny"]) == 2
    assert "--tgt" in capsys.readouterr().err
    assert main(["translate", str(tmp_path / "nowhere"), "hello"]) == 2
    assert capsys.readouterr().err.startswith("glassformer: error:")
