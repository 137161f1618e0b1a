"""Transcription: audio -> MFCC -> encoder -> beam search -> words -> intent and slots.

Long real recordings are mostly silence around a short command: leading and trailing silence
is trimmed first (audio/silence.trim_silence), and a clip still longer than the model takes
keeps its loudest stretch (audio/silence.loudest_window). With `constrain`, beam search may
only write token sequences the grammar can produce (decoding/constraints.py), so the result
is always a command; when even the best of them is unlikely (confidence below the model's
reject_below) the command is rejected (intent None) rather than guessed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.audio.io import SAMPLE_RATE
from glassformer.audio.silence import loudest_window, trim_silence
from glassformer.configs import config_from_dict
from glassformer.decoding.config import check_beam_size
from glassformer.decoding.constraints import TextConstraint
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.layers.attention import distinct_memories
from glassformer.layers.kv_cache import KVCache
from glassformer.models.speech import SpeechTransformer
from glassformer.tasks.common import TOKENIZER_FILE, load_task_checkpoint, special_ids
from glassformer.tasks.speech.config import GRAMMAR_FILE
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tokenizer.base import Tokenizer
from glassformer.voice.grammar import Grammar

CLOSER_TEXT = re.compile(r"[.!?]+")  # a final period (or !, ?): ends a sentence, adds no words
WORD_CASE = re.compile(r" [A-Z][a-z']*|[A-Z][a-z']+")  # " One", "One": a capital first letter
MAX_CONTEXT_TOKENS = 120  # Whisper's previous-text prompt holds at most 223 tokens
GRAMMAR_TEXT = re.compile(r"(?:[^\W\d_]|[' ])+")  # letters, apostrophes, spaces: normalized text


@dataclass(frozen=True)
class Transcript:
    text: str  # the words written by the model (normalized)
    intent: str | None  # None: the words are not a command of the grammar (rejected)
    slots: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.0  # geometric-mean probability of the written tokens, 0..1


def load_speech_model(
    path: str | Path, device: str = "cpu", grammar: str | Path | None = None
) -> SpeechModel:
    """A speech run or checkpoint directory, a CTranslate2 Whisper directory or an installed
    pretrained name (tasks/speech/pretrained.py) -> the model, its tokenizer, grammar and
    features.

    `grammar` replaces the grammar the checkpoint was trained with (a pretrained model has
    none). A checkpoint's "decoding" settings (prompt, eos, suppress, context_token) come
    from its importer; a model trained here starts from <bos> and ends with <eos>.
    """
    from glassformer.tasks.speech.pretrained import is_pretrained_source, load_pretrained
    from glassformer.tokenizer.io import load_tokenizer

    if is_pretrained_source(path) or not Path(path).exists():
        speech = load_pretrained(path, device)  # an unknown name: one line listing ours
        return use_grammar(speech, Grammar.from_yaml(grammar) if grammar else None)

    model, directory, header = load_task_checkpoint(path, "speech", device)
    where = directory / "config.json"
    if not isinstance(header.get("features"), dict):
        raise CheckpointError(f'{where}: no "features" settings')
    try:
        features = config_from_dict(FeatureConfig, header["features"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{where}: invalid features: {error}") from None
    tokenizer = load_tokenizer(directory / TOKENIZER_FILE)
    own_grammar = directory / GRAMMAR_FILE if (directory / GRAMMAR_FILE).is_file() else None
    grammar_path = grammar or own_grammar
    decoding = header.get("decoding") or default_decoding(tokenizer)
    speech = SpeechModel(
        model,
        tokenizer,
        None,
        features,
        list(decoding["prompt"]),
        int(decoding["eos"]),
        list(decoding["suppress"]),
        list(decoding.get("suppress_at_start", [])),
        float(decoding.get("reject_below", 0.3)),
        context_token=decoding.get("context_token"),  # an imported zero-shot Whisper's
    )
    return use_grammar(speech, Grammar.from_yaml(grammar_path) if grammar_path else None)


def use_grammar(speech: SpeechModel, grammar: Grammar | None) -> SpeechModel:
    """The same model (shared network and vocabulary reading) for `grammar`.

    A model that reads a text context (zero-shot Whisper) is given the grammar's phrases
    there, as Whisper's previous-text prompt: it then expects those words (coffee orders of
    voices it never heard: 88.4% against 76.7% without, docs/benchmarks.md).
    """
    context = []
    if grammar is not None and speech.context_token is not None:
        words = speech.tokenizer.encode(" " + ", ".join(grammar_phrases(grammar)))
        context = [speech.context_token, *words[:MAX_CONTEXT_TOKENS]]
    return dataclasses.replace(speech, grammar=grammar, context=context)


def grammar_phrases(grammar: Grammar, per_slot: int = 12) -> list[str]:
    """The phrases a context shows: up to `per_slot` of each slot type's, else its words."""
    phrases = [p for values in grammar.slots.values() for p in values[:per_slot]]
    return list(dict.fromkeys(phrases)) or grammar.vocabulary


