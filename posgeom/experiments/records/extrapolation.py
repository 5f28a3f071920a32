"""The typed record the chapter "When learned tables fail" reads from both extrapolation studies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Scores", "StoredExtrapolation"]

#: Scores as an extrapolation study stores them: per method and length factor (as text), one per seed (None: none).
Scores = dict[str, dict[str, tuple[float | None, ...]]]


@dataclass(frozen=True)
class StoredExtrapolation:
    """A stored ``run_extrapolation_order`` (score: accuracy) or ``run_extrapolation_mlm`` (score: loss)."""

    methods: tuple[str, ...]
    factors: tuple                       # as stored: as text they key the scores
    L: int
    seeds: tuple
    accuracy: Scores | None = None
    accuracy_beyond: Scores | None = None
    accuracy_both_beyond: Scores | None = None
    loss: Scores | None = None
    loss_beyond: Scores | None = None
    stress_at_max: dict[str, tuple[float, ...]] | None = None  # per method and seed, of its positions at the longest
    alibi_reversal_gap: float = float("nan")   # largest change of the ALiBi models' logits under reversal
    none_reversal_gap: float | None = None     # the same without positions, where run
    unigram_loss: float | None = None          # MLM: the loss of predicting word frequencies
    vocab_size: int | None = None              # MLM: the ids of the reduced vocabulary
    rare_fraction: float | None = None         # MLM: the share of training word pieces mapped to "rare"
    loss_by_position: np.ndarray | None = None  # MLM: (method, seed, position) at the longest length

    @property
    def score(self) -> str:
        """The score the study stores: ``"accuracy"`` (the order task) or ``"loss"`` (MLM)."""
        return "accuracy" if self.accuracy is not None else "loss"

    @property
    def longest(self) -> float:
        """The longest length factor the study ran."""
        return self.factors[-1]
