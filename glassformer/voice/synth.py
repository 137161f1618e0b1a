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

Pitch (`pitch_hz`, off by default): left to themselves, all voices but slt speak at 85-135
Hz. Given a range, each clip's mean F0 is drawn from it for every voice that takes one
(flite's kal, awb and slt, festival's diphones; not flite's rms nor the HTS slt) and
espeak-ng's pitch from the whole of its scale; without one, the voices keep their own and
espeak-ng draws from the middle of its scale. Measured for the demo's real voice (a woman's
190 Hz, which the demo's model hears better lowered 2 semitones): not kept there, no gain
over three training seeds (docs/benchmarks.md, "The demo's lesson on a real voice").

Word by word (`word_by_word`, a share of the clips): people talking to a machine often say
a command a few words at a time, each in its own citation form, with pauses between ("friday
... at ... five p m"), and recorded phone prompts are made exactly so (voice/recorded.py).
A model trained only on fluent sentences hears none of that: the demo's model got 24 of 30
commands said fluently by an unseen flite voice and 1 of the same 30 said word by word. Such
a clip speaks its command's words in runs of one to three, one engine call each at the
clip's pitch and a slow speed (a word said alone lasts longer), trimmed and joined by 60-300
ms of silence.

A clip's voice is drawn engine first, then voice within the engine: espeak-ng has a hundred
variants of one formant synthesizer while flite and festival have a few more natural voices
each, so a uniform draw over voices would be 95% espeak-ng.

Dataset layout (DATA_DIR):
    clips/ID.wav        16 kHz mono PCM
    manifest.jsonl      one line per clip: id, audio, text, intent, slots, voice, split
                        (and "spoken": "word by word" for such clips)
    dataset.json        what made the clips: grammar (its path), grammar_sha256 (of its
                        expressions and slots), seed, val_fraction, voices_sha256, count,
                        word_by_word (the share spoken so), pitch_hz (the F0 range
                        drawn, or null), noise_dir (the noise training mixes in)
Clips are written atomically and a clip already on disk is not rendered again, so an
interrupted run resumes where it stopped. Clip N is the Nth sentence drawn with the seed, so
a clip may only be reused by a run with the same grammar, seed and voices: dataset.json is
written before the first clip, and a folder whose dataset.json (or, for folders made before
it existed, whose manifest) says otherwise is an error, never a silent mislabelling.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from glassformer.errors import GlassformerError, first_line
from glassformer.voice.grammar import Command, Grammar
from glassformer.voice.manifest import MANIFEST, read_manifest

if TYPE_CHECKING:
    import numpy as np

DATASET_INFO = "dataset.json"
ESPEAK_VARIANTS_MAX = 12  # variants per espeak-ng accent (the rest sound alike)
MAX_CLIPS = 1_000_000  # clips one dataset may hold (about 30 GB of WAV at 2 s a clip)
WORD_GAP = (0.06, 0.3)  # seconds of silence between the runs of a word-by-word clip
MAX_RUN = 3  # words in one run of a word-by-word clip
# A word said on its own is slow: a recorded voice's words last 0.5-0.9 s, twice a TTS
# engine's at its usual speed; word-by-word clips are spoken at these speeds instead
SLOW_STRETCH = (1.0, 2.0)  # flite's and festival's duration factors
SLOW_WORDS_PER_MINUTE = (80, 150)  # espeak-ng's speeds
ESPEAK_PITCH = (25, 75)  # espeak-ng's -p (0-99): about 65-160 Hz for its male variants
ESPEAK_PITCH_WIDE = (25, 99)  # ... with pitch_hz given
MIN_PITCH_HZ, MAX_PITCH_HZ = 50, 400  # a pitch_hz range's bounds: a bass to a child
LETTER_RUN = re.compile(r"\b[a-z](?: [a-z]\b)+")  # "a m", "p m": letters said one by one
BATCH_CLIPS = 64  # clips planned and rendered at a time, so the first appear at once


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


Job = tuple[str, Command, Voice, str, float]  # clip id, what to say, who says it, split, seed


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


def tts_command(
    voice: Voice,
    text: str,
    rng: random.Random,
    raw: Path,
    slow: bool = False,
    pitch_hz: tuple[float, float] | None = None,
) -> list[str]:
    """The command line that speaks `text` into the WAV `raw`, at a random speed and pitch;
    `slow`: the speeds of a word said on its own (SLOW_STRETCH, SLOW_WORDS_PER_MINUTE);
    `pitch_hz`: the range of mean F0 drawn (None: each voice's own; see above)."""
    low, high = SLOW_STRETCH if slow else (0.85, 1.25)
    stretch = f"{rng.uniform(low, high):.2f}"  # duration factor: > 1 is slower
    if voice.engine == "espeak-ng":
        words_per_minute = rng.randint(*(SLOW_WORDS_PER_MINUTE if slow else (125, 200)))
        level = rng.randint(*(ESPEAK_PITCH_WIDE if pitch_hz else ESPEAK_PITCH))
        speed, pitch = str(words_per_minute), str(level)
        return ["espeak-ng", "-v", voice.name, "-s", speed, "-p", pitch, "-w", str(raw), text]
    f0 = rng.uniform(*pitch_hz) if pitch_hz else None
    if voice.engine == "flite":
        pitch_flags = ["--setf", f"int_f0_target_mean={f0:.0f}"] if f0 else []
        stretch_flags = ["--setf", f"duration_stretch={stretch}"]
        return [
            "flite",
            "-voice",
            voice.name,
            *stretch_flags,
            *pitch_flags,
            "-t",
            text,
            "-o",
            str(raw),
        ]
    script = raw.with_suffix(".txt")
    script.write_text(text)
    pitch_eval = ""
    if f0:  # festival's diphone voices predict F0 by regression, rescaled to a target mean
        targets = f"(target_f0_mean {f0:.0f}) (target_f0_std {f0 / 6:.0f})"
        pitch_eval = f" (set! int_lr_params '({targets} (model_f0_mean 170) (model_f0_std 34)))"
    setup = f"(begin (voice_{voice.name}) (Parameter.set 'Duration_Stretch {stretch}){pitch_eval})"
    return ["text2wave", "-eval", setup, "-o", str(raw), str(script)]  # text2wave keeps one -eval


def spoken_form(text: str) -> str:
    """What a TTS engine is given for a grammar sentence: runs of one-letter words become an
    abbreviation ("ten a m" -> "ten a.m."), which engines spell out (they read a lone "a"
    as the article)."""
    return LETTER_RUN.sub(lambda run: ".".join(run.group(0).split()) + ".", text)


def speak(
    voice: Voice,
    text: str,
    rng: random.Random,
    slow: bool = False,
    pitch_hz: tuple[float, float] | None = None,
) -> np.ndarray:
    """`text` spoken by `voice` at a speed and pitch drawn from `rng`: 16 kHz samples."""
    from glassformer.audio.io import load_audio

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.wav"
        command = tts_command(voice, text, rng, raw, slow, pitch_hz)
        subprocess.run(command, capture_output=True, check=True)
        return load_audio(raw)


def word_runs(text: str, rng: random.Random) -> list[str]:
    """A sentence's spoken form cut into runs of 1 to MAX_RUN words (a letter run such as
    "a.m." is one word): "friday at ten a m" -> ["friday", "at ten", "a.m."]."""
    words, runs = spoken_form(text).split(), []
    while words:
        size = rng.randint(1, MAX_RUN)
        runs.append(" ".join(words[:size]))
        words = words[size:]
    return runs


def speak_word_by_word(
    voice: Voice, text: str, clip_seed: float, pitch_hz: tuple[float, float] | None = None
) -> np.ndarray:
    """`text` spoken a few words at a time: each run one engine call at the clip's own slow
    speed and pitch (the same draws), trimmed, the runs joined by WORD_GAP of silence."""
    import numpy as np

    from glassformer.audio.io import SAMPLE_RATE
    from glassformer.audio.silence import trim_silence

    rng = random.Random(f"{clip_seed}/runs")
    pieces = []
    for i, run in enumerate(word_runs(text, rng)):
        if i:
            pieces.append(np.zeros(int(rng.uniform(*WORD_GAP) * SAMPLE_RATE), np.float32))
        said = speak(voice, run, random.Random(clip_seed), True, pitch_hz)  # the clip's own draws
        pieces.append(trim_silence(said, margin=0.02))
    return np.concatenate(pieces)


def render(
    voice: Voice,
    text: str,
    clip_seed: float,
    path: Path,
    word_by_word: bool = False,
    pitch_hz: tuple[float, float] | None = None,
) -> None:
    """Speak `text` with `voice` at a speed and pitch drawn from `clip_seed` (whole, or word
    by word; `pitch_hz` as in tts_command) into a 16 kHz WAV at `path`, its peak at a drawn
    level."""
    import numpy as np

    from glassformer.audio.io import save_audio

    rng = random.Random(clip_seed)
    if word_by_word:
        waveform = speak_word_by_word(voice, text, clip_seed, pitch_hz)
    else:
        waveform = speak(voice, spoken_form(text), rng, pitch_hz=pitch_hz)
    peak = float(np.abs(waveform).max()) or 1.0
    save_audio(path, waveform / peak * rng.uniform(0.3, 0.9))


def named(name: str, value: object) -> str:
    """How an error names a setting: a flag as typed ("--pitch-hz 250 85"), a keyword as
    Python writes it ("pitch_hz=(250, 85)")."""
    if not name.startswith("--"):
        return f"{name}={value!r}"
    values = value if isinstance(value, tuple | list) else (value,)
    return " ".join([name, *(f"{v:g}" if isinstance(v, float) else str(v) for v in values)])


def check_share(word_by_word: object, name: str = "word_by_word") -> float:
    """A share of clips in [0, 1]; `name` as errors call it (a keyword, or a flag).

    Raises:
        GlassformerError: "word_by_word=2: ..." for anything else (nan included).
    """
    if not isinstance(word_by_word, int | float) or not 0 <= word_by_word <= 1:
        raise GlassformerError(f"{named(name, word_by_word)}: must be a share from 0 to 1")
    return float(word_by_word)


def check_pitch(pitch_hz: object, name: str = "pitch_hz") -> tuple[float, float] | None:
    """None, or a range of mean F0 (LOW, HIGH) within MIN_PITCH_HZ..MAX_PITCH_HZ.

    Raises:
        GlassformerError: "pitch_hz=(300, 100): ..." for anything else.
    """
    if pitch_hz is None:
        return None
    low, high = pitch_hz if isinstance(pitch_hz, tuple | list) and len(pitch_hz) == 2 else (0, 0)
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (low, high))
    if not numbers or not MIN_PITCH_HZ <= low <= high <= MAX_PITCH_HZ:
        raise GlassformerError(
            f"{named(name, pitch_hz)}: must be two numbers LOW <= HIGH from {MIN_PITCH_HZ} to "
            f"{MAX_PITCH_HZ} Hz"
        )
    return (low, high)


def check_count(count: object, name: str = "count") -> int:
    """A clip count in [1, MAX_CLIPS].

    Raises:
        GlassformerError: "count=0: ..." for anything else.
    """
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_CLIPS:
        raise GlassformerError(
            f"{named(name, count)}: must be a whole number from 1 to {MAX_CLIPS:,} clips"
        )
    return count


def plan_jobs(
    grammar: Grammar, seed: int, val_fraction: float, voices: list[Voice]
) -> Iterator[Job]:
    """(clip id, command, voice, split, clip seed) for clip 0, 1, 2, ... drawn lazily.

    One random stream draws everything in clip order, so clip N is the same for any count.
    """
    train_voices = [v for v in voices if not v.is_validation(val_fraction)]
    val_voices = [v for v in voices if v.is_validation(val_fraction)] or voices[:1]
    rng = random.Random(seed)
    for index in itertools.count():
        command = grammar.sample(rng)
        split = "val" if index % round(1 / val_fraction) == 0 else "train"  # every 7th, first too
        voice = choose_voice(val_voices if split == "val" else train_voices, rng)
        yield f"{index:06d}", command, voice, split, rng.random()


def is_word_by_word(clip_seed: float, word_by_word: float) -> bool:
    """Whether the clip of this seed is spoken word by word: its own draw, so the sentences,
    voices and splits of every clip stay what they are at any share (0 keeps old folders)."""
    return word_by_word > 0 and random.Random(f"{clip_seed}/words").random() < word_by_word


def manifest_row(job: Job, word_by_word: float = 0.0) -> dict:
    clip_id, command, voice, split, clip_seed = job
    audio = f"clips/{clip_id}.wav"
    row = {"id": clip_id, "audio": audio, **asdict(command), "voice": voice.key, "split": split}
    return row | ({"spoken": "word by word"} if is_word_by_word(clip_seed, word_by_word) else {})


def dataset_info(
    grammar: Grammar,
    seed: int,
    val_fraction: float,
    voices: list[Voice],
    count: int,
    word_by_word: float = 0.0,
    pitch_hz: tuple[float, float] | None = None,
) -> dict:
    """What decides every clip's text, voice and manner (and so whether clips may be reused)."""
    voice_keys = "\n".join(sorted(v.key for v in voices))
    return {
        "grammar": str(grammar.path or ""),
        "grammar_sha256": grammar.sha256,
        "seed": seed,
        "val_fraction": val_fraction,
        "voices_sha256": hashlib.sha256(voice_keys.encode()).hexdigest(),
        "word_by_word": word_by_word,
        "pitch_hz": list(pitch_hz) if pitch_hz else None,
        "count": count,
    }


def write_dataset_info(out: str | Path, info: dict, noise_dir: str | Path = "") -> Path:
    """Write DATA_DIR/dataset.json: `info` (see dataset_info) and the noise folder."""
    from glassformer.files import write_text_atomically

    path = Path(out) / DATASET_INFO
    document = {**info, "noise_dir": str(noise_dir or "")}
    write_text_atomically(path, json.dumps(document, indent=1) + "\n")
    return path


def read_dataset_info(data_dir: str | Path) -> dict:
    """DATA_DIR/dataset.json as a dict; {} when there is none (a folder made before it).

    Raises:
        GlassformerError: the file is not a JSON object.
    """
    from glassformer.textfiles import read_json

    path = Path(data_dir) / DATASET_INFO
    if not path.exists():
        return {}
    info = read_json(path, "dataset")
    if not isinstance(info, dict):
        raise GlassformerError(f"{path}: expected a JSON object")
    return info


def check_resumable(out: Path, info: dict, grammar: Grammar, voices: list[Voice]) -> None:
    """Allow reusing the clips in `out` only if they were made exactly as this run makes them.

    Raises:
        GlassformerError: `out` holds clips of another grammar, seed or set of voices.
    """
    held = read_dataset_info(out)
    fix = "choose an empty folder (or delete this one)"
    if held:
        for key, what in [("grammar_sha256", "grammar"), ("seed", "seed")]:
            if held.get(key) != info[key]:
                raise GlassformerError(
                    f"{out} holds clips of another {what} ({key} {held.get(key)!r}, this run "
                    f"{info[key]!r}): {fix}"
                )
        for key, what in [("val_fraction", "validation split"), ("voices_sha256", "voices")]:
            if held.get(key) != info[key]:
                raise GlassformerError(f"{out} holds clips made with other {what}: {fix}")
        if held.get("word_by_word", 0.0) != info["word_by_word"]:  # folders made before it: 0
            raise GlassformerError(
                f"{out} holds clips with another share spoken word by word "
                f"({held.get('word_by_word', 0.0)}, this run {info['word_by_word']}): {fix}"
            )
        if held.get("pitch_hz") != info["pitch_hz"]:  # folders made before it: None
            raise GlassformerError(
                f"{out} holds clips spoken at other pitches (pitch_hz {held.get('pitch_hz')}, "
                f"this run {info['pitch_hz']}): {fix}"
            )
        return
    rows = read_manifest(out) if (out / MANIFEST).is_file() else []
    clips = list((out / "clips").glob("*.wav")) if (out / "clips").is_dir() else []
    planned = plan_jobs(grammar, info["seed"], info["val_fraction"], voices)
    if len(clips) > len(rows) or any(  # made before dataset.json: the manifest must agree
        row != manifest_row(job) for row, job in zip(rows, planned, strict=False)
    ):
        raise GlassformerError(
            f"{out} holds clips of another grammar or seed (or of unknown origin): {fix}"
        )


def synthesize(
    grammar: Grammar,
    out: str | Path,
    count: int,
    seed: int = 0,
    val_fraction: float = 0.15,
    workers: int = 2,
    progress: bool = True,
    noise_dir: str | Path = "",
    word_by_word: float = 0.0,
    pitch_hz: tuple[float, float] | None = None,
) -> Path:
    """Render `count` sampled commands into DATA_DIR (resuming what is already there), a
    `word_by_word` share of them spoken a few words at a time with pauses, each at a mean
    F0 drawn from `pitch_hz` where a voice takes one (see above).

    Everything is checked before anything is written: a bad count, no TTS engine, or a folder
    holding another grammar's or seed's clips leave the disk as it was. A run that fails (a
    full disk, an engine that crashes) before its first clip removes what it made; after
    that, the whole clips stay with dataset.json, so a rerun resumes from them.

    Raises:
        GlassformerError: count outside [1, MAX_CLIPS], word_by_word outside [0, 1], no
            TTS engine, a folder that cannot be resumed (see check_resumable), or a failure
            while writing (one line).
    """
    from glassformer.files import output_path

    check_count(count)
    check_share(word_by_word)
    pitch_hz = check_pitch(pitch_hz)
    out = output_path(out)  # "" would be the current directory
    voices = available_voices()
    info = dataset_info(grammar, seed, val_fraction, voices, count, word_by_word, pitch_hz)
    check_resumable(out, info, grammar, voices)
    made = [p for p in (out, out / DATASET_INFO, out / "clips") if not p.exists()]
    try:
        write_dataset_info(out, info, noise_dir)  # first, so an interrupted run is recognised
        (out / "clips").mkdir(parents=True, exist_ok=True)
        return render_all(grammar, out, info, voices, workers, progress)
    except BaseException as error:
        if not any((out / "clips").glob("*.wav")):  # no clip made: leave no half-made folder
            remove_made(made)
        if isinstance(error, write_errors()):
            message = f"{out}: synthesis failed ({first_line(error)}); {kept(out)}"
            raise GlassformerError(message) from None
        raise


def write_errors() -> tuple[type[BaseException], ...]:
    """What a full disk or a failing engine raises: OSError from files, CalledProcessError
    from the engine's exit status, soundfile's own error class from writing a WAV."""
    import soundfile

    return OSError, subprocess.CalledProcessError, soundfile.SoundFileError


def kept(out: Path) -> str:
    """What a failed run leaves: whole clips (a rerun resumes from them) or nothing."""
    if any((out / "clips").glob("*.wav")):
        return "the clips written are kept and a rerun resumes from them"
    return "nothing was kept"


def remove_made(made: list[Path]) -> None:
    """Remove what this run created, deepest first (the folder only if left empty)."""
    for path in reversed(made):
        if path.name == "clips":
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_dir():
            remove_empty(path)
        else:
            path.unlink(missing_ok=True)


def remove_empty(folder: Path) -> None:
    """Remove `folder` if it is empty (something else may have been put there meanwhile)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def render_all(
    grammar: Grammar, out: Path, info: dict, voices: list[Voice], workers: int, progress: bool
) -> Path:
    """Render the clips missing from OUT/clips, then write the manifest (atomically)."""
    from glassformer.files import atomic_file
    from glassformer.progress import progress_bar

    count, share = info["count"], info["word_by_word"]
    pitch_hz = tuple(info["pitch_hz"]) if info["pitch_hz"] else None

    def work(job: Job) -> dict:
        clip_id, command, voice, _, clip_seed = job
        path = out / "clips" / f"{clip_id}.wav"
        if not path.is_file():
            words = is_word_by_word(clip_seed, share)
            render(voice, command.text, clip_seed, path, word_by_word=words, pitch_hz=pitch_hz)
        return manifest_row(job, share)

    jobs = itertools.islice(plan_jobs(grammar, info["seed"], info["val_fraction"], voices), count)
    bar = progress_bar(progress, total=count, desc="synthesizing", unit="clip")
    manifest = out / MANIFEST
    with (
        ThreadPoolExecutor(workers) as pool,
        atomic_file(manifest) as tmp,  # the old manifest stays until the new one is whole
        open(tmp, "w", encoding="utf-8") as file,
    ):
        while batch := list(itertools.islice(jobs, BATCH_CLIPS)):  # plan as we go
            for row in pool.map(work, batch):
                file.write(json.dumps(row) + "\n")
            bar.update(len(batch))
    bar.close()
    return manifest
