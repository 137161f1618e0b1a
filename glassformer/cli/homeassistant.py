"""`glassformer intents LANG`: Home Assistant's sentences of a language, as the Listener
understands them (voice/homeassistant.py): its intents, how many sentences, samples."""

from __future__ import annotations

import argparse
import json

MAX_SAMPLES = 10_000  # --sample at most


def cmd_intents(args: argparse.Namespace) -> None:
    import random
    import time

    from glassformer.errors import GlassformerError
    from glassformer.voice.ha_client import home_file_or_server
    from glassformer.voice.homeassistant import HomeAssistantGrammar

    if not 0 <= args.sample <= MAX_SAMPLES:
        raise GlassformerError(f"--sample {args.sample}: give 0 to {MAX_SAMPLES:,}")
    home = home_file_or_server(args.entities, args.ha_url, args.ha_token_file)
    custom = [args.custom_sentences] if args.custom_sentences else []
    started = time.perf_counter()
    grammar = HomeAssistantGrammar.load(args.language, home, args.sentences, custom, args.area)
    built_s = time.perf_counter() - started
    rng = random.Random(args.seed)
    samples = [grammar.sample(rng) for _ in range(args.sample)]
    summary = {
        "language": grammar.language,
        "sentences": grammar.sentence_set,
        "intents": grammar.intents(),
        "templates": len(grammar.templates),
        "left_out": grammar.left_out,
        "sentence_count": grammar.count(),
        "home": {"areas": len(home.areas), "floors": len(home.floors)}
        | {"entities": len(home.entities)},
        "network_states": grammar.network.size,
        "built_seconds": round(built_s, 2),
        "samples": [{"text": c.text, "intent": c.intent, "slots": c.slots} for c in samples],
    }
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
        return
    print(
        f"{grammar.language}: Home Assistant's {grammar.sentence_set} sentences, "
        f"{len(summary['intents'])} intents, {len(grammar.templates):,} templates "
        f"({grammar.left_out} left out: they begin with free text), "
        f"{summary['sentence_count']:,} sentences with {home.source}'s "
        f"{len(home.areas)} areas, {len(home.floors)} floors, {len(home.entities)} devices; "
        f"built in {built_s:.2f} s"
    )
    print("intents: " + ", ".join(summary["intents"]))
    for command in samples:
        print(f"{command.text}\t{command.intent} {command.slots}")


def add_intents_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    from glassformer.tasks.speech.config import ListenerConfig

    default = ListenerConfig()
    intents = commands.add_parser(
        "intents",
        help="Home Assistant's sentences of a language: intents, how many, samples",
        formatter_class=formatter,
        description="Read Home Assistant's sentences for LANG (the home-assistant-intents "
        "package; parsed by hassil), fill them with a home's areas, floors and devices, and "
        "say what the Listener then understands: the intents, how many sentences the grammar "
        "holds (counted, never written out) and --sample sentences drawn from it with the "
        "intent and slots hassil reads in each. The same settings as transcribe's --intents.",
    )
    intents.add_argument("language", metavar="LANG", help="a language code: en, fr, zh-CN, ...")
    intents.add_argument("--entities", metavar="HOME.yaml", help="the home (Home Assistant's "
                         "intent test fixtures format: areas, floors, entities)")  # fmt: skip
    intents.add_argument("--ha-url", metavar="URL", help="a running Home Assistant (its "
                         "exposed devices); the token from --ha-token-file or "
                         "GLASSFORMER_HA_TOKEN")  # fmt: skip
    intents.add_argument("--ha-token-file", metavar="FILE", help="its long-lived access token")
    intents.add_argument(
        "--sentences",
        choices=["speech", "full"],
        default=default.sentences,
        help="speech: the curated subset for speech engines; full: every sentence",
    )
    intents.add_argument(
        "--custom-sentences", metavar="PATH", help="custom_sentences/<lang>/ folder or file"
    )
    intents.add_argument("--area", help="the microphone's room (for sentences that name none)")
    intents.add_argument("--sample", type=int, default=5, metavar="N", help="sentences to draw")
    intents.add_argument("--seed", type=int, default=0, help="sampling seed")
    intents.add_argument("--json", action="store_true", help="all of it as one JSON object")
    intents.set_defaults(handler=cmd_intents)
