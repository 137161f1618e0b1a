"""Embeddings, positional encoding, de-embedding, shapes, skip connections and norms."""

from __future__ import annotations

import math

import pytest

from glassformer.explain.text import lookup


def test_embedding_lookup_is_one_hot_times_projection(results: dict) -> None:
    r = results["embeddings"]
    assert r["values"]["battery"] == [0.8, 0.6]
    assert r["values"]["lookup_equals_matmul"] is True
    assert len(r["tables"]["projection"]["rows"]) == 13, "the article's 13-word vocabulary"


def test_positional_encoding(results: dict) -> None:
    v = results["positional"]["values"]
    expected = [
        math.sin(1),
        math.cos(1),
        math.sin(10000 ** (-2 / 16)),
        math.cos(10000 ** (-2 / 16)),
    ]
    assert v["pe_1"] == pytest.approx(expected, abs=1e-7)  # float32 table
    assert v["radii"] == pytest.approx([1.0] * 12, abs=1e-6), "each pair walks a circle"
    assert v["angular_frequencies"][:3] == pytest.approx([1.0, 10**-0.5, 0.1], rel=1e-12)


def test_de_embedding_softmax_and_argmax(results: dict) -> None:
    r = results["de-embedding"]
    v = r["values"]
    assert v["argmax"] == "program"
    assert v["scores"]["program"] == pytest.approx(0.9**2 + 0.4**2, abs=1e-12)
    assert v["scores"]["battery"] == pytest.approx(0.9 * 0.8 + 0.4 * 0.6, abs=1e-12)
    assert list(v["top3"])[:2] == ["program", "battery"], "softmax keeps the close runner-up"
    softmax = r["tables"]["scores"]["values"][1]
    assert sum(softmax) == pytest.approx(1.0, abs=1e-12)
    total = sum(math.exp(s) for s in v["scores"].values())
    assert lookup(r["tables"]["scores"], "softmax", "program") == pytest.approx(
        math.exp(v["scores"]["program"]) / total, abs=1e-12
    )


def test_shapes_of_the_paper_base_model(results: dict) -> None:
    v = results["shapes"]["values"]
    assert v["sizes"] == {"N": 13, "n": 12, "d_model": 512, "d_k": 64, "d_v": 64, "h": 8}
    shapes = v["shapes"]
    assert shapes["embedded words"] == [1, 12, 512]
    assert shapes["Q, K per head"] == [1, 8, 12, 64]
    assert shapes["softmax(Q Kᵀ / sqrt(d_k))"] == [1, 8, 12, 12]
    assert shapes["heads concatenated"] == [1, 12, 512]
    assert shapes["W_O"] == [512, 512]
    assert shapes["next-word scores"] == [1, 12, 13]


def test_layer_norm_and_skip(results: dict) -> None:
    v = results["skip-norm"]["values"]
    assert all(abs(m) < 1e-12 for m in v["means_after"])
    assert v["stds_after"] == pytest.approx(v["expected_std_after"], abs=1e-12)
    assert all(abs(s - 1) < 1e-4 for s in v["stds_after"])
    assert v["skip_keeps_input"] is True
