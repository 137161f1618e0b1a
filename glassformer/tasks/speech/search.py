"""The beam over a batch of clips' encoder memories, and each clip's best words read out.

    decode_clips(speech, memory, padding, options, limits)   -> a Transcript per clip

One beam search runs over every clip's beams together; each clip's best hypothesis is then
scored (its confidence, and how likely the model found the end where it ended) from the
search's own cache, and read by the grammar into an intent and slots. A constrained result
below the rejection threshold, or far less likely than the clip's free transcript, is
rejected (intent None) rather than guessed, and says the free words it heard. Not here: the
features and the encoder (tasks/speech/inference.py), the grammar's token rules
(tasks/speech/vocabulary.py).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from glassformer.layers.attention import distinct_memories
from glassformer.layers.kv_cache import KVCache
from glassformer.models.speech import SpeechTransformer
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.transcript import (
    Transcript,
    checked,
    free_hearings,
    is_doubtful,
    no_speech,
    scored,
    search_lead,
    stands,
    words_before_closers,
    written_words,
)
from glassformer.tasks.speech.vocabulary import grammar_constraint, start_rule


def decode_clips(
    speech: SpeechModel,
    memory: torch.Tensor,
    padding: torch.Tensor | None,
    options: SpeechOptions,
    limits: list[int],
) -> list[Transcript]:
    """One beam search over every clip's encoder memory, then the grammar's reading of each
    clip's best words; clip b writes at most limits[b] tokens, so a clip decoded in a batch
    ends where it would alone.

    Row b * K + k of the search is beam k of clip b. A clip's K beams ask its memory together
    (projected once per clip, padding masked: layers/attention.py), and the grammar constraint
    reads each beam's own tokens, so every clip keeps its own grammar state.

    Shapes:
        memory: (B, S, D)   padding: (B, S) bool, True = real frame, or None
    """
    from glassformer.decoding.search import beam_search

    model, K, B = speech.model, options.beam_size, memory.size(0)
    slot = speech.no_speech_slot()
    at_start: list[torch.Tensor] = []  # the prompt's logits after <|startoftranscript|>

    def step(tokens: torch.Tensor, cache) -> torch.Tensor:  # noqa: ANN001
        # (B*K, T) tokens, (B, S, D) memory -> (B*K, 1, V): the search reads the last
        # position only, and the prompt's other positions would cost the 51,864-word output
        # layer each (Whisper's grammar context: about 26 of them); the prompt's pass also
        # keeps the row after <|startoftranscript|>, where Whisper says if it hears speech
        if slot is not None and cache.seq_len == 0:
            logits = model.decode(tokens, memory, padding, cache, last=tokens.size(1) - slot[0])
            at_start.append(logits[:, 0].float())  # (B, V)
            return logits[:, -1:]
        return model.decode(tokens, memory, padding, cache, last=1)

    prompt = torch.tensor([speech.start] * B, device=memory.device)  # (B, T0)
    grammar = grammar_constraint(speech, K) if options.constrain else None
    restrict = at_most(limits, K, len(speech.start), speech.rules.eos, start_rule(speech, grammar))
    cache = model.new_cache()
    beams = beam_search(
        step,
        cache,
        prompt,
        K,
        max(limits),
        speech.rules.eos,
        suppress=speech.rules.suppress,
        restrict=restrict,
        prefill_once=True,  # the context and prompt run once per clip, not once per beam
    )  # (B, K, T), (B, K): each clip's hypotheses, best first
    transcripts = []
    for row in range(B):
        valid = memory.size(1) if padding is None else int(padding[row].sum())
        clip = memory[row : row + 1, :valid]  # (1, S_i, D): this clip's own memory
        best, found = beams.tokens[row, 0].tolist(), bool(beams.scores[row, 0] > float("-inf"))
        known = prefix_cache(cache, row, K, len(speech.start) - 1, valid)
        margin = search_lead(speech, beams.tokens[row].tolist(), beams.scores[row].tolist())
        silence = no_speech(speech, at_start[0][row].cpu().numpy() if at_start else None)
        transcripts.append(
            read_clip(speech, clip, best, found, options, limits[row], known, margin, silence)
        )
    if options.constrain:
        transcripts = checked_against_free_text(
            speech, memory, padding, options, limits, transcripts
        )
    return transcripts


def checked_against_free_text(
    speech: SpeechModel,
    memory: torch.Tensor,
    padding: torch.Tensor | None,
    options: SpeechOptions,
    limits: list[int],
    transcripts: list[Transcript],
) -> list[Transcript]:
    """Constrained results checked against what the model hears without the grammar: a
    greedy free decode (on the memory already computed) of each clip whose command is
    rejected, or less likely per token than `reject_ratio` (a share of the free
    transcript's, which is at most 1: a command above it needs no free decode); for a
    zero-shot multilingual model, first without the grammar's context, then with it for each
    command still standing (transcript.free_hearings).

    A command the model finds far less likely than its own free words is speech the grammar
    does not hold: its free words fit the audio better than any sentence the grammar allows
    (measured on commands, other speech and noise: docs/benchmarks.md). A rejected result's
    text is the free transcript, what was heard, never a grammar sentence.
    """
    doubtful = [b for b, t in enumerate(transcripts) if is_doubtful(t, options.reject_ratio)]
    if not doubtful:
        return transcripts
    free = replace(options, constrain=False, beam_size=1)
    hearings: dict[int, list[Transcript]] = {b: [] for b in doubtful}
    ratio = options.reject_ratio
    for model in free_hearings(speech):
        standing = [b for b in doubtful if stands(transcripts[b], hearings[b], ratio)]
        if not standing:
            break
        rows = torch.tensor(standing, device=memory.device)
        kept = None if padding is None else padding[rows]
        heard = decode_clips(model, memory[rows], kept, free, [limits[b] for b in standing])
        for b, words in zip(standing, heard, strict=True):
            hearings[b].append(words)
    results = list(transcripts)
    for b in doubtful:
        results[b] = checked(transcripts[b], hearings[b], ratio)
    return results


def at_most(limits: list[int], beams: int, start: int, eos: int, then):  # noqa: ANN001, ANN201
    """A `restrict` hook: `then` (if any), and each clip's beams end once they have written
    its limit of tokens (only the end is allowed then)."""
    budget = torch.tensor(limits).repeat_interleave(beams)  # (B*K,): row b*K+k is clip b's

    def restrict(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        if then is not None:
            log_probs = then(tokens, log_probs)
        spent = (tokens.size(1) - start) >= budget.to(tokens.device)  # (B*K,)
        if bool(spent.any()):
            log_probs = log_probs.clone()
            log_probs[spent] = float("-inf")
            log_probs[spent, eos] = 0.0
        return log_probs

    return restrict


def prefix_cache(search: KVCache, clip: int, beams: int, length: int, valid: int) -> KVCache:
    """What a finished search already computed for clip `clip`, as a cache to score with: the
    self-attention keys and values of its prompt's first `length` positions (the same in all
    its beams) and its memory's cross-attention keys and values (its `valid` frames).

    Scoring the best hypothesis (token_log_probs) then runs only the written tokens: not the
    prompt again (Whisper's grammar context: up to 120 tokens), nor the projection of a 10-s
    memory, which were most of that pass.
    """
    cache = KVCache(len(search.self_attn), cross_attention=True)  # grows by concatenation
    row = clip * beams  # the clip's first beam
    for mine, theirs in zip(cache.self_attn, search.self_attn, strict=True):
        mine.k, mine.v = theirs.k[row : row + 1, :, :length], theirs.v[row : row + 1, :, :length]
    for mine, theirs in zip(cache.cross_attn, search.cross_attn, strict=True):
        k, v = distinct_memories(theirs.k), distinct_memories(theirs.v)  # (B, H, S, Dh)
        mine.k, mine.v = k[clip : clip + 1, :, :valid], v[clip : clip + 1, :, :valid]
    return cache


def read_clip(
    speech: SpeechModel,
    memory: torch.Tensor,
    best: list[int],
    found: bool,
    options: SpeechOptions,
    limit: int,
    known: KVCache | None = None,
    margin: float = math.inf,
    silence: float = 0.0,
) -> Transcript:
    """A clip's best hypothesis as words, the grammar's intent and slots, and a confidence
    (transcript.written_words, then scored by teacher forcing and transcript.scored).
    `found` is False when the search ended no hypothesis (the grammar let none end in time).
    `known`: what the search computed already for this clip (prefix_cache). `margin`: the
    search's lead (transcript.search_lead); `silence`: the model's no-speech probability
    (transcript.no_speech).

    Shapes:
        memory: (1, S, D)   best: prompt, written tokens, then <eos> padding
    """
    eos, start = speech.rules.eos, len(speech.start)
    chosen, text, command = written_words(speech, best, found, options, limit)
    tokens = [*speech.start, *chosen, eos]
    log_probs = token_log_probs(speech.model, memory, tokens, start, known)
    picked = log_probs.gather(-1, torch.tensor(tokens[start:])[:, None])  # (T', 1)
    ends = [eos, *speech.reading.closers]  # after the last word: the end, or a period, the end
    end_probability = log_probs[words_before_closers(speech, chosen), ends].exp().sum().item()
    return scored(text, command, picked[:, 0].tolist(), end_probability, options, margin, silence)


def token_log_probs(
    model: SpeechTransformer,
    memory: torch.Tensor,
    tokens: list[int],
    start: int = 1,
    known: KVCache | None = None,
) -> torch.Tensor:
    """Teacher-forced next-token log-probabilities at each position from the prompt's `start`
    on: row i is the distribution the i-th written token (then <eos>) was drawn from.

    `known`: a cache holding the prompt's first start - 1 positions (and, optionally, the
    memory's cross-attention keys and values), so that only the scored positions run.

    Shapes:
        memory: (1, S, D)   returns: (len(tokens) - start, V)
    """
    sequence = torch.tensor([tokens], device=memory.device)
    written = len(tokens) - start  # the tokens scored, after the prompt
    skip = 0 if known is None else known.seq_len
    if skip not in (0, start - 1):
        raise ValueError(f"the cache holds {skip} positions; scoring needs 0 or {start - 1}")
    # (1, T', V): logits for the written tokens only, not the prompt's
    logits = model.decode(sequence[:, skip:-1], memory, cache=known, last=written)
    return logits[0].float().log_softmax(-1).cpu()  # (T', V)