def default_decoding(tokenizer: Tokenizer) -> dict:
    """A model trained here: start from <bos>, end with <eos>, never write <pad> or <bos>."""
    pad, bos, eos = special_ids(tokenizer)
    return {"prompt": [bos], "eos": eos, "suppress": [pad, bos]}


def clip_audio(speech: SpeechModel, waveform: np.ndarray) -> np.ndarray:
    """The part of a clip (16 kHz mono) its model hears.

    Leading and trailing silence is trimmed; a clip still longer than the model takes (a
    long noisy recording) keeps its loudest stretch of that length, where the command is.
    """
    if not waveform.any():
        raise GlassformerError("digital silence (every sample is 0): nothing to transcribe")
    waveform = trim_silence(waveform)
    longest = speech.model.max_frames / speech.features.frames_per_second  # seconds
    return loudest_window(waveform, longest) if len(waveform) > longest * SAMPLE_RATE else waveform


def clip_features(speech: SpeechModel, waveform: np.ndarray) -> torch.Tensor:
    """clip_audio() as the features its model reads.

    Shapes:
        waveform: (L,)   returns: (M, N), N <= model.max_frames
    """
    heard = clip_audio(speech, waveform)
    device = next(speech.model.parameters()).device
    features = compute_features(torch.from_numpy(heard).to(device), speech.features)
    return features[..., : speech.model.max_frames]  # (M, N): a frame of rounding, at most


@torch.inference_mode()
def transcribe(
    speech: SpeechModel,
    waveform: np.ndarray,
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
) -> Transcript:
    """One clip (16 kHz mono) to text, intent, slots and a confidence.

    With `constrain`, the beam writes only sentences of the grammar (token by token), and a
    result whose confidence is below `reject_below` (None: the model's own threshold) is
    rejected (intent None).
    """
    return transcribe_many(speech, [waveform], beam_size, constrain, reject_below)[0]


@torch.inference_mode()
def transcribe_many(
    speech: SpeechModel,
    waveforms: list[np.ndarray],
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
    encoder_batch: int = 8,
) -> list[Transcript]:
    """transcribe() for several clips, up to `encoder_batch` at once: one encoder pass over a
    padded batch, then one beam search for all of them (decode_clips), where a server's
    throughput comes from. Equal to transcribing them one by one.
    """
    check_beam_size(beam_size)
    if constrain and speech.grammar is None:
        raise GlassformerError("constrained decoding needs a grammar (--grammar G.yaml)")
    results = []
    for first in range(0, len(waveforms), encoder_batch):
        features = [clip_features(speech, w) for w in waveforms[first : first + encoder_batch]]
        lengths = torch.tensor([f.size(-1) for f in features])
        batch = pad_features(features)  # (B, M, N)
        same = bool((lengths == lengths[0]).all())
        memory, padding = speech.model.encode(batch, None if same else lengths.to(batch.device))
        results += decode_clips(speech, memory, padding, beam_size, constrain, reject_below)
    return results


def pad_features(features: list[torch.Tensor]) -> torch.Tensor:
    """Shapes: features: B x (M, N_i)   returns: (B, M, max N_i), zero-padded"""
    longest = max(f.size(-1) for f in features)
    padded = [torch.nn.functional.pad(f, (0, longest - f.size(-1))) for f in features]
    return torch.stack(padded)


