"""Speech benchmark: MFCC speed against librosa, synthesis and transcription speed, and
command accuracy on real recordings after training on synthesized speech only.

    .venv/bin/python bench/bench_speech.py speed      # features (below) + synthesis speed
    .venv/bin/python bench/bench_speech.py features   # MFCC and log-mel against librosa
    .venv/bin/python bench/bench_speech.py latency  [--run runs/demo] --data DATA_DIR  # its clips
    .venv/bin/python bench/bench_speech.py digits   [--steps N]   # FSDD, 6 real speakers
    .venv/bin/python bench/bench_speech.py lesson   [--steps N] [--held-out SPEAKER|none]
                                             [--real-validation] [--set vtlp_range=0.15]
                                             [--feature f_max=3800] [--model dropout=0.1]
                                             [--seed N] [--pitch-hz LOW HIGH] [--threads N]
    .venv/bin/python bench/bench_speech.py words    [--steps N]   # speech_commands_mini
    .venv/bin/python bench/bench_speech.py coffee   [--steps N]   # coffee_maker grammar

Real recordings are never trained on, except by `lesson`: each quality run synthesizes its
grammar, trains the `small` preset (with the shared cafe/fridge/traffic noise as augmentation,
its CPU threads pinned: --threads) and transcribes the real clips. `lesson` is the article's
model trained from scratch on FSDD's real training recordings (idx 5-49) of five speakers and
the synthetic voices together, scored on FSDD's official test split (idx 0-4) and on every clip
of the sixth speaker, held out of training (`--held-out none`: all six speakers trained, FSDD's
own protocol). Prints JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from common import median_seconds

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared" / "data"
WORK = ROOT / "runs" / "bench-speech"


def librosa_mfcc(clip: np.ndarray, kind: str = "mfcc") -> np.ndarray:
    """librosa's MFCC (or log-mel, kind="logmel") with our settings (fixed log floor:
    power_to_db without top_db)."""
    import librosa

    mel = librosa.feature.melspectrogram(
        y=clip,
        sr=16_000,
        n_fft=400,
        hop_length=160,
        n_mels=40,
        fmin=20.0,
        fmax=7600.0,
        pad_mode="constant",
    )
    db = librosa.power_to_db(mel, amin=1e-10, top_db=None)
    return db if kind == "logmel" else librosa.feature.mfcc(S=db, n_mfcc=13)


def features() -> dict:
    """MFCC and log-mel of 200 FSDD clips (16 kHz): ours and librosa's, one clip at a time,
    stacked into one zero-padded (200, L) batch (both), and ours on the clips as a list
    (compute_features_many: no padding frames). Medians of 5 runs; *_x keys are speedups.
    Threads: torch's default unless OMP_NUM_THREADS says (librosa's FFT is single-threaded)."""
    from glassformer.audio.features import FeatureConfig, compute_features, compute_features_many
    from glassformer.audio.io import load_audio

    clips = [load_audio(p) for p in sorted((SHARED / "speech" / "fsdd").glob("*.wav"))[:200]]
    tensors = [torch.from_numpy(clip) for clip in clips]
    longest = max(len(c) for c in clips)
    stacked = np.stack([np.pad(c, (0, longest - len(c))) for c in clips])  # (200, L)
    padded = torch.from_numpy(stacked)
    result = {"audio_seconds": sum(len(c) for c in clips) / 16_000}
    result["torch_threads"] = torch.get_num_threads()
    for kind in ("mfcc", "logmel"):
        config = FeatureConfig(kind=kind, normalize=False)
        runs = {
            "ours": lambda c=config: [compute_features(t, c) for t in tensors],
            "librosa": lambda k=kind: [librosa_mfcc(clip, k) for clip in clips],
            "ours_batched": lambda c=config: compute_features(padded, c),  # (200, M, N)
            "librosa_batched": lambda k=kind: librosa_mfcc(stacked, k),
            "ours_many": lambda c=config: compute_features_many(tensors, c),
        }
        for run in runs.values():
            run()  # warm up
        seconds = {name: median_seconds(run) for name, run in runs.items()}
        result |= {f"{kind}_{name}_s": value for name, value in seconds.items()}
        a = compute_features(tensors[0], config).numpy()
        result[f"{kind}_max_abs_difference"] = float(np.abs(a - librosa_mfcc(clips[0], kind)).max())
        result[f"{kind}_one_at_a_time_x"] = seconds["librosa"] / seconds["ours"]
        result[f"{kind}_batched_x"] = seconds["librosa_batched"] / seconds["ours_batched"]
        result[f"{kind}_many_vs_librosa_batched_x"] = (
            seconds["librosa_batched"] / seconds["ours_many"]
        )
        result[f"{kind}_many_vs_librosa_one_at_a_time_x"] = (
            seconds["librosa"] / seconds["ours_many"]
        )
    two_seconds = torch.from_numpy(np.concatenate(clips)[: 2 * 16_000].copy())
    mfcc = FeatureConfig(normalize=False)
    result["mfcc_two_second_clip_s"] = median_seconds(lambda: compute_features(two_seconds, mfcc))
    return result


def speed() -> dict:
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import synthesize

    result = features()
    grammar = Grammar.from_yaml(ROOT / "glassformer" / "voice" / "grammars" / "desktop.yaml")
    out = WORK / "synth-speed"
    start = time.perf_counter()
    synthesize(grammar, out / str(time.time_ns()), 200, progress=False)
    result["synthesis_clips_per_s"] = 200 / (time.perf_counter() - start)
    return result


@dataclass(frozen=True)
class Recipe:
    """How the accuracy benchmarks train: the flags, passed down (no module-level state)."""

    steps: int = 1200  # training steps
    reuse: bool = False  # transcribe with the run already trained, if there is one
    data_fields: tuple[tuple[str, float], ...] = ()  # SpeechDataConfig overrides (ablations)
    feature_fields: tuple[tuple[str, object], ...] = ()  # FeatureConfig overrides (ablations)
    model_fields: tuple[tuple[str, float], ...] = ()  # the small preset's model overrides
    seed: int = 1337  # TrainConfig's: weights, sampling and augmentation (not the synthesis)
    pitch_hz: tuple[float, float] | None = None  # synthetic voices' mean F0 drawn from here
    # one count throughout: a sum split over other threads rounds otherwise, and a seed's
    # held-out figure moved 6.6 points between 1 and 2 (docs/benchmarks.md, the lesson)
    threads: int = 0  # training's CPU threads; 0: torch's own default (every core)

    def data_name(self, name: str) -> str:
        """A synthesized folder's name: clips at drawn pitches live apart from the voices'
        own (a folder resumes only at its own pitches)."""
        return name if self.pitch_hz is None else "{}-pitch{:g}-{:g}".format(name, *self.pitch_hz)

    def features(self):  # noqa: ANN201
        """The FeatureConfig a from-scratch run reads: the default, with the overrides."""
        from glassformer.audio.features import FeatureConfig

        return FeatureConfig(**dict(self.feature_fields))


def train_on(grammar: Path, name: str, recipe: Recipe, clips: int) -> Path:
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import synthesize

    data, run = WORK / recipe.data_name(f"{name}-data"), WORK / f"{name}-run"
    if recipe.reuse and (run / "last").is_dir():
        return run
    synthesize(Grammar.from_yaml(grammar), data, clips, progress=False, pitch_hz=recipe.pitch_hz)
    train_small(grammar, data, run, recipe)
    return run


def train_small(grammar: Path, data: Path, run: Path, recipe: Recipe) -> None:
    """The `small` preset trained from scratch on `data`, with the shared noise and the recipe's
    steps and overrides."""
    from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
    from glassformer.tasks.speech.training import train_speech
    from glassformer.train.config import TrainConfig

    model_fields = {**SPEECH_PRESETS["small"].model, **dict(recipe.model_fields)}
    train_fields = SPEECH_PRESETS["small"].train
    if recipe.threads:
        torch.set_num_threads(recipe.threads)
    # the thread count pinned, not adapted to the machine's load (glassformer/threads.py):
    # the same recipe and seed then give the same model whatever runs beside them
    config = TrainConfig(
        **{**train_fields, "steps": recipe.steps, "seed": recipe.seed, "adapt_threads": False}
    )
    data_config = SpeechDataConfig(noise_dir=str(SHARED / "noise"), **dict(recipe.data_fields))
    train_speech(
        grammar, data, model_fields, config, data_config, run, progress=False,
        features=recipe.features(),
    )  # fmt: skip


def accuracy(run: Path, files: list[Path], truth: list[str], slot: str) -> dict:
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe
    from glassformer.tasks.speech.loading import load_speech_model

    speech = load_speech_model(run)
    constrained = SpeechOptions(4, True, speech.rules.reject_below)
    right, latencies, confusions = 0, [], collections.Counter()
    for path, expected in zip(files, truth, strict=True):
        waveform = load_audio(path)
        start = time.perf_counter()
        heard = transcribe(speech, waveform, constrained)
        latencies.append((time.perf_counter() - start, len(waveform) / 16_000))
        said, accepted = heard.slots.get(slot), expected.split("|")
        if said in accepted:
            right += 1
        else:
            confusions[f"{accepted[0]} -> {said}"] += 1
    return {
        "files": len(files),
        "accuracy": right / len(files),
        "most_confused": dict(confusions.most_common(8)),
        "median_latency_s": statistics.median(t for t, _ in latencies),
        "real_time_factor": sum(t for t, _ in latencies) / sum(s for _, s in latencies),
    }


def latency(run: Path, data: Path) -> dict:
    """End-to-end transcription time of 2-second commands (features, encoder, beam search,
    grammar), median over held-out clips of the demo grammar cut or padded to 2 s."""
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe
    from glassformer.tasks.speech.loading import load_speech_model
    from glassformer.voice.synth import read_manifest

    speech = load_speech_model(run)
    clips = []
    for row in read_manifest(data):
        waveform = load_audio(data / row["audio"])
        if row["split"] == "val" and len(waveform) >= 24_000:
            clips.append(np.pad(waveform, (0, 32_000))[:32_000])
    result = {"clips": len(clips[:30])}
    for constrain in (False, True):
        options, times = SpeechOptions(4, constrain, speech.rules.reject_below), []
        for waveform in clips[:30]:
            transcribe(speech, waveform, options)  # warm (shapes, caches)
            times.append(median_seconds(lambda w=waveform, o=options: transcribe(speech, w, o)))
        name = "constrained" if constrain else "free"
        result[f"{name}_median_s"] = statistics.median(times)
        result[f"{name}_real_time_factor"] = statistics.median(times) / 2.0
    return result


def digits(recipe: Recipe) -> dict:
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    run = train_on(ROOT / "bench" / "grammars" / "digits.yaml", "digits", recipe, 2500)
    files = sorted((SHARED / "speech" / "fsdd").glob("*.wav"))
    truth = [names[int(p.name.split("_")[0])] + ("|oh" if p.name[0] == "0" else "") for p in files]
    test = [i for i, p in enumerate(files) if int(p.stem.split("_")[2]) < 5]
    return {
        "official_test_split": accuracy(
            run, [files[i] for i in test], [truth[i] for i in test], "digit"
        ),
        "all_3000": accuracy(run, files, truth, "digit"),
    }


DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fsdd_parts(path: Path) -> tuple[int, str, int]:
    """FSDD's file name: {digit}_{speaker}_{idx}.wav."""
    digit, speaker, index = path.stem.split("_")
    return int(digit), speaker, int(index)


