"""What a private building block returns."""

from dataclasses import dataclass, field

import numpy as np

from ...accounting import PrivacyEvent

__all__ = ["PrivateFit"]


@dataclass(frozen=True)
class PrivateFit:
    """A released point, the privacy event it consumed, and public diagnostics.

    ``info`` holds only quantities computed from public inputs (schedules,
    radii, block sizes, phase counts) — never anything measured on the data.
    ``outputs`` holds the other released values of the run, covered by the
    same ``event`` (e.g. how many deletion-mechanism calls returned ⊥).
    """

    coef: np.ndarray
    event: PrivacyEvent
    info: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
