"""The models a server holds: each loaded once at start, each optional.

    speech        a speech checkpoint, a CTranslate2 Whisper directory or a pretrained name
    grammars      the commands it understands, by name (a YAML file's stem); requests choose
                  among these with ?grammar=NAME and can never name a path
    lm            a language-model run or checkpoint directory (generation, attention)
    translation   a translation run or checkpoint directory (translation, attention)

Each grammar gets its own Listener sharing the one network (Listener.with_grammar copies
references, not weights; a zero-shot Whisper also gets the grammar's phrases as context), and
free text one more (no grammar, no context). Every listener has the one ListenerConfig the
door's flags built (cli/voice.listener_config). With --adapt, one grammar's Listener is
replaced by its adapted model while the server runs (serve/adaptation.py); /v1/models says
how far that is. Not here: loading or unloading models otherwise while the server runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassformer.errors import GlassformerError
from glassformer.voice.grammar import DEFAULT_GRAMMAR

if TYPE_CHECKING:
    import torch

    from glassformer.models.gpt import GPT
    from glassformer.serve.adaptation import Adaptation
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener
    from glassformer.tasks.translation.inference import Translator
    from glassformer.tokenizer.base import Tokenizer
    from glassformer.voice.commands import CommandGrammar


OPENAI_MODEL = "whisper-1"  # the name OpenAI's clients send by default: the loaded model


@dataclass
class ServedModels:
    speech: dict[str, Listener] = field(default_factory=dict)  # grammar name -> its Listener
    free: Listener | None = None  # the same network writing free text (no grammar)
    lm: tuple[GPT, Tokenizer] | None = None  # the language model and its tokenizer
    translator: Translator | None = None
    sources: dict[str, str] = field(default_factory=dict)  # kind -> what was loaded
    adaptation: Adaptation | None = None  # --adapt: a grammar's model fitted in the background

    @property
    def speech_names(self) -> list[str]:
        """The names a request may give as its `model` for speech: the loaded model's source,
        OpenAI's default name for it, then each grammar's name (none when no speech model)."""
        return [self.sources["speech"], OPENAI_MODEL, *self.speech] if self.speech else []

    @property
    def default_grammar(self) -> str | None:
        """The grammar of a request that names none: the only one loaded, else none."""
        return next(iter(self.speech)) if len(self.speech) == 1 else None


def grammar_names(paths: list[str]) -> dict[str, Path]:
    """Each grammar file by its name (the file's stem); two files of one name are an error.

    Example: ["a/coffee_maker.yaml", "words.yaml"] -> {"coffee_maker": ..., "words": ...}
    """
    names: dict[str, Path] = {}
    for path in map(Path, paths):
        if path.stem in names:
            raise GlassformerError(f"two grammars named {path.stem!r}: {names[path.stem]}, {path}")
        names[path.stem] = path
    return names


def load_speech(config: ListenerConfig, grammar_paths: list[str]) -> dict[str, Listener]:
    """A Listener per grammar, all on one loaded network: the given files, else the
    checkpoint's own grammar, else the packaged default (voice/grammars/desktop.yaml)."""
    from glassformer.tasks.speech.listener import Listener
    from glassformer.tasks.speech.loading import load_grammar

    if config.grammar is not None:
        raise ValueError("a server's grammars are given as grammar_paths, not in its config")
    first = Listener(config)
    if grammar_paths:
        grammars = {name: load_grammar(p) for name, p in grammar_names(grammar_paths).items()}
    elif first.grammar is not None:
        grammars = {Path(first.grammar.name).stem: first.grammar}
    else:
        grammars = {DEFAULT_GRAMMAR.stem: load_grammar(DEFAULT_GRAMMAR)}
    return {name: first.with_grammar(g) for name, g in grammars.items()}


def check_sources(
    speech: ListenerConfig | None, grammars: list[str], lm: str | None, translation: str | None
) -> None:
    """Every model and grammar named exists and is of its kind, checked before any loads
    (loading Whisper takes seconds; a mistyped --lm should not wait for it).

    Raises:
        GlassformerError: a missing path or unknown name, a checkpoint of another task.
    """
    from glassformer.tasks.speech.loading import check_speech_source

    if grammars and speech is None:
        raise GlassformerError("--grammar needs a speech model (--speech MODEL)")
    if speech is not None:
        check_speech_source(speech.model, "--speech")
    for path in grammars:
        if not Path(path).is_file():
            raise GlassformerError(f"--grammar {path}: no such file")
    for flag, path, task in (("--lm", lm, "lm"), ("--translation", translation, "translation")):
        if path is not None:
            hint = f"train one with `glassformer train {task} --out {path}`"
            if not Path(path).is_dir():
                raise GlassformerError(f"{flag} {path}: no such directory ({hint})")
            from glassformer.train.checkpoint import open_task_checkpoint  # torch: only then

            open_task_checkpoint(path, task)


def load_models(
    speech: ListenerConfig | None,
    grammars: list[str],
    lm: str | None,
    translation: str | None,
) -> ServedModels:
    """Load what was asked for, each on the speech config's device (cpu unless --device
    says); a bad path or name is a one-line GlassformerError."""
    from glassformer.tasks.speech.config import ListenerConfig

    check_sources(speech, grammars, lm, translation)
    device = (speech or ListenerConfig()).device
    served = ServedModels()
    if speech is not None:
        served.speech = load_speech(speech, grammars)
        served.free = next(iter(served.speech.values())).with_grammar(None)
        served.sources["speech"] = speech.model
    if lm is not None:
        from glassformer.tasks.lm.inference import load_lm

        served.lm = load_lm(lm, device)
        served.sources["lm"] = lm
    if translation is not None:
        from glassformer.tasks.translation.inference import load_translator

        served.translator = load_translator(translation, device)
        served.sources["translation"] = translation
    return served


def parameter_count(model: torch.nn.Module) -> int:
    """Distinct parameters (a tied matrix counts once); an exported model's, as exported."""
    from glassformer.tasks.speech.onnx_runtime import OnnxNetwork

    if isinstance(model, OnnxNetwork):
        return model.parameter_count
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def describe_models(served: ServedModels) -> dict[str, Any]:
    """What /v1/models answers: each loaded model's source, kind and parameter count; and,
    in OpenAI's list shape ("object": "list", "data"), the names the OpenAI route takes as
    `model` (openai's `client.models.list()` reads those)."""
    described: dict[str, Any] = {
        "object": "list",
        "data": [
            {"id": n, "object": "model", "created": 0, "owned_by": "glassformer"}
            for n in served.speech_names
        ],
    }
    if served.speech:
        first = next(iter(served.speech.values()))
        described["speech"] = {
            "source": served.sources["speech"],
            "parameters": parameter_count(first.speech.model),
            "grammars": {
                name: listener.grammar.intents()
                for name, listener in served.speech.items()
                if listener.grammar is not None
            },
            "default_grammar": served.default_grammar,
            "examples": {  # the page's "try saying"
                name: example_sentences(listener.grammar)
                for name, listener in served.speech.items()
                if listener.grammar is not None
            },
        }
        if served.adaptation is not None:
            described["speech"]["adaptation"] = served.adaptation.describe()
    if served.lm is not None:
        model, _ = served.lm
        described["lm"] = {"source": served.sources["lm"], "parameters": parameter_count(model)}
    if served.translator is not None:
        described["translation"] = {
            "source": served.sources["translation"],
            "parameters": parameter_count(served.translator.model),
        }
    return described


def example_sentences(grammar: CommandGrammar, count: int = 4) -> list[str]:
    """A few different sentences of the grammar, the same on every call (a fixed seed)."""
    import random

    rng, found = random.Random(0), {}  # a dict keeps the order they were found in
    for _ in range(count * 25):
        found.setdefault(grammar.sample(rng).text, None)
        if len(found) == count:
            break
    return list(found)