def fsdd_answers(path: Path) -> list[str]:
    """The digit slot values right for an FSDD clip: its digit's name ("oh" for zero too)."""
    digit = fsdd_parts(path)[0]
    return [DIGIT_NAMES[digit], *(["oh"] if digit == 0 else [])]


def lesson(recipe: Recipe, held_out: str, real_validation: bool = False) -> dict:
    """The article's model on real and synthetic speech together: FSDD's training recordings
    (idx 5-49) of every speaker but `held_out`, and the digits grammar's 2,500 synthetic
    clips (their validation voices choose the best checkpoint; with `real_validation`, the
    trained speakers' idx 45-49 join them instead of training)."""
    from glassformer.files import write_text_atomically
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.manifest import MANIFEST
    from glassformer.voice.synth import read_manifest, synthesize

    grammar = ROOT / "bench" / "grammars" / "digits.yaml"
    files = sorted((SHARED / "speech" / "fsdd").glob("*.wav"))
    speakers = sorted({fsdd_parts(p)[1] for p in files})
    if held_out not in [*speakers, "none"]:
        sys.exit(f"--held-out {held_out}: not an FSDD speaker ({', '.join(speakers)}) nor none")
    synthetic, data = WORK / recipe.data_name("digits-data"), WORK / recipe.data_name("lesson-data")
    run = WORK / "lesson-run"
    if not (recipe.reuse and (run / "last").is_dir()):
        synthesize(Grammar.from_yaml(grammar), synthetic, 2500, progress=False,
                   pitch_hz=recipe.pitch_hz)  # fmt: skip
        rows = [dict(r, audio=f"synthetic/{r['audio']}") for r in read_manifest(synthetic)]
        for row in rows:  # hard links: the clips stay where `digits` made them
            linked_file(synthetic / row["audio"].removeprefix("synthetic/"), data / row["audio"])
        for path in files:
            digit, speaker, index = fsdd_parts(path)
            if index >= 5 and speaker != held_out:  # the official training split
                linked_file(path, data / "real" / path.name)
                word = DIGIT_NAMES[digit]
                split = "val" if real_validation and index >= 45 else "train"
                rows.append(
                    {"id": f"fsdd-{path.stem}", "audio": f"real/{path.name}", "text": word,
                     "intent": "digit", "slots": {"digit": word}, "voice": f"fsdd:{speaker}",
                     "split": split}
                )  # fmt: skip
        write_text_atomically(data / MANIFEST, "".join(json.dumps(r) + "\n" for r in rows))
        train_small(grammar, data, run, recipe)
    truth = ["|".join(fsdd_answers(p)) for p in files]
    chosen = {"official_test_split": lambda d, s, i: i < 5}
    if held_out != "none":  # FSDD's own protocol trains on all six; this one leaves one out
        chosen["test_split_trained_speakers"] = lambda d, s, i: i < 5 and s != held_out
        chosen[f"held_out_speaker_{held_out}_all_500"] = lambda d, s, i: s == held_out
    per_speaker = 40 if real_validation else 45  # recordings of each digit trained on
    trained = len(speakers) - (held_out != "none")
    result = {"held_out": held_out, "training_real_clips": per_speaker * 10 * trained}
    result["training_threads"] = training_threads(run)
    for name, keep in chosen.items():
        picked = [i for i, p in enumerate(files) if keep(*fsdd_parts(p))]
        result[name] = accuracy(
            run, [files[i] for i in picked], [truth[i] for i in picked], "digit"
        )
    return result


