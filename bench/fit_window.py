"""Issue 28 §3, the encoder's window fitted to the command: a short distillation that teaches
Whisper's encoder to read a window of the command's own length (padded to --step seconds)
the way it reads its 10-s window, so that the decoder, unchanged, writes the same words.

    .venv/bin/python bench/fit_window.py [--step 1] [--steps 300] [--batch 12]
        [--out runs/fit-window] [--evaluate [--compare]] [--load ENCODER.safetensors]
        [--save-model DIR] [--init ENCODER.safetensors] [--speed 0.15] [--clean-teacher]

The teacher is whisper-tiny.en as installed (10-s window); the student is a copy whose
encoder alone learns, reading the same clips in fitted windows. The loss: the KL divergence
of the student's next-token distributions from the teacher's, teacher-forced on the clip's
text (after the grammar's context half the time, as the Listener runs it), at every written
position. No label is learned, only the teacher's behaviour. Clips: FSDD's training
recordings (idx 5-49, never its test split) joined 1-5 digits at a time, and Multi30k
training captions spoken by espeak-ng and flite voices; noise mixed into half of them at
0-30 dB SNR (the shared noise recordings). Writes the student's encoder as safetensors
under --out. --evaluate scores the student at its window on the benchmark's sets (FSDD test
split, speech_commands_mini; clean, 12 and 6 dB; `--compare`: beside the teacher at the
student's window and at 10 s); --load evaluates a student written before; --save-model
writes the student as a whole speech checkpoint (its features' window_step the student's),
which every door takes as MODEL; --init goes on training a student written before; --speed
plays half the clips faster or slower (pitch and tempo together); --clean-teacher lets the
teacher read each clip before its noise, so the student learns to write in noise what
Whisper writes for the clean clip.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

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


def clip_pool(captions: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """(waveform, text): spoken captions, and FSDD's training digits one at a time."""
    from glassformer.audio.io import load_audio

    rng = random.Random(seed)
    pool = []
    for path in sorted((SHARED / "speech" / "fsdd").glob("*.wav")):
        if int(path.stem.split("_")[2]) >= 5:  # never the official test split
            pool.append((load_audio(path), DIGITS[int(path.name[0])]))
    with gzip.open(SHARED / "parallel" / "multi30k" / "train.en.gz", "rt") as file:
        lines = file.read().splitlines()
    lines = [line for line in lines if 3 <= len(line.split()) <= 12]
    folder = Path(tempfile.mkdtemp(prefix="fit-"))
    spoken = []
    for n, text in enumerate(rng.sample(lines, captions)):
        spoken.append((speak(VOICES[n % len(VOICES)], text, folder / f"{n}.wav"), text))
        if n % 100 == 99:
            print(f"  spoken {n + 1} captions", file=sys.stderr, flush=True)
    return pool, spoken


def draw(digits, spoken, noises, rng: random.Random, speed: float = 0.0):  # noqa: ANN001, ANN201
    """One training clip: 1-5 digits with gaps, or a caption; silence around; noise, half;
    with speed > 0, half of them played 1 +- speed times as fast (pitch and tempo together,
    as a tape runs faster: more voices from the few there are). Returns (the clip, the clip
    before its noise, its text)."""
    from glassformer.audio.augment import add_noise

    if rng.random() < 0.5:
        parts = [rng.choice(digits) for _ in range(rng.randint(1, 5))]
        pieces = []
        for audio, _ in parts:
            pieces += [audio, np.zeros(int(16_000 * rng.uniform(0.05, 0.4)), np.float32)]
        audio, text = np.concatenate(pieces), " ".join(t for _, t in parts)
    else:
        audio, text = rng.choice(spoken)
    audio = np.concatenate([np.zeros(int(16_000 * rng.uniform(0, 0.5)), np.float32), audio,
                            np.zeros(int(16_000 * rng.uniform(0, 0.5)), np.float32)])  # fmt: skip
    if speed > 0 and rng.random() < 0.5:
        rate = rng.uniform(1 - speed, 1 + speed)
        audio = np.interp(np.arange(0, len(audio) - 1, rate), np.arange(len(audio)), audio)
    clean = audio.astype(np.float32)
    if rng.random() < 0.5:
        audio = add_noise(audio, rng.choice(noises), rng.uniform(0, 30), rng)
    return audio.astype(np.float32), clean, text


def features(speech, audio: np.ndarray) -> torch.Tensor:  # noqa: ANN001
    from glassformer.tasks.speech.clips import clip_audio, heard_features

    return heard_features(speech, clip_audio(speech, audio))


