"""Attention sections: the hand-made lookup and feature layer, causal mask, heads, cross."""

from __future__ import annotations

from glassformer.explain.text import lookup


def test_mask_lookup_by_one_hot_query(results: dict) -> None:
    r = results["attention"]
    assert r["values"]["mask_of_ran"] == ["battery", "program", "ran"]
    attended = r["tables"]["attended"]
    assert [c for c, v in zip(attended["columns"], attended["values"][0], strict=True) if v] == [
        "battery",
        "ran",
    ]


def test_feature_layer_before_and_after_relu(results: dict) -> None:
    t = results["attention"]["tables"]
    assert t["feature_weights"]["rows"] == ["battery", "program", "ran", "bias"]
    assert t["before_relu"]["values"] == [[1.0, -1.0], [-1.0, 1.0]]
    assert t["after_relu"]["values"] == [[1.0, 0.0], [0.0, 1.0]]
    assert lookup(t["next_word"], "battery", "down") == 1.0
    assert lookup(t["next_word"], "program", "please") == 1.0
    assert lookup(t["next_word"], "battery", "please") == 0.0


def test_causal_mask(results: dict) -> None:
    r = results["causal-mask"]
    mask = r["tables"]["mask"]["values"]
    assert all(mask[i][j] == (1 if j <= i else 0) for i in range(6) for j in range(6))
    assert r["values"]["weight_on_later_words"] == 0.0
    assert r["values"]["first_row"] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert r["tables"]["masked_scores"]["values"][0][1] == "-inf"


def test_multi_head_model_learned_the_skip(results: dict) -> None:
    v = results["multi-head"]["values"]
    assert v["predictions"] == {"battery": "down", "program": "please"}
    assert len(v["weight_on_battery"]) == 4
    assert v["largest_row_sum_error"] < 1e-6


def test_cross_attention_looks_up_source_positions(results: dict) -> None:
    v = results["cross-attention"]["values"]
    assert v["looks_at"] == ["and", "log", "battery", "the", "check"]
    assert v["min_matched_probability"] > 0.999
    assert v["shapes"]["probs"] == [5, 5]
