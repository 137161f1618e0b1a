"""Issue 28 §3, the encoder's window fitted to the command, measured: the recipe of
`glassformer fit-window` (tasks/speech/fit_window.py) run on the benchmark's clips, and the
student scored and saved.

    .venv/bin/python bench/fit_window.py [--step 5] [--steps 300] [--batch 12] [--real]
        [--out runs/fit-window] [--evaluate [--compare]] [--load ENCODER.safetensors]
        [--save-model DIR] [--save-pair DIR [--from-seconds 1.5]]

The teacher is whisper-tiny.en as installed (10-s window); the student a copy whose encoder
alone learns, reading the same clips in fitted windows: fit_window.teach's two stages of
--steps each (the KL divergence of the student's next-token distributions from the
teacher's, teacher-forced; in the second stage the teacher reads each clip before its
noise). Clips, by default what `glassformer fit-window` speaks: packaged voices saying digits
one at a time and sentences of Home Assistant's English (with bench/homes/en.yaml's names),
the appointments and desktop grammars; the benchmark's coffee grammar unseen. --real, the
clips of attempts 5-11 in docs/benchmarks.md: FSDD's training recordings (idx 5-49, never
its test split) as the digits, and Multi30k training captions spoken by espeak-ng and flite
voices (../shared/data). Noise: the shared noise recordings, into half the clips at 0-30 dB.

Writes the student's encoder as safetensors under --out (and its teaching state, resumed by
the same command). --evaluate scores the student at its window on FSDD's test split and
speech_commands_mini (clean, 12 and 6 dB; `--compare`: beside the teacher at the student's
window and at 10 s); --load evaluates a student written before; --save-model writes the
student as a whole speech checkpoint (its features' window_step the student's);
--save-pair writes whisper-tiny.en carrying the student as its command encoder
(tasks/speech/command_encoder.py: clips heard --from-seconds or longer read the student,
shorter ones Whisper's own encoder). Both are models every door takes as MODEL.
(Until 2026-12-07 this script taught one stage a run, with --init, --clean-teacher and
--speed: the commands of attempts 5-7 run at commit 73c242d.)
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import scratch_folder  # noqa: E402 - bench/ is on the path now

SHARED = ROOT / ".." / "shared" / "data"
VOICES = ["espeak-ng:en-us", "espeak-ng:en-gb", "espeak-ng:en-029", "flite:slt", "flite:rms",
          "flite:awb", "flite:kal16"]  # fmt: skip
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def speak(voice: str, text: str, path: Path) -> np.ndarray:
    """bench_homeassistant.speak, with espeak-ng at a random rate of 130-190 words a minute."""
    from glassformer.audio.io import load_audio

    engine, _, variant = voice.partition(":")
    if engine == "flite":
        command = ["flite", "-voice", variant, "-t", text, "-o", str(path)]
    else:
        command = ["espeak-ng", "-v", variant, "-s", str(random.randint(130, 190)), "-w",
                   str(path), text]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True)
    return load_audio(path)


def clip_pool(captions: int, seed: int) -> tuple[list, list]:
    """--real: (FSDD's training digits one at a time, `captions` spoken Multi30k captions),
    each a list of (waveform, text)."""
    from glassformer.audio.io import load_audio

    rng = random.Random(seed)
    pool = []
    for path in sorted((SHARED / "speech" / "fsdd").glob("*.wav")):
        if int(path.stem.split("_")[2]) >= 5:  # never the official test split
            pool.append((load_audio(path), DIGITS[int(path.name[0])]))
    with gzip.open(SHARED / "parallel" / "multi30k" / "train.en.gz", "rt") as file:
        lines = file.read().splitlines()
    lines = [line for line in lines if 3 <= len(line.split()) <= 12]
    folder = scratch_folder("fit-")
    spoken = []
    for n, text in enumerate(rng.sample(lines, captions)):
        spoken.append((speak(VOICES[n % len(VOICES)], text, folder / f"{n}.wav"), text))
        if n % 100 == 99:
            print(f"  spoken {n + 1} captions", file=sys.stderr, flush=True)
    return pool, spoken


def evaluate(student, teacher, step: float, compare: bool) -> dict:  # noqa: ANN001
    import bench_whisper as bw

    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener
    from glassformer.tasks.speech.loading import load_grammar, use_grammar

    fitted = dataclasses.replace(teacher.features, window_step=step)
    models = {f"student, {step:g}-s steps": student}
    if compare:  # the teacher at 10 s, and at the student's window without the distillation
        models["teacher, 10 s"] = teacher
        models[f"teacher, {step:g}-s steps"] = dataclasses.replace(teacher, features=fitted)
    result = {}
    for what, grammar, (files, truth) in [
        ("FSDD test", ROOT / "bench/grammars/digits.yaml", bw.fsdd("test")),
        ("words", ROOT / "bench/grammars/words.yaml", bw.commands()),
    ]:
        clips = [load_audio(p) for p in files]
        config = ListenerConfig(grammar=str(grammar))
        for key, heard in bw.noise_conditions(clips, [12, 6]):
            for name, speech in models.items():
                listener = Listener.on_model(use_grammar(speech, load_grammar(grammar)), config)
                right = sum(
                    bool(set(t.split("|")) & set(listener.understand(c).slots.values()))
                    for c, t in zip(heard, truth, strict=True)
                )
                result[f"{what} {key} {name}"] = right / len(files)
                print(f"{what} {key} {name}: {right / len(files):.1%}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=float, default=5.0, help="the student's window (s)")
    parser.add_argument("--steps", type=int, default=300, help="steps of each stage")
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--clips", type=int, default=800, help="digits and sentences spoken")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", action="store_true", help="FSDD and Multi30k (attempts 5-11)")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "fit-window")
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--compare", action="store_true", help="evaluate the teacher too")
    parser.add_argument("--load", type=Path, help="a student's encoder.safetensors to evaluate")
    parser.add_argument(
        "--save-model",
        type=Path,
        metavar="DIR",
        help="also write the student as a whole speech checkpoint (its window included)",
    )
    parser.add_argument(
        "--save-pair",
        type=Path,
        metavar="DIR",
        help="also write whisper-tiny.en carrying the student as its command encoder",
    )
    parser.add_argument(
        "--from-seconds",
        type=float,
        default=1.5,
        help="--save-pair: clips heard this long or longer read the student (default 1.5)",
    )
    args = parser.parse_args()
    from safetensors.torch import load_file, save_file

    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech import fit_window as fw
    from glassformer.tasks.speech.command_encoder import encoder_tensors, with_command_encoder
    from glassformer.tasks.speech.loading import load_grammar, load_speech_model
    from glassformer.tasks.speech.pretrained import save_speech_model

    teacher = load_speech_model("whisper-tiny.en")
    fitted = dataclasses.replace(teacher.features, window_step=args.step)
    if args.load is not None:
        network = copy.deepcopy(teacher.model)
        network.load_state_dict(load_file(str(args.load)), strict=False)
    else:
        noise_dir = str((SHARED / "noise").resolve())
        config = fw.FitWindowConfig(
            window_step=args.step, entities=str(ROOT / "bench/homes/en.yaml"),
            noise_dir=noise_dir, clips=args.clips, steps=args.steps, batch=args.batch,
            lr=args.lr, seed=args.seed,
        )  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)
        if args.real:
            pool = clip_pool(args.clips, args.seed)
        else:
            sources = fw.sentence_sources(config, [])
            pool = fw.spoken_pool(config, sources, args.out / "pool.npz")
        grammars = [ROOT / "bench/grammars/digits.yaml"]
        grammars += [SHARED / "grammars/coffee_maker.yaml"] if args.real else []
        contexts = fw.grammar_contexts(teacher, [load_grammar(g) for g in grammars])
        noises = [load_audio(p) for p in fw.noise_files(noise_dir)]
        network = fw.teach(teacher, pool, noises, contexts, config, args.out, progress=True)
        weights = {n: t.detach().contiguous() for n, t in encoder_tensors(network).items()}
        save_file(weights, str(args.out / "encoder.safetensors"))
        (args.out / "train.json").write_text(json.dumps(vars(args), default=str))
    student = dataclasses.replace(teacher, model=network, features=fitted)
    if args.save_model is not None:
        source = f"whisper-tiny.en, encoder fitted to {args.step:g}-s windows (bench/fit_window.py)"
        print(f"saved {save_speech_model(student, args.save_model, source)}", file=sys.stderr)
    if args.save_pair is not None:
        weights = {n: t.detach() for n, t in encoder_tensors(network).items()}
        pair = with_command_encoder(teacher, weights, args.step, args.from_seconds)
        source = (f"whisper-tiny.en, and for clips heard {args.from_seconds:g} s or longer an "
                  f"encoder fitted to {args.step:g}-s windows (bench/fit_window.py)")  # fmt: skip
        print(f"saved {save_speech_model(pair, args.save_pair, source)}", file=sys.stderr)
    if args.evaluate:
        with torch.inference_mode():
            result = evaluate(student, teacher, args.step, args.compare)
        (args.out / "evaluate.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
