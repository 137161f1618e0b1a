"""DecodeConfig: how tokens are chosen (greedy, sampling, beam search), torch-free.

decoding/search.py reads it; `glassformer generate` builds one flag per field from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from glassformer.configs import require_positive
from glassformer.errors import ConfigError

MAX_BEAM_SIZE = 64  # more beams cost memory and time with nothing to gain


@dataclass(frozen=True)
class DecodeConfig:
    max_new_tokens: int = 200  # tokens to generate at most (fewer if every row ends with eos)
    temperature: float = 1.0  # sampling temperature; 0 = greedy (always the most likely token)
    top_k: int = 0  # sample only among the k most likely tokens; 0 = no limit
    top_p: float = 1.0  # sample only within the smallest set with this much probability
    beam_size: int = 1  # > 1: beam search (deterministic; temperature, top-k, top-p unused)
    length_penalty: float = 0.6  # GNMT alpha for beam search; 0 = compare raw log-probabilities
    seed: int = 1337  # random seed for sampling

    def __post_init__(self) -> None:
        require_positive(self, "max_new_tokens", "beam_size")
        check_beam_size(self.beam_size)
        check_length_penalty(self.length_penalty)
        for name in ("temperature", "top_p"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(f"{name}={getattr(self, name)!r} must be a finite number")
        if self.temperature < 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ConfigError(
                f"need temperature >= 0, top_k >= 0, 0 < top_p <= 1; got temperature="
                f"{self.temperature}, top_k={self.top_k}, top_p={self.top_p}"
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
