"""A clip's transcript: how a search's best tokens are read, scored and judged, with no torch.

    Transcript                           text, intent and slots (None: rejected), confidence
    written_words(speech, best, ...)     the best tokens as words, and the grammar's reading
    scored(text, command, picked, ...)   the confidence and the rejection below reject_below
    is_doubtful, checked, free_hearings  which commands the free decodes check, with which
                                         models, and the result: the command, or rejected
    is_command_heard(command, words)     whether a doubtful command stands against the free
                                         words the model heard (agreement)
    cut_repetition(text), strip(...)     free text that looped, cut; the written tokens
    search_lead, lead(texts, scores)     how far the search's best words beat the next
                                         hypothesis that writes other words
    second_reading(first, second)        of a command encoder's doubted reading and the
                                         model's own encoder's, the one that stands

Shared by the search on torch (search.py) and the one on onnxruntime (onnx_runtime.py): each
computes the log-probabilities its own way, and both read them here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import takewhile
from typing import TYPE_CHECKING

import numpy as np

from glassformer.voice.expressions import normalize

if TYPE_CHECKING:
    from glassformer.tasks.speech.model import SpeechModel
    from glassformer.tasks.speech.options import SpeechOptions
    from glassformer.voice.commands import Command

# how alike a doubtful command and its free words must be (is_command_heard), chosen on
# bench_rejection's decodes (docs/benchmarks.md, "Rejection"): speech that was no command of
# an English grammar agreed at most 0.26 with its command, right commands in seven languages
# at least 0.29
MIN_AGREEMENT = 0.28
# a command encoder's doubted command under this confidence never overrules Whisper's own
# reading (second_reading): a command in cafe noise alone, 0.02, stood over Whisper's
# rejection without it
WEIGHED_FROM = 0.05


@dataclass(frozen=True)
class Transcript:
    text: str  # the words written by the model (normalized)
    intent: str | None  # None: the words are not a command of the grammar (rejected)
    slots: dict[str, str] = field(default_factory=dict)
    confidence: float = 0.0  # geometric-mean probability of the written tokens, 0..1
    end_probability: float = 0.0  # after the last word: p(the end, or a period then the end)
    margin: float = math.inf  # the search's lead over the next hypothesis with other words
    # (length-normalized log-probability; inf: none was kept): lead()
    no_speech: float = 0.0  # Whisper's own probability that the clip holds no speech (its
    # <|nospeech|> after <|startoftranscript|>; 0 for a model without one): no_speech()


def written_words(
    speech: SpeechModel, best: list[int], found: bool, options: SpeechOptions, limit: int
) -> tuple[list[int], str, Command | None]:
    """A hypothesis (prompt, written tokens, then <eos> padding) as its written tokens, their
    text, and the grammar's reading of it (None: no command, or `found` False: the search
    ended no hypothesis). Free text that ran to its `limit` of tokens repeating itself is cut
    to one copy (cut_repetition), and its tokens are then those of the words it meant.
    """
    eos, start = speech.rules.eos, len(speech.start)
    chosen = strip(best, start, eos)
    text = speech.tokenizer.decode(chosen)
    if not options.constrain and len(chosen) >= limit:
        kept = cut_repetition(text)
        if kept != " ".join(text.split()):  # the model looped: score the words it meant
            text, chosen = kept, speech.tokenizer.encode(speech.rules.word_prefix + kept)
    command = speech.grammar.parse(text) if speech.grammar is not None and found else None
    return chosen, text, command


def words_before_closers(speech: SpeechModel, chosen: list[int]) -> int:
    """Where the end probability is read: after the last word, before a final period."""
    closers = speech.reading.closers
    return len(chosen) - sum(1 for _ in takewhile(closers.__contains__, reversed(chosen)))


def scored(
    text: str,
    command: Command | None,
    picked: list[float],
    end_probability: float,
    options: SpeechOptions,
    margin: float = math.inf,
    no_speech: float = 0.0,
) -> Transcript:
    """The Transcript of words whose tokens, then <eos>, had log-probabilities `picked`: a
    confidence (their geometric mean), and a constrained command below options.reject_below
    rejected (the closest grammar sentence is too unlikely). `margin`: the search's lead();
    `no_speech`: the model's no-speech probability (no_speech())."""
    confidence = math.exp(sum(picked) / len(picked))
    if options.constrain and confidence < options.reject_below:
        command = None
    if command is None:
        text, intent, slots = " ".join(text.split()), None, {}
    else:
        text, intent, slots = command.text, command.intent, command.slots
    return Transcript(text, intent, slots, confidence, end_probability, margin, no_speech)


