"""`make demo` / `glassformer demo`: the main job, end to end, on a fresh machine.

1. Synthesize the default desktop grammar's commands with every installed TTS voice
   (cached: a second run reuses the clips).
2. Train the speech Transformer on them, on the CPU, with augmentation (a second run reuses
   the finished model).
3. Transcribe clips spoken by voices never used in training, clean and with cafe noise, and
   print what was heard, the intent and slots, word error rate and command acceptance.
4. Draw the decoder's cross-attention over the audio frames for one clip.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from glassformer.audio.augment import add_noise
from glassformer.audio.io import SAMPLE_RATE, load_audio
from glassformer.corpora import default_cache_root
from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
from glassformer.tasks.speech.inference import (
    Scored,
    is_accepted,
    load_speech_model,
    summarize,
    transcribe,
)
from glassformer.tasks.speech.training import train_speech
from glassformer.train.config import TrainConfig
from glassformer.voice.grammar import Grammar
from glassformer.voice.synth import read_manifest, synthesize

GRAMMAR = Path(__file__).resolve().parent / "voice" / "grammars" / "desktop.yaml"
SHARED_NOISE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "noise"
NOISY_SNR_DB = 10.0


def is_finished(out: Path, steps: int) -> bool:
    state = out / "last" / "train_state.json"
    return state.is_file() and json.loads(state.read_text())["step"] >= steps


def demo_noise() -> tuple[np.ndarray, str]:
    """Cafe noise from ../shared/data when present, else generated pink-ish noise."""
    cafe = SHARED_NOISE / "cafe.wav"
    if cafe.is_file():
        return load_audio(cafe), "cafe noise"
    white = np.random.default_rng(0).standard_normal(16_000 * 10)
    return np.cumsum(white).astype(np.float32) * 0.01, "generated noise"


def run_demo(
    out: str | Path = "runs/demo",
    clips: int = 2500,
    steps: int | None = None,
    preset: str = "small",
    test_clips: int = 40,
    progress: bool = True,
) -> dict:
    out = Path(out)
    grammar = Grammar.from_yaml(GRAMMAR)
    data_dir = default_cache_root() / "voice" / f"desktop-{clips}"
    print(
        f"1/4 synthesizing {clips} commands of {GRAMMAR.name} ({grammar.count():,} possible "
        f"sentences) into {data_dir}"
    )
    synthesize(grammar, data_dir, clips, progress=progress)
    recipe = SPEECH_PRESETS[preset]
    train_config = TrainConfig(**{**recipe.train, **({"steps": steps} if steps else {})})
    noise, noise_name = demo_noise()
    if is_finished(out, train_config.steps):
        print(f"2/4 reusing the trained model in {out}")
    else:
        print(f"2/4 training the speech Transformer ({train_config.steps} steps) into {out}")
        noise_dir = str(SHARED_NOISE) if SHARED_NOISE.is_dir() else ""
        resume = (out / "last" / "train_state.json").is_file()
        train_speech(
            GRAMMAR,
            data_dir,
            dict(recipe.model),
            train_config,
            SpeechDataConfig(noise_dir=noise_dir),
            out,
            resume,
            progress,
        )

    speech = load_speech_model(out)
    rows = [r for r in read_manifest(data_dir) if r["split"] == "val"][:test_clips]
    print(
        f"3/4 transcribing {len(rows)} clips by voices never heard in training, clean and "
        f"with {noise_name} at {NOISY_SNR_DB:.0f} dB SNR"
    )
    rng = random.Random(0)
    clips = [load_audio(data_dir / row["audio"]) for row in rows]
    results, first_heard = {}, None
    for condition in ("clean", "noisy"):
        scored = []
        for row, waveform in zip(rows, clips, strict=True):
            if condition == "noisy":
                waveform = add_noise(waveform, noise, NOISY_SNR_DB, rng)
            heard = transcribe(speech, waveform)
            scored.append(Scored(row["id"], row["text"], heard, is_accepted(heard, row)))
        first_heard = first_heard or scored[0].transcript.text  # the first clean clip
        results[condition] = summarize(scored)
        print_table(condition, scored[:8], rows)
    for condition, summary in results.items():
        print(
            f"{condition:>6}: command acceptance {summary['acceptance']:.1%}, "
            f"WER {summary['wer']:.3f}, CER {summary['cer']:.3f} over {summary['files']} clips"
        )
    figure = out / "cross_attention.png"
    draw_cross_attention(speech, clips[0], first_heard, figure)
    print(f"4/4 cross-attention of the decoder over the audio frames: {figure}")
    return results


def print_table(condition: str, scored: list[Scored], rows: list[dict]) -> None:
    voices = {r["id"]: r["voice"] for r in rows}
    print(f"\n  {condition}: clip  voice  |  truth  ->  heard  |  intent slots")
    for s in scored:
        mark = "ok " if s.accepted else "ERR"
        meaning = f"{s.transcript.intent} {s.transcript.slots}" if s.transcript.intent else "-"
        print(
            f"  {mark} {s.file} {voices[s.file]:<28} | {s.truth} -> {s.transcript.text} | {meaning}"
        )
    print()


def draw_cross_attention(speech, waveform: np.ndarray, heard: str, path: Path) -> None:  # noqa: ANN001
    """Teacher-force the model's own transcription `heard` of `waveform` and plot its last
    decoder block's cross-attention, averaged over heads."""
    from glassformer.explain.attention_maps import clip_cross_attention
    from glassformer.explain.plots import plot_cross_attention

    maps = clip_cross_attention(speech, waveform, heard)
    probs = maps.probs[-1].mean(axis=0)  # (T, S): the last block, averaged over heads
    seconds = len(maps.waveform) / SAMPLE_RATE
    plot_cross_attention(probs, maps.queries, seconds / probs.shape[1], path, f'"{heard}"')
