"""Would the beam's writings of one command, merged, hear noisy words better? Measured.

    .venv/bin/python bench/probe_merge.py [--model whisper-tiny.en] [--beam 4] [--snr 12 6]

Whisper writes one spoken digit in several ways (" Four.", " four", " 4"), and a grammar
reads them all as the same command. The beam's K hypotheses hold such writings side by side,
each with its own share of the probability, and the search picks the single likeliest
writing. In noise that share is spread thin: "four" written three ways may together outweigh
"five" written one way and still lose to it. Merged, each command's writings in the beam
count together: the command whose hypotheses are likeliest in sum wins, and its best
writing is read as the Listener reads any (confidence, rejection). The bonus a command gets
is log(1 + the sum of its other writings' probabilities over its best's), in summed
log-probability; the best writing keeps its length-normalized score (the GNMT penalty of
decoding.search), so commands of different lengths are still compared as the Listener does.

Each clip of bench_whisper.py's sets (FSDD's test split with the digits grammar,
speech_commands_mini with the words grammar; clean and at each --snr, the same noise draws)
is understood twice by the same Listener, the search as it is and merged; right answers
printed per set and level, and how many clips the merge changed. A probe: the Listener's
search is not changed by it.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402

import glassformer.decoding.search as search  # noqa: E402

MERGE = {"on": False, "changed": 0}
SEARCH = search.beam_search  # the search itself, which every patched() wraps once


def merged(speech, beams: search.Beams, prompt_length: int, alpha: float) -> search.Beams:  # noqa: ANN001
    """Each row's hypotheses reordered so that the first is the best writing of the command
    likeliest over all its writings (the module docstring); rows whose best writing reads
    as no command, or with one hypothesis, as they are."""
    eos = speech.rules.eos
    tokens, scores = beams.tokens.clone(), beams.scores.clone()
    for row in range(tokens.size(0)):
        groups: dict[object, list[tuple[float, float, int]]] = {}
        for k in range(tokens.size(1)):
            if not math.isfinite(float(scores[row, k])):
                continue
            written = tokens[row, k, prompt_length:].tolist()
            length = written.index(eos) + 1 if eos in written else len(written)
            text = speech.tokenizer.decode([t for t in written[: length - 1] if t != eos])
            command = speech.grammar.parse(text)
            key = (
                None if command is None else (command.intent, tuple(sorted(command.slots.items())))
            )
            if key is None:
                key = ("unread", k)
            normalized = float(scores[row, k])
            raw = normalized * float(search.gnmt_length_penalty(torch.tensor(float(length)), alpha))
            groups.setdefault(key, []).append((normalized, raw, k))
        if len(groups) < 2:
            continue

        def value(members: list[tuple[float, float, int]]) -> float:
            best = max(members)
            bonus = sum(math.exp(raw - best[1]) for _, raw, k in members if k != best[2])
            return best[0] + math.log1p(bonus)

        winner = max(groups.values(), key=value)
        first = max(winner)[2]
        if first != 0:
            MERGE["changed"] += 1
            order = [first, *[k for k in range(tokens.size(1)) if k != first]]
            tokens[row] = beams.tokens[row, order]
            scores[row] = beams.scores[row, order]
    return search.Beams(tokens, scores)


def patched(speech, alpha: float = 0.6):  # noqa: ANN001, ANN201
    def beam_search(step, cache, prompt, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        beams = SEARCH(step, cache, prompt, *args, **kwargs)
        if not MERGE["on"] or kwargs.get("restrict") is None or beams.tokens.size(1) < 2:
            return beams
        return merged(speech, beams, prompt.size(1), alpha)

    return beam_search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--snr", type=float, nargs="*", default=[12.0, 6.0])
    args = parser.parse_args()

    print("| set | clips | the Listener's search | merged | clips changed |")
    print("| --- | --- | --- | --- | --- |")
    for cell in bw.probe_cells(args.model, args.snr, beam_size=args.beam):
        search.beam_search = patched(cell.listener.speech)
        right = {False: 0, True: 0}
        MERGE["changed"] = 0
        for clip, expected in cell.each():
            for on in (False, True):
                MERGE["on"] = on
                right[on] += bw.is_right(cell.listener.understand(clip).slots, expected)
        print(cell.row(right[False], right[True], MERGE["changed"]), flush=True)


if __name__ == "__main__":
    main()
