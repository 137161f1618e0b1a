"""Home Assistant's sentences, spoken, understood: ours against what Home Assistant users have.

    .venv/bin/python bench/bench_homeassistant.py [--languages en fr es de it nl zh-CN]
        [--count 20] [--snrs 12 6] [--out runs/bench_homeassistant.json]
    .venv/bin/python bench/bench_homeassistant.py cost     # the grammar's build time, memory
    .venv/bin/python bench/bench_homeassistant.py speed    # decode time against the coffee's

For each language: --count sentences drawn from its grammar (the speech subset; Chinese,
which has none, the full set) with the benchmark's home (bench/homes/LANG.yaml, names in no
test), spoken by every installed voice that speaks it (espeak-ng for all; flite too for
English), clean and with the shared cafe noise at each SNR. Speech that is no command, which
should get no intent: 8 sentences of the language (espeak-ng), 3 clips of cafe noise alone,
and for English, real recorded speech: 20 appointment requests (voice/recorded.py, Debian's
recorded voice) and 30 Speech Commands words ("nine", "right", "zero"). Two systems on the
same clips:

    ours       glassformer's Listener: --intents LANG --entities HOME (tiny.en for English,
               whisper-base otherwise), constrained decoding, hassil reads the sentence
    baseline   what Home Assistant users run today: free-text Whisper on the same weights
               through CTranslate2 (as wyoming-faster-whisper runs it; beam 4, the language
               forced), then hassil on its text with the same home (Home Assistant's agent)

A command is right when the intent and every slot equal those of the sentence spoken; speech
that is no command is rejected when no intent is given. Time: from the end of the clip to the
intent (the whole decode; a clip is whole when it ends). Prints JSON and a table.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import scratch_folder

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
LANGUAGES = ["en", "fr", "es", "de", "it", "nl", "zh-CN"]
ESPEAK = {"en": "en-us", "fr": "fr", "es": "es", "de": "de", "it": "it", "nl": "nl", "zh-CN": "cmn"}
NOT_COMMANDS = {
    "en": [
        "the weather was lovely at the beach yesterday",
        "my sister bought a new bicycle last week",
        "the train to the city leaves at noon",
        "I think the soup needs more salt",
        "we watched a documentary about whales",
        "the children are playing in the garden",
        "coffee has become very expensive",
        "I forgot my keys at my friend's house",
    ],
    "fr": [
        "il faisait très beau à la plage hier",
        "ma soeur a acheté un nouveau vélo",
        "le train pour Paris part à midi",
        "je pense que la soupe manque de sel",
        "nous avons regardé un film sur les baleines",
        "les enfants jouent dans le jardin",
        "le café est devenu très cher",
        "j'ai oublié mes clés chez mon ami",
    ],
    "es": [
        "ayer hizo muy buen tiempo en la playa",
        "mi hermana compró una bicicleta nueva",
        "el tren a Madrid sale a mediodía",
        "creo que a la sopa le falta sal",
        "vimos un documental sobre ballenas",
        "los niños juegan en el jardín",
        "el café se ha vuelto muy caro",
        "olvidé mis llaves en casa de mi amigo",
    ],
    "de": [
        "gestern war das Wetter am Strand herrlich",
        "meine Schwester hat ein neues Fahrrad gekauft",
        "der Zug nach Berlin fährt um zwölf Uhr",
        "ich glaube die Suppe braucht mehr Salz",
        "wir haben einen Film über Wale gesehen",
        "die Kinder spielen im Garten",
        "Kaffee ist sehr teuer geworden",
        "ich habe meine Schlüssel bei meinem Freund vergessen",
    ],
    "it": [
        "ieri il tempo al mare era bellissimo",
        "mia sorella ha comprato una bicicletta nuova",
        "il treno per Roma parte a mezzogiorno",
        "penso che la zuppa abbia bisogno di sale",
        "abbiamo visto un documentario sulle balene",
        "i bambini giocano in giardino",
        "il caffè è diventato molto caro",
        "ho dimenticato le chiavi da un amico",
    ],
    "nl": [
        "gisteren was het prachtig weer op het strand",
        "mijn zus heeft een nieuwe fiets gekocht",
        "de trein naar Amsterdam vertrekt om twaalf uur",
        "ik denk dat de soep meer zout nodig heeft",
        "we hebben een film over walvissen gezien",
        "de kinderen spelen in de tuin",
        "koffie is erg duur geworden",
        "ik ben mijn sleutels vergeten bij een vriend",
    ],
    "zh-CN": [
        "昨天海边的天气非常好",
        "我妹妹买了一辆新自行车",
        "去北京的火车中午出发",
        "我觉得汤里需要多放点盐",
        "我们看了一部关于鲸鱼的纪录片",
        "孩子们在花园里玩",
        "咖啡变得很贵了",
        "我把钥匙忘在朋友家了",
    ],
}


def voices(language: str) -> list[str]:
    """The voices that speak a language: espeak-ng's, and flite's for English."""
    import shutil

    return [f"espeak-ng:{ESPEAK[language]}"] + (
        ["flite:slt"] if language == "en" and shutil.which("flite") else []
    )


def speak(voice: str, text: str, folder: Path, name: str) -> np.ndarray:
    from glassformer.audio.io import load_audio

    engine, _, variant = voice.partition(":")
    path = folder / f"{name}.wav"
    if engine == "flite":
        command = ["flite", "-voice", variant, "-t", text, "-o", str(path)]
    else:
        command = ["espeak-ng", "-v", variant, "-w", str(path), text]
    subprocess.run(command, check=True, capture_output=True)
    return load_audio(path)


def commands(grammar, count: int, seed: int) -> list:  # noqa: ANN001
    """`count` distinct sentences of the grammar with no free text (a placeholder word)."""
    from glassformer.voice.network_walks import WILDCARD_SAMPLE

    rng, seen, drawn = random.Random(seed), set(), []
    while len(drawn) < count:
        command = grammar.sample(rng)
        if WILDCARD_SAMPLE not in command.text and command.text not in seen:
            seen.add(command.text)
            drawn.append(command)
    return drawn


class Baseline:
    """Free-text Whisper through CTranslate2, its language forced, then hassil."""

    def __init__(self, model: str, language: str, grammar) -> None:  # noqa: ANN001
        import ctranslate2

        from glassformer.convert.installed import ctranslate2_directory
        from glassformer.tasks.speech.loading import (
            load_speech_model,
            use_language,
            whisper_language,
        )

        directory = ctranslate2_directory(model, scratch_folder())
        self.whisper = ctranslate2.models.Whisper(str(directory), compute_type="float32")
        self.speech = use_language(load_speech_model(model), whisper_language(language))
        self.grammar = grammar

    def understand(self, waveform: np.ndarray) -> tuple[str | None, dict, str]:
        import ctranslate2
        import torch

        from glassformer.audio.features import compute_features

        features = compute_features(torch.from_numpy(waveform), self.speech.features)[None]
        storage = ctranslate2.StorageView.from_array(np.ascontiguousarray(features.numpy()))
        prompt = list(self.speech.rules.prompt)
        result = self.whisper.generate(storage, [prompt], beam_size=4)[0]
        text = self.speech.tokenizer.decode(result.sequences_ids[0]).strip()
        command = self.grammar.parse(text)
        return (command.intent, command.slots, text) if command else (None, {}, text)


def run_language(
    language: str, count: int, snrs: list[float], seed: int, english: str = "whisper-tiny.en"
) -> dict:
    from glassformer.audio.augment import add_noise
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    home = ROOT / "bench" / "homes" / f"{language}.yaml"
    sentences = "full" if language == "zh-CN" else "speech"
    model = english if language == "en" else "whisper-base"
    config = ListenerConfig(model, intents=language, entities=str(home), sentences=sentences)
    ours = Listener(config)
    baseline = Baseline(model, language, ours.grammar)
    noise = load_audio(SHARED / "noise" / "cafe.wav")
    rng = random.Random(seed)
    drawn = commands(ours.grammar, count, seed)
    rows, folder = [], scratch_folder()
    for n, command in enumerate(drawn):
        for v, voice in enumerate(voices(language)):
            clean = speak(voice, command.text, folder, f"{n}-{v}")
            for snr in [None, *snrs]:
                clip = clean if snr is None else add_noise(clean, noise, snr, rng)
                truth = (command.intent, command.slots)
                started = time.perf_counter()
                result = ours.understand(clip)
                ours_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                intent, slots, text = baseline.understand(clip)
                base_ms = (time.perf_counter() - started) * 1000
                rows.append(
                    {
                        "said": command.text,
                        "voice": voice,
                        "snr": snr,
                        "ours": (result.intent, result.slots) == truth,
                        "ours_text": result.text,
                        "ours_ms": ours_ms,
                        "baseline": (intent, slots) == truth,
                        "baseline_text": text,
                        "baseline_ms": base_ms,
                    }
                )
    rejected = []
    for said, clip in not_commands(language, folder, noise, rng):
        result = ours.understand(clip)
        rejected.append(
            {"said": said, "ours": not result.accepted, "ours_text": result.text}
            | {"baseline": baseline.understand(clip)[0] is None}
        )
    return {"language": language, "model": model, "rows": rows, "not_commands": rejected}


def not_commands(language: str, folder: Path, noise: np.ndarray, rng: random.Random) -> list:
    """(what was said, clip) for speech that is no command: sentences of the language, noise
    alone, and for English real recordings of other commands and words."""
    from glassformer.audio.io import load_audio
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    clips = [
        (text, speak(voices(language)[0], text, folder, f"not-{n}"))
        for n, text in enumerate(NOT_COMMANDS[language])
    ]
    for n in range(3):
        start = rng.randrange(len(noise) - 48_000)
        clips.append((f"(cafe noise {n})", noise[start : start + 48_000]))
    if language == "en":
        voice = find_voice()
        if voice is not None:
            grammar = Grammar.from_yaml(
                ROOT / "glassformer" / "voice" / "grammars" / "appointments.yaml"
            )
            clips += [(f"(recorded) {c.text}", w) for c, w in recorded_commands(grammar, voice, 20)]
        words = sorted((SHARED / "speech" / "speech_commands_mini").glob("*/*.wav"))
        clips += [(f"(speech commands) {p.parent.name}", load_audio(p)) for p in words[::5]]
    return clips


def summary(result: dict) -> dict:
    rows = result["rows"]
    conditions = sorted({r["snr"] for r in rows}, key=lambda s: -1 if s is None else -s)
    out = {"language": result["language"], "model": result["model"], "clips": len(rows)}
    for snr in conditions:
        kept = [r for r in rows if r["snr"] == snr]
        name = "clean" if snr is None else f"{snr:g}dB"
        out[f"ours_{name}"] = sum(r["ours"] for r in kept) / len(kept)
        out[f"baseline_{name}"] = sum(r["baseline"] for r in kept) / len(kept)
    out["ours_rejected"] = statistics.mean(r["ours"] for r in result["not_commands"])
    out["baseline_rejected"] = statistics.mean(r["baseline"] for r in result["not_commands"])
    out["ours_ms_p50"] = statistics.median(r["ours_ms"] for r in rows)
    out["baseline_ms_p50"] = statistics.median(r["baseline_ms"] for r in rows)
    return out


def cost() -> list[dict]:
    """Build time and peak memory of the constraint: speech and full English sets with a home
    of 10 and of 200 devices, each in a fresh process (its peak is its own)."""
    script = """
