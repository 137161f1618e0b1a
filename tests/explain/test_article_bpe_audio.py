"""BPE merges of the article's counts; the spoken command's features."""

from __future__ import annotations

from pathlib import Path

from glassformer.explain.article_bpe_audio import audio_section
from tests.explain.conftest import assert_png
from tests.installed import needs_espeak


def test_bpe_merges(results: dict) -> None:
    v = results["bpe"]["values"]
    assert v["merges"][:5] == [
        [["e", "s"], 13],
        [["es", "t"], 13],
        [["est", "</w>"], 13],
        [["o", "l"], 10],
        [["ol", "d"], 10],
    ]
    assert {"est</w>", "old"} <= set(v["tokens"])
    assert v["tokens"]["finest</w>"] == 9


def test_audio_tone_fallback(tmp_path: Path) -> None:
    r = audio_section(tmp_path, use_tts=False)
    v = r["values"]
    assert v["source"] == "tones" and v["samples"] == 24000
    assert v["frames"] == 1 + 24000 // 160
    assert v["mel_shape"] == [40, v["frames"]] and v["mfcc_shape"] == [13, v["frames"]]
    assert "no espeak-ng" in r["notes"][0]
    assert_png(r["figures"][0])


@needs_espeak
def test_audio_spoken_by_espeak(results: dict) -> None:
    v = results["audio"]["values"]
    assert v["source"] == "espeak-ng"
    assert 0.5 < v["seconds"] < 5
    assert v["mfcc_shape"] == [13, v["frames"]]