def kl_loss(teacher, student, clips, texts, contexts, rng, heard=None) -> torch.Tensor:  # noqa: ANN001
    """The student reads `clips`, the teacher `heard` (the same clips, or without noise)."""
    from glassformer.tasks.speech.clips import pad_features

    with torch.no_grad():
        t_batch = pad_features([features(teacher, a) for a in (heard or clips)])
        t_memory, _ = teacher.model.encode(t_batch)
    s_feats = [features(student, a) for a in clips]
    lengths = torch.tensor([f.size(-1) for f in s_feats])
    s_memory, s_padding = student.model.encode(pad_features(s_feats), lengths)
    total = torch.zeros(())
    prompt = list(teacher.rules.prompt)
    for b, text in enumerate(texts):
        words = teacher.tokenizer.encode(" " + text.strip().capitalize() + ".")
        context = list(rng.choice(contexts)) if rng.random() < 0.5 else []
        tokens = torch.tensor([context + prompt + words])  # the last position predicts eos
        last = len(prompt) + len(words)
        with torch.no_grad():
            target = teacher.model.decode(tokens, t_memory[b : b + 1], last=last).log_softmax(-1)
        padding = s_padding[b : b + 1] if s_padding is not None else None
        mine = student.model.decode(tokens, s_memory[b : b + 1], padding, last=last)
        log_q = mine.log_softmax(-1)
        total = total + (target.exp() * (target - log_q)).sum(-1).mean()
    return total / len(texts)


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
    parser.add_argument("--step", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--captions", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "fit-window")
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--compare", action="store_true", help="evaluate the teacher too")
    parser.add_argument("--load", type=Path, help="a student's encoder.safetensors to evaluate")
    parser.add_argument(
        "--init", type=Path, help="a student's encoder.safetensors to go on training from"
    )
    parser.add_argument(
        "--clean-teacher",
        action="store_true",
        help="the teacher reads each clip without its noise: the student learns to hear through it",
    )
    parser.add_argument(
        "--speed", type=float, default=0.0, help="half the clips 1 +- SPEED times as fast"
    )
    parser.add_argument(
        "--save-model",
        type=Path,
        metavar="DIR",
        help="also write the student as a whole speech checkpoint (its window included)",
    )
    args = parser.parse_args()
    from safetensors.torch import load_file, save_file

    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.loading import load_grammar, load_speech_model, use_grammar

    torch.manual_seed(args.seed)
    random.seed(args.seed)  # the voices' rates
    rng = random.Random(args.seed)
    teacher = load_speech_model("whisper-tiny.en")
    student = load_speech_model("whisper-tiny.en")
    student = dataclasses.replace(
        student, features=dataclasses.replace(student.features, window_step=args.step)
    )
    teacher.model.eval()
    student.model.eval()  # no dropout in Whisper; eval keeps it so
    encoder = [p for n, p in student.model.named_parameters() if not n.startswith(("decoder",
               "tgt_", "head"))]  # fmt: skip
    for p in student.model.parameters():
        p.requires_grad_(False)
    for p in encoder:
        p.requires_grad_(True)
    if args.load is not None:
        student.model.load_state_dict(load_file(str(args.load)), strict=False)
    else:
        if args.init is not None:
            student.model.load_state_dict(load_file(str(args.init)), strict=False)
        contexts = [
            use_grammar(teacher, load_grammar(g)).context
            for g in [ROOT / "bench/grammars/digits.yaml", SHARED / "grammars/coffee_maker.yaml",
                      ROOT / "glassformer/voice/grammars/appointments.yaml"]
        ]  # fmt: skip
        started = time.perf_counter()
        digits, spoken = clip_pool(args.captions, args.seed)
        noises = [load_audio(p) for p in sorted((SHARED / "noise").glob("*.wav"))]
        print(f"clips ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        optimizer = torch.optim.AdamW(encoder, lr=args.lr, weight_decay=0.0)
        started, losses = time.perf_counter(), []
        for step in range(args.steps):
            scale = min(1.0, (step + 1) / 20) * (0.1 + 0.9 * (1 - step / args.steps))
            for group in optimizer.param_groups:
                group["lr"] = args.lr * scale
            batch = [draw(digits, spoken, noises, rng, args.speed) for _ in range(args.batch)]
            clean = [c for _, c, _ in batch] if args.clean_teacher else None
            loss = kl_loss(teacher, student, [a for a, _, _ in batch], [t for _, _, t in batch],
                           contexts, rng, clean)  # fmt: skip
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(encoder, 1.0)
            optimizer.step()
            losses.append(loss.item())
            if step % 20 == 19:
                spent = time.perf_counter() - started
                print(f"step {step + 1}: KL {np.mean(losses[-20:]):.4f}, {spent:.0f} s, "
                      f"{spent / (step + 1) * (args.steps - step - 1):.0f} s left",
                      file=sys.stderr, flush=True)  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)
        names = {id(p): n for n, p in student.model.named_parameters()}
        save_file({names[id(p)]: p.detach().contiguous() for p in encoder},
                  str(args.out / "encoder.safetensors"))  # fmt: skip
        (args.out / "train.json").write_text(json.dumps(vars(args) | {"kl": losses}, default=str))
    if args.save_model is not None:
        from glassformer.tasks.speech.pretrained import save_speech_model

        source = f"whisper-tiny.en, encoder fitted to {args.step:g}-s windows (bench/fit_window.py)"
        print(f"saved {save_speech_model(student, args.save_model, source)}", file=sys.stderr)
    if args.evaluate:
        with torch.inference_mode():
            result = evaluate(student, teacher, args.step, args.compare)
        (args.out / "evaluate.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
