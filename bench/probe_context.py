"""Would zero-shot Whisper hear noisy words better given its grammar's phrases written as it
writes them? Measured (docs/benchmarks.md, the 6-dB levers).

    .venv/bin/python bench/probe_context.py [--model whisper-tiny.en] [--snr 12 6]

The Listener gives zero-shot Whisper the grammar's phrases as its previous-text context, as
a comma-separated list (" zero, oh, one, two, ..."; tasks/speech/loading.use_grammar). Whisper
writes a single spoken word as a capitalized sentence (" Four."), so here the same phrases
are given as it writes them (" Zero. Oh. One. Two. ..."): a context nearer its own writing
might pull noisy audio towards the grammar harder. Each clip of bench_whisper.py's sets
(FSDD's test split, speech_commands_mini; clean and at each --snr, the same noise draws) is
understood by the same Listener with each context; right answers printed. A probe: the
Listener's context is not changed by it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402


def as_written(speech, phrases: list[str]):  # noqa: ANN001, ANN201 - a SpeechModel
    """The model with its context's phrases as sentences of their own: " Zero. Oh. One."."""
    from glassformer.tasks.speech.loading import MAX_CONTEXT_TOKENS

    text = " " + " ".join(f"{p[:1].upper()}{p[1:]}." for p in phrases)
    words = speech.tokenizer.encode(text)
    return dataclasses.replace(
        speech, context=(speech.rules.context_token, *words[:MAX_CONTEXT_TOKENS])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--snr", type=float, nargs="*", default=[12.0, 6.0])
    args = parser.parse_args()

    print("| set | clips | phrases, commas (the Listener's) | phrases as sentences |")
    print("| --- | --- | --- | --- |")
    for cell in bw.probe_cells(args.model, args.snr):
        listed = cell.listener.speech
        written = as_written(listed, listed.grammar.phrases())
        right = [0, 0]
        for clip, expected in cell.each():
            for n, speech in enumerate((listed, written)):
                cell.listener.speech = speech
                right[n] += bw.is_right(cell.listener.understand(clip).slots, expected)
        cell.listener.speech = listed  # the next level's cell reads the same Listener
        print(cell.row(*right), flush=True)


if __name__ == "__main__":
    main()
