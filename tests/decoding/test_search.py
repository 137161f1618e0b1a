"""Decoding invariants: beam 1 == greedy, top-k 1 == greedy, seeds reproduce, cache == none,
and beam search beats greedy where greedy is short-sighted."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

from glassformer.decoding.processors import top_k_filter, top_p_filter
from glassformer.decoding.search import DecodeConfig, beam_search, generate, greedy, sample
from glassformer.layers.kv_cache import KVCache
from glassformer.models.gpt import GPT, GPTConfig

EOS = 0


@pytest.fixture
def model() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig.tiny(vocab_size=32)).eval()


def gpt_step(model: GPT):  # noqa: ANN201
    return lambda tokens, cache: model(tokens, cache=cache)


def test_beam_size_one_equals_greedy(model: GPT) -> None:
    prompt = torch.randint(1, 32, (3, 4))
    expected = greedy(gpt_step(model), model.new_cache(), prompt, 12, eos_id=EOS)
    actual = beam_search(gpt_step(model), model.new_cache(), prompt, 1, 12, eos_id=EOS)
    assert torch.equal(actual.best, expected)


def test_top_k_one_equals_greedy(model: GPT) -> None:
    prompt = torch.randint(1, 32, (2, 3))
    expected = greedy(gpt_step(model), model.new_cache(), prompt, 10)
    generator = torch.Generator().manual_seed(5)
    actual = sample(
        gpt_step(model), model.new_cache(), prompt, 10, 1.3, top_k=1, generator=generator
    )
    assert torch.equal(actual, expected)


def test_fixed_seed_reproduces_samples_and_another_seed_differs(model: GPT) -> None:
    prompt = torch.randint(1, 32, (1, 3))

    def draw(seed: int) -> torch.Tensor:
        config = DecodeConfig(max_new_tokens=30, temperature=1.5, seed=seed)
        return generate(gpt_step(model), model.new_cache(), prompt, config)

    assert torch.equal(draw(7), draw(7))
    assert not torch.equal(draw(7), draw(8))


def test_cached_decoding_equals_recomputing_the_whole_prefix(model: GPT) -> None:
    prompt = torch.randint(1, 32, (2, 5))
    cached = greedy(gpt_step(model), model.new_cache(), prompt, 15)

    def no_cache(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        no_cache.seen = tokens if no_cache.seen is None else torch.cat([no_cache.seen, tokens], 1)
        return model(no_cache.seen)  # the full prefix every step

    no_cache.seen = None
    assert torch.equal(greedy(no_cache, KVCache(2), prompt, 15), cached)


def test_stops_at_eos_and_pads_finished_rows() -> None:
    # A fake model: after token t, token t + 1 is certain; 5 is followed by EOS.
    def step(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        last = tokens[:, -1:]
        logits = torch.full((*last.shape, 8), -10.0)
        following = torch.where(last >= 5, torch.zeros_like(last), last + 1)
        return logits.scatter(-1, following[..., None], 10.0)

    out = greedy(step, KVCache(1), torch.tensor([[3], [1]]), max_new_tokens=20, eos_id=EOS)
    assert out.tolist() == [[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 0]]


def test_beam_search_finds_the_more_probable_sequence() -> None:
    """Greedy takes A (0.6) then a flat continuation; beam search finds B (0.4) then a sure
    one: P(A, x) = 0.6 * 0.25 = 0.15 < P(B, EOS) = 0.4 * 1.0."""
    A, B = 1, 2
    table = torch.full((8, 8), 1e-9)
    table[3, A], table[3, B] = 0.6, 0.4  # from the start token 3
    table[A, 4:8] = 0.25  # after A: four equally likely tokens
    table[B, EOS] = 1.0  # after B: certainly the end
    table[4:8, EOS] = 1.0
    table[EOS, EOS] = 1.0

    def step(tokens: torch.Tensor, cache: KVCache) -> torch.Tensor:
        return table[tokens].log()

    prompt = torch.tensor([[3]])
    assert greedy(step, KVCache(1), prompt, 3, eos_id=EOS)[0, 1].item() == A
    beams = beam_search(step, KVCache(1), prompt, 3, 3, eos_id=EOS, length_penalty=0.0)
    assert beams.best[0, :3].tolist() == [3, B, EOS]
    assert beams.tokens.shape[:2] == beams.scores.shape == (1, 3)  # every beam, best first
    assert beams.scores[0].tolist() == sorted(beams.scores[0].tolist(), reverse=True)


def test_beam_search_batches_rows_independently(model: GPT) -> None:
    prompts = torch.randint(1, 32, (3, 4))
    batched = beam_search(gpt_step(model), model.new_cache(), prompts, 4, 8, eos_id=EOS)
    for row in range(3):
        alone = beam_search(
            gpt_step(model), model.new_cache(), prompts[row : row + 1], 4, 8, eos_id=EOS
        )
        assert torch.equal(batched.best[row, : alone.best.size(1)], alone.best[0])


def test_filters() -> None:
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    assert top_k_filter(logits, 2).isinf().tolist() == [[True, False, False, True]]
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    assert top_p_filter(probs, 0.7).isinf().tolist() == [[False, False, True, True]]
    assert top_p_filter(probs, 0.1).isinf().tolist() == [[False, True, True, True]]


def test_decode_config_validation() -> None:
    with pytest.raises(ValueError, match="top_p"):
        DecodeConfig(top_p=0.0)
    with pytest.raises(ValueError, match="beam_size=0"):
        DecodeConfig(beam_size=0)


def test_generation_runs_past_the_context_window(model: GPT) -> None:
    """max_len is 64: after the window fills, the cache is refilled from the last 32 tokens
    every 32 new tokens (3 times for 150 new tokens after a 10-token prompt)."""
    prompt = torch.randint(1, 32, (1, 10))
    step = gpt_step(model)
    within = greedy(step, model.new_cache(), prompt, 54)  # fills the window exactly
    cache = model.new_cache()
    sizes = []

    def watched(tokens: torch.Tensor, c: KVCache) -> torch.Tensor:
        out = step(tokens, c)
        sizes.append(c.seq_len)
        return out

    long = greedy(watched, cache, prompt, 150, context=64)
    assert long.shape == (1, 160) and max(sizes) == 64
    assert torch.equal(long[:, :64], within), "identical until the window first fills"
    refills = [after for before, after in pairwise(sizes) if after < before]
    assert refills == [32, 32, 32]
