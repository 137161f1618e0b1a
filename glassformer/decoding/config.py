"""DecodeConfig: how tokens are chosen (greedy, sampling, beam search), torch-free.

decoding/search.py reads it; `glassformer generate` builds one flag per field from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from glassformer.configs import require_at_most, require_positive, require_seed
from glassformer.errors import ConfigError

MAX_BEAM_SIZE = 64  # more beams cost memory and time with nothing to gain
# Below this, sampling is greedy in all but name (a logit gap of 0.01 already makes the odds
# e^-10), and dividing float32 logits by ever smaller numbers overflows them to inf (NaN
# probabilities): ask for temperature 0 instead.
MIN_TEMPERATURE = 1e-3
# A nucleus this small keeps only the most likely token for any vocabulary up to a million
# ids (the top probability of V is at least 1/V), so smaller values mean nothing more, and
# far smaller ones (1e-300) round to 0 in float32 and would drop every token.
MIN_TOP_P = 1e-6
# The most tokens one generation may ask for: a long book (about 400 KB of English text).
# Each token's step appends to a growing tensor of every token so far (and beam search keeps
# B copies), so time and memory grow with the request; 10**9 would run for days.
MAX_NEW_TOKENS = 100_000


@dataclass(frozen=True)
class DecodeConfig:
    max_new_tokens: int = 200  # tokens to generate at most (fewer if every row ends with eos)
    temperature: float = 1.0  # sampling temperature; 0 = greedy (always the most likely token)
    top_k: int = 0  # sample only among the k most likely tokens; 0 = no limit
    top_p: float = 1.0  # sample only within the smallest set with this much probability
    beam_size: int = 1  # > 1: beam search (deterministic; temperature, top-k, top-p unused)
    length_penalty: float = 0.6  # GNMT alpha for beam search; 0 = compare raw log-probabilities
    seed: int = 1337  # random seed for sampling, 0 to 2**32 - 1

    def __post_init__(self) -> None:
        require_positive(self, "max_new_tokens", "beam_size")
        require_at_most(self, "max_new_tokens", MAX_NEW_TOKENS, "a long book of text")
        check_beam_size(self.beam_size)
        check_length_penalty(self.length_penalty)
        require_seed(self)
        for name in ("temperature", "top_p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{name}={value!r} must be a number")
            if not math.isfinite(value):
                raise ConfigError(f"{name}={value!r} must be a finite number")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise ConfigError(f"top_k={self.top_k!r} must be an integer >= 0 (0: no limit)")
        if self.temperature != 0 and not self.temperature >= MIN_TEMPERATURE:
            raise ConfigError(
                f"temperature={self.temperature!r} must be 0 (greedy) or at least "
                f"{MIN_TEMPERATURE} (smaller ones are greedy in effect and overflow)"
            )
        if not MIN_TOP_P <= self.top_p <= 1:
            raise ConfigError(
                f"top_p={self.top_p!r} must be between {MIN_TOP_P} and 1 (smaller nuclei "
                "all keep only the most likely token)"
            )


def check_beam_size(beam_size: int) -> None:
    """Raise ValueError unless 1 <= beam_size <= MAX_BEAM_SIZE (every decoder's beam flag)."""
    if isinstance(beam_size, bool) or not isinstance(beam_size, int):
        raise ConfigError(f"beam size {beam_size!r} must be an integer")
    if not 1 <= beam_size <= MAX_BEAM_SIZE:
        raise ConfigError(f"beam size {beam_size} must be between 1 and {MAX_BEAM_SIZE}")


def check_length_penalty(length_penalty: float) -> None:
    """Raise ConfigError unless the GNMT alpha is a finite number >= 0 (NaN would make every
    beam's score NaN; the GNMT formula assumes alpha >= 0)."""
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)):
        raise ConfigError(f"length_penalty={length_penalty!r} must be a number")
    if not math.isfinite(length_penalty) or length_penalty < 0:
        raise ConfigError(f"length_penalty={length_penalty!r} must be a finite number >= 0")
