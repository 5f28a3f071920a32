"""The decision rules of Part IV, *Learned positional embeddings in practice*: S1–S9, the second seed's claims about learned
tables.

Every rule returns a :class:`~posgeom.verdicts.decision.Decision`; the standards they share (the five
verdicts, stand-in models, the power of a decision over seeds) are in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..geometry.power import seed_design
from .decision import (
    BY_CONSTRUCTION, DEPENDS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, SEED_S1_HUB, SEED_S1_MODEL, Decision,
    SeedIntervalLike, interval_bounds, interval_text, more_seeds, with_power, decide_command, stand_in,
)
from .why_position import ABOVE_CHANCE, CHANCE

__all__ = ["SEED_NEIGHBOUR_COS", "S2_MIN_RUN", "S2_FIRST", "SHORTFALL", "USES_POSITION_SDS", "TAIL_EFFECT",
    "LOSS_EFFECT", "OVERFIT_GAP", "s1_neighbour_similarity", "s2_first_positions_apart", "s3_frequency_bands",
    "s4_undertrained_tail", "s5_no_vector_beyond", "s6_heuristics_order", "s6_heuristics_mlm", "s7_small_init",
    "s8_sinusoidal_init", "s9_dropout"]


#: The seed's neighbouring cosine similarity (a figure for GPT-2).
SEED_NEIGHBOUR_COS = 0.9
#: S2: the seed says "the first positions, 0 to about 5–10, stand apart"; a leading run of at least
#: this many rows standing apart is the seed's block (the lower end of its range).
S2_MIN_RUN = 5
#: S2: the seed's "first positions" are among the first this many.
S2_FIRST = 10
#: S6: a heuristic "falls short" when its accuracy is below the target-length table's by this much
#: (half a point: above the rounding of an accuracy over a few thousand sequences).
SHORTFALL = 0.005
#: S6 (MLM): a model uses positions when its methods' losses spread over more than this many seed sds.
USES_POSITION_SDS = 3.0


def s1_neighbour_similarity(neighbour_cos: float, model: str) -> Decision:
    """S1: neighbouring rows have cosine similarity above 0.9 — a figure for GPT-2.

    Another model: ``"inconclusive here"`` whether it agrees or not. GPT-2 above 0.9: ``"reproduced"``,
    else ``"not reproduced"``.
    It cannot be ``"depends on an unstated choice"``: the seed states its threshold, 0.9.
    """
    blocked = stand_in(model, SEED_S1_MODEL, "S1 (its 0.9 is a figure for GPT-2)")
    if blocked is not None:
        return Decision(INCONCLUSIVE, why=blocked.why + f" (here s(1) = {neighbour_cos:.2f})",
                        would_decide=f"{decide_command('S1', SEED_S1_HUB)} (GPT-2's position table from the hub, no "
                                     "corpus needed, CPU)", stand_in=model)
    if neighbour_cos > SEED_NEIGHBOUR_COS:
        return Decision(REPRODUCED)
    return Decision(NOT_REPRODUCED, why=f"s(1) = {neighbour_cos:.3f} ≤ {SEED_NEIGHBOUR_COS}")


def s2_first_positions_apart(stand_apart: Sequence[int]) -> Decision:
    """S2: the first positions (0 to about 5–10) stand apart; ``stand_apart``: the rows that do.

    A claim about every learned table, decided on the table measured. A leading run 0, 1, … of at
    least :data:`S2_MIN_RUN` rows standing apart: ``"reproduced"``; position 0 alone (or none):
    ``"not reproduced"``; a shorter run: ``"depends on an unstated choice"`` (how many the seed's
    "about" allows, and the isolation threshold).
    """
    apart = set(int(i) for i in stand_apart)
    run = 0
    while run in apart:
        run += 1
    first = sorted(i for i in apart if i < S2_FIRST)
    shown = ", ".join(map(str, first)) or "none"
    if run >= S2_MIN_RUN:
        return Decision(REPRODUCED, why=f"caveat: positions 0–{run - 1} stand apart")
    if run <= 1:
        which = f"only {shown} stand{'s' if len(first) == 1 else ''} apart" if first else "none stands apart"
        return Decision(NOT_REPRODUCED, why=f"of the first {S2_FIRST} positions {which}: not the "
                                            f"seed's block of the first positions (0 to about 5–10)")
    return Decision(DEPENDS, why=f"positions 0–{run - 1} stand apart, fewer than the seed's about 5–10: how many "
                                 "'the first positions' are, and the isolation threshold, are not stated")


def s3_frequency_bands(short_period_columns: int) -> Decision:
    """S3: per-dimension curves show frequency bands like sinusoids; ``short_period_columns``: columns in a
    short-period band that a smooth random (random-walk) table lacks.

    Some: ``"reproduced"`` (evidence under both nulls); none: ``"depends on an unstated choice"`` (bands
    only against a white-noise null, which the seed does not name). It cannot be ``"not reproduced"``:
    every smooth table has bands against white noise, and the seed names no null.
    """
    if short_period_columns > 0:
        return Decision(REPRODUCED, why=f"caveat: {short_period_columns} columns in a short-period band that a "
                                        "random-walk table lacks")
    return Decision(DEPENDS, why="against white noise every smooth table has 'bands'; against a random-walk null "
                                 "only a short-period band would be evidence, and there is none")


#: S4: the smallest tail deficit that counts as "under-trained": two points of accuracy on the rarely reached
#: positions, fixed before looking (twice C5's one-point margin for "no loss": a deficit must exceed what
#: the book already counts as no loss to count as one).
TAIL_EFFECT = 0.02


def s4_undertrained_tail(difference: SeedIntervalLike) -> Decision:
    """S4: rarely reached positions are under-trained; ``difference``: interval over seeds of the tail
    accuracy with skewed lengths minus uniform lengths (paired by seed).

    Below 0: ``"reproduced"``; above 0: ``"not reproduced"``; holding 0: ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the comparison (skewed against uniform lengths) is the claim itself.
    """
    low, high = interval_bounds(difference)
    design = seed_design(difference, TAIL_EFFECT)
    if high < 0:
        return Decision(REPRODUCED, why=with_power("", design))
    if low > 0:
        return Decision(NOT_REPRODUCED, why=with_power(f"the tail is learned better with skewed lengths "
                                                        f"({interval_text(difference)}), the opposite of the claim", design))
    return Decision(INCONCLUSIVE, why=with_power(f"the interval of the difference {interval_text(difference)} holds 0", design),
                    would_decide=more_seeds(design, "the same paired comparison at the same size") +
                    ", or the paper configuration of this study (128 positions, 40,000 sequences, 4,000 steps; a GPU helps)")


def s5_no_vector_beyond(error_raised: bool) -> Decision:
    """S5: no vector exists at or beyond N_max. The table has N_max rows and the library refuses a longer
    input with its own error, so the check cannot fail: ``"holds by construction"`` when the error is
    raised, ``"not reproduced"`` when a longer input passes.
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: a property of the code is not evidence and involves no choice.
    """
    if error_raised:
        return Decision(BY_CONSTRUCTION, why="the table has N_max rows and the library's own error refuses a longer "
                                             "input: a property of the code, not a finding")
    return Decision(NOT_REPRODUCED, why="an input longer than the table passed without an error")


def s6_heuristics_order(heuristics: Mapping[str, float], target: float) -> Decision:
    """S6 on the order task: each heuristic's accuracy beyond the trained length against a table trained at
    the target length. All short by :data:`SHORTFALL`: ``"reproduced"``; none: ``"not reproduced"``;
    some: ``"depends on an unstated choice"`` (the task)."""
    short = [h for h, a in heuristics.items() if a < target - SHORTFALL]
    if len(short) == len(heuristics):
        return Decision(REPRODUCED)
    if not short:
        return Decision(NOT_REPRODUCED, why=f"every heuristic reaches the target-length table ({target:.3f})")
    kept = [h for h in heuristics if h not in short]
    return Decision(DEPENDS, why=f"{', '.join(kept)} reach(es) the target-length table ({target:.3f}), "
                                 f"{', '.join(short)} fall(s) short: it depends on the heuristic and the task")


def s6_heuristics_mlm(loss_spread: float, seed_sd: float, heuristic_losses: Mapping[str, float],
                      no_position_loss: float) -> Decision:
    """S6 on a masked language model: ``loss_spread`` of the methods at the trained length against their
    seed sd; ``heuristic_losses`` beyond it against ``no_position_loss``.

    A model that does not use positions (spread ≤ :data:`USES_POSITION_SDS` sds): ``"inconclusive
    here"``. Otherwise every heuristic worse than the no-position model: ``"reproduced"``; none:
    ``"not reproduced"``; some: ``"depends on an unstated choice"``.
    """
    if loss_spread <= USES_POSITION_SDS * seed_sd:
        return Decision(INCONCLUSIVE, why=f"the methods' losses spread over {loss_spread:.3f} ≤ {USES_POSITION_SDS:g} × "
                                          f"their seed sd {seed_sd:.3f}: this model does not use positions, so no "
                                          "method can fall short of another",
                        would_decide="the paper configuration: a BERT-base-sized MLM trained on IMDB until it beats "
                                     "the no-position model, extended to 2L")
    short = [h for h, v in heuristic_losses.items() if v > no_position_loss]
    if len(short) == len(heuristic_losses):
        return Decision(REPRODUCED)
    if not short:
        return Decision(NOT_REPRODUCED, why=f"every heuristic stays below the no-position loss {no_position_loss:.3f}")
    return Decision(DEPENDS, why=f"{', '.join(short)} fall(s) above the no-position loss, the others not")


#: S7, S9: the smallest difference of a loss that matters, 0.01 nats: a fifth of :data:`OVERFIT_GAP`
#: (a regulariser that recovers less than a fifth of the overfitting it is meant to cure does not "help",
#: and an initialisation that ends less than that lower does not "beat" another); fixed before looking.
LOSS_EFFECT = 0.01


def _steps(x) -> float:
    """Steps to a threshold; a run that never reached it (None, NaN) counts as infinitely slow."""
    return float("inf") if x is None or not np.isfinite(float(x)) else float(x)


def _steps_text(x: float) -> str:
    return "never" if not np.isfinite(x) else f"{x:.0f}"


def s7_small_init(steps_small: float | None, steps_large: float | None,
                  final_loss_difference: SeedIntervalLike) -> Decision:
    """S7: N(0, 0.02²) beats N(0, 1); mean steps to the loss threshold of each (None or NaN: never reached),
    and the interval over seeds of the final loss (small − large, paired).

    Faster and the interval below 0: ``"reproduced"``; faster only: ``"depends on an unstated choice"``
    (what "beats" measures: speed or final loss); not faster: ``"not reproduced"``.
    """
    small, large = _steps(steps_small), _steps(steps_large)
    low, high = interval_bounds(final_loss_difference)
    design = seed_design(final_loss_difference, LOSS_EFFECT)
    faster = small < large
    if faster and high < 0:
        return Decision(REPRODUCED, why=with_power("", design))
    if faster:
        return Decision(DEPENDS, why=with_power(f"faster ({_steps_text(small)} vs {_steps_text(large)} steps) but the "
                                                 f"final-loss interval {interval_text(final_loss_difference, '{:+.3f}')} is not "
                                                 "below 0: what 'beats' measures is not stated", design))
    return Decision(NOT_REPRODUCED, why=with_power(f"N(0, 1) reached the threshold no later ({_steps_text(large)} vs "
                                                    f"{_steps_text(small)} steps)", design))


def s8_sinusoidal_init(accuracy: float) -> Decision:
    """S8: sinusoidal initialisation is an option. That it exists is a property of the code; the check is that
    it trains: above chance by :data:`ABOVE_CHANCE`, ``"holds by construction"``; else ``"not reproduced"``.
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: an option of the code is not evidence, and the seed states no property of it to depend on.
    """
    if accuracy > CHANCE + ABOVE_CHANCE:
        return Decision(BY_CONSTRUCTION, why=f"an option of the library by construction; it trains (held-out accuracy "
                                             f"{accuracy:.3f})")
    return Decision(NOT_REPRODUCED, why=f"the option exists but a table started from it does not train here "
                                        f"(accuracy {accuracy:.3f})")


#: S9: a model "overfits" when its held-out loss stands this far above its training loss without
#: dropout: fixed before looking, 0.05 nats, several times the seed-to-seed spread of a held-out loss.
OVERFIT_GAP = 0.05


def s9_dropout(generalisation_gap: float, loss_effect: SeedIntervalLike) -> Decision:
    """S9: dropout 0.1 on the embedding sum helps; ``generalisation_gap``: held-out minus training loss without
    dropout (mean over seeds); ``loss_effect``: interval over seeds of the held-out loss with dropout minus
    without (paired).

    A model that does not overfit (gap ≤ :data:`OVERFIT_GAP`): ``"inconclusive here"``. Otherwise below
    0: ``"reproduced"``; above 0: ``"not reproduced"``; holding 0: ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the rate, 0.1, is the seed's.
    """
    design = seed_design(loss_effect, LOSS_EFFECT)
    would = (more_seeds(design, "the same paired comparison at this size (CPU)") + ", or the paper scale of this "
             "study (width 128, 4 layers, 1,000 sequences, 4,000 steps, a GPU helps)")
    if generalisation_gap <= OVERFIT_GAP:
        return Decision(INCONCLUSIVE, why=f"the model does not overfit here (gap {generalisation_gap:.3f} ≤ "
                                          f"{OVERFIT_GAP} nats), so no regulariser can show an effect",
                        would_decide="the same study with a model that overfits (fewer training sequences or longer "
                                     "training), or the paper scale of this study (a GPU helps)")
    low, high = interval_bounds(loss_effect)
    if high < 0:
        return Decision(REPRODUCED, why=with_power("", design))
    if low > 0:
        return Decision(NOT_REPRODUCED, why=with_power(f"the model overfits (gap {generalisation_gap:.2f} nats) and "
                                                        f"dropout makes the held-out loss worse "
                                                        f"({interval_text(loss_effect, '{:+.3f}')})", design))
    return Decision(INCONCLUSIVE, why=with_power(f"the model overfits (gap {generalisation_gap:.2f} nats), but the "
                                                  f"effect of dropout on the held-out loss {interval_text(loss_effect, '{:+.3f}')} "
                                                  "holds 0", design),
                    would_decide=would)
