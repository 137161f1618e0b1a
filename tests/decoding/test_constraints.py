"""Token-level constrained decoding: the beam writes only what the language allows, and the
model's scores still choose among the allowed texts."""

from __future__ import annotations

import torch

from glassformer.decoding import constraints
from glassformer.decoding.constraints import TextConstraint, best_first
from glassformer.decoding.search import beam_search
from glassformer.layers.kv_cache import KVCache
from glassformer.voice.grammar import Grammar

# Character tokens: ids 0..4 spell text, 5 = <bos>, 6 = <eos>.
TEXTS = ["a", "b", "c", " ", "d", "", ""]
BOS, EOS = 5, 6
GRAMMAR = Grammar({"x": ["a b", "a c (d)"]}, {})


def step_preferring(preferred: list[int]):  # noqa: ANN201
    """A fake model: at position t it puts most weight on preferred[t] (then eos)."""

    fed = 0

    def step(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        nonlocal fed
        fed += tokens.size(1)
        position = fed - 1  # tokens written so far (after <bos>)
        logits = torch.zeros(tokens.size(0), tokens.size(1), len(TEXTS))
        token = preferred[position] if position < len(preferred) else EOS
        logits[:, -1, token] = 5.0
        return logits

    return step


class Cache:
    """The fake model keeps no state; beam search only asks the cache to reorder."""

    def reorder(self, rows: torch.Tensor) -> None:
        pass


def decode(preferred: list[int], constrained: bool) -> list[str]:
    restrict = None
    if constrained:
        restrict = TextConstraint(TEXTS, GRAMMAR.can_continue, GRAMMAR.accepts, EOS, 1, 3)
    tokens, scores = beam_search(
        step_preferring(preferred),
        Cache(),
        torch.tensor([[BOS]]),
        3,
        8,
        EOS,
        suppress=[BOS],
        restrict=restrict,
    )
    texts = []
    for row, score in zip(tokens[0].tolist(), scores[0].tolist(), strict=True):
        if score > float("-inf"):
            written = row[1 : row.index(EOS)] if EOS in row else row[1:]
            texts.append("".join(TEXTS[t] for t in written))
    return texts


def test_the_constrained_beam_only_writes_grammar_sentences() -> None:
    # the model wants "a d" (not a sentence); free decoding writes it, constrained cannot
    assert decode([0, 3, 4], constrained=False)[0] == "a d"
    texts = decode([0, 3, 4], constrained=True)
    assert texts and all(GRAMMAR.accepts(t) for t in texts)


def test_the_model_still_chooses_among_allowed_sentences() -> None:
    assert decode([0, 3, 2, 3, 4], constrained=True)[0] == "a c d"
    assert decode([0, 3, 1], constrained=True)[0] == "a b"


def test_eos_only_after_a_whole_sentence() -> None:
    constraint = TextConstraint(TEXTS, GRAMMAR.can_continue, GRAMMAR.accepts, EOS, 1, 7)
    assert constraint.allowed("a", range(7)) == [3]  # only the space: "a" is not a sentence
    assert sorted(constraint.allowed("a c", range(7))) == [3, EOS]  # " d" may follow, or end


def test_patience_stops_the_search_once_something_is_allowed() -> None:
    constraint = TextConstraint(TEXTS, GRAMMAR.can_continue, GRAMMAR.accepts, EOS, 1, 3, 2)
    assert constraint.allowed("a", [3, 0, 1, 2]) == [3]  # gave up after 2 tries with one found
    assert constraint.allowed("a", [0, 1, 2, 4, 3]) == [3]  # nothing found yet: keeps looking


def test_best_first_ranks_like_sorting_the_whole_vocabulary() -> None:
    torch.manual_seed(0)
    scores = torch.randn(50)
    scores[torch.randperm(50)[:12]] = float("-inf")  # impossible tokens (suppressed)
    expected = [t for t in scores.argsort(descending=True).tolist() if scores[t] > float("-inf")]
    for k in (1, 5, 38, 50):  # the top k ranked at once, the rest only when asked for
        values, ids = scores.topk(k)
        assert list(best_first(scores, values.tolist(), ids.tolist())) == expected, k


def test_ranking_few_tokens_at_first_finds_the_same_sentences(monkeypatch) -> None:  # noqa: ANN001
    expected = [decode(p, constrained=True) for p in ([0, 3, 4], [0, 3, 2, 3, 4], [0, 3, 1])]
    monkeypatch.setattr(constraints, "FIRST_RANKED", 1)  # every beam asks past the top one
    assert [
        decode(p, constrained=True) for p in ([0, 3, 4], [0, 3, 2, 3, 4], [0, 3, 1])
    ] == expected


def test_a_character_written_as_two_tokens_is_read_whole() -> None:
    """A byte-level BPE writes 门 as two tokens of its UTF-8 bytes: the first is allowed (it
    can begin a character), the pair only where the grammar has the character."""
    from glassformer.decoding.constraints import can_start_character, whole_characters

    door = "门".encode()
    texts = [door[:2], door[2:], "开".encode(), b"x"]
    sentences = {"开门"}
    constraint = TextConstraint(
        texts,
        lambda t: any(s.startswith(t) for s in sentences),
        lambda t: t in sentences,
        eos_id=4,
        start=0,
        keep=4,
    )
    assert constraint.allowed("开".encode(), [0, 3, 2]) == [0]  # half of 门 may follow 开
    assert constraint.allowed("开".encode() + door[:2], [1, 3, 4]) == [1]  # and its end
    assert constraint.allowed("开".encode() + door, [4, 3]) == [4]  # then only the end
    assert whole_characters(door[:2]) == ("", door[:2]) and can_start_character(door[:2])
    assert whole_characters(b"a\xffbcd") == (None, b"") and not can_start_character(door[1:2])
    assert whole_characters(b"ab\xff") == ("ab", b"\xff") and not can_start_character(b"\xff")
