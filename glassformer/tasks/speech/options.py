"""SpeechOptions: how one loaded model decodes, resolved once and handed down whole.

A ListenerConfig says what the user asked for, with None where a setting is the model's own
(the rejection threshold); SpeechOptions.resolve answers each of those against the loaded
model once, as Whisper resolves its DecodingOptions in its DecodingTask, so that no function
below the Listener resolves a default again or takes the settings as loose parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from glassformer.configs import require_unit_interval
from glassformer.decoding.config import check_beam_size

if TYPE_CHECKING:
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.model import SpeechModel


@dataclass(frozen=True)
class SpeechOptions:
    beam_size: int = 4  # beams of the search (1 = greedy)
    constrain: bool = False  # the beam writes only sentences of the model's grammar
    reject_below: float = 0.0  # 0-1: a constrained result less confident is rejected
    reject_ratio: float = 0.0  # 0-1: rejected too when its per-token probability is below
    # this share of the model's own free transcript's (0: no free decode for accepted ones)

    def __post_init__(self) -> None:
        check_beam_size(self.beam_size)
        require_unit_interval(self, "reject_below")
        require_unit_interval(self, "reject_ratio")

    @classmethod
    def resolve(cls, config: ListenerConfig, speech: SpeechModel) -> SpeechOptions:
        """The config's settings for this model: constrained only where it has a grammar,
        its own threshold unless the config names one."""
        threshold = config.reject_below
        return cls(
            config.beam_size,
            config.constrain and speech.grammar is not None,
            speech.rules.reject_below if threshold is None else threshold,
            config.reject_ratio,
        )
