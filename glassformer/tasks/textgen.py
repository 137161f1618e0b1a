"""Text completion: a decoder-only GPT trained on text files, then sampled.

    train_lm     files -> tokenizer -> cached token file -> the shared training loop
    generate     prompt -> the shared decoding strategies -> text, streamed as it is written
    evaluate_lm  a text file -> mean loss over its consecutive blocks, perplexity, bits per byte

The tokenizer is saved inside every checkpoint (tokenizer.json), so a checkpoint directory is
all `generate` and `evaluate` need.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from glassformer.configs import require_fraction, require_positive
from glassformer.corpora import default_cache_root
from glassformer.errors import GlassformerError
from glassformer.models.gpt import GPT, GPTConfig
from glassformer.tokenizer.base import Tokenizer
from glassformer.train.checkpoint import resolve_checkpoint
from glassformer.train.data import TokenData, prepare_token_data, sample_blocks
from glassformer.train.loop import Batch, TrainConfig, TrainResult, train
from glassformer.train.losses import token_cross_entropy

TOKENIZER_FILE = "tokenizer.json"

if TYPE_CHECKING:
    from glassformer.decoding.search import DecodeConfig


@dataclass(frozen=True)
class LMDataConfig:
    block_size: int = 64  # tokens of context per training sequence (T); <= the model's max_len
    tokenizer: str = "char"  # char | bpe (trained on the data) | path to a TOK.json
    bpe_vocab_size: int = 4096  # vocabulary size when tokenizer=bpe trains a new one
    val_fraction: float = 0.1  # the last part of the token stream, held out for validation

    def __post_init__(self) -> None:
        require_positive(self, "block_size", "bpe_vocab_size")
        require_fraction(self, "val_fraction")


# Presets: the model and the training recipe together (the data settings keep their defaults).
LM_PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "tiny": (  # seconds on a CPU: for tests and smoke runs
        {"max_len": 64, "d_model": 32, "n_heads": 4, "n_layers": 2, "d_ff": 128},
        {"steps": 50, "batch_size": 8, "eval_every": 25, "eval_batches": 2, "warmup_steps": 5},
    ),
    "baby": (  # nanoGPT's CPU "baby GPT" recipe on Shakespeare: about two minutes on 2 cores
        {
            "max_len": 64,
            "d_model": 128,
            "n_heads": 4,
            "n_layers": 4,
            "d_ff": 512,
            "activation": "gelu",
        },
        {"steps": 2000, "batch_size": 12, "lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 100},
    ),
    "gpt2-small": (  # GPT-2 small's shape; for a GPU
        {
            "max_len": 1024,
            "d_model": 768,
            "n_heads": 12,
            "n_layers": 12,
            "d_ff": 3072,
            "dropout": 0.1,
        },
        {"steps": 5000, "batch_size": 32, "lr": 6e-4, "min_lr": 6e-5, "warmup_steps": 500},
    ),
}


def resolve_lm_settings(
    preset: str, toml_path: str | None, flags: dict[type, dict[str, Any]], out: Path, resume: bool
) -> tuple[dict[str, Any], TrainConfig, LMDataConfig]:
    """Model fields (all but vocab_size, which the tokenizer decides), TrainConfig and
    LMDataConfig, layered as configs.run_settings describes. Unknown keys are errors."""
    from glassformer.configs import config_from_dict, run_settings

    model_base, train_base = LM_PRESETS[preset]
    by_table = {
        "model": flags.get(GPTConfig, {}),
        "train": flags.get(TrainConfig, {}),
        "data": flags.get(LMDataConfig, {}),
    }
    fields = run_settings(
        (model_base, train_base, {}), toml_path, by_table, out, resume, derived=["vocab_size"]
    )
    config_from_dict(GPTConfig, {"vocab_size": 1, **fields["model"]})  # validate before the data
    train_config = config_from_dict(TrainConfig, fields["train"])
    return fields["model"], train_config, config_from_dict(LMDataConfig, fields["data"])


def load_or_train_tokenizer(spec: str, files: list[Path], bpe_vocab_size: int) -> Tokenizer:
    """The tokenizer named by `spec`: a file, or one trained on `files` (char or bpe)."""
    from glassformer.tokenizer.char import CharTokenizer
    from glassformer.tokenizer.io import load_tokenizer
    from glassformer.tokenizer.training import read_text_blocks, train_bpe_from_files

    if spec == "char":
        return CharTokenizer.train(block for path in files for block in read_text_blocks(path))
    if spec == "bpe":
        return train_bpe_from_files(files, bpe_vocab_size, progress=True)
    return load_tokenizer(spec)


class LanguageModelTask:
    """Next-token prediction on random blocks of a token file (the TrainTask for the loop)."""

    def __init__(
        self, data: TokenData, tokenizer: Tokenizer, data_config: LMDataConfig, batch_size: int
    ) -> None:
        self.data, self.tokenizer, self.data_config = data, tokenizer, data_config
        self.batch_size = batch_size

    def get_batch(self, split: str, generator: torch.Generator) -> Batch:
        tokens = self.data.train if split == "train" else self.data.val
        return sample_blocks(tokens, self.batch_size, self.data_config.block_size, generator)

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
        x, y = batch
        logits = model(x)  # (B, T, V)
        return token_cross_entropy(logits, y, None, label_smoothing)  # no padding in blocks

    def count_tokens(self, batch: Batch) -> int:
        return batch[0].numel()

    def checkpoint_metadata(self) -> dict[str, Any]:
        return {"task": "lm", "tokenizer": TOKENIZER_FILE, "data": self.data_config.__dict__}

    def write_files(self, directory: Path) -> None:
        self.tokenizer.save(directory / TOKENIZER_FILE)

    def extra_metrics(self, val_loss: float) -> dict[str, float]:
        """Bits per byte: the loss in bits, spread over the bytes the tokens stand for."""
        bytes_per_token = self.data.val_bytes / len(self.data.val)
        return {"val_bits_per_byte": val_loss / math.log(2) / bytes_per_token}


def train_lm(
    files: list[Path],
    model_overrides: dict[str, Any],
    train_config: TrainConfig,
    data_config: LMDataConfig,
    out: Path,
    resume: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Prepare the data, build the GPT (seeded), and run the training loop."""
    from glassformer.tokenizer.io import load_tokenizer

    for path in files:
        if not path.is_file():
            raise GlassformerError(f"{path}: no such file")
    if resume:
        if not (out / "last" / TOKENIZER_FILE).is_file():
            raise GlassformerError(f"{out / 'last'}: no checkpoint to resume from")
        tokenizer = load_tokenizer(out / "last" / TOKENIZER_FILE)
    else:
        tokenizer = load_or_train_tokenizer(
            data_config.tokenizer, files, data_config.bpe_vocab_size
        )
    data = prepare_token_data(
        files, tokenizer, default_cache_root() / "lm", data_config.val_fraction
    )
    model_config = GPTConfig(vocab_size=tokenizer.vocab_size, **model_overrides)
    if data_config.block_size > model_config.max_len:
        raise GlassformerError(
            f"block_size={data_config.block_size} exceeds max_len={model_config.max_len}"
        )
    torch.manual_seed(train_config.seed)
    model = GPT(model_config)
    task = LanguageModelTask(data, tokenizer, data_config, train_config.batch_size)
    return train(model, task, train_config, out, resume=resume, progress=progress)


