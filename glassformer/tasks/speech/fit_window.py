"""`glassformer fit-window`: a command encoder taught from packaged voices, in one command.

    installed voices (voice/synth.py) say digits one at a time and sentences of packaged
    grammars (Home Assistant's English, the appointments and desktop grammars, the user's)
    --> a student copy of the model's encoder learns to read them in windows of
        `window_step` seconds as the model's own encoder reads them in its 10-s window
    --> OUT/model: the model carrying the student as its command encoder
        (command_encoder.py): clips heard `from_seconds` or longer read it

The lesson is distillation. No label is learned, only the teacher's behaviour: the loss is
the KL divergence of the student's next-token distributions from the teacher's, teacher-
forced on the clip's words (after a grammar's context half the time, as the Listener runs a
zero-shot Whisper), at every position; the decoder is shared and frozen, only the encoder
learns. Two stages of `steps` each: in the first both read the same clips (noise mixed into
half of them when a noise folder is given), in the second the teacher reads each clip before
its noise, so the student learns to write in noise what Whisper writes for the clean clip
(docs/benchmarks.md, "A command in 150 ms", attempts 5, 7 and 13).

Resuming is running the same command again: the spoken clips are kept (OUT/work/pool.npz),
and the student, its optimizer and its step are saved every SAVE_EVERY steps. Everything a
user can get wrong is checked before the first clip is spoken.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from glassformer.errors import GlassformerError

if TYPE_CHECKING:
    import torch

    from glassformer.tasks.speech.model import SpeechModel

LOCK_FILE = ".fit-window.lock"
SAVE_EVERY = 25  # steps between saves of the student (a resume loses at most these)
DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
PITCH_HZ = (85.0, 250.0)  # the voices' mean F0 drawn from this range: more voices from few
PACKAGED = ["appointments.yaml", "desktop.yaml"]  # glassformer/voice/grammars/
STATE_FILES = (
    "encoder.safetensors",
    "optimizer.safetensors",
    "train_state.json",
    "rng.safetensors",
)  # OUT/work/state: train/state.py's files and the encoder


@dataclasses.dataclass(frozen=True)
class FitWindowConfig:
    """What `glassformer fit-window` does; every field has a default."""

    model: str = "whisper-tiny.en"  # the teacher, and the student's start
    window_step: float = 5.0  # the student's window: pad each clip to a multiple of this
    from_seconds: float = 1.5  # clips heard this long or longer read the student
    grammars: tuple[str, ...] = ()  # more sentences to speak (Rhino YAML), and their contexts
    entities: str = ""  # a home's names for Home Assistant's sentences (HOME.yaml)
    noise_dir: str = ""  # WAVs of the room, mixed into half of the clips at 0-30 dB
    clips: int = 800  # digits said alone, and as many sentences
    steps: int = 300  # each of the two stages; 12 clips a step
    batch: int = 12
    lr: float = 2e-5
    seed: int = 0

    def __post_init__(self) -> None:
        from glassformer.audio.io import MIN_WINDOW_STEP

        if not MIN_WINDOW_STEP <= self.window_step <= 30:
            raise GlassformerError(
                f"--window-step {self.window_step}: must be {MIN_WINDOW_STEP} to 30 seconds"
            )
        if not (math.isfinite(self.from_seconds) and 0 <= self.from_seconds <= 30):
            raise GlassformerError(f"--from-seconds {self.from_seconds}: must be 0 to 30")
        if not 20 <= self.clips <= 100_000:
            raise GlassformerError(f"--clips {self.clips}: must be 20 to 100,000")
        if not 1 <= self.steps <= 100_000 or not 1 <= self.batch <= 256:
            raise GlassformerError("--steps must be 1 to 100,000 and --batch 1 to 256")
        if not (math.isfinite(self.lr) and 0 < self.lr < 1):
            raise GlassformerError(f"--lr {self.lr}: must be above 0 and below 1")


def fit_window(config: FitWindowConfig, out: str | Path, progress: bool = True) -> Path:
    """Speak the clips, teach the student in two stages, write OUT/model; resumes whatever
    an earlier run with the same settings left in OUT/work. Returns OUT/model.

    Raises:
        GlassformerError: the module doc's checks, before anything is written.
    """
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.adapt import check_noise_dir, check_speakable
    from glassformer.tasks.speech.command_encoder import encoder_tensors, with_command_encoder
    from glassformer.tasks.speech.loading import check_speech_source, load_speech_model
    from glassformer.tasks.speech.pretrained import save_speech_model
    from glassformer.train.lock import run_directory_lock
    from glassformer.train.outputs import check_run_directory
    from glassformer.voice.grammar import Grammar

    out = check_run_directory(out)
    grammars = [Grammar.from_yaml(path) for path in config.grammars]
    for grammar, path in zip(grammars, config.grammars, strict=True):
        check_speakable(grammar, path)
    if config.noise_dir:
        check_noise_dir(config.noise_dir)
    check_speech_source(config.model, "--model")
    teacher = load_speech_model(config.model)
    check_teacher(teacher, config)
    sources = sentence_sources(config, grammars)  # the home file read and checked too
    with run_directory_lock(out, LOCK_FILE, "fit-window"):
        work = out / "work"
        work.mkdir(parents=True, exist_ok=True)
        check_same_settings(work, config)
        kept = (work / "pool.npz").is_file()
        say(progress, f"{2 * config.clips:,} clips " + ("kept from the last run" if kept else
            "to speak with the installed voices"))  # fmt: skip
        pool = spoken_pool(config, sources, work / "pool.npz", progress)
        noises = [load_audio(p) for p in noise_files(config.noise_dir)]
        contexts = grammar_contexts(teacher, grammars)
        student = teach(teacher, pool, noises, contexts, config, work, progress)
        weights = {name: t.detach() for name, t in encoder_tensors(student).items()}
        pair = with_command_encoder(teacher, weights, config.window_step, config.from_seconds)
        source = (
            f"{config.model}, and for clips heard {config.from_seconds:g} s or longer an "
            f"encoder taught to read {config.window_step:g}-s windows (glassformer fit-window)"
        )
        return save_speech_model(pair, out / "model", source)


def check_teacher(teacher: SpeechModel, config: FitWindowConfig) -> None:
    """A Whisper on torch (it reads a grammar's context; its encoder has a window to fit)."""
    import torch

    if not isinstance(teacher.model, torch.nn.Module):
        raise GlassformerError(
            f"--model {config.model}: an exported model; give the one it came from"
        )
    if teacher.rules.context_token is None or teacher.features.kind != "whisper":
        raise GlassformerError(f"--model {config.model}: only a Whisper's encoder is fitted")
    if teacher.command_encoder is not None:
        raise GlassformerError(f"--model {config.model}: carries a command encoder already")
    own = teacher.features.window_step or teacher.features.window_seconds  # Whisper's: 10 s
    if config.window_step >= own:
        raise GlassformerError(
            f"--window-step {config.window_step:g}: the model's own window is {own:g} s; "
            "a shorter one is the point"
        )


def check_same_settings(work: Path, config: FitWindowConfig) -> None:
    """OUT/work belongs to one set of settings: a resume with others would mix two runs."""
    saved = work / "settings.json"
    settings = json.dumps(dataclasses.asdict(config), sort_keys=True)
    if saved.is_file() and saved.read_text() != settings:
        raise GlassformerError(
            f"{work}: made with other settings ({saved}); give another --out, or the same flags"
        )
    saved.write_text(settings)


def sentence_sources(config: FitWindowConfig, grammars: list) -> list:
    """What the voices say besides digits: Home Assistant's English sentences (with the
    home's names, if given), the packaged grammars and the user's."""
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.homeassistant import HomeAssistantGrammar
    from glassformer.voice.homes import Home

    home = Home.from_yaml(config.entities) if config.entities else Home()
    packaged = Path(__file__).resolve().parents[2] / "voice" / "grammars"
    sources = [HomeAssistantGrammar.load("en", home)]
    return sources + [Grammar.from_yaml(packaged / name) for name in PACKAGED] + grammars


def spoken_pool(
    config: FitWindowConfig, sources: list, cache: Path, progress: bool = True
) -> tuple[list, list]:
    """(digits, sentences): `clips` digits said alone, slowly, as people say them one at a
    time, and `clips` sentences, each by a voice drawn (an engine, then one of its voices) at
    a pitch drawn from PITCH_HZ; kept in `cache` (the clips end to end, their lengths, their
    texts), read back on a resume."""
    from glassformer.progress import progress_bar
    from glassformer.voice.synth import available_voices, choose_voice, speak

    if cache.is_file():
        with np.load(cache, allow_pickle=False) as saved:
            audio, lengths = saved["audio"], saved["lengths"]
            texts = json.loads(str(saved["texts"]))
        pairs = list(zip(np.split(audio, np.cumsum(lengths)[:-1]), texts, strict=True))
        return pairs[: config.clips], pairs[config.clips :]
    rng = random.Random(config.seed)
    voices = available_voices()
    jobs = [(DIGITS[n % 10], True) for n in range(config.clips)]
    jobs += [(rng.choice(sources).sample(rng).text, False) for _ in range(config.clips)]
    plan = [(choose_voice(voices, rng), text, slow, rng.random()) for text, slow in jobs]

    def render(job: tuple) -> tuple[np.ndarray, str]:
        voice, text, slow, seed = job
        return speak(voice, text, random.Random(seed), slow=slow, pitch_hz=PITCH_HZ), text

    bar = progress_bar(progress, total=len(plan), desc="speaking", unit="clip")
    with ThreadPoolExecutor(2) as threads, bar:
        pairs = []
        for pair in threads.map(render, plan):  # the engines are processes: two at a time
            pairs.append(pair)
            bar.update(1)
    texts = json.dumps([text for _, text in pairs])
    write_npz(cache, audio=np.concatenate([a for a, _ in pairs]),
              lengths=np.array([len(a) for a, _ in pairs]), texts=np.array(texts))  # fmt: skip
    return pairs[: config.clips], pairs[config.clips :]


def write_npz(path: Path, **arrays: np.ndarray) -> None:
    from glassformer.files import atomic_file

    with atomic_file(path, ".npz") as tmp:
        np.savez(tmp, **arrays)


def noise_files(noise_dir: str) -> list[Path]:
    return sorted(Path(noise_dir).glob("*.wav")) if noise_dir else []


def grammar_contexts(teacher: SpeechModel, grammars: list) -> list[tuple[int, ...]]:
    """The zero-shot context prompts the student learns to read behind (loading.use_grammar):
    the packaged grammars' and the user's."""
    from glassformer.tasks.speech.loading import load_grammar, use_grammar

    packaged = Path(__file__).resolve().parents[2] / "voice" / "grammars"
    grammars = [load_grammar(packaged / name) for name in PACKAGED] + list(grammars)
    return [use_grammar(teacher, grammar).context for grammar in grammars]


def draw(pool: tuple[list, list], noises: list, rng: random.Random) -> tuple:
    """One training clip: 1-5 digits with pauses, or a sentence; up to 0.5 s of silence
    around; noise at 0-30 dB into half (with noises). Returns (the clip, before its noise,
    its words)."""
    from glassformer.audio.augment import add_noise

    digits, sentences = pool
    if rng.random() < 0.5:
        parts = [rng.choice(digits) for _ in range(rng.randint(1, 5))]
        pieces = []
        for audio, _ in parts:
            pieces += [audio, np.zeros(int(16_000 * rng.uniform(0.05, 0.4)), np.float32)]
        audio, text = np.concatenate(pieces), " ".join(t for _, t in parts)
    else:
        audio, text = rng.choice(sentences)
    silence = [np.zeros(int(16_000 * rng.uniform(0, 0.5)), np.float32) for _ in range(2)]
    clean = np.concatenate([silence[0], audio, silence[1]]).astype(np.float32)
    heard = clean
    if noises and rng.random() < 0.5:
        heard = add_noise(clean, rng.choice(noises), rng.uniform(0, 30), rng).astype(np.float32)
    return heard, clean, text


def kl_loss(
    teacher: SpeechModel, student: SpeechModel, batch: list[tuple], contexts: list, clean: bool,
    rng: random.Random,
) -> torch.Tensor:  # fmt: skip
    """The mean over clips of KL(teacher || student) of the next-token distributions,
    teacher-forced on the clip's words; the teacher reads its own window of each clip (the
    clip before its noise when `clean`), the student its fitted window of the clip heard."""
    import torch

    from glassformer.tasks.speech.clips import clip_audio, heard_features, pad_features

    def read(speech: SpeechModel, clips: list) -> tuple:
        features = [heard_features(speech, clip_audio(speech, clip)) for clip in clips]
        lengths = torch.tensor([f.size(-1) for f in features])
        return speech.model.encode(pad_features(features), lengths)

    with torch.no_grad():
        t_memory, t_padding = read(teacher, [c if clean else h for h, c, _ in batch])
    s_memory, s_padding = read(student, [h for h, _, _ in batch])
    total = torch.zeros(())
    for b, (_, _, text) in enumerate(batch):
        words = teacher.tokenizer.encode(" " + text.strip().capitalize() + ".")
        context = list(rng.choice(contexts)) if rng.random() < 0.5 else []
        prompt = context + list(teacher.rules.prompt)
        tokens = torch.tensor([prompt + words])  # its last position predicts the end
        last = len(teacher.rules.prompt) + len(words)
        row = slice(b, b + 1)
        with torch.no_grad():
            target = teacher.model.decode(tokens, t_memory[row], t_padding[row], last=last)
            target = target.log_softmax(-1)
        mine = student.model.decode(tokens, s_memory[row], s_padding[row], last=last)
        total = total + (target.exp() * (target - mine.log_softmax(-1))).sum(-1).mean()
    return total / len(batch)


def teach(
    teacher: SpeechModel, pool: tuple, noises: list, contexts: list, config: FitWindowConfig,
    work: Path, progress: bool,
) -> torch.nn.Module:  # fmt: skip
    """The two stages (module doc), resumed from work/state if a run left it there; returns
    the student's network (its encoder taught)."""
    import copy

    import torch

    from glassformer.progress import progress_bar
    from glassformer.tasks.speech.command_encoder import encoder_tensors

    network = copy.deepcopy(teacher.model)
    fitted = dataclasses.replace(teacher.features, window_step=config.window_step)
    student = dataclasses.replace(teacher, model=network, features=fitted)
    learned = [t for t in encoder_tensors(network).values() if isinstance(t, torch.nn.Parameter)]
    for parameter in network.parameters():
        parameter.requires_grad_(False)
    for parameter in learned:
        parameter.requires_grad_(True)
    teacher.model.eval()
    network.eval()  # Whisper has no dropout; eval keeps it so
    total = 2 * config.steps
    optimizer = torch.optim.AdamW(learned, lr=config.lr, weight_decay=0.0)
    done = resume(work / "state", network, optimizer)
    with progress_bar(progress, total=total, initial=done, desc="teaching", unit="step") as bar:
        for step in range(done, total):
            stage, within = divmod(step, config.steps)
            if within == 0:  # each stage its own warm-up and decay, as two runs would
                optimizer = torch.optim.AdamW(learned, lr=config.lr, weight_decay=0.0)
            scale = min(1.0, (within + 1) / 20) * (0.1 + 0.9 * (1 - within / config.steps))
            for group in optimizer.param_groups:
                group["lr"] = config.lr * scale
            rng = random.Random(f"{config.seed}:{step}")  # a resume draws the same clips
            batch = [draw(pool, noises, rng) for _ in range(config.batch)]
            loss = kl_loss(teacher, student, batch, contexts, stage == 1, rng)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(learned, 1.0)
            optimizer.step()
            bar.update(1)
            bar.set_postfix(kl=f"{loss.item():.4f}")
            if (step + 1) % SAVE_EVERY == 0 or step + 1 == total:
                save_state(work / "state", network, optimizer, step + 1, loss.item())
    return network


def save_state(
    folder: Path, network: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int, kl: float
) -> None:
    """The student's encoder, its optimizer and its step, written as one folder atomically."""
    import torch
    from safetensors.torch import save_file

    from glassformer.files import write_directory_atomically
    from glassformer.tasks.speech.command_encoder import encoder_tensors
    from glassformer.train.state import write_train_state

    tensors = {n: t.detach().contiguous() for n, t in encoder_tensors(network).items()}

    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp / "encoder.safetensors"))
        progress = {"step": step, "best_val_loss": kl, "val_loss": kl}
        write_train_state(tmp, optimizer, torch.Generator(), progress)

    write_directory_atomically(folder, write, STATE_FILES)


def resume(folder: Path, network: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """The step a saved state reached (0 without one), its encoder and optimizer restored."""
    import torch

    from glassformer.tasks.speech.command_encoder import encoder_tensors
    from glassformer.train.checkpoint import check_tensors
    from glassformer.train.state import read_tensors, read_train_state

    if not (folder / "encoder.safetensors").is_file():
        return 0
    weights = read_tensors(folder / "encoder.safetensors")
    check_tensors(weights, encoder_tensors(network), folder / "encoder.safetensors")
    network.load_state_dict(weights, strict=False)
    return int(read_train_state(folder, optimizer, torch.Generator())["step"])


def say(progress: bool, line: str) -> None:
    if progress:
        print(line, flush=True)
