"""The article's numbers, exactly: one-hot, Markov chains, second order, skips."""

from __future__ import annotations

from glassformer.explain.text import lookup


def test_one_hot(results: dict) -> None:
    r = results["one-hot"]
    assert r["values"]["vocabulary"] == ["files", "find", "my"]
    assert r["values"]["numbers"] == [2, 3, 1], '"find my files" = [2, 3, 1], 1-based'
    assert r["tables"]["one_hot"]["values"] == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    dots = r["tables"]["dot_products"]
    assert lookup(dots, "find", "find") == 1 and lookup(dots, "find", "my") == 0
    assert dots["values"] == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert lookup(r["tables"]["similarity"], "my", "similarity") == 0.6


def test_matrix_multiplication_is_table_lookup(results: dict) -> None:
    r = results["one-hot"]
    assert r["values"]["pulled_rows"] == [1, 4, 3]
    B = r["tables"]["B"]["values"]
    assert r["tables"]["A_times_B"]["values"] == [B[0], B[3], B[2]]


def test_markov_chain(results: dict) -> None:
    r = results["markov"]
    assert r["values"]["vocabulary"] == [
        "directories",
        "files",
        "me",
        "my",
        "photos",
        "please",
        "show",
    ]
    assert r["values"]["next_after_my"] == {"directories": 0.2, "files": 0.3, "photos": 0.5}
    transitions = r["tables"]["transitions"]
    assert lookup(transitions, "show", "me") == 1 and lookup(transitions, "me", "my") == 1
    assert r["tables"]["lookup_my"]["values"][0] == transitions["values"][3], "one-hot @ M = row"


def test_second_order(results: dict) -> None:
    v = results["second-order"]["values"]
    assert v["after_ran"] == {"down": 0.4, "please": 0.6}
    assert v["after_battery_ran"] == {"down": 1.0}
    assert v["after_program_ran"] == {"please": 1.0}
    second = results["second-order"]["tables"]["second_order"]
    uncertain = [
        row for row, values in zip(second["rows"], second["values"], strict=True) if max(values) < 1
    ]
    assert uncertain == ["whether, the"], "only one branch is left"


def test_skips_votes_and_mask(results: dict) -> None:
    r = results["skips"]
    votes = r["tables"]["votes"]
    assert (
        lookup(votes, "battery, ran", "down") == 1 and lookup(votes, "battery, ran", "please") == 0
    )
    assert (
        lookup(votes, "program, ran", "down") == 0 and lookup(votes, "program, ran", "please") == 1
    )
    shared = [row for row in votes["rows"] if row not in ("battery, ran", "program, ran")]
    assert len(shared) == 8 and all(lookup(votes, row, "down") == 0.5 for row in shared)
    assert r["values"]["summed"] == {
        "program": {"down": 4.0, "please": 5.0},
        "battery": {"down": 5.0, "please": 4.0},
    }
    assert r["values"]["masked"] == {
        "program": {"down": 0.0, "please": 1.0},
        "battery": {"down": 1.0, "please": 0.0},
    }


def test_skips_matrix_form_equals_the_counting_model() -> None:
    from glassformer.explain.article_basics import BATTERY_LOG, DECISIVE, PROGRAM_LOG
    from glassformer.toy.markov import SkipPairModel

    model = SkipPairModel().fit([PROGRAM_LOG, BATTERY_LOG])
    assert model.predict(PROGRAM_LOG[:10])["please"] == 5.0
    assert model.predict(BATTERY_LOG[:10], DECISIVE)["down"] == 1.0
