"""Rejection: how often a grammar's commands are kept and speech that is no command refused,
at each reject_ratio (a DET-style table: true accepts beside false accepts).

    .venv/bin/python bench/bench_rejection.py [--grammars coffee en de es it nl fr]
        [--count 15] [--model MODEL] [--out runs/bench_rejection.json] [--rows SAVED.json]
        [--hearings listener|both|context|plain]

Each grammar (the coffee grammar, or Home Assistant's sentences of a language with the
benchmark's home, bench/homes/LANG.yaml) is decoded on two kinds of clips:

    commands      --count of its sentences spoken by espeak-ng, clean and with cafe noise at
                  6 dB SNR: right when the intent and every slot are those said, and kept
    not commands  speech that is no command of it: 8 sentences of its language (espeak-ng),
                  3 clips of cafe noise alone; for English grammars, real recordings too:
                  30 Speech Commands words and 20 appointment requests (Debian's
                  recorded voice)

For each clip the constrained decode's confidence (geometric-mean token probability) and two
free decodes' (greedy, the same memory; with the grammar's context, "free", and without it,
"plain") are kept, so that every threshold is scored on the same decodes. A result is kept
when its confidence is at least the model's reject_below (0.01 for Whisper) and, where it is
under reject_ratio, at least reject_ratio times each free decode's and (the "agreement test"
column) written like its words (transcript.agreement at least MIN_AGREEMENT): the Listener's
own rule, scored with and without that second test. `--hearings` scores other rules: both
free decodes for every model, or one of them only (the rule before: `context`).
`--no-speech-doubt` and `--language-doubt` score two more doubts measured and not kept (each
row also holds Whisper's no-speech probability and, for a multilingual model, its
probability of the prompt's language: docs/benchmarks.md, attempts 7 and 9).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_homeassistant as ha  # noqa: E402 - the voices, homes and not-commands
from common import scratch_folder  # noqa: E402

RATIOS = [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3]


def decodes(name: str, count: int, seed: int, model: str | None = None) -> list[dict]:
    from glassformer.audio.augment import add_noise
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.inference import transcribe_many
    from glassformer.tasks.speech.listener import Listener

    if name == "coffee":
        language = "en"
        config = ListenerConfig(grammar=str(ha.SHARED / "grammars" / "coffee_maker.yaml"))
    else:
        language = name
        home = ha.ROOT / "bench" / "homes" / f"{name}.yaml"
        config = ListenerConfig(intents=name, entities=str(home))
    if model is not None:
        config = dataclasses.replace(config, model=model)
    listener = Listener(config)
    constrained = dataclasses.replace(listener.options, reject_below=0.0, reject_ratio=0.0)
    free = dataclasses.replace(listener.options, constrain=False, beam_size=1)
    bare = dataclasses.replace(listener.speech, context=())  # free words without the grammar's
    noise, rng = load_audio(ha.SHARED / "noise" / "cafe.wav"), random.Random(seed)
    folder, clips = scratch_folder(), []
    for n, command in enumerate(ha.commands(listener.grammar, count, seed)):
        clean = ha.speak(ha.voices(language)[0], command.text, folder, f"{n}")
        clips.append((command, "clean", clean))
        clips.append((command, "6dB", add_noise(clean, noise, 6.0, rng)))
    clips += [
        (said, "no command", clip) for said, clip in ha.not_commands(language, folder, noise, rng)
    ]
    rows = []
    for said, kind, clip in clips:
        command = transcribe_many(listener.speech, [clip], constrained)[0]
        heard = transcribe_many(listener.speech, [clip], free)[0]
        plain = transcribe_many(bare, [clip], free)[0]
        is_command = kind != "no command"
        right = is_command and (command.intent, command.slots) == (said.intent, said.slots)
        rows.append(
            {"grammar": name, "kind": kind, "said": said.text if is_command else said}
            | {"right": right, "found": command.intent is not None, "text": command.text}
            | {"confidence": command.confidence, "free_confidence": heard.confidence}
            | {"free_text": heard.text, "floor": listener.speech.rules.reject_below}
            | {"plain_confidence": plain.confidence, "plain_text": plain.text}
            | {"multilingual": bool(listener.speech.language_slots())}
            | {"no_speech": command.no_speech}
            | {"language": language_probability(listener.speech, clip)}
            | {"plain_language": language_probability(bare, clip)}
        )
    return rows


def language_probability(speech, clip) -> float | None:  # noqa: ANN001 - a SpeechModel, audio
    """A multilingual Whisper's probability that the clip is in the language its prompt
    names, among the languages it knows (its <|xx|> tokens after <|startoftranscript|>, as
    Whisper's own language detection reads them), with the model's context before the prompt
    as it is (the grammar's phrases, or none); None for an English-only model."""
    import torch

    from glassformer.tasks.speech.clips import clip_features

    slots = speech.language_slots()
    if not slots:
        return None
    special = speech.tokenizer.special_tokens
    first, last = special["<|startoftranscript|>"], special["<|translate|>"]
    sot = len(speech.context) + speech.rules.prompt.index(first)
    with torch.inference_mode():
        memory, padding = speech.model.encode(clip_features(speech, clip)[None])
        tokens = torch.tensor([list(speech.start[: sot + 1])])
        logits = speech.model.decode(tokens, memory, padding, last=1)[0, -1].double()
    languages = logits[first + 1 : last].softmax(-1)  # the <|xx|> tokens
    return float(languages[speech.rules.prompt[slots[0]] - first - 1])


HEARINGS = {  # --hearings: the free decodes a doubtful command is tested against
    "both": ("plain", "free"),  # without the grammar's context, then with it
    "context": ("free",),  # the rule before 2026-12-05: with the grammar's context only
    "plain": ("plain",),  # without it only
}  # "listener": the Listener's (transcript.free_hearings): both for a multilingual model


def hearings_of(row: dict, hearings: str) -> tuple[str, ...]:
    if hearings != "listener":
        return HEARINGS[hearings]
    multilingual = row.get("multilingual", row["grammar"] not in ("coffee", "en"))
    return HEARINGS["both" if multilingual else "context"]


def kept(
    row: dict,
    ratio: float,
    agree: bool = True,
    hearings: str = "listener",
    no_speech_doubt: float | None = None,
    language_doubt: tuple[str, float] | None = None,
) -> bool:
    """The Listener's rule on a row's decodes: the floor, then for a doubtful command (under
    `ratio` in confidence, or with `no_speech_doubt`, heard with Whisper's no-speech
    probability at least that, or with `language_doubt` (FIELD, P), a multilingual model's
    probability of the prompt's language (the row's FIELD: "language", with the grammar's
    context, or "plain_language", without) under P: rules measured, not the Listener's) the free
    decodes' test (tasks/speech/transcript.stands), or without `agree` only its probability
    ratio (the rule before the agreement test). `hearings`: which free decodes test it
    (HEARINGS, or "listener": hearings_of)."""
    from glassformer.tasks.speech.transcript import Transcript, stands

    confidence = row["confidence"]
    if not row["found"] or confidence < row["floor"]:
        return False
    silent = no_speech_doubt is not None and ratio > 0
    silent = silent and row.get("no_speech", 0.0) >= no_speech_doubt
    if language_doubt is not None and ratio > 0 and row.get(language_doubt[0]) is not None:
        silent = silent or row[language_doubt[0]] < language_doubt[1]
    if confidence >= ratio and not silent:
        return True  # not doubtful: no free decode runs
    names = hearings_of(row, hearings)
    if not agree:
        return all(confidence >= ratio * row[f"{name}_confidence"] for name in names)
    command = Transcript(row["text"], "found", {}, confidence)
    heard = [Transcript(row[f"{n}_text"], None, {}, row[f"{n}_confidence"]) for n in names]
    return stands(command, heard, ratio)


def table(
    rows: list[dict],
    hearings: str = "listener",
    no_speech_doubt: float | None = None,
    language_doubt: tuple[str, float] | None = None,
) -> list[dict]:
    out = []
    for name in dict.fromkeys(r["grammar"] for r in rows):
        mine = [r for r in rows if r["grammar"] == name]
        commands = [r for r in mine if r["kind"] != "no command"]
        others = [r for r in mine if r["kind"] == "no command"]
        for ratio in RATIOS:
            for agree in (False, True):
                doubts = (no_speech_doubt, language_doubt)
                keeps = [kept(r, ratio, agree, hearings, *doubts) for r in commands]
                right = [r["right"] and k for r, k in zip(commands, keeps, strict=True)]
                wrong = [not r["right"] and k for r, k in zip(commands, keeps, strict=True)]
                refused = [not kept(r, ratio, agree, hearings, *doubts) for r in others]
                out.append(
                    {"grammar": name, "reject_ratio": ratio, "agreement": agree}
                    | {"commands_right_kept": sum(right) / len(commands)}
                    | {"commands_wrong_kept": sum(wrong) / len(commands)}
                    | {"not_commands_rejected": sum(refused) / len(others)}
                    | {"commands": len(commands), "not_commands": len(others)}
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--grammars", nargs="+", default=["coffee", "en", "de", "es", "it", "nl", "fr"]
    )
    parser.add_argument("--count", type=int, default=15)
    parser.add_argument(
        "--model", help="the speech model (default: the Listener's for each language)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ha.ROOT / "runs" / "bench_rejection.json")
    parser.add_argument(
        "--rows", type=Path, help="score the decodes a run saved (its --out) instead of decoding"
    )
    parser.add_argument(
        "--hearings",
        choices=["listener", *HEARINGS],
        default="listener",
        help="the free decodes a doubtful command is tested against: the Listener's rule "
        "(both for a multilingual model, with the context for English-only tiny.en), "
        "without the grammar's context then with it (both), or one of them",
    )
    parser.add_argument(
        "--no-speech-doubt",
        type=float,
        help="score with a command also doubted where Whisper's no-speech probability (each "
        "row's no_speech) is at least this: a rule measured, not the Listener's",
    )
    parser.add_argument(
        "--language-doubt",
        nargs=2,
        metavar=("FIELD", "P"),
        help="score with a command also doubted where a multilingual model's probability of "
        "the prompt's language is under P (FIELD language: with the grammar's context; "
        "plain_language: without): a rule measured, not the Listener's",
    )
    args = parser.parse_args()
    from glassformer.files import write_text_atomically

    language_doubt = None
    if args.language_doubt is not None:
        language_doubt = (args.language_doubt[0], float(args.language_doubt[1]))

    rows: list[dict] = [] if args.rows is None else json.loads(args.rows.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.grammars if args.rows is None else []:
        rows += decodes(name, args.count, args.seed, args.model)
        write_text_atomically(args.out, json.dumps(rows, ensure_ascii=False, indent=1))
        print(
            f"{name}: {sum(r['grammar'] == name for r in rows)} clips", file=sys.stderr, flush=True
        )
    print(
        "| grammar | reject_ratio | agreement test | commands right, kept | wrong, kept "
        "| not commands rejected |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for row in table(rows, args.hearings, args.no_speech_doubt, language_doubt):
        print(
            f"| {row['grammar']} | {row['reject_ratio']:g} | {'yes' if row['agreement'] else 'no'}"
            f" | {row['commands_right_kept']:.1%}"
            f" | {row['commands_wrong_kept']:.1%} | {row['not_commands_rejected']:.1%}"
            f" (of {row['not_commands']}) |"
        )


if __name__ == "__main__":
    main()