import resource, sys, time
from glassformer.voice.homeassistant import HomeAssistantGrammar
from glassformer.voice.homes import Home
entities = [{"name": f"Device {n} " + "abcdefghij"[n % 10], "id": f"light.d{n}"}
            for n in range(int(sys.argv[2]))]
home = Home.from_dict({"areas": [{"name": f"Room {n}"} for n in range(10)],
                       "entities": entities}, "generated")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
grammar = HomeAssistantGrammar.load("en", home, sys.argv[1])
took = time.perf_counter() - started
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(took, peak, grammar.network.size)
"""
    rows = []
    for sentences in ("speech", "full"):
        for devices in (10, 200):
            out = subprocess.run(
                [sys.executable, "-c", script, sentences, str(devices)],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            rows.append(
                {"sentences": sentences, "devices": devices, "build_s": round(float(out[0]), 2)}
                | {"memory_mb": round(float(out[1])), "states": int(out[2])}
            )
    return rows


def speed(count: int = 10) -> list[dict]:
    """Decode time per command on one thread, whisper-tiny.en: Home Assistant's English
    sentences (speech subset, the benchmark's home) against the coffee grammar, each on
    `count` of its own commands spoken by espeak-ng (the median of three runs of each)."""
    import torch

    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    torch.set_num_threads(1)
    folder, rows = scratch_folder(), []
    home = str(ROOT / "bench" / "homes" / "en.yaml")
    for name, config in [
        ("home assistant", ListenerConfig(intents="en", entities=home)),
        ("coffee", ListenerConfig(grammar=str(SHARED / "grammars" / "coffee_maker.yaml"))),
    ]:
        listener = Listener(config)
        drawn = commands(listener.grammar, count, 0)
        clips = [
            speak("espeak-ng:en-us", c.text, folder, f"{name}-{n}") for n, c in enumerate(drawn)
        ]
        listener.understand(clips[0])  # warm: the first decode reads the vocabulary's pages
        times = []
        for clip in clips:
            runs = []
            for _ in range(3):
                started = time.perf_counter()
                listener.understand(clip)
                runs.append((time.perf_counter() - started) * 1000)
            times.append(statistics.median(runs))
        rows.append({"grammar": name, "commands": count, "ms_p50": round(statistics.median(times))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", nargs="?", default="accuracy", choices=["accuracy", "cost", "speed"]
    )
    parser.add_argument("--languages", nargs="+", default=LANGUAGES)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--snrs", nargs="*", type=float, default=[12.0, 6.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--english-model", default="whisper-tiny.en", help="or whisper-base")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_homeassistant.json")
    args = parser.parse_args()
    if args.what != "accuracy":
        print(json.dumps(cost() if args.what == "cost" else speed(), indent=1))
        return
    from glassformer.files import write_text_atomically

    results, table = [], []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for language in args.languages:
        results.append(run_language(language, args.count, args.snrs, args.seed, args.english_model))
        table.append(summary(results[-1]))
        print(json.dumps(table[-1]), file=sys.stderr, flush=True)
        # each language kept as it ends: an interrupted run loses only the one it was on
        write_text_atomically(args.out, json.dumps(results, ensure_ascii=False, indent=1))
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