def training_threads(run: Path) -> dict[str, int]:
    """Steps of `run` by the CPU threads they ran with (its metrics log): runs of one recipe
    and seed compare only where these agree."""
    from glassformer.train.outputs import METRICS_FILE

    counts: collections.Counter = collections.Counter()
    with open(run / METRICS_FILE, encoding="utf-8") as log:
        for line in log:
            row = json.loads(line)
            if "threads" in row:
                counts[str(row["threads"])] += 1
    return dict(sorted(counts.items()))


def linked_file(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (a copy across file systems), made once."""
    import shutil

    if target.is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.hardlink_to(source)
    except OSError:
        shutil.copyfile(source, target)


def words(recipe: Recipe) -> dict:
    run = train_on(ROOT / "bench" / "grammars" / "words.yaml", "words", recipe, 2500)
    files = sorted((SHARED / "speech" / "speech_commands_mini").glob("*/*.wav"))
    return accuracy(run, files, [p.parent.name for p in files], "word")


def coffee(recipe: Recipe) -> dict:
    from glassformer.audio.augment import add_noise
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.evaluation import is_accepted
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe
    from glassformer.tasks.speech.loading import load_speech_model
    from glassformer.voice.synth import read_manifest

    grammar = SHARED / "grammars" / "coffee_maker.yaml"
    run = train_on(grammar, "coffee", recipe, 4000)
    speech = load_speech_model(run)
    constrained = SpeechOptions(4, True, speech.rules.reject_below)
    rows = [r for r in read_manifest(WORK / "coffee-data") if r["split"] == "val"][:100]
    cafe = load_audio(SHARED / "noise" / "cafe.wav")
    rng = random.Random(0)
    rates = {}
    for snr in (24, 21, 18, 15, 12, 9, 6):
        accepted = 0
        for row in rows:
            noisy = add_noise(load_audio(WORK / "coffee-data" / row["audio"]), cafe, snr, rng)
            accepted += is_accepted(transcribe(speech, noisy, constrained), row)
        rates[f"{snr}dB"] = accepted / len(rows)
    rates["mean"] = sum(rates.values()) / len(rates)
    return rates


def number_or_text(value: str) -> object:
    """A flag's value as the int, float or text it reads as ("40", "3800.0", "logmel")."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def overrides(
    flags: list[str], read: Callable[[str], object] = number_or_text
) -> tuple[tuple[str, object], ...]:
    """FIELD=VALUE flags as (field, value) pairs, each value read by `read`."""
    return tuple((name, read(value)) for name, value in (f.split("=", 1) for f in flags))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", choices=["speed", "features", "latency", "digits", "lesson", "words", "coffee"]
    )
    parser.add_argument(
        "--held-out",
        default="george",
        help="lesson: the FSDD speaker left out of training, or none (FSDD's own protocol: "
        "all six speakers' idx 5-49 trained, idx 0-4 scored)",
    )
    parser.add_argument(
        "--real-validation",
        action="store_true",
        help="lesson: the trained speakers' idx 45-49 choose the checkpoint instead of training",
    )
    parser.add_argument("--run", default="runs/demo", help="latency: the trained model")
    parser.add_argument("--data", help="latency: its dataset (a voice synth folder)")
    parser.add_argument("--steps", type=int, default=1200, help="training steps")
    parser.add_argument("--reuse", action="store_true", help="skip training if a run exists")
    parser.add_argument(
        "--seed", type=int, default=1337, help="training's seed (another run of one recipe)"
    )
    parser.add_argument(
        "--pitch-hz",
        nargs=2,
        type=float,
        metavar=("LOW", "HIGH"),
        help="synthesize the voices at mean pitches drawn from LOW-HIGH Hz (voice synth's "
        "--pitch-hz; its own folder); default: each voice's own pitch",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="training's CPU threads, pinned for the whole run (default: torch's, every core); "
        "one recipe and seed give one model only at one thread count",
    )
    parser.add_argument(
        "--set", action="append", default=[], help="SpeechDataConfig FIELD=NUMBER (ablations)"
    )
    parser.add_argument(
        "--feature", action="append", default=[], help="FeatureConfig FIELD=VALUE (f_max=3800)"
    )
    parser.add_argument(
        "--model", action="append", default=[], help="the small preset's FIELD=NUMBER (dropout=0.1)"
    )
    args = parser.parse_args()
    recipe = Recipe(
        args.steps, args.reuse, overrides(args.set, float), overrides(args.feature),
        overrides(args.model), args.seed, tuple(args.pitch_hz) if args.pitch_hz else None,
        args.threads,
    )  # fmt: skip
    torch.manual_seed(0)
    if args.what == "speed":
        result = speed()
    elif args.what == "features":
        result = features()
    elif args.what == "latency":
        if not args.data:
            sys.exit("latency needs --data: the run's `voice synth` folder (its val clips)")
        result = latency(Path(args.run), Path(args.data))
    elif args.what == "lesson":
        result = lesson(recipe, args.held_out, args.real_validation)
    else:
        result = {"digits": digits, "words": words, "coffee": coffee}[args.what](recipe)
    print(json.dumps({args.what: result}, indent=1))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