def load_lm(path: str | Path, device: str = "cpu") -> tuple[GPT, Tokenizer]:
    from glassformer.tokenizer.io import load_tokenizer
    from glassformer.train.checkpoint import load_checkpoint

    directory = resolve_checkpoint(path)
    model = load_checkpoint(directory, device)
    if not isinstance(model, GPT):
        raise GlassformerError(f"{directory}: a {model.kind} checkpoint, not a language model")
    return model, load_tokenizer(directory / TOKENIZER_FILE)


class TextStream:
    """Writes generated tokens as text the moment they form whole characters."""

    def __init__(self, tokenizer: Tokenizer, write) -> None:  # noqa: ANN001 - a file's write
        self.tokenizer, self.write = tokenizer, write
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, tokens: torch.Tensor) -> None:
        self.write(self.decoder.decode(self.tokenizer.token_bytes(int(tokens[0]))))


def generate_text(
    model: GPT,
    tokenizer: Tokenizer,
    prompt: str,
    config: DecodeConfig,
    stream: Callable[[str], object] | None = None,
) -> str:
    """Complete `prompt`; with `stream`, write each piece of text as soon as it is decoded.

    A prompt longer than the model's context keeps only its last max_len - 1 tokens (the
    model cannot see more); generation itself may run past the context window.
    """
    from glassformer.decoding.search import generate

    device = next(model.parameters()).device
    context = model.config.max_len
    ids = (tokenizer.encode(prompt) or tokenizer.encode("\n") or [0])[-(context - 1) :]
    streaming = stream is not None and config.beam_size == 1
    on_token = TextStream(tokenizer, stream) if streaming else None
    prompt_ids = torch.tensor([ids], device=device)
    step = lambda tokens, cache: model(tokens, cache=cache)  # noqa: E731
    out = generate(step, model.new_cache(), prompt_ids, config, on_token=on_token, context=context)
    return tokenizer.decode(out[0, len(ids) :].tolist())


@torch.no_grad()
def evaluate_lm(model: GPT, tokenizer: Tokenizer, path: Path, batch_size: int = 16) -> dict:
    """Loss over consecutive max_len blocks of the file (each token after the first predicted
    once), with perplexity and bits per byte."""
    from glassformer.tokenizer.training import read_text_blocks

    if not path.is_file():
        raise GlassformerError(f"{path}: no such file")
    ids = [i for block in read_text_blocks(path) for i in tokenizer.encode_ordinary(block)]
    if len(ids) < 2:
        raise GlassformerError(f"{path}: too short to evaluate ({len(ids)} tokens)")
    device = next(model.parameters()).device
    stream = torch.tensor(ids, device=device)
    T = model.config.max_len
    n_full = (len(ids) - 1) // T
    inputs = [stream[: n_full * T].view(n_full, T)]  # (blocks, T)
    targets = [stream[1 : n_full * T + 1].view(n_full, T)]
    if (len(ids) - 1) % T:  # the shorter last block
        inputs.append(stream[n_full * T : -1][None])
        targets.append(stream[n_full * T + 1 :][None])
    total = 0.0
    for x_all, y_all in zip(inputs, targets, strict=True):
        for i in range(0, x_all.size(0), batch_size):
            logits = model(x_all[i : i + batch_size])  # (B, T, V)
            y = y_all[i : i + batch_size]
            total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
    loss = total / (len(ids) - 1)
    return {
        "tokens": len(ids) - 1,
        "loss": loss,
        "perplexity": math.exp(min(loss, 50.0)),
        "bits_per_byte": total / math.log(2) / len(tokenizer.decode_bytes(ids[1:])),
    }
