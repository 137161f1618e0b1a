"""Greedy decoding, sampling and beam search, for any model behind one narrow interface.

A model is driven through a `step` function: given the tokens not yet seen (B, T) and a KV
cache, return logits (B, T, V) and update the cache. For a GPT that is
`lambda tokens, cache: model(tokens, cache=cache)`; for an encoder-decoder it is
`lambda tokens, cache: model.decode(tokens, memory, memory_padding, cache)`. The first call
feeds the whole prompt (prefill), every later call one new token per row, so each step costs
one position's work instead of the whole prefix.

Rows that produce `eos_id` are finished: they keep receiving eos (so rows stay aligned) and
decoding stops when every row has finished or after max_new_tokens.

A model sees at most `context` positions (its max_len). Greedy decoding and sampling may go on
past that: when the cache is full it is cleared and refilled from the last context // 2
tokens, so each later token still sees between context // 2 and context tokens of history
(one prefill every context // 2 tokens, instead of recomputing the whole window every token).

The entry points run under torch.inference_mode (not just no_grad): it also skips autograd's
version counters, which measurably speeds up token-by-token decoding of small models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch

from glassformer.decoding.config import DecodeConfig
from glassformer.decoding.processors import (
    apply_temperature,
    suppress_tokens,
    top_k_filter,
    top_p_filter,
)
from glassformer.layers.kv_cache import KVCache

Step = Callable[[torch.Tensor, KVCache], torch.Tensor]  # (B, T) tokens -> (B, T, V) logits
OnToken = Callable[[torch.Tensor], None]  # receives each step's new tokens, (B,)
Restrict = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (N, T), (N, V) -> (N, V)


def decode_loop(
    step: Step,
    cache: KVCache,
    prompt: torch.Tensor,
    max_new_tokens: int,
    choose: Callable[[torch.Tensor], torch.Tensor],
    eos_id: int | None = None,
    on_token: OnToken | None = None,
    context: int | None = None,
) -> torch.Tensor:
    """Feed the prompt, then repeatedly choose a next token per row and feed it back.

    Shapes:
        prompt: (B, T0)   choose: (B, V) logits -> (B,) tokens   returns: (B, T0 + new)
    """
    if context is not None and prompt.size(1) > context:
        raise ValueError(f"the prompt has {prompt.size(1)} tokens; the context is {context}")
    tokens = prompt
    finished = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
    logits = step(prompt, cache)[:, -1]  # (B, V): prefill, scores for the first new position
    for _ in range(max_new_tokens):
        next_tokens = choose(logits.float())  # (B,)
        if eos_id is not None:
            next_tokens = next_tokens.masked_fill(finished, eos_id)
            finished |= next_tokens == eos_id
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=1)  # (B, T + 1)
        if on_token is not None:
            on_token(next_tokens)
        if bool(finished.all()) or tokens.size(1) - prompt.size(1) == max_new_tokens:
            break
        if context is not None and cache.seq_len >= context:  # full: refill from the recent half
            cache.clear()
            logits = step(tokens[:, -(context // 2) :], cache)[:, -1]
        else:
            logits = step(next_tokens[:, None], cache)[:, -1]  # (B, V): one new position
    return tokens


@torch.inference_mode()
def greedy(
    step: Step,
    cache: KVCache,
    prompt: torch.Tensor,
    max_new_tokens: int,
    eos_id: int | None = None,
    suppress: Iterable[int] = (),
    on_token: OnToken | None = None,
    context: int | None = None,
) -> torch.Tensor:
    """Always take the most likely next token (the article's "greedy" completion)."""
    suppress = list(suppress)

    def choose(logits: torch.Tensor) -> torch.Tensor:
        return suppress_tokens(logits, suppress).argmax(dim=-1)

    return decode_loop(step, cache, prompt, max_new_tokens, choose, eos_id, on_token, context)


@torch.inference_mode()
def sample(
    step: Step,
    cache: KVCache,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
    suppress: Iterable[int] = (),
    on_token: OnToken | None = None,
    context: int | None = None,
) -> torch.Tensor:
    """Draw each next token from softmax(filtered logits / temperature)."""
    suppress = list(suppress)

    def choose(logits: torch.Tensor) -> torch.Tensor:
        logits = suppress_tokens(apply_temperature(logits, temperature), suppress)
        logits = top_p_filter(top_k_filter(logits, top_k), top_p)
        probs = logits.softmax(dim=-1)  # (B, V)
        return torch.multinomial(probs, 1, generator=generator)[:, 0]  # (B,)

    return decode_loop(step, cache, prompt, max_new_tokens, choose, eos_id, on_token, context)


class Beams(NamedTuple):
    """What beam search found for each input row: its hypotheses, best first.

    Shapes:
        tokens: (B, K, T0 + new), padded with eos after a hypothesis ends   scores: (B, K)
    """

    tokens: torch.Tensor
    scores: torch.Tensor  # length-normalized log-probabilities; -inf: none was found

    @property
    def best(self) -> torch.Tensor:
        """Each row's best hypothesis. Shapes: returns (B, T0 + new)"""
        return self.tokens[:, 0]


def gnmt_length_penalty(length: torch.Tensor, alpha: float) -> torch.Tensor:
    """((5 + length) / 6) ** alpha, Wu et al. (2016), Eq. (14); divides a hypothesis's
    log-probability so longer hypotheses are not punished merely for having more terms."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.inference_mode()
def beam_search(
    step: Step,
    cache: KVCache,
    prompt: torch.Tensor,
    beam_size: int,
    max_new_tokens: int,
    eos_id: int | None = None,
    length_penalty: float = 0.6,
    suppress: Iterable[int] = (),
    restrict: Restrict | None = None,
    prefill_once: bool = False,
) -> Beams:
    """Keep the beam_size best partial hypotheses per row; return them all, best first, with
    their length-normalized log-probabilities (Beams.best: each row's best).

    Hypotheses are ranked by their summed log-probability while searching; a finished one
    (ended with eos) keeps its score and its slot. At the end each row's beams are compared by
    score / gnmt_length_penalty(generated length, alpha), and the best one is returned.
    `step` receives B * beam_size rows: row b * beam_size + k is beam k of input row b (an
    encoder-decoder's memory must be repeated the same way, with repeat_interleave).
    `restrict` (constrained decoding, e.g. decoding/constraints.py) sees each beam's tokens so
    far and its next-token log-probabilities and returns them with forbidden tokens at -inf;
    a beam left with nothing allowed is dead (score -inf) and stops, so an input row whose
    beams all died ends at once instead of writing arbitrary tokens to max_new_tokens.
    `prefill_once`: the first `step` gets the B prompts, not B * K copies, and the cache's
    rows are then repeated (KVCache.repeat_rows): the K beams of a row share its prompt, so
    a long prompt (Whisper's grammar context) runs once, not K times. For a step whose memory
    is one per row (shared by its beams), as the speech decoder's.

    Shapes:
        prompt: (B, T0)   returns: Beams of (B, K, T0 + new) tokens and (B, K) scores
    """
    B, T0 = prompt.shape
    K = beam_size
    suppress = list(suppress)
    tokens = prompt.repeat_interleave(K, dim=0)  # (B*K, T0)
    scores = torch.full((B, K), float("-inf"), device=prompt.device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    finished = torch.zeros(B * K, dtype=torch.bool, device=prompt.device)
    lengths = torch.zeros(B * K, device=prompt.device)
    if prefill_once:
        logits = step(prompt, cache)[:, -1].repeat_interleave(K, dim=0)  # (B, V) -> (B*K, V)
        cache.repeat_rows(K)
    else:
        logits = step(tokens, cache)[:, -1]  # (B*K, V)
    for _ in range(max_new_tokens):
        log_probs = suppress_tokens(logits.float(), suppress).log_softmax(dim=-1)  # (B*K, V)
        if restrict is not None:
            log_probs = restrict(tokens, log_probs)
        if eos_id is not None:  # a finished hypothesis can only extend with eos, at no cost
            log_probs[finished] = float("-inf")
            log_probs[finished, eos_id] = 0.0
        V = log_probs.size(-1)
        candidates = scores.view(B * K, 1) + log_probs  # (B*K, V)
        scores, flat = candidates.view(B, K * V).topk(K, dim=-1)  # (B, K) best continuations
        beam = flat // V  # (B, K): which beam each continuation extends
        rows = (beam + torch.arange(B, device=prompt.device)[:, None] * K).view(-1)  # (B*K,)
        next_tokens = (flat % V).view(-1)  # (B*K,)
        cache.reorder(rows)
        tokens = torch.cat([tokens[rows], next_tokens[:, None]], dim=1)  # (B*K, T + 1)
        lengths = lengths[rows] + (~finished[rows]).float()
        finished = finished[rows] | (next_tokens == eos_id if eos_id is not None else False)
        finished |= scores.view(-1) == float("-inf")  # a dead beam (nothing allowed) stops
        if bool(finished.all()):
            break
        logits = step(next_tokens[:, None], cache)[:, -1]  # (B*K, V)
    normalized = scores / gnmt_length_penalty(lengths.view(B, K), length_penalty)  # (B, K)
    order = normalized.argsort(dim=-1, descending=True, stable=True)  # (B, K): ties keep order
    ranked = tokens.view(B, K, -1).gather(1, order[..., None].expand(-1, -1, tokens.size(1)))
    return Beams(ranked, normalized.gather(1, order))  # (B, K, T), (B, K)


def generate(
    step: Step,
    cache: KVCache,
    prompt: torch.Tensor,
    config: DecodeConfig,
    eos_id: int | None = None,
    suppress: Iterable[int] = (),
    on_token: OnToken | None = None,
    context: int | None = None,
) -> torch.Tensor:
    """Dispatch on the config: beam search, greedy (temperature 0) or sampling.

    `context` (the model's max_len) lets greedy decoding and sampling run past the model's
    window (see the module docstring); beam search stops at the window.

    Shapes:
        prompt: (B, T0)   returns: (B, T0 + new)
    """
    if config.beam_size > 1:
        new_tokens = config.max_new_tokens
        if context is not None:
            new_tokens = min(new_tokens, context - prompt.size(1))
        return beam_search(
            step,
            cache,
            prompt,
            config.beam_size,
            new_tokens,
            eos_id,
            config.length_penalty,
            suppress,
        ).best
    if config.temperature == 0:
        return greedy(
            step, cache, prompt, config.max_new_tokens, eos_id, suppress, on_token, context
        )
    generator = torch.Generator(device=prompt.device).manual_seed(config.seed)
    return sample(
        step,
        cache,
        prompt,
        config.max_new_tokens,
        config.temperature,
        config.top_k,
        config.top_p,
        generator,
        eos_id,
        suppress,
        on_token,
        context,
    )