def decode_clips(
    speech: SpeechModel,
    memory: torch.Tensor,
    padding: torch.Tensor | None,
    beam_size: int,
    constrain: bool,
    reject_below: float | None,
) -> list[Transcript]:
    """One beam search over every clip's encoder memory, then the grammar's reading of each
    clip's best words.

    Row b * K + k of the search is beam k of clip b. A clip's K beams ask its memory together
    (projected once per clip, padding masked: layers/attention.py), and the grammar constraint
    reads each beam's own tokens, so every clip keeps its own grammar state.

    Shapes:
        memory: (B, S, D)   padding: (B, S) bool, True = real frame, or None
    """
    from glassformer.decoding.search import beam_search

    model, K, B = speech.model, beam_size, memory.size(0)

    def step(tokens: torch.Tensor, cache) -> torch.Tensor:  # noqa: ANN001
        # (B*K, T) tokens, (B, S, D) memory -> (B*K, 1, V): the search reads the last
        # position only, and the prompt's other positions would cost the 51,864-word output
        # layer each (Whisper's grammar context: about 26 of them)
        return model.decode(tokens, memory, padding, cache, last=1)

    prompt = torch.tensor([speech.start] * B, device=memory.device)  # (B, T0)
    restrict = start_rule(speech, grammar_constraint(speech, K) if constrain else None)
    cache = model.new_cache()
    hypotheses, scores = beam_search(
        step,
        cache,
        prompt,
        K,
        model.config.max_tgt_len - len(speech.start),
        speech.eos,
        suppress=speech.suppress,
        n_best=True,
        restrict=restrict,
    )  # (B, K, T), (B, K): each clip's hypotheses, best first
    transcripts = []
    for row in range(B):
        valid = memory.size(1) if padding is None else int(padding[row].sum())
        clip = memory[row : row + 1, :valid]  # (1, S_i, D): this clip's own memory
        best, found = hypotheses[row, 0].tolist(), bool(scores[row, 0] > float("-inf"))
        known = prefix_cache(cache, row, K, len(speech.start) - 1, valid)
        transcripts.append(read_clip(speech, clip, best, found, constrain, reject_below, known))
    return transcripts


