"""The static-shape decode step (decoding/static.py) against the ordinary decode path: the same
logits and tokens eagerly and compiled, through the context window's refills, and two graphs
in all for a whole generation (one per shape), not one per position."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from glassformer.decoding.search import greedy, sample
from glassformer.decoding.static import StaticStep
from glassformer.models.gpt import GPT, GPTConfig


def gpt(seed: int = 0, **overrides: object) -> GPT:
    torch.manual_seed(seed)
    config = dataclasses.replace(GPTConfig.tiny(vocab_size=48), max_len=16, **overrides)
    return GPT(config).eval()


def ordinary(model: GPT):  # noqa: ANN201
    return lambda tokens, cache: model(tokens, cache=cache)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_eager_static_steps_equal_the_ordinary_path_past_the_window(positional: str) -> None:
    model = gpt(positional=positional)
    prompt = torch.randint(0, 48, (2, 5))
    expected = greedy(ordinary(model), model.new_cache(), prompt, 40, context=16)
    static = StaticStep(model, compile=False)
    assert torch.equal(greedy(static, static.new_cache(), prompt, 40, context=16), expected)
    generator = torch.Generator().manual_seed(3)
    drawn = sample(static, static.new_cache(), prompt, 40, 0.8, 20, 1.0, generator, context=16)
    generator = torch.Generator().manual_seed(3)
    cache = model.new_cache()
    reference = sample(ordinary(model), cache, prompt, 40, 0.8, 20, 1.0, generator, context=16)
    assert torch.equal(drawn, reference)


def test_one_step_gives_the_ordinary_logits_at_every_position() -> None:
    model = gpt(seed=1)
    tokens = torch.randint(0, 48, (3, 16))
    static, cache = StaticStep(model, compile=False), None
    with torch.inference_mode():
        expected = model(tokens)  # (3, 16, V): the whole sequence at once
        cache = static.new_cache()
        got = [static(tokens[:, :4], cache)]  # a prompt, then one token at a time
        got += [static(tokens[:, t : t + 1], cache) for t in range(4, 16)]
    torch.testing.assert_close(torch.cat(got, dim=1), expected, atol=1e-5, rtol=1e-5)


def test_the_compiled_step_gives_the_same_tokens_with_two_graphs() -> None:
    torch._dynamo.reset()
    model = gpt(seed=2)
    prompt = torch.randint(0, 48, (1, 3))
    expected = greedy(ordinary(model), model.new_cache(), prompt, 40, context=16)
    static = StaticStep(model)
    before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert torch.equal(greedy(static, static.new_cache(), prompt, 40, context=16), expected)
    assert torch.equal(greedy(static, static.new_cache(), prompt, 40, context=16), expected)
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"] - before
    assert graphs == 2  # one new token, and the window's refill (max_len // 2 tokens)


def test_static_step_refuses_training_mode_and_an_overfull_cache() -> None:
    model = gpt()
    with pytest.raises(ValueError, match="eval mode"):
        StaticStep(model.train())
    static = StaticStep(model.eval(), compile=False)
    cache = static.new_cache()
    with torch.inference_mode(), pytest.raises(ValueError, match="holds 16 positions"):
        static(torch.zeros(1, 17, dtype=torch.long), cache)


def test_two_models_of_the_same_shapes_each_run_their_own_graph() -> None:
    """Module guards are skipped for speed: a graph compiled for one model must never serve
    another whose tensors have the same shapes (here: biases or none, other weights)."""
    prompt = torch.randint(0, 48, (1, 3))
    models = [gpt(seed=3, bias=True), gpt(seed=4, bias=False), gpt(seed=5, bias=True)]
    steps = [StaticStep(model) for model in models]
    for model, static in zip(models, steps, strict=True):
        expected = greedy(ordinary(model), model.new_cache(), prompt, 20, context=16)
        assert torch.equal(greedy(static, static.new_cache(), prompt, 20, context=16), expected)