def no_speech(speech: SpeechModel, logits: np.ndarray | None) -> float:
    """Whisper's no-speech probability from its logits after <|startoftranscript|> (the
    whole row, unsuppressed, as OpenAI's decoder reads it to skip silent windows); 0 for a
    model without a no-speech token (SpeechModel.no_speech_slot), or `logits` None.

    Shapes:
        logits: (V,)
    """
    slot = speech.no_speech_slot()
    if slot is None or logits is None:
        return 0.0
    row = logits.astype(np.float64)
    row = np.exp(row - row.max())
    return float(row[slot[1]] / row.sum())


def search_lead(speech: SpeechModel, hypotheses: list[list[int]], scores: list[float]) -> float:
    """lead() of a search's hypotheses (each: prompt, written tokens, <eos> padding) and
    their length-normalized scores, best first: what the search on torch (search.py) and the
    one on onnxruntime (onnx_runtime.py) give every Transcript as its margin."""
    start, eos = len(speech.start), speech.rules.eos
    return lead([speech.tokenizer.decode(strip(row, start, eos)) for row in hypotheses], scores)


def lead(texts: list[str], scores: list[float]) -> float:
    """How far a search's best hypothesis beats the best of the others that writes other
    words: the difference of their length-normalized log-probabilities (the search's own
    ranking), inf where no other hypothesis was kept. Hypotheses that differ only in case,
    punctuation or spacing ("Latte." and "latte") are the same words. Both lists best first.

    Example: texts ["a small latte.", "A small latte", "a large latte"], scores [-0.30, -0.31,
    -0.36] -> 0.06
    """
    best = normalize(texts[0])
    for text, score in zip(texts[1:], scores[1:], strict=True):
        if math.isfinite(score) and normalize(text) != best:
            return scores[0] - score
    return math.inf


def is_doubtful(command: Transcript, reject_ratio: float) -> bool:
    """Whether a constrained result needs the free decode's check: rejected already, or less
    likely per token than `reject_ratio` (a share of the free transcript's, which is at most
    1: a command above it needs no free decode). Whisper's own no-speech probability is not
    asked: it tells cafe noise read as a French command from the right ones, but not real
    single words in noise, 8 of which it cost tiny.en (docs/benchmarks.md, "No speech, by
    Whisper's word")."""
    return command.intent is None or command.confidence < reject_ratio


def checked(command: Transcript, hearings: list[Transcript], reject_ratio: float) -> Transcript:
    """A doubtful command against the free words heard: the command if it stands against
    every hearing (is_command_heard), else a rejection whose text is the first hearing's
    words, never a grammar sentence. See free_hearings for the hearings and their order."""
    if stands(command, hearings, reject_ratio):
        return command
    return Transcript(
        hearings[0].text, None, {}, command.confidence, command.end_probability,
        no_speech=command.no_speech,
    )  # fmt: skip


def stands(command: Transcript, hearings: list[Transcript], reject_ratio: float) -> bool:
    """Whether a command stands against every hearing so far (with none yet, it does)."""
    return all(is_command_heard(command, words, reject_ratio) for words in hearings)


def free_hearings(speech: SpeechModel) -> list[SpeechModel]:
    """The models whose free words check a doubtful command, in order: for a multilingual
    Whisper given a grammar's context, the model without it (its words are what a rejection
    shows), then with it; for any other, the model as it is. Measured (docs/benchmarks.md,
    "Rejection", attempt 4): with the context, whisper-base writes the grammar's phrases
    back for speech that is no command ("Flurlicht, Flurlicht" for German, which a command of
    those names resembles), and the first hearing refuses it (German 81.8 -> 100%, French
    72.7 -> 81.8%); English-only tiny.en gains nothing from it, and its free words without
    the context can stop short of a right command ("I am" for "monday at nine a m"). The
    second decode runs only for a command that stood against the first."""
    if not speech.context or not speech.language_slots():
        return [speech]
    return [speech.without_context(), speech]


