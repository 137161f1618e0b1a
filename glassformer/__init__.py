"""glassformer: the Transformer end to end, as "Transformers from Scratch" explains it.

The public API is small and imports torch only when called:

    glassformer.load(path)           -> a model from a checkpoint directory
    glassformer.from_hf_gpt2(model)  -> our GPT holding a Hugging Face GPT-2's weights
    glassformer.from_whisper(source) -> our SpeechTransformer holding a Whisper's weights:
                                        whisper-tiny.en, a CTranslate2 or Hugging Face
                                        directory, an OpenAI .pt, a transformers model
    glassformer.Listener(glassformer.ListenerConfig(model, grammar))
                                     -> spoken commands to intents: whole clips
                                        (understand), live streams (stream().process)

A GPT called on token ids of shape (B, T) returns logits of shape (B, T, V).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from glassformer.models.gpt import GPT
    from glassformer.models.speech import SpeechTransformer
    from glassformer.tasks.speech.config import ListenerConfig  # noqa: F401
    from glassformer.tasks.speech.listener import Listener  # noqa: F401

__version__ = "0.1.0"
__all__ = ["Listener", "ListenerConfig", "__version__", "from_hf_gpt2", "from_whisper", "load"]


def __getattr__(name: str) -> Any:
    """glassformer.Listener, imported (with torch) only when first used; its config."""
    if name == "Listener":
        from glassformer.tasks.speech.listener import Listener

        return Listener
    if name == "ListenerConfig":
        from glassformer.tasks.speech.config import ListenerConfig

        return ListenerConfig
    raise AttributeError(f"module 'glassformer' has no attribute {name!r}")


def load(path: str | Path, device: str = "cpu") -> nn.Module:
    """Load a checkpoint directory (config.json + model.safetensors), in eval mode."""
    from glassformer.train.checkpoint import load_checkpoint

    return load_checkpoint(path, device)


def from_hf_gpt2(source: Any, n_heads: int | None = None) -> GPT:
    """Convert a Hugging Face GPT2LMHeadModel (or its state dict plus n_heads) into our GPT."""
    from glassformer.convert.hf_gpt2 import from_hf_gpt2 as convert

    return convert(source, n_heads)


def from_whisper(source: Any, config: Any = None) -> SpeechTransformer:
    """Our SpeechTransformer from a Whisper: an installed pretrained name (whisper-tiny.en), a
    CTranslate2 directory, a Hugging Face directory (config.json + model.safetensors), an
    OpenAI .pt file, or a transformers WhisperForConditionalGeneration (or its state dict
    plus its config). Its logits take log-mel features (B, M, N) and tokens (B, T)."""
    from glassformer.convert.whisper_sources import from_whisper as convert

    return convert(source, config)