def prefix_cache(search: KVCache, clip: int, beams: int, length: int, valid: int) -> KVCache:
    """What a finished search already computed for clip `clip`, as a cache to score with: the
    self-attention keys and values of its prompt's first `length` positions (the same in all
    its beams) and its memory's cross-attention keys and values (its `valid` frames).

    Scoring the best hypothesis (token_confidence) then runs only the written tokens: not the
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
    constrain: bool,
    reject_below: float | None,
    known: KVCache | None = None,
) -> Transcript:
    """A clip's best hypothesis as words, the grammar's intent and slots, and a confidence.
    `known`: what the search computed already for this clip (prefix_cache).

    Shapes:
        memory: (1, S, D)   best: prompt, written tokens, then <eos> padding
    """
    eos = speech.eos
    chosen = strip(best, len(speech.start), eos)
    text = speech.tokenizer.decode(chosen)
    command = speech.grammar.parse(text) if speech.grammar is not None and found else None
    tokens = [*speech.start, *chosen, eos]
    confidence = token_confidence(speech.model, memory, tokens, len(speech.start), known)
    threshold = speech.reject_below if reject_below is None else reject_below
    if constrain and confidence < threshold:
        command = None  # the closest grammar sentence is too unlikely: a rejection
    if command is None:
        return Transcript(" ".join(text.split()), None, {}, confidence)
    return Transcript(command.text, command.intent, command.slots, confidence)


def transcribe_file(
    speech: SpeechModel,
    path: str | Path,
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
    waveform: np.ndarray | None = None,
) -> Transcript:
    """transcribe() on an audio file (or its `waveform`, when the caller has read it already);
    every error about the clip names the file."""
    from glassformer.audio.io import load_audio

    check_beam_size(beam_size)  # a bad flag, not a bad file
    if waveform is None:
        waveform = load_audio(path)  # its errors name the file already
    try:
        return transcribe(speech, waveform, beam_size, constrain, reject_below)
    except GlassformerError as error:
        raise GlassformerError(f"{path}: {error}") from None


def grammar_constraint(speech: SpeechModel, beam_size: int) -> TextConstraint:
    """Token-level grammar constraint: the beam may only write what the grammar can say."""
    if speech.token_texts is None or speech.closers is None:  # once per model: 50k decodes
        texts, speech.closers = grammar_reading(speech.tokenizer, speech.suppress)
        padding = speech.model.config.tgt_vocab_size - len(texts)  # Whisper's timestamp ids
        speech.token_texts = texts + [""] * padding
    grammar = speech.grammar
    return TextConstraint(
        speech.token_texts,
        lambda text: grammar.can_continue(text.lstrip(" ")),
        lambda text: grammar.accepts(text.lstrip(" ")),
        speech.eos,
        start=len(speech.start),
        keep=beam_size,
        closers=speech.closers,
    )


def start_rule(speech: SpeechModel, then: TextConstraint | None):  # noqa: ANN201
    """A `restrict` hook: the first written token is never one of suppress_at_start (Whisper
    must not begin with a blank or end at once), then `then` (the grammar) if given."""
    if not speech.suppress_at_start:
        return then
    start, banned = len(speech.start), speech.suppress_at_start

    def restrict(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        if tokens.size(1) == start:
            log_probs = log_probs.clone()
            log_probs[:, banned] = float("-inf")
        return log_probs if then is None else then(tokens, log_probs)

    return restrict


def grammar_reading(tokenizer: Tokenizer, never: list[int]) -> tuple[list[str], list[int]]:
    """Each token's text as a grammar reads it, and the tokens that may only end a sentence.

    Texts are lower case; "" (never allowed) for special tokens and for any text a
    normalized sentence cannot contain (digits, punctuation). Closers are tokens made only of
    '.', '!' or '?': allowed once the grammar accepts the sentence, adding no words.

    A pretrained tokenizer writes " Make" and "."; the grammar sees " make", the period is
    not allowed, so numbers come out as the grammar's words. Capitals are allowed only as a
    word's first letter (" One", "One"): else the beam spells "ONE", "onE" or "NiNe" out of
    odd pieces when the audio is unclear, and those spellings were a share of the misses on
    real spoken digits.
    """
    specials = set(tokenizer.special_tokens.values()) | set(never)
    texts, closers = [], []
    for token in range(tokenizer.vocab_size):
        text = "" if token in specials else tokenizer.decode([token])
        natural = text == text.lower() or WORD_CASE.fullmatch(text)
        texts.append(text.lower() if natural and GRAMMAR_TEXT.fullmatch(text.lower()) else "")
        if CLOSER_TEXT.fullmatch(text):
            closers.append(token)
    return texts, closers


def strip(tokens: list[int], start: int, eos: int) -> list[int]:
    """The written tokens: after the prompt, up to (not including) the first <eos>."""
    tokens = tokens[start:]
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


def token_confidence(
    model: SpeechTransformer,
    memory: torch.Tensor,
    tokens: list[int],
    start: int = 1,
    known: KVCache | None = None,
) -> float:
    """exp(mean log-probability) of the tokens after the prompt's `start`, teacher-forced.

    `known`: a cache holding the prompt's first start - 1 positions (and, optionally, the
    memory's cross-attention keys and values), so that only the scored positions run.

    Shapes:
        memory: (1, S, D)
    """
    sequence = torch.tensor([tokens], device=memory.device)
    written = len(tokens) - start  # the tokens scored, after the prompt
    skip = 0 if known is None else known.seq_len
    if skip not in (0, start - 1):
        raise ValueError(f"the cache holds {skip} positions; scoring needs 0 or {start - 1}")
    # (1, T', V): logits for the written tokens only, not the prompt's
    logits = model.decode(sequence[:, skip:-1], memory, cache=known, last=written)
    picked = logits.log_softmax(-1).gather(-1, sequence[:, start:, None])  # (1, T', 1)
    return math.exp(picked.mean().item())


@dataclass(frozen=True)
class Scored:
    file: str
    truth: str | None  # the reference transcript, when the labels give one
    transcript: Transcript
    accepted: bool  # intent and every slot exactly right


def is_accepted(transcript: Transcript, label: dict) -> bool:
    return transcript.intent == label["intent"] and transcript.slots == (label["slots"] or {})


def summarize(scored: list[Scored]) -> dict[str, float]:
    """WER and CER (jiwer) over files with reference text, and command acceptance rate."""
    import jiwer

    from glassformer.voice.grammar import normalize

    pairs = [(normalize(s.truth), s.transcript.text) for s in scored if s.truth]
    result = {
        "files": len(scored),
        "acceptance": sum(s.accepted for s in scored) / max(len(scored), 1),
    }
    if pairs:
        truths, guesses = zip(*pairs, strict=True)
        result["wer"] = jiwer.wer(list(truths), [g or "<empty>" for g in guesses])
        result["cer"] = jiwer.cer(list(truths), [g or "<empty>" for g in guesses])
    return result


def evaluate_speech(
    speech: SpeechModel,
    audio_dir: Path,
    labels_path: Path,
    constrain: bool = False,
    beam_size: int = 4,
    reject_below: float | None = None,
) -> tuple[list[Scored], dict]:
    """Transcribe every labelled file of audio_dir; per-file results and the summary."""
    from glassformer.tasks.speech.data import read_labels

    check_beam_size(beam_size)
    if speech.grammar is None:
        raise GlassformerError("scoring commands needs a grammar (--grammar G.yaml)")
    labels = read_labels(labels_path, speech.grammar)
    if not audio_dir.is_dir():
        raise GlassformerError(f"{audio_dir}: no such directory")
    scored = []
    for name, label in sorted(labels.items()):
        transcript = transcribe_file(speech, audio_dir / name, beam_size, constrain, reject_below)
        scored.append(Scored(name, label["text"], transcript, is_accepted(transcript, label)))
    return scored, summarize(scored)
