"""Issue 28 §3: where one whole command's time goes on one thread, and what two levers could
save at most, before building them.

    .venv/bin/python bench/profile_command.py [--count 24] [--seed 7] [--precision int8]

The clips: bench_whisper.coffee_clips (coffee_maker.yaml orders of synthetic voices inside
2-15 s of silence and hiss). The Listener (one thread) understands each once to warm up,
then each again, timed: the whole call, and inside it the encoder (the model's `encode`);
the rest is features, the decoder, the beam search and the grammar. Counted over the constrained
searches (not the free decode a doubtful clip adds): the steps, and the steps at which every
live beam had exactly one token allowed, the most that prefilling the grammar's forced
stretches in one call could remove. Printed: JSON, medians per command.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402 - the clips and the grammar


def timed(owner: object, name: str, spent: list[float]) -> None:
    """Wrap owner.name so that each call's wall time is added to spent[0]."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24, help="orders synthesized")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--precision", default="int8", choices=["float32", "int8"])
    args = parser.parse_args()
    import torch

    import glassformer.tasks.speech.search as search
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.evaluation import is_accepted
    from glassformer.tasks.speech.listener import Listener

    torch.set_num_threads(1)
    clips, rows = bw.coffee_clips(args.count, args.seed)
    grammar = bw.SHARED / "grammars" / "coffee_maker.yaml"
    config = ListenerConfig("whisper-tiny.en", precision=args.precision, grammar=str(grammar))
    listener = Listener(config)
    model = listener.speech.model
    for clip in clips:
        listener.understand(clip)  # warm: the vocabulary's reading, allocator pools
    encoder = [0.0]
    timed(model, "encode", encoder)
    steps, forced = [0], [0]
    vocabulary = listener.speech.tokenizer.vocab_size
    wrapped = search.at_most

    def counting(*hook_args, **hook_kwargs):  # noqa: ANN002, ANN003, ANN202
        inner = wrapped(*hook_args, **hook_kwargs)

        def restrict(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
            out = inner(tokens, log_probs)
            allowed = torch.isfinite(out).sum(-1)  # (rows,)
            live = allowed[allowed > 0]
            if len(live) and int(live.max()) < vocabulary // 2:  # a constrained step
                steps[0] += 1
                forced[0] += bool((live == 1).all())
            return out

        return restrict

    search.at_most = counting
    whole, encoding, right = [], [], 0
    for clip, row in zip(clips, rows, strict=True):
        encoder[0] = 0.0
        started = time.perf_counter()
        heard = listener.understand(clip)
        whole.append(time.perf_counter() - started)
        encoding.append(encoder[0])
        right += is_accepted(heard, row)
    median = statistics.median
    result = {
        "cpu_threads": torch.get_num_threads(),
        "precision": args.precision,
        "clips": len(clips),
        "right": right,
        "command_ms": round(1000 * median(whole), 1),
        "encoder_ms": round(1000 * median(encoding), 1),
        "rest_ms": round(1000 * median([w - e for w, e in zip(whole, encoding, strict=True)]), 1),
        "constrained_steps_per_command": round(steps[0] / len(clips), 1),
        "steps_every_beam_forced": forced[0],
        "steps": steps[0],
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
