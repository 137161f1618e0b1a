"""Tiny random-weight checkpoints of all three tasks, saved once per session, and clips.

Random weights are enough for everything but a real intent: the API's shapes, errors,
streaming and batching do not depend on what the model learned. Tests that need a real
intent load whisper-tiny.en (installed by the dev extra) and a real recording.
"""

from __future__ import annotations

import io
import string
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from tests.helpers import TINY_GRAMMAR
from tests.installed import has_voice, has_whisper, needs

GRAMMAR = TINY_GRAMMAR
ALPHABET = string.ascii_lowercase + string.ascii_uppercase + " .,'!?\n"
DATA = Path("/work/shared/data")  # real recordings, when this machine has them


def save_task(
    model: torch.nn.Module, directory: Path, metadata: dict, tokenizer, extra=None
) -> Path:  # noqa: ANN001
    from glassformer.tasks.common import TOKENIZER_FILE
    from glassformer.train.checkpoint import save_checkpoint

    def write(tmp: Path) -> None:
        tokenizer.save(tmp / TOKENIZER_FILE)
        if extra:
            extra(tmp)

    return save_checkpoint(model, directory, {**metadata, "tokenizer": TOKENIZER_FILE}, write)


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """speech (MFCC, 1 + 1 layers, its own grammar), lm (GPT tiny), translation (tiny)."""
    from glassformer.audio.features import FeatureConfig
    from glassformer.models.configs import GPTConfig, Seq2SeqConfig, SpeechConfig
    from glassformer.models.gpt import GPT
    from glassformer.models.seq2seq import Seq2SeqTransformer
    from glassformer.models.speech import SpeechTransformer
    from glassformer.tasks.common import SPECIAL_TOKENS
    from glassformer.tasks.speech.config import GRAMMAR_FILE
    from glassformer.tokenizer.char import CharTokenizer

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    tokenizer = CharTokenizer(ALPHABET, SPECIAL_TOKENS)
    V = tokenizer.vocab_size
    features = FeatureConfig()
    speech = SpeechTransformer(
        SpeechConfig(
            tgt_vocab_size=V,
            n_features=features.n_features,
            d_model=32,
            n_heads=2,
            n_encoder_layers=1,
            n_decoder_layers=1,
            d_ff=64,
            dropout=0.0,
            ctc_head=False,
        )
    )
    speech_meta = {"task": "speech", "grammar": GRAMMAR_FILE, "features": features.__dict__}
    write_grammar = lambda tmp: (tmp / GRAMMAR_FILE).write_text(GRAMMAR)  # noqa: E731
    lm_meta, mt_meta = {"task": "lm"}, {"task": "translation"}
    return {
        "speech": save_task(speech.eval(), root / "speech", speech_meta, tokenizer, write_grammar),
        "lm": save_task(GPT(GPTConfig.tiny(V)).eval(), root / "lm", lm_meta, tokenizer),
        "translation": save_task(
            Seq2SeqTransformer(Seq2SeqConfig.tiny(V, V)).eval(), root / "mt", mt_meta, tokenizer
        ),
    }


def tone(seconds: float, frequency: float = 440.0, level: float = 0.3) -> np.ndarray:
    """A sine tone at 16 kHz: audible, deterministic, stands in for speech."""
    t = np.arange(int(seconds * 16_000)) / 16_000
    return (level * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def wav_bytes(waveform: np.ndarray, rate: int = 16_000, fmt: str = "WAV") -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, waveform, rate, format=fmt, subtype="PCM_16" if fmt == "WAV" else None)
    return buffer.getvalue()


def real_clip(relative: str) -> Path:
    """A recording from /work/shared/data; the test is skipped where it is absent."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} is absent (real recordings live in /work/shared/data)")
    return path


APPOINTMENTS = Path(__file__).resolve().parents[2] / "glassformer/voice/grammars/appointments.yaml"


needs_whisper_and_voice = needs(
    has_whisper() and has_voice(), "whisper-tiny.en or the recorded voice (asterisk-core-sounds)"
)


def recorded_command(folder: Path, seed: int) -> tuple[Path, object]:
    """One real recorded appointments command written as a 16-bit WAV in `folder`, and the
    command it says (voice/recorded.py)."""
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    [(command, waveform)] = recorded_commands(
        Grammar.from_yaml(APPOINTMENTS), find_voice(), 1, seed
    )
    path = folder / "command.wav"
    soundfile.write(path, waveform, 16_000, subtype="PCM_16")
    return path, command
