"""The fast decode path (preallocated cache written in place, fused q/k/v, the fused attention
kernel, beams asking a shared memory together) against the written-out one: the same tokens
for sampling with a seed, greedy decoding and beam search, and a batch of sources decoded
together equal to each decoded alone."""

from __future__ import annotations

import dataclasses

import torch

from glassformer.decoding.search import beam_search, greedy, sample
from glassformer.models.gpt import GPT, GPTConfig
from glassformer.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from tests.helpers import written_out


def gpt(seed: int = 0, **overrides: object) -> GPT:
    torch.manual_seed(seed)
    return GPT(dataclasses.replace(GPTConfig.tiny(vocab_size=48), **overrides)).eval()


def test_sampling_with_a_seed_gives_the_same_tokens_past_the_context() -> None:
    prompt = torch.randint(0, 48, (2, 5))
    runs = []
    for reference in (False, True):
        model = gpt(max_len=24)  # 60 new tokens: the window refills from the cache twice
        cache = written_out(model) if reference else model.new_cache()
        generator = torch.Generator().manual_seed(3)
        step = lambda t, c, m=model: m(t, cache=c)  # noqa: E731
        runs.append(sample(step, cache, prompt, 60, 0.8, 20, 1.0, generator, context=24))
    assert torch.equal(runs[0], runs[1])


def test_greedy_gpt2_shaped_model_gives_the_same_tokens() -> None:
    prompt = torch.randint(0, 48, (3, 4))
    runs = []
    for reference in (False, True):
        model = gpt(seed=1, activation="gelu_tanh", d_model=64, n_heads=2)
        cache = written_out(model) if reference else model.new_cache()
        runs.append(greedy(lambda t, c, m=model: m(t, cache=c), cache, prompt, 40))
    assert torch.equal(runs[0], runs[1])


def seq2seq() -> Seq2SeqTransformer:
    torch.manual_seed(0)
    model = Seq2SeqTransformer(Seq2SeqConfig.tiny()).double().eval()
    with torch.no_grad():
        for parameter in model.parameters():  # larger weights than the init's: long,
            parameter.normal_(0, 0.3)  # varied hypotheses instead of an early <eos>
    return model


def test_beam_search_over_shared_memories_equals_each_source_alone() -> None:
    """B sources x K beams in one search (each source's memory projected once, padded to the
    longest) equal to each source decoded on its own, fast and written out."""
    model, K = seq2seq(), 3
    lengths = torch.tensor([9, 4, 6])
    sources = torch.randint(3, 32, (3, 9))
    with torch.inference_mode():
        memory, padding = model.encode(sources, lengths)  # (3, 9, D), (3, 9)

    def search(memory: torch.Tensor, padding: torch.Tensor | None, cache, rows: int):  # noqa: ANN001, ANN202
        step = lambda t, c: model.decode(t, memory, padding, c)  # noqa: E731
        prompt = torch.ones(rows, 1, dtype=torch.long)
        return beam_search(step, cache, prompt, K, 12, eos_id=2)

    together, scores = search(memory, padding, model.new_cache(), 3)
    for row, length in enumerate(lengths.tolist()):
        alone, alone_scores = search(memory[row : row + 1, :length], None, model.new_cache(), 1)
        assert torch.equal(together[row], alone[0])
        torch.testing.assert_close(scores[row], alone_scores[0], atol=1e-9, rtol=1e-9)
    reference, _ = search(memory, padding, written_out(model), 3)
    assert torch.equal(reference, together)
