"""Would another beam search hear the clean coffee orders better? Three ways to search, measured.

    .venv/bin/python bench/probe_search.py --model runs/pair --seed 11 \
        [--beam 8] [--length-penalty 1.0] [--pool] [--show]

The orders a model loses clean include sentences cut short ("give me a single shot sixteen
ounce cappuccino" for "... with a little bit of sugar and a little bit of whole milk"), which
looks like the search's doing rather than the model's:
- a wider beam (`--beam`: the Listener's is 4);
- a weaker or stronger pull towards long sentences (`--length-penalty`: the alpha of
  decoding.search.gnmt_length_penalty, 0.6 in the Listener);
- finished hypotheses kept apart (`--pool`, as Whisper's own decoder does): in
  decoding.search.beam_search a hypothesis that ends keeps its slot, ranked by its summed
  log-probability against live ones, so short endings can fill the beam before a longer
  sentence is ranked by the length-normalized score; pooled, every step keeps K live
  hypotheses, the ended ones wait apart until K have ended, and all are compared
  length-normalized at the end.
The Listener (int8, the coffee grammar) with the search swapped in, on bench_cascade's clean
coffee orders (the benchmark's 100 of seed 7, or the validation's of seed 11), right answers
printed. A probe: the Listener's search is not changed by it.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402

import glassformer.decoding.search as search  # noqa: E402
from glassformer.decoding.processors import suppress_tokens  # noqa: E402


@torch.inference_mode()
def pooled_beam_search(  # noqa: PLR0913 - decoding.search.beam_search's signature
    step,  # noqa: ANN001
    cache,  # noqa: ANN001
    prompt: torch.Tensor,
    beam_size: int,
    max_new_tokens: int,
    eos_id: int,
    length_penalty: float = 0.6,
    suppress=(),  # noqa: ANN001
    restrict=None,  # noqa: ANN001
    prefill_once: bool = False,
) -> search.Beams:
    """decoding.search.beam_search with ended hypotheses pooled apart (module docstring).

    Shapes:
        prompt: (B, T0)   returns: Beams of (B, K, T) tokens and (B, K) scores
    """
    B, K, dead = prompt.size(0), beam_size, -math.inf
    suppress = list(suppress)
    tokens = prompt.repeat_interleave(K, dim=0)  # (B*K, T0)
    scores = torch.full((B, K), dead)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    lengths = [0] * (B * K)
    ended: list[list[tuple[float, int, list[int]]]] = [[] for _ in range(B)]  # score, length
    if prefill_once:
        logits = step(prompt, cache)[:, -1].repeat_interleave(K, dim=0)  # (B*K, V)
        cache.repeat_rows(K)
    else:
        logits = step(tokens, cache)[:, -1]
    for _ in range(max_new_tokens):
        log_probs = suppress_tokens(logits.float(), suppress).log_softmax(dim=-1)
        if restrict is not None:
            log_probs = restrict(tokens, log_probs)
        V = log_probs.size(-1)
        candidates = (scores.view(B * K, 1) + log_probs).view(B, K * V)
        values, flat = candidates.topk(2 * K, dim=-1)  # at most K of them end: K stay live
        rows, chosen, kept = [], [], []
        for b in range(B):
            for value, index in zip(values[b].tolist(), flat[b].tolist(), strict=True):
                if len(ended[b]) >= K or len(kept) == (b + 1) * K or value == dead:
                    break
                row = b * K + index // V
                if index % V == eos_id:
                    ended[b].append((value, lengths[row] + 1, [*tokens[row].tolist(), eos_id]))
                else:
                    rows.append(row)
                    chosen.append(index % V)
                    kept.append(value)
            while len(kept) < (b + 1) * K:  # a clip done, or short of live hypotheses
                rows.append(b * K)
                chosen.append(eos_id)
                kept.append(dead)
        index = torch.tensor(rows)
        cache.reorder(index)
        next_tokens = torch.tensor(chosen)
        tokens = torch.cat([tokens[index], next_tokens[:, None]], dim=1)
        lengths = [lengths[r] + 1 for r in rows]
        scores = torch.tensor(kept).view(B, K)
        if bool((scores == dead).all()):
            break
        logits = step(next_tokens[:, None], cache)[:, -1]
    out = torch.full((B, K, tokens.size(1) + 1), eos_id)
    normalized = torch.full((B, K), dead)
    for b in range(B):
        pool = ended[b] or [
            (float(scores[b, k]), lengths[b * K + k], tokens[b * K + k].tolist()) for k in range(K)
        ]  # none ended: the live ones, as the slot-keeping search returns them
        ranked = sorted(
            ((s / ((5.0 + n) / 6.0) ** length_penalty, words) for s, n, words in pool),
            key=lambda scored: -scored[0],
        )[:K]
        for k, (score, words) in enumerate(ranked):
            out[b, k, : len(words)] = torch.tensor(words[: out.size(2)])
            normalized[b, k] = score
    return search.Beams(out, normalized)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/pair", help="a speech model, as the Listener's")
    parser.add_argument("--seed", type=int, default=11, help="7: the benchmark's orders")
    parser.add_argument("--beam", type=int, default=4, help="beams (the Listener's: 4)")
    parser.add_argument("--length-penalty", type=float, default=0.6, help="GNMT's alpha")
    parser.add_argument("--pool", action="store_true", help="ended hypotheses kept apart")
    parser.add_argument("--show", action="store_true", help="print each wrong answer")
    args = parser.parse_args()

    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.evaluation import is_accepted
    from glassformer.tasks.speech.listener import Listener

    chosen = pooled_beam_search if args.pool else search.beam_search
    search.beam_search = functools.partial(chosen, length_penalty=args.length_penalty)
    orders, rows = bw.coffee_clips(700, args.seed, heldout=True)
    grammar = str(bw.SHARED / "grammars/coffee_maker.yaml")
    listener = Listener(
        ListenerConfig(args.model, grammar=grammar, precision="int8", beam_size=args.beam)
    )
    started, right = time.perf_counter(), 0
    for i, clip in enumerate(orders):
        heard = listener.understand(clip)
        good = bool(is_accepted(heard, rows[i]))
        right += good
        if args.show and not good:
            print(f"  {i}: heard {heard.text!r} ({heard.confidence:.3f})")
    print(
        f"{args.model} seed {args.seed} beam {args.beam} alpha {args.length_penalty} "
        f"pool {args.pool}: {right} of {len(orders)} right, "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
