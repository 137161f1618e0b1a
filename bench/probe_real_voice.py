"""Does the demo's from-scratch model hear the real voice better faster, or lower?

The recorded voice (voice/recorded.py) says each word alone, slowly (0.5-0.9 s a word, twice
a TTS engine's usual length), and high (a woman's voice; most training voices are men's).
Here each of the demo's 30 real test commands is time-stretched (pitch kept) or
pitch-shifted (tempo kept; both librosa's phase vocoder) and understood by the Listener with
the grammar; counted at each change alone, and with each clip's most confident reading of
all of them (test-time augmentation, no labels). Days, hours and periods are counted apart.

    .venv/bin/python bench/probe_real_voice.py RUN [--synthetic DATA_DIR]

RUN: a run of `train speech` on the demo's grammar. --synthetic: also the first 150
validation clips of that synthesized set (voices no run trained on), exact commands.

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TEMPOS = (0.8, 1.25, 1.5, 1.75, 2.0)  # > 1: faster
SEMITONES = (-6, -4, -2, 2)  # < 0: lower


def counts(rows: list[dict], heard: list) -> dict[str, int]:
    """Whole commands right, and each slot right, of `heard` against the rows' truth."""
    right = {"commands": 0, "day": 0, "hour": 0, "period": 0}
    for row, result in zip(rows, heard, strict=True):
        right["commands"] += result.intent == row["intent"] and result.slots == row["slots"]
        for slot in ("day", "hour", "period"):  # a period left unsaid is right when unheard
            right[slot] += result.accepted and result.slots.get(slot) == row["slots"].get(slot)
    return right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="a speech model's folder, trained on the demo's grammar")
    parser.add_argument("--synthetic", help="a synthesized set of the demo's grammar")
    args = parser.parse_args()

    import librosa

    from glassformer import demo
    from glassformer.audio.io import SAMPLE_RATE, load_audio
    from glassformer.tasks.speech.listener import Listener, ListenerConfig
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import INSTALL_HINT, find_voice, recorded_commands
    from glassformer.voice.synth import read_manifest

    voice = find_voice()
    if voice is None:
        sys.exit(f"no recorded voice installed: {INSTALL_HINT}")
    grammar = Grammar.from_yaml(demo.GRAMMAR)
    spoken = recorded_commands(grammar, voice, 30)  # the demo's own test commands
    rows = [{"intent": command.intent, "slots": command.slots} for command, _ in spoken]
    waveforms = [waveform for _, waveform in spoken]
    listener = Listener(ListenerConfig(args.run, str(demo.GRAMMAR)))
    changes = {"as recorded": lambda w: w}
    changes |= {
        f"tempo {t:g}": lambda w, t=t: librosa.effects.time_stretch(w, rate=t) for t in TEMPOS
    }
    changes |= {
        f"pitch {n:+d} semitones": lambda w, n=n: librosa.effects.pitch_shift(
            w, sr=SAMPLE_RATE, n_steps=n
        )
        for n in SEMITONES
    }
    readings = {
        name: [listener.understand(change(w)) for w in waveforms]
        for name, change in changes.items()
    }
    report = {name: counts(rows, heard) for name, heard in readings.items()}
    best = [
        max((heard[i] for heard in readings.values()), key=lambda r: r.confidence)
        for i in range(len(rows))
    ]
    report["most confident of all"] = counts(rows, best)
    result = {"clips": len(rows), "right": report}
    if args.synthetic:
        unseen = [r for r in read_manifest(args.synthetic) if r["split"] == "val"][:150]
        heard = [listener.understand(load_audio(Path(args.synthetic) / r["audio"])) for r in unseen]
        result["synthetic, unseen voices"] = {"clips": len(unseen), **counts(unseen, heard)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
