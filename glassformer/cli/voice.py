"""`glassformer voice synth`, `train speech`, `transcribe`: spoken commands to intents."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from glassformer.cli.fit_window import add_fit_window_command
from glassformer.voice.grammar import DEFAULT_GRAMMAR

DEFAULT_CLIPS = 2500  # synthesized clips when `train speech` is given no --data


def cmd_voice_synth(args: argparse.Namespace) -> None:
    from glassformer.errors import GlassformerError
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import check_count, check_pitch, check_share, synthesize

    check_count(args.count, "--count")  # before anything is made, named as the flags
    if args.noise_dir and not Path(args.noise_dir).is_dir():
        raise GlassformerError(f"--noise-dir {args.noise_dir}: no such folder")
    check_share(args.word_by_word, "--word-by-word")
    check_pitch(tuple(args.pitch_hz) if args.pitch_hz else None, "--pitch-hz")
    noise_dir = str(Path(args.noise_dir).resolve()) if args.noise_dir else ""
    grammar = Grammar.from_yaml(args.grammar)
    print(f"synthesizing {args.count:,} clips of {args.grammar} into {args.out}", flush=True)
    progress = True  # a bar on a terminal, else plain lines (glassformer/progress.py)
    manifest = synthesize(
        grammar,
        args.out,
        args.count,
        args.seed,
        progress=progress,
        noise_dir=noise_dir,
        word_by_word=args.word_by_word,
        pitch_hz=tuple(args.pitch_hz) if args.pitch_hz else None,
    )
    print(f"wrote {args.count} clips and {manifest} ({grammar.count():,} sentences in the grammar)")


def cmd_train_speech(args: argparse.Namespace) -> None:
    import dataclasses

    from glassformer.cli.train import SPEECH_PRESET, SPEECH_RUN, announce, resolve_settings, say
    from glassformer.errors import GlassformerError
    from glassformer.tasks.speech.training import check_learnable, train_speech
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import read_dataset_info, synthesize

    preset_name = args.preset or ("finetune" if args.init else SPEECH_PRESET)
    if (preset_name == "finetune") != bool(args.init):
        raise GlassformerError("--init MODEL and --preset finetune go together (fine-tuning)")
    if args.init:
        check_learnable(args.init)  # before a clip is synthesized into OUT
    out = Path(args.out)
    data_dir = Path(args.data) if args.data else out / "data"
    if not args.data and not (data_dir / "manifest.jsonl").is_file():
        grammar_path = Path(args.grammar or DEFAULT_GRAMMAR)
        print(f"synthesizing {DEFAULT_CLIPS} clips of {grammar_path} into {data_dir}")
        synthesize(Grammar.from_yaml(grammar_path), data_dir, DEFAULT_CLIPS, progress=True)
    info = read_dataset_info(data_dir)  # what `voice synth` recorded: grammar, noise folder
    grammar_path = speech_grammar(args.grammar, info, data_dir)
    noise_dir = args.noise_dir or info.get("noise_dir") or ""
    preset = SPEECH_RUN.presets[preset_name]
    if noise_dir:
        preset = dataclasses.replace(preset, data={**preset.data, "noise_dir": noise_dir})
    model_fields, train_config, data_config = resolve_settings(SPEECH_RUN, args, preset)
    start = f"fine-tuning {args.init}" if args.init else "from scratch"
    header = f"# glassformer train speech ({start}): {grammar_path}, data {data_dir} -> {out}"
    announce(header, model_fields, train_config, data_config)
    result = train_speech(
        grammar_path,
        data_dir,
        model_fields,
        train_config,
        data_config,
        out,
        resume=args.resume,
        progress=True,
        init=args.init,
    )
    say(
        f"trained to step {result.step} in {result.seconds:.0f} s; validation loss "
        f"{result.val_loss:.4f}; checkpoints in {out}/best and {out}/last"
    )


def cmd_adapt(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.adapt import AdaptConfig, adapt

    config = AdaptConfig(
        args.grammar,
        args.model,
        args.noise_dir or "",
        args.clips,
        args.steps,
        args.minutes,
        args.seed,
    )
    result = adapt(config, args.out)
    print(
        f"adapted in {result.seconds / 60:.1f} minutes of training (step {result.step}, "
        f"validation loss {result.val_loss:.4f}); the model is {args.out}/best:\n"
        f"  glassformer transcribe {args.out}/best CLIP.wav"
    )


def speech_grammar(given: str | None, info: dict, data_dir: Path) -> Path:
    """The grammar to train for: the one the dataset was synthesized from; --grammar may name
    it again (or a copy with the same content), never another (it would mislabel every clip)."""
    from glassformer.errors import GlassformerError

    recorded = info.get("grammar")
    if given is None:
        return Path(recorded) if recorded else DEFAULT_GRAMMAR
    if recorded and Path(given).resolve() != Path(recorded).resolve():
        from glassformer.voice.grammar import Grammar

        same = Path(recorded).is_file() and (
            Grammar.from_yaml(recorded).sha256 == Grammar.from_yaml(given).sha256
        )  # the same grammar, read as grammars are (bounded), however it is laid out
        if not same:
            raise GlassformerError(
                f"{data_dir} was synthesized from {recorded}, not --grammar {given}"
            )
    return Path(given)


LISTENER_ALIASES = {"beam_size": "--beam"}  # transcribe's short spelling, on every door


def add_listener_flags(
    parser: argparse.ArgumentParser, skip: tuple[str, ...] = (), streams: bool = False
) -> None:
    """Every ListenerConfig field as a flag, with its default (one source for every speech
    door): --grammar, --beam-size (--beam), --reject-below, --precision, --window-step,
    --constrain/--no-constrain, --device; and with `streams` the EndpointConfig's, for doors
    that endpoint live audio. The model is each door's own argument; `skip` names fields a
    door gives its own way (serve's --grammar is given once per grammar)."""
    from glassformer.audio.endpoint import EndpointConfig
    from glassformer.configs import add_config_flags
    from glassformer.tasks.speech.config import ListenerConfig

    hidden = {"model", "endpoint", *skip}
    add_config_flags(parser, ListenerConfig, skip=hidden, aliases=LISTENER_ALIASES)
    if streams:
        add_config_flags(parser, EndpointConfig)


def listener_config(args: argparse.Namespace, model: str, **door: object):  # noqa: ANN201
    """The ListenerConfig the flags of add_listener_flags ask for (every unset flag: its
    default); `door` holds the fields a door gives its own way (its grammar)."""
    from glassformer.audio.endpoint import EndpointConfig
    from glassformer.configs import config_from_dict, flag_overrides
    from glassformer.tasks.speech.config import ListenerConfig

    endpoint = config_from_dict(EndpointConfig, flag_overrides(args, EndpointConfig))
    given = {**flag_overrides(args, ListenerConfig), **door}
    return config_from_dict(ListenerConfig, {**given, "model": model, "endpoint": endpoint})


def cmd_transcribe(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.listener import Listener

    listener = Listener(listener_config(args, args.model))
    results = []
    for path in args.audio:
        result = listener.understand_file(path)
        if args.json:  # one JSON list at the end: a failing file leaves no half document
            results.append({"file": path, **result.to_json()})
        else:
            meaning = f"{result.intent} {result.slots}" if result.intent else "(not a command)"
            print(f"{path}\t{result.text}\t{meaning}\tconfidence {result.confidence:.2f}")
    if args.json:
        print(json.dumps(results, indent=1))


def cmd_models(args: argparse.Namespace) -> None:
    from glassformer.convert.installed import PRETRAINED, installed_files

    print(f"{'MODEL':<16} {'SIZE':>8}  WHERE (give MODEL to transcribe, serve, wyoming, adapt)")
    for name, (_, install) in PRETRAINED.items():
        files = installed_files(name)
        if files is None:
            print(f"{name:<16} {'-':>8}  not installed: {install}")
        else:
            size = sum(f.stat().st_size for f in files) / 1e6
            print(f"{name:<16} {size:>5.0f} MB  {files[0].parent}")


def cmd_import_whisper(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.pretrained import import_whisper

    out = import_whisper(args.source, args.out)
    print(f"wrote {out}/config.json, model.safetensors and tokenizer.json")


def add_voice_commands(
    commands: argparse._SubParsersAction, train_tasks: argparse._SubParsersAction, formatter: type
) -> None:
    from glassformer.cli.train import SPEECH_RUN, add_run_flags

    voice = commands.add_parser(
        "voice", help="synthesize training speech for a command grammar", formatter_class=formatter
    )
    sub = voice.add_subparsers(dest="voice_command", metavar="COMMAND", required=True)
    synth = sub.add_parser(
        "synth",
        help="render sampled commands with every installed TTS voice",
        formatter_class=formatter,
        description="Sample sentences from a Rhino-format grammar and speak them with every "
        "text-to-speech voice on the machine (espeak-ng accents and variants, flite), at varied "
        "speeds and pitches, a share of them word by word (--word-by-word). Validation clips "
        "use voices never used for training. Resumes an interrupted run (same grammar, seed "
        "share and pitches only).",
    )
    synth.add_argument("--grammar", default=str(DEFAULT_GRAMMAR), help="grammar YAML")
    synth.add_argument("--out", required=True, metavar="DATA_DIR", help="dataset directory")
    synth.add_argument(
        "--count", type=int, default=DEFAULT_CLIPS, help="clips to render (1 to 1,000,000)"
    )
    synth.add_argument("--noise-dir", help="noise WAVs that training will mix in")
    synth.add_argument("--seed", type=int, default=0, help="sampling seed")
    synth.add_argument(
        "--word-by-word",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of clips (0-1) spoken a few words at a time with pauses, as people say "
        "commands to machines and phone prompts are recorded (the demo uses 0.5; default: 0)",
    )
    synth.add_argument(
        "--pitch-hz",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        help="draw each clip's mean F0 from LOW to HIGH Hz where a voice takes one (flite's "
        "kal, awb and slt, festival's diphones; espeak-ng over its whole scale), for voices "
        "higher or lower than the TTS voices' own 85-135 Hz (slt's 175) (default: each "
        "voice's own pitch; 85 250 measured for the demo's real voice in docs/benchmarks.md)",
    )
    synth.set_defaults(handler=cmd_voice_synth)

    speech = train_tasks.add_parser(
        "speech",
        help="a speech Transformer for spoken commands",
        formatter_class=formatter,
        description="Train an encoder-decoder on MFCC features of synthesized speech (made here "
        "from --grammar when --data is not given), with noise, speed, reverb and SpecAugment "
        "augmentation. Writes OUT/best, OUT/last, OUT/metrics.jsonl, OUT/loss.png.",
    )
    speech.add_argument(
        "--grammar",
        help="grammar YAML (default: the one --data was synthesized from, else "
        f"{DEFAULT_GRAMMAR.name})",
    )
    speech.add_argument("--data", metavar="DATA_DIR", help="a `voice synth` dataset")
    speech.add_argument(
        "--init",
        metavar="MODEL",
        help="fine-tune this model (whisper-tiny.en, a checkpoint directory) instead of "
        "training from scratch: its decoder learns the grammar, its encoder stays frozen",
    )
    add_run_flags(speech, SPEECH_RUN)
    speech.set_defaults(handler=cmd_train_speech)

    add_adapt_command(commands, formatter)
    add_fit_window_command(commands, formatter)
    add_export_command(commands, formatter)

    transcribe = commands.add_parser(
        "transcribe",
        help="audio files to text, intent and slots",
        formatter_class=formatter,
        description="Transcribe audio files (WAV, FLAC, OGG; any rate) with a speech model "
        "trained here or a pretrained one (see `glassformer models`): the words, the grammar's "
        "intent and slots, and a confidence. With a grammar (--grammar, or the one a model "
        "trained here keeps) the beam writes only sentences of the grammar, so a pretrained "
        "model understands a new command grammar with no training; --no-constrain writes "
        "free text, which the grammar then reads.",
    )
    transcribe.add_argument(
        "model",
        metavar="MODEL",
        help="a speech run or checkpoint directory; a Whisper as a CTranslate2 or Hugging Face "
        "directory or an OpenAI .pt file; an installed pretrained name (whisper-tiny.en, "
        "whisper-base; see `glassformer models`); or a folder `glassformer export` wrote, "
        "which runs without torch",
    )
    transcribe.add_argument("audio", nargs="+", metavar="AUDIO")
    transcribe.add_argument(
        "--json",
        action="store_true",
        help="one JSON list: per file, file, text, intent, slots, confidence, accepted, "
        "audio_seconds, elapsed_ms",
    )
    add_listener_flags(transcribe)
    transcribe.set_defaults(handler=cmd_transcribe)

    models = commands.add_parser(
        "models",
        help="the pretrained speech models glassformer knows, and where they are installed",
        formatter_class=formatter,
    )
    models.set_defaults(handler=cmd_models)
    importer = commands.add_parser(
        "import",
        help="save published weights as a glassformer checkpoint",
        formatter_class=formatter,
    )
    kinds = importer.add_subparsers(dest="import_command", metavar="KIND", required=True)
    whisper = kinds.add_parser(
        "whisper",
        help="a Whisper (installed name, CTranslate2 or Hugging Face directory, OpenAI .pt) -> "
        "our checkpoint",
        formatter_class=formatter,
        description="Read a Whisper with glassformer's own readers and write config.json, "
        "model.safetensors and tokenizer.json: a checkpoint `transcribe` and `info` read. "
        "SOURCE is an installed pretrained name, a CTranslate2 directory (faster-whisper's "
        "format), a Hugging Face directory (config.json, model.safetensors, tokenizer.json) or "
        "an OpenAI .pt file, read with weights_only; a .pt ships no tokenizer, so an installed "
        "model's with the same vocabulary is used (whisper-tiny.en's for English-only models, "
        "whisper-base's for multilingual ones).",
    )
    whisper.add_argument(
        "source", metavar="SOURCE", help="whisper-tiny.en, a directory or a .pt file"
    )
    whisper.add_argument("--out", required=True, metavar="DIR", help="checkpoint directory")
    whisper.set_defaults(handler=cmd_import_whisper)


def cmd_export(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.onnx_export import export_speech

    out = export_speech(args.model, args.out, args.precision)
    size = sum(f.stat().st_size for f in out.iterdir()) / 1e6
    print(f"wrote {out} ({size:.0f} MB): give it as MODEL to transcribe, serve or wyoming")


def add_export_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    from glassformer.tasks.speech.config import PRECISIONS

    export = commands.add_parser(
        "export",
        help="a Whisper for onnxruntime: transcribe, serve and wyoming without torch",
        formatter_class=formatter,
        description="Export a Whisper (an installed name, or a model `adapt` or `train speech "
        "--init` made) from our own modules to ONNX: the encoder, the decoder with its "
        "keys-and-values cache, the tokenizer and the features' matrices in one folder, "
        "checked against our modules before it is written. Given as MODEL, the folder runs "
        "with onnxruntime and numpy, and the process never imports torch: about half the "
        "memory, for a Raspberry Pi or a Home Assistant Green (docs/benchmarks.md, "
        '"Without torch"). Its precision is fixed here; --precision at transcribe time does '
        "not change it. Needs the onnx package (pip install 'glassformer[onnx]').",
    )
    export.add_argument(
        "model", metavar="MODEL", help="whisper-tiny.en, whisper-base, or a model directory"
    )
    export.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    export.add_argument(
        "--precision",
        default="int8",
        choices=PRECISIONS,
        help="int8: the linear layers' weights in int8, the smallest and fastest; float32: "
        "the published weights' values (default: %(default)s)",
    )
    export.set_defaults(handler=cmd_export)


def add_adapt_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    from glassformer.tasks.speech.adapt import AdaptConfig

    defaults = AdaptConfig("")  # the one place the defaults are written
    adapt = commands.add_parser(
        "adapt",
        help="fit a published Whisper to a command grammar and its room's noise",
        formatter_class=formatter,
        description="Synthesize the grammar's commands with every installed voice into "
        "OUT/data, then fine-tune the model's decoder on them with the room's noise mixed in "
        "(its encoder stays as published), within a time budget. OUT/best is an ordinary "
        "speech model: give it as MODEL to transcribe, serve or wyoming. Zero-shot already "
        "understands the grammar; adapting wins back what noise costs (docs/benchmarks.md). "
        "Run the same command again to resume an interrupted run.",
    )
    adapt.add_argument("--grammar", required=True, help="the grammar YAML (Rhino format)")
    adapt.add_argument("--out", required=True, metavar="DIR", help="run directory")
    adapt.add_argument("--model", default=defaults.model, help="the model to start from")
    adapt.add_argument(
        "--noise-dir", metavar="DIR", help="WAV recordings of the room's noise to mix in"
    )
    adapt.add_argument("--clips", type=int, default=defaults.clips, help="commands to synthesize")
    adapt.add_argument("--steps", type=int, default=defaults.steps, help="fine-tuning steps")
    adapt.add_argument(
        "--minutes",
        type=float,
        default=defaults.minutes,
        help="the whole run's budget (synthesis, then training stops when it is spent)",
    )
    adapt.add_argument("--seed", type=int, default=defaults.seed, help="synthesis seed")
    adapt.set_defaults(handler=cmd_adapt)
