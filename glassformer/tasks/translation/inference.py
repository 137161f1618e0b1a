"""Translating with a trained encoder-decoder, and scoring it with sacrebleu.

    sentences --(sorted by length, batched)--> encoder once per batch
              --> greedy or beam search through the decoder's KV cache --> text (input order)

Sorting by length keeps padding low; the memory padding mask makes a padded sentence translate
exactly as it would alone (tested). Scores are sacrebleu's BLEU and chrF on detokenized text,
with the signature that says how they were computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from glassformer.decoding.config import check_beam_size, check_length_penalty
from glassformer.tasks.common import load_task_parts, pad_sequences, special_ids
from glassformer.tasks.translation.config import SOURCE_TOKENIZER_FILE
from glassformer.tokenizer.base import Tokenizer


@dataclass
class Translator:
    model: torch.nn.Module  # a Seq2SeqTransformer with a token source
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer


def load_translator(path: str | Path, device: str = "cpu") -> Translator:
    """A translation run or checkpoint directory -> the model and its tokenizer(s)."""
    from glassformer.tokenizer.io import load_tokenizer

    model, tokenizers, directory, _ = load_task_parts(path, "translation", device)
    target = tokenizers["tokenizer"]
    source = tokenizers.get("source_tokenizer")
    if source is None:  # written before config.json named it: the file says
        source_file = directory / SOURCE_TOKENIZER_FILE
        source = load_tokenizer(source_file) if source_file.is_file() else target
    return Translator(model, source, target)


@torch.inference_mode()
def translate_batch(
    translator: Translator, sources: list[list[int]], beam_size: int, length_penalty: float
) -> list[list[int]]:
    """Token ids of several sources -> written token ids (no specials), same order.

    Shapes (B sources, K beams, S longest source):
        source (B, S) -> memory (B, S, D) -> with beams (B*K, S, D) -> tokens (B, T)
    """
    from glassformer.decoding.search import beam_search, greedy

    model, tokenizer = translator.model, translator.target_tokenizer
    pad, bos, eos = special_ids(tokenizer)
    device = next(model.parameters()).device
    lengths = torch.tensor([len(s) for s in sources], device=device)
    source = pad_sequences(sources, pad, device)  # (B, S)
    memory, padding = model.encode(source, lengths)  # (B, S, D), (B, S)
    # Each sentence may write at most twice its source plus ten tokens, then <eos>. Greedy
    # rows do not depend on each other, so the batch stops at its longest limit (+1 for the
    # <eos>) and each row is cut to its own; beam search enforces each sentence's limit
    # inside the search (only_eos_past_limit), so a sentence decodes the same in any batch.
    max_new = min(model.config.max_tgt_len - 1, 2 * int(lengths.max()) + 11)
    prompt = torch.full((len(sources), 1), bos, dtype=torch.long, device=device)
    if beam_size == 1:

        def step(tokens: torch.Tensor, cache) -> torch.Tensor:  # noqa: ANN001
            return model.decode(tokens, memory, padding, cache)

        written = greedy(step, model.new_cache(), prompt, max_new, eos, suppress=[pad, bos])
    else:
        memory_k = memory.repeat_interleave(beam_size, dim=0)  # (B*K, S, D)
        padding_k = padding.repeat_interleave(beam_size, dim=0)  # (B*K, S)
        limits = (2 * lengths + 10).repeat_interleave(beam_size)  # (B*K,) tokens per beam

        def only_eos_past_limit(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
            """A beam that reached its sentence's limit may only end: beams of short
            sentences stop early, and each sentence's search is the same in any batch."""
            over = tokens.size(1) - 1 >= limits  # (B*K,)
            if not bool(over.any()):
                return log_probs
            ended = torch.full_like(log_probs, float("-inf"))
            ended[:, eos] = log_probs[:, eos]
            return torch.where(over[:, None], ended, log_probs)

        def step(tokens: torch.Tensor, cache) -> torch.Tensor:  # noqa: ANN001
            return model.decode(tokens, memory_k, padding_k, cache)

        written = beam_search(
            step,
            model.new_cache(),
            prompt,
            beam_size,
            max_new,
            eos,
            length_penalty,
            suppress=[pad, bos],
            restrict=only_eos_past_limit,
        ).best
    results = []
    for row, source_length in zip(written.tolist(), lengths.tolist(), strict=True):
        row = row[1:]
        row = row[: row.index(eos)] if eos in row else row
        results.append(row[: 2 * source_length + 10])
    return results


def translate(
    translator: Translator,
    sentences: list[str],
    beam_size: int = 4,
    length_penalty: float = 0.6,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Translate sentences, batched by similar length; results in the input order."""
    from glassformer.progress import progress_bar

    check_beam_size(beam_size)
    check_length_penalty(length_penalty)
    _, _, eos = special_ids(translator.target_tokenizer)
    keep = translator.model.config.max_src_len - 1  # longer sources are cut to the table
    encoded = [translator.source_tokenizer.encode(s)[:keep] + [eos] for s in sentences]
    order = sorted(range(len(sentences)), key=lambda i: len(encoded[i]))
    results: list[str] = [""] * len(sentences)
    starts = range(0, len(order), batch_size)
    for start in progress_bar(progress, iterable=starts, desc="translating", unit="batch"):
        chunk = order[start : start + batch_size]
        written = translate_batch(
            translator, [encoded[i] for i in chunk], beam_size, length_penalty
        )
        for i, tokens in zip(chunk, written, strict=True):
            results[i] = translator.target_tokenizer.decode(tokens).strip()
    return results


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict:
    """sacrebleu corpus BLEU and chrF, with their signatures."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    return {
        "bleu": bleu.corpus_score(hypotheses, [references]).score,
        "chrf": chrf.corpus_score(hypotheses, [references]).score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "sentences": len(hypotheses),
    }


def evaluate_translation(
    translator: Translator,
    src: Path,
    ref: Path,
    beam_size: int = 4,
    progress: bool = False,
) -> tuple[list[tuple[str, str, str]], dict]:
    """Translate every line of `src`; score against `ref` (line-aligned). Returns
    (source, reference, hypothesis) rows and the scores."""
    from glassformer.tasks.translation.data import read_parallel

    corpus = read_parallel(src=src, tgt=ref, max_chars=1_000_000)
    if any(corpus.dropped.values()):
        print(f"note: {corpus.summary()}")
    sources = [s for s, _ in corpus.pairs]
    references = [r for _, r in corpus.pairs]
    hypotheses = translate(translator, sources, beam_size, progress=progress)
    rows = list(zip(sources, references, hypotheses, strict=True))
    return rows, corpus_scores(hypotheses, references)
