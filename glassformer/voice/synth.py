"""Speech synthesis for training data: every text-to-speech engine on the machine, many voices.

No recordings are needed to train a command recognizer: sentences sampled from the grammar
are spoken by the system's TTS engines in as many voices as they have, at varied speeds and
pitches. Validation uses voices never heard in training, so its scores say something about
new speakers.

Engines (Debian packages, installed by `make setup` when missing):
    espeak-ng   every English accent (en, en-us, en-gb-scotland, en-029, ...) times its voice
                variants (m1-m7, f1-f5, croak, whisper, ...); speed and pitch are flags
    flite       its compiled-in voices (kal, awb, rms, slt, ...)
    festival    its installed English voices (kal and ked diphones, the slt HTS voice)

A clip's voice is drawn engine first, then voice within the engine: espeak-ng has a hundred
variants of one formant synthesizer while flite and festival have a few more natural voices
each, so a uniform draw over voices would be 95% espeak-ng.

Dataset layout (DATA_DIR):
    clips/ID.wav        16 kHz mono PCM
    manifest.jsonl      one line per clip: id, audio, text, intent, slots, voice, split
Clips are written atomically and a clip already on disk is not rendered again, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from glassformer.errors import GlassformerError
from glassformer.voice.grammar import Command, Grammar

MANIFEST = "manifest.jsonl"
ESPEAK_VARIANTS_MAX = 12  # variants per espeak-ng accent (the rest sound alike)


@dataclass(frozen=True)
class Voice:
    engine: str  # espeak-ng | flite
    name: str  # engine-specific voice spec, e.g. "en-us+f3" or "slt"

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.name}"

    def is_validation(self, fraction: float) -> bool:
        """A fixed, hash-based choice: the same voices are held out on every machine."""
        digest = hashlib.sha256(self.key.encode()).digest()
        return digest[0] / 256 < fraction


def run_quietly(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def espeak_voices() -> list[Voice]:
    """espeak-ng's own English accents (not its optional mbrola voices) times its variants."""
    if shutil.which("espeak-ng") is None:
        return []
    accents = set()
    for line in run_quietly(["espeak-ng", "--voices=en"]).splitlines()[1:]:
        columns = line.split()
        if len(columns) >= 5 and columns[1].startswith("en") and columns[4].startswith("gmw/"):
            accents.add(columns[1])
    variants = [
        line.split()[4].split("/")[-1]
        for line in run_quietly(["espeak-ng", "--voices=variant"]).splitlines()[1:]
        if len(line.split()) >= 5
    ]
    variants = sorted(set(variants), key=str.lower)[:: max(1, len(variants) // ESPEAK_VARIANTS_MAX)]
    return [
        Voice("espeak-ng", f"{a}+{v}" if v else a) for a in sorted(accents) for v in ["", *variants]
    ]


def flite_voices() -> list[Voice]:
    if shutil.which("flite") is None:
        return []
    listing = run_quietly(["flite", "-lv"])
    names = listing.split(":", 1)[-1].split()
    return [Voice("flite", n) for n in names if n != "awb_time"]  # awb_time speaks only times


def festival_voices() -> list[Voice]:
    if shutil.which("festival") is None or shutil.which("text2wave") is None:
        return []
    listing = run_quietly(["festival", "-b", "(print (voice.list))"])
    names = listing.strip().strip("()").split()
    english = ("kal_", "ked_", "rab_", "cmu_us_", "cmu_uk_", "don_")
    return [Voice("festival", n) for n in names if n.startswith(english)]


def choose_voice(voices: list[Voice], rng: random.Random) -> Voice:
    """An engine uniformly, then one of its voices uniformly."""
    engine = rng.choice(sorted({v.engine for v in voices}))
    return rng.choice([v for v in voices if v.engine == engine])


def available_voices() -> list[Voice]:
    """Every voice of every installed engine; an error naming the fix if there is none."""
    voices = espeak_voices() + flite_voices() + festival_voices()
    if not voices:
        raise GlassformerError(
            "no text-to-speech engine found: install espeak-ng (and flite), e.g. `make setup` "
            "or `apt-get install espeak-ng flite`"
        )
    return voices


def tts_command(voice: Voice, text: str, rng: random.Random, raw: Path) -> list[str]:
    """The command line that speaks `text` into the WAV `raw`, at a random speed (and pitch)."""
    stretch = f"{rng.uniform(0.85, 1.25):.2f}"  # duration factor: > 1 is slower
    if voice.engine == "espeak-ng":
        speed, pitch = str(rng.randint(125, 200)), str(rng.randint(25, 75))  # words/min, 0-99
        return ["espeak-ng", "-v", voice.name, "-s", speed, "-p", pitch, "-w", str(raw), text]
    if voice.engine == "flite":
        return [
            "flite",
            "-voice",
            voice.name,
            "--setf",
            f"duration_stretch={stretch}",
            "-t",
            text,
            "-o",
            str(raw),
        ]
    script = raw.with_suffix(".txt")
    script.write_text(text)
    setup = f"(begin (voice_{voice.name}) (Parameter.set 'Duration_Stretch {stretch}))"
    return ["text2wave", "-eval", setup, "-o", str(raw), str(script)]  # text2wave keeps one -eval


def render(voice: Voice, text: str, rng: random.Random, path: Path) -> None:
    """Speak `text` with `voice` at a random speed and pitch into a 16 kHz WAV at `path`."""
    import numpy as np

    from glassformer.audio.io import load_audio, save_audio

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.wav"
        subprocess.run(tts_command(voice, text, rng, raw), capture_output=True, check=True)
        waveform = load_audio(raw)
    peak = float(np.abs(waveform).max()) or 1.0
    save_audio(path, waveform / peak * rng.uniform(0.3, 0.9))


def synthesize(
    grammar: Grammar,
    out: str | Path,
    count: int,
    seed: int = 0,
    val_fraction: float = 0.15,
    workers: int = 2,
    progress: bool = True,
) -> Path:
    """Render `count` sampled commands into DATA_DIR (resuming what is already there)."""
    from tqdm import tqdm

    out = Path(out)
    (out / "clips").mkdir(parents=True, exist_ok=True)
    voices = available_voices()
    train_voices = [v for v in voices if not v.is_validation(val_fraction)]
    val_voices = [v for v in voices if v.is_validation(val_fraction)] or voices[:1]
    rng = random.Random(seed)
    jobs = []
    for index in range(count):
        command = grammar.sample(rng)
        split = "val" if index % round(1 / val_fraction) == 0 else "train"  # every 7th, first too
        voice = choose_voice(val_voices if split == "val" else train_voices, rng)
        jobs.append((f"{index:06d}", command, voice, split, rng.random()))

    def work(job: tuple[str, Command, Voice, str, float]) -> dict:
        clip_id, command, voice, split, clip_seed = job
        path = out / "clips" / f"{clip_id}.wav"
        if not path.is_file():
            render(voice, command.text, random.Random(clip_seed), path)
        return {
            "id": clip_id,
            "audio": f"clips/{clip_id}.wav",
            **asdict(command),
            "voice": voice.key,
            "split": split,
        }

    with ThreadPoolExecutor(workers) as pool:
        rows = list(
            tqdm(
                pool.map(work, jobs),
                total=count,
                desc="synthesizing",
                unit="clip",
                disable=not progress,
            )
        )
    manifest = out / MANIFEST
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.replace(manifest)
    return manifest


def read_manifest(data_dir: str | Path) -> list[dict]:
    path = Path(data_dir) / MANIFEST
    if not path.is_file():
        raise GlassformerError(f"{path}: missing; synthesize data first (glassformer voice synth)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
