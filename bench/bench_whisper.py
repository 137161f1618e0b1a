"""Whisper tiny.en in glassformer's own modules, zero-shot: real recordings against a command
grammar, with noise, and its speed beside CTranslate2 running the same weights.

    .venv/bin/python bench/bench_whisper.py digits [--split test|all] [--snr 24 18 12 6]
    .venv/bin/python bench/bench_whisper.py words  [--snr ...]
    (either with --model RUN_DIR: a model trained here, or a fine-tuned one, on the same clips)
    .venv/bin/python bench/bench_whisper.py coffee [--clips 100] [--snr 24 18 12 6] [--heldout]
    .venv/bin/python bench/bench_whisper.py speed  [--clips 20] [--recorded] [--ct2-context]
        [--precision float32|int8] [--beam B] [--ct2-type int8|float32]

digits: FSDD (6 speakers, 8 kHz) against bench/grammars/digits.yaml; words:
speech_commands_mini (many speakers) against bench/grammars/words.yaml. Every clip is
transcribed grammar-constrained with beam 4 and the model's own rejection threshold; a clip
counts when the slot is right. Noise: ../shared/data/noise (cafe, fridge, traffic, in turn)
mixed at each SNR; errors of the clean pass go to stderr; --grammar replaces the grammar.
coffee: ../shared/data/grammars/coffee_maker.yaml spoken by synthetic voices inside long
silent clips (see coffee()); --heldout keeps only the voices fine-tuning never trains on.
speed: one CPU thread, file in to intent out, median over clips, ours (--model: Whisper, a
from-scratch run, or a `glassformer export` folder; --precision, --beam) and, for Whisper,
CTranslate2's in the same run (same weights at --ct2-type, default int8, its fastest on a
CPU; the same beam and features;
--ct2-context: also the grammar's context in its prompt, as ours reads it; unconstrained, a
list of 20 words as context makes it ramble on; CTranslate2 in a process of its own). Prints
JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from common import scratch_folder

if TYPE_CHECKING:
    from glassformer.tasks.speech.config import ListenerConfig

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared" / "data"
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fsdd(split: str) -> tuple[list[Path], list[str]]:
    files = sorted((SHARED / "speech" / "fsdd").glob("*.wav"))
    if split == "test":  # the official test split: recordings 0-4 of each digit and speaker
        files = [p for p in files if int(p.stem.split("_")[2]) < 5]
    return files, [DIGITS[int(p.name[0])] + ("|oh" if p.name[0] == "0" else "") for p in files]


def commands() -> tuple[list[Path], list[str]]:
    files = sorted((SHARED / "speech" / "speech_commands_mini").glob("*/*.wav"))
    return files, [p.parent.name for p in files]


def real_sets() -> dict[str, tuple[Path, list[Path], list[str]]]:
    """The real-voice sets the probes of zero-shot levers read, each with its grammar, files
    and truths: FSDD's test split against the digits grammar, speech_commands_mini against
    the words grammar (the `digits` and `words` commands' defaults)."""
    return {
        "fsdd": (ROOT / "bench/grammars/digits.yaml", *fsdd("test")),
        "words": (ROOT / "bench/grammars/words.yaml", *commands()),
    }


def is_right(slots: dict, expected: str) -> bool:
    """Whether a command's slots name one of the answers `expected` lists ("zero|oh")."""
    return bool(set(expected.split("|")) & set(slots.values()))


@dataclasses.dataclass
class Cell:
    """One set at one noise level, as the probes read it: the Listener of the set's grammar
    and each clip with its truth."""

    set: str  # fsdd | words (real_sets)
    level: str  # clean | 12dB ... (noise_conditions)
    listener: object  # a Listener, one per set
    pairs: list  # (clip, truth)

    def each(self):  # noqa: ANN201
        """The pairs, with a progress bar named after the cell."""
        from glassformer.progress import progress_bar

        return progress_bar(iterable=self.pairs, desc=f"{self.set} {self.level}")

    def row(self, *counts: object) -> str:
        """The cell's line of a probe's table: its name, its clips, then `counts`."""
        cells = [f"{self.set} {self.level}", len(self.pairs), *counts]
        return "| " + " | ".join(map(str, cells)) + " |"


def probe_cells(model: str, snrs: list[float], **fields):  # noqa: ANN003, ANN201
    """Each Cell of the real sets (real_sets) at each noise level (noise_conditions), the
    sets' Listeners made with `model` and `fields` (ListenerConfig's)."""
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    for name, (grammar, files, truth) in real_sets().items():
        listener = Listener(ListenerConfig(model=model, grammar=str(grammar), **fields))
        clips = [load_audio(p) for p in files]
        for level, heard in noise_conditions(clips, snrs):
            yield Cell(name, level, listener, list(zip(heard, truth, strict=True)))


def noise_conditions(clips: list, snrs: list[float]):  # noqa: ANN201
    """("clean", clips), then ("{snr}dB", the clips with noise mixed in) for each SNR: cafe,
    fridge and traffic in turn, the same seeded draws for every model."""
    from glassformer.audio.augment import add_noise
    from glassformer.audio.io import load_audio

    noises = [load_audio(p) for p in sorted((SHARED / "noise").glob("*.wav"))]
    yield "clean", clips
    for snr in snrs:
        rng = random.Random(0)
        yield (
            f"{snr:g}dB",
            [add_noise(c, noises[i % len(noises)], snr, rng) for i, c in enumerate(clips)],
        )


def accuracy(
    grammar: Path, files: list[Path], truth: list[str], snrs: list[float], config: ListenerConfig
) -> dict:
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.listener import Listener

    listener = Listener(dataclasses.replace(config, grammar=str(grammar)))
    clips = [load_audio(p) for p in files]
    result = {"files": len(files)}
    for key, heard_clips in noise_conditions(clips, snrs):
        right, rejected = 0, 0
        for i, (clip, expected) in enumerate(zip(heard_clips, truth, strict=True)):
            heard = listener.understand(clip)
            good = is_right(heard.slots, expected)
            right += good
            if not good and key == "clean":
                print(
                    f"  {files[i].name}: heard {heard.text!r} ({heard.confidence:.2f})",
                    file=sys.stderr,
                )
            rejected += heard.intent is None
        result[key] = {"accuracy": right / len(files), "rejected": rejected / len(files)}
        print(key, result[key], file=sys.stderr)
    return result


def coffee_clips(count: int, seed: int, heldout: bool = False) -> tuple[list, list[dict]]:
    """coffee_maker.yaml orders of synthetic voices, laid out like real command recordings:
    2-15 s clips, the command somewhere inside 0.5-6 s of silence before and 0.5-6 s after
    (runs of exact zeros, then a faint room hiss); and their manifest rows. `heldout` keeps
    only the voices synthesis holds out for validation (voice/synth.py: the same voices on
    every machine), which no fine-tuning (`adapt`, `train speech --init`) trains on."""
    import numpy as np

    from glassformer.audio.io import load_audio
    from glassformer.corpora import default_cache_root
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import read_manifest, synthesize

    grammar_path = SHARED / "grammars" / "coffee_maker.yaml"
    data = default_cache_root() / "voice" / f"coffee-heldout-{seed}-{count}"
    synthesize(Grammar.from_yaml(grammar_path), data, count, seed=seed, progress=False)
    rows = [r for r in read_manifest(data) if not heldout or r["split"] == "val"]
    rng = np.random.default_rng(seed)
    clips = []
    for row in rows:
        command = load_audio(data / row["audio"])
        before, after = (int(rng.uniform(0.5, 6.0) * 16_000) for _ in range(2))
        clip = np.zeros(before + len(command) + after, np.float32)
        clip[before : before + len(command)] = command
        hiss_from = int(rng.uniform(0, before))  # exact zeros first, then the room
        clip[hiss_from:] += 1e-4 * rng.standard_normal(len(clip) - hiss_from).astype(np.float32)
        clips.append(clip)
    return clips, rows


def coffee(
    count: int, snrs: list[float], config: ListenerConfig, seed: int, heldout: bool = False
) -> dict:
    """coffee_clips() understood clean and with noise at each SNR. A clip counts when the
    intent and every slot are exactly right (the benchmark's rule)."""
    from glassformer.tasks.speech.evaluation import is_accepted
    from glassformer.tasks.speech.listener import Listener

    grammar_path = SHARED / "grammars" / "coffee_maker.yaml"
    clips, rows = coffee_clips(count, seed, heldout)
    listener = Listener(dataclasses.replace(config, grammar=str(grammar_path)))
    result: dict = {
        "clips": len(rows),
        "seconds": [round(min(map(len, clips)) / 16e3, 1), round(max(map(len, clips)) / 16e3, 1)],
    }
    for key, heard_clips in noise_conditions(clips, snrs):
        accepted, rejected = 0, 0
        for clip, row in zip(heard_clips, rows, strict=True):
            heard = listener.understand(clip)
            accepted += is_accepted(heard, row)
            rejected += heard.intent is None
            if key == "clean" and not is_accepted(heard, row):
                print(
                    f"  {row['text']!r} -> {heard.text!r} ({heard.confidence:.2f})", file=sys.stderr
                )
        result[key] = {"acceptance": accepted / len(rows), "rejected": rejected / len(rows)}
        print(key, result[key], file=sys.stderr)
    noisy = [result[f"{snr:g}dB"]["acceptance"] for snr in snrs]
    if noisy:
        result["noise_average"] = sum(noisy) / len(noisy)
    return result


CT2_CHILD = """
import json, statistics, sys, time
import ctranslate2, numpy as np, torch
from glassformer.audio.features import FeatureConfig, compute_features
from glassformer.audio.io import load_audio
torch.set_num_threads(1)
model, compute_type, features, beam, prompt, *files = sys.argv[1:]
theirs = ctranslate2.models.Whisper(model, compute_type=compute_type, intra_threads=1)
prompt, features = json.loads(prompt), FeatureConfig(**json.loads(features))
def one(path):
    feats = compute_features(torch.from_numpy(load_audio(path)), features)
    storage = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None].numpy()))
    theirs.generate(storage, [prompt], beam_size=int(beam))
one(files[0])  # warm-up, as ours
times = []
for path in files:
    begun = time.perf_counter()
    one(path)
    times.append(time.perf_counter() - begun)
print(json.dumps({"median_s": statistics.median(times)}))
"""


def encoder_in_int8(speech) -> None:  # noqa: ANN001 - a loaded SpeechModel
    """Every linear layer of a torch model's encoder in int8 as well (the Listener's int8
    quantizes the decoder and output layer only); exits for an exported model."""
    from glassformer.layers.quantized import quantize_linear_layers

    if not isinstance(speech.model, torch.nn.Module):
        sys.exit("--encoder-int8: a model run on torch, not an exported one")
    quantize_linear_layers(speech.model.encoder, head=False)


def speed(
    count: int,
    config: ListenerConfig,
    recorded: bool = False,
    ct2_context: bool = False,
    ct2_type: str = "int8",
    encoder_int8: bool = False,
) -> dict:
    """One thread each: our Listener (features, encoder, the grammar-constrained beam, the
    confidence; file in to intent JSON out) and CTranslate2's generate on the same features
    with the same beam, at `ct2_type`. recorded: 2-5 s appointment commands in a real
    recorded voice (voice/recorded.py) instead of 1-s words. encoder_int8: our encoder's
    linear layers in int8 too (a model on torch; the Listener keeps it float32).

    CTranslate2 runs in a process of its own (CT2_CHILD), after ours: in a process that holds
    onnxruntime's sessions it ran 1.2-1.9x slower (docs/benchmarks.md), which flattered an
    exported model's ratio."""
    import subprocess

    from glassformer.audio.io import SAMPLE_RATE, load_audio
    from glassformer.convert.installed import installed_models
    from glassformer.tasks.speech.listener import Listener

    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"  # an exported model's onnxruntime reads it at load
    grammar = ROOT / "bench/grammars/words.yaml"
    files = commands()[0][:count]
    if recorded:
        from bench_serve import recorded_clips  # the real-voice commands the load test sends

        wavs, grammar = recorded_clips(count)
        folder = scratch_folder("whisper-speed-")
        files = [folder / f"{i}.wav" for i in range(len(wavs))]
        for path, wav in zip(files, wavs, strict=True):
            path.write_bytes(wav)
    seconds = [len(load_audio(path)) / SAMPLE_RATE for path in files]
    listener = Listener(dataclasses.replace(config, grammar=str(grammar)))
    speech = listener.speech
    if encoder_int8:
        encoder_in_int8(speech)
    listener.understand_file(files[0])  # warm-up: the vocabulary's reading, allocator pools
    ours_times = []
    for path in files:
        start = time.perf_counter()
        json.dumps(listener.understand_file(path).to_json())
        ours_times.append(time.perf_counter() - start)
    ours = statistics.median(ours_times)
    result = {
        "clips": len(files),
        "clip_seconds_median": round(statistics.median(seconds), 2),
        "ours_median_ms": round(1000 * ours, 1),
        "ours_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    source = config.model
    if (Path(source) / "model.json").is_file():  # `glassformer export`ed: what from
        source = json.loads((Path(source) / "model.json").read_text()).get("source")
    if source != "whisper-tiny.en":  # CTranslate2 runs only Whisper's weights
        return result
    prompt = speech.start if ct2_context else list(speech.rules.prompt)
    features = json.dumps(dataclasses.asdict(speech.features))  # the same window as ours
    child = [sys.executable, "-c", CT2_CHILD, str(installed_models()[source]), ct2_type,
             features, str(config.beam_size), json.dumps(list(prompt))]  # fmt: skip
    done = subprocess.run(
        [*child, *map(str, files)], capture_output=True, text=True, cwd=ROOT, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"CTranslate2: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    ct2 = json.loads(done.stdout.strip().splitlines()[-1])["median_s"]
    result["ctranslate2_median_ms"] = round(1000 * ct2, 1)
    result["ours_vs_ctranslate2"] = round(ct2 / ours, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["digits", "words", "coffee", "speed"])
    parser.add_argument("--split", default="test", choices=["test", "all"])
    parser.add_argument("--snr", type=float, nargs="*", default=[], help="noise levels, dB")
    parser.add_argument("--clips", type=int, default=20, help="speed: clips to time; coffee: clips")
    parser.add_argument("--seed", type=int, default=7, help="coffee: the synthesis seed")
    parser.add_argument(
        "--heldout", action="store_true", help="coffee: only the voices no fine-tuning hears"
    )
    parser.add_argument("--grammar", type=Path, help="another grammar YAML")
    parser.add_argument("--model", default="whisper-tiny.en", help="a name or a run directory")
    parser.add_argument("--precision", default="float32", choices=["float32", "int8"])
    parser.add_argument("--window-step", type=float, help="the encoder window, seconds")
    parser.add_argument("--beam", type=int, help="beam size (default: the Listener's, 4)")
    parser.add_argument(
        "--ct2-type", default="int8", help="speed: CTranslate2's compute_type (its fastest: int8)"
    )
    parser.add_argument(
        "--recorded", action="store_true", help="speed: 2-5 s real-voice appointment commands"
    )
    parser.add_argument(
        "--ct2-context", action="store_true", help="speed: CTranslate2 reads the context too"
    )
    parser.add_argument(
        "--encoder-int8", action="store_true", help="speed: our encoder in int8 too (torch)"
    )
    args = parser.parse_args()
    from glassformer.tasks.speech.config import ListenerConfig

    config = ListenerConfig(
        model=args.model,
        precision=args.precision,
        window_step=args.window_step,
        **({"beam_size": args.beam} if args.beam else {}),
    )  # else beam 4, the model's own threshold: the defaults every door uses
    if args.what == "speed":
        result = speed(
            args.clips, config, args.recorded, args.ct2_context, args.ct2_type, args.encoder_int8
        )
        print(json.dumps({args.what: result, "config": str(config)}, indent=1))
        return
    if args.what == "coffee":
        result = coffee(args.clips, args.snr, config, args.seed, args.heldout)
    elif args.what == "digits":
        grammar = args.grammar or ROOT / "bench/grammars/digits.yaml"
        result = accuracy(grammar, *fsdd(args.split), args.snr, config)
    else:
        grammar = args.grammar or ROOT / "bench/grammars/words.yaml"
        result = accuracy(grammar, *commands(), args.snr, config)
    print(json.dumps({args.what: result, "model": args.model, "config": str(config)}, indent=1))


if __name__ == "__main__":
    main()
