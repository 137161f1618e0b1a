"""Does the demo's from-scratch model hear the real voice better through its CTC head? Every
sentence of the demo's grammar scored for each clip, by the decoder (teacher-forced) and by
the encoder's CTC head, mixed, and the best sentence taken: the search made exhaustive.

    .venv/bin/python bench/probe_ctc.py RUN    (a run of `train speech` on the demo's grammar)

Clips: the demo's 30 real recorded test commands and the first 150 validation clips of its
cached synthetic set (unseen voices). For each weight w of the CTC score (0 = the decoder
alone), the sentences right, exact text. Prints JSON.
"""

from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F

from glassformer import demo
from glassformer.audio.io import load_audio
from glassformer.corpora import default_cache_root
from glassformer.tasks.common import special_ids
from glassformer.tasks.speech.clips import clip_features
from glassformer.tasks.speech.loading import load_speech_model
from glassformer.voice.grammar import Grammar
from glassformer.voice.synth import read_manifest

WEIGHTS = [0.0, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]


class SentenceScorer:
    """Both scores of every sentence of a grammar, for one clip at a time."""

    def __init__(self, run: str, grammar: Grammar) -> None:
        self.speech = load_speech_model(run, "cpu", grammar, True)
        model, tokenizer = self.speech.model, self.speech.tokenizer
        if model.ctc_head is None:
            raise SystemExit(f"{run}: the model has no CTC head")
        model.eval()
        self.sentences = sorted({command.text for command in grammar.expand()})
        prompt, eos = list(self.speech.rules.prompt), self.speech.rules.eos
        self.blank = special_ids(tokenizer)[0]  # <pad> doubles as the blank, as in training
        words = [tokenizer.encode(s) for s in self.sentences]
        longest = max(map(len, words))
        count = len(words)
        self.tokens_in = torch.zeros(count, len(prompt) + longest, dtype=torch.long)
        self.tokens_out = torch.full_like(self.tokens_in, -1)  # -1: not scored
        self.targets = torch.zeros(count, longest, dtype=torch.long)
        self.target_lengths = torch.tensor([len(w) for w in words])
        for i, written in enumerate(words):
            sequence = [*prompt, *written, eos]
            self.tokens_in[i, : len(sequence) - 1] = torch.tensor(sequence[:-1])
            self.tokens_out[i, len(prompt) - 1 : len(sequence) - 1] = torch.tensor(
                sequence[len(prompt) :]
            )
            self.targets[i, : len(written)] = torch.tensor(written)

    @torch.no_grad()
    def scores(self, waveform) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: ANN001
        """(CTC log-likelihood, decoder log-likelihood) of every sentence, (S,) each."""
        model, count = self.speech.model, len(self.sentences)
        memory, mask = model.encode(clip_features(self.speech, waveform)[None])
        log_probs = model.ctc_head(memory).log_softmax(-1)  # (1, S', V)
        positions = log_probs.size(1)
        ctc = -F.ctc_loss(
            log_probs.transpose(0, 1).expand(positions, count, -1),
            self.targets,
            torch.full((count,), positions),
            self.target_lengths,
            blank=self.blank,
            reduction="none",
            zero_infinity=True,
        )
        memory_mask = None if mask is None else mask.expand(count, -1)
        logits = model.decode(self.tokens_in, memory.expand(count, -1, -1), memory_mask)
        decoder = -F.cross_entropy(
            logits.transpose(1, 2), self.tokens_out, ignore_index=-1, reduction="none"
        ).sum(-1)
        return ctc, decoder

    def right_at_each_weight(self, waveforms: list, truths: list[str]) -> dict[str, int]:
        both = [self.scores(w) for w in waveforms]
        return {
            str(w): sum(
                self.sentences[int((w * ctc + (1 - w) * decoder).argmax())] == truth
                for (ctc, decoder), truth in zip(both, truths, strict=True)
            )
            for w in WEIGHTS
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a speech run trained on the demo's grammar")
    args = parser.parse_args()
    grammar = Grammar.from_yaml(demo.GRAMMAR)
    scorer = SentenceScorer(args.run, grammar)
    rows, waveforms, _ = demo.test_set(grammar, None, 30)
    report = {"sentences": len(scorer.sentences)}
    report["real, 30"] = scorer.right_at_each_weight(waveforms, [r["text"] for r in rows])
    cache = f"{demo.GRAMMAR.stem}-{grammar.sha256[:8]}-2500-words{demo.WORD_BY_WORD:g}"
    data = default_cache_root() / "voice" / cache
    val = [r for r in read_manifest(data) if r["split"] == "val"][:150]
    report["synthetic unseen voices, 150"] = scorer.right_at_each_weight(
        [load_audio(data / r["audio"]) for r in val], [r["text"] for r in val]
    )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