def is_command_heard(command: Transcript, words: Transcript, reject_ratio: float) -> bool:
    """Whether a doubtful command stands against the free words the model heard: nearly as
    likely per token (at least `reject_ratio` of theirs), and written with characters alike
    (agreement at least MIN_AGREEMENT, where the two can be compared).

    The second test catches what the first lets through: noise, or one short word, freely
    heard as "and" or "nine" at a low probability that a five-word grammar sentence matches
    per token (docs/benchmarks.md, issue 28).
    """
    if command.intent is None or command.confidence < reject_ratio * words.confidence:
        return False
    shared = agreement(command.text, words.text)
    return shared is None or shared >= MIN_AGREEMENT


def agreement(command: str, heard: str) -> float | None:
    """How alike the command's text and the free words are: 1 - their character edit distance
    (jiwer's alignment) over the longer one's length, each as a grammar reads words
    (voice/expressions.normalize: case and punctuation aside). Over the
    longer, not the command's: free words of a badly heard language run longer than the
    command they are, and that alone is no disagreement. None where characters cannot tell:
    the free words write a number in digits that the command spells out.

    Example: ("i'd like a mocha", "and") -> 0.06; ("give me a drip coffee", "Give me a rip,
    coffee") -> 0.95; ("friday at five p m", "Friday at 5 p.m.") -> None
    """
    import jiwer

    said, free = normalize(command), normalize(heard)
    if not said or (any(c.isdigit() for c in free) and not any(c.isdigit() for c in said)):
        return None
    if not free:
        return 0.0
    edits = jiwer.process_characters(said, free)
    distance = edits.substitutions + edits.deletions + edits.insertions
    return 1.0 - distance / max(len(said), len(free))


def cut_repetition(text: str, repeats: int = 3) -> str:
    """Text whose end repeats one word or phrase at least `repeats` times, cut to its first
    copy: what free decoding writes when it loops until the token limit on a short or
    unclear clip (Whisper's known failure; OpenAI's decoder resamples at a higher
    temperature when the text compresses too well, this keeps the deterministic beam's words
    before the loop). Words compare without case and punctuation; other text is returned
    with its spaces normalized.

    Example: "0 0 0 0 0 0" -> "0"; "Seven. Seven. Seven. Seven" -> "Seven."
    """
    words = text.split()
    keys = [w.strip(".,!?;:").lower() for w in words]
    n = len(keys)
    for unit in range(1, n // repeats + 1):
        start = n - unit  # keys[start:] repeats with period `unit`; extend it back
        while start > 0 and keys[start - 1] == keys[start - 1 + unit]:
            start -= 1
        if n - start >= repeats * unit:
            return " ".join(words[: start + unit])
    return " ".join(words)


def strip(tokens: list[int], start: int, eos: int) -> list[int]:
    """The written tokens: after the prompt, up to (not including) the first <eos>."""
    tokens = tokens[start:]
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


def second_reading(first: Transcript, second: Transcript) -> Transcript:
    """Of a command the command encoder doubted (`first`) and Whisper's own encoder's reading
    of the same clip (`second`), the one that stands. A first reading rejected or under
    WEIGHED_FROM confidence gives way to the second, whatever it is; otherwise a command
    stands over a rejection (each reading has passed its own rejection test:
    search.checked_against_free_text), and of two commands the surer, Whisper's own at a tie.
    The command encoder hears noisy commands better than Whisper's own, which rejects some
    of them, so where it was merely unsure the two are weighed (docs/benchmarks.md, "Two
    encoders in one model", attempt 16).
    """
    if first.intent is None or first.confidence < WEIGHED_FROM:
        return second
    if second.intent is None or second.confidence < first.confidence:
        return first
    return second
