"""The decision rules of Part IV, *Learned positional embeddings in practice*: S1–S9, the second seed's claims
about learned tables."""

from __future__ import annotations

from math import comb
from typing import Mapping, Sequence

import numpy as np

from ..geometry.intervals import seed_design
from .decision import (agree, BY_CONSTRUCTION, DEPENDS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, SEED_S1_HUB,
                       SEED_S1_MODEL, Decision, SeedIntervalLike, interval_bounds, interval_text, more_seeds,
                       with_power, decide_command, stand_in)
from .why_position import ABOVE_CHANCE, CHANCE

__all__ = ["SEED_NEIGHBOUR_COS", "S2_MIN_RUN", "S2_FIRST", "S2_CLAIM", "S3_LEVEL", "SHORTFALL", "USES_POSITION_SDS",
    "TAIL_EFFECT", "LOSS_EFFECT", "OVERFIT_GAP", "s1_neighbour_similarity", "s2_first_positions_apart", "s3_frequency_bands",
    "s4_undertrained_tail", "s5_no_vector_beyond", "s6_heuristics_order", "s6_heuristics_mlm",
    "s6_heuristics_powered", "s7_small_init", "s8_sinusoidal_init", "s9_dropout"]


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
    It cannot be ``"depends on an unstated choice"``: the seed states its threshold, 0.9."""
    blocked = stand_in(model, SEED_S1_MODEL, "S1 (its 0.9 is a figure for GPT-2)")
    if blocked is not None:
        return Decision(INCONCLUSIVE, why=blocked.why + f" (here s(1) = {neighbour_cos:.2f})",
                        would_decide=f"{decide_command('S1', SEED_S1_HUB)} (GPT-2's position table from the hub, no "
                                     "corpus needed, CPU)", stand_in=model)
    if neighbour_cos > SEED_NEIGHBOUR_COS:
        return Decision(REPRODUCED)
    return Decision(NOT_REPRODUCED, why=f"s(1) = {neighbour_cos:.3f} ≤ {SEED_NEIGHBOUR_COS}")


#: S2 is tied to GPT-2: the seed explains its first positions by "the special role of the first tokens in
#: autoregressive models (the BOS token, the system instructions)", and ``posgeom decide S2`` decides it there.
S2_CLAIM = "S2 (the seed ties its first positions to the first tokens of autoregressive models such as GPT-2)"


def _first_apart(stand_apart: Sequence[int]) -> tuple[int, str]:
    """The leading run 0, 1, ... of rows standing apart, and those among the first :data:`S2_FIRST` in words."""
    apart = set(int(i) for i in stand_apart)
    run = 0
    while run in apart:
        run += 1
    first = sorted(i for i in apart if i < S2_FIRST)
    if not first:
        return run, f"none of the first {S2_FIRST} positions stands apart"
    shown = ", ".join(map(str, first))
    return run, f"of the first {S2_FIRST} positions only {shown} stand{'s' if len(first) == 1 else ''} apart"


def s2_first_positions_apart(stand_apart: Sequence[int], model: str) -> Decision:
    """S2: the first positions (0 to about 5–10) stand apart; ``stand_apart``: the rows that do in ``model``'s table."""
    run, which = _first_apart(stand_apart)
    blocked = stand_in(model, SEED_S1_MODEL, S2_CLAIM)
    if blocked is not None:
        return Decision(INCONCLUSIVE, why=blocked.why + f" (here {which})",
                        would_decide=f"{decide_command('S2', SEED_S1_HUB)} (GPT-2's position table from the hub, no "
                                     "corpus needed, CPU)", stand_in=model)
    if run >= S2_MIN_RUN:
        return Decision(REPRODUCED, why=f"caveat: positions 0–{run - 1} stand apart")
    if run <= 1:
        return Decision(NOT_REPRODUCED, why=f"{which}: not the seed's block of the first positions (0 to about 5–10)")
    return Decision(DEPENDS, why=f"positions 0–{run - 1} stand apart, fewer than the seed's about 5–10: how many "
                                 "'the first positions' are, and the isolation threshold, are not stated")


#: S3: the level of the test against the null tables: a count of banded columns that either null reaches with
#: a chance of at most 5 % is evidence (the usual level, fixed before looking, as the book's 95 % intervals).
S3_LEVEL = 0.05


def _null_chance(banded: int, columns: int) -> float:
    r"""Under either null, the chance that ``banded`` or more of ``columns`` columns pass S3's test:
    $\binom{d}{m} / \binom{2d}{m}$ (the table's and the reference's columns are exchangeable)."""
    return comb(columns, banded) / comb(2 * columns, banded)


def s3_frequency_bands(banded_columns: int, n_columns: int) -> Decision:
    """S3: per-dimension curves show frequency bands like sinusoids.
    It cannot be ``"depends on an unstated choice"``: the test holds against both nulls, and its level is fixed before
    looking."""
    banded, columns = int(banded_columns), int(n_columns)
    if columns < 1 or not 0 <= banded <= columns:
        raise ValueError(f"s3_frequency_bands needs 0 <= banded_columns <= n_columns and n_columns >= 1, got "
                         f"{banded} of {columns}")
    if banded == 0:
        return Decision(NOT_REPRODUCED, why=f"none of the {columns} columns oscillates faster than every column of a "
                                            "random walk with more of its power at one period than any column of white "
                                            "noise: what the columns show, a smooth random table or white noise shows too")
    chance = _null_chance(banded, columns)
    found = (f"{banded} of {columns} columns oscillate in a band that neither a random walk nor white noise of the same "
             f"shape reaches (chance under either null at most {chance:.2g}")
    if chance <= S3_LEVEL:
        return Decision(REPRODUCED, why=f"caveat: {found} ≤ {S3_LEVEL:g})")
    return Decision(INCONCLUSIVE, why=f"{found} > {S3_LEVEL:g}): as many as a draw of a null gives by chance",
                    would_decide=f"the same count against more draws of each null table (against k draws the chance "
                                 f"of {banded} columns above all of them is about (k + 1)^-{banded})")


#: S4: the smallest tail deficit that counts as "under-trained": two points of accuracy on the rarely reached
#: positions, fixed before looking (twice C5's one-point margin for "no loss": a deficit must exceed what
#: the book already counts as no loss to count as one).
TAIL_EFFECT = 0.02


def s4_undertrained_tail(difference: SeedIntervalLike) -> Decision:
    """S4: rarely reached positions are under-trained; ``difference``: interval over seeds of the tail accuracy with
    skewed minus uniform lengths (paired), against :data:`TAIL_EFFECT`.
    It cannot be ``"depends on an unstated choice"``: the comparison is the claim itself, and the margin is fixed before
    looking."""
    low, high = interval_bounds(difference)
    design = seed_design(difference, TAIL_EFFECT)
    # four decimals: a bound a few ten-thousandths from the margin must read on the right side of it
    shown = interval_text(difference, "{:+.4f}")
    if high < -TAIL_EFFECT:
        return Decision(REPRODUCED, why=with_power(f"the interval {shown} lies below −{TAIL_EFFECT:g}: the tail loses "
                                                    "more than the smallest deficit that counts", design))
    if low > -TAIL_EFFECT:
        return Decision(NOT_REPRODUCED, why=with_power(f"the interval {shown} lies above −{TAIL_EFFECT:g}: a tail deficit "
                                                        f"of {TAIL_EFFECT:g} or more is excluded", design))
    return Decision(INCONCLUSIVE, why=with_power(f"the interval of the difference {shown} holds both −{TAIL_EFFECT:g} "
                                                  "and smaller deficits", design),
                    would_decide=more_seeds(design, "the same paired comparison at the same size") +
                    ", or the paper configuration of this study (128 positions, 40,000 sequences, 4,000 steps; a GPU helps)")


def s5_no_vector_beyond(error_raised: bool) -> Decision:
    """S5: no vector exists at or beyond N_max: ``"holds by construction"`` when the library's own error refuses a
    longer input, ``"not reproduced"`` when it passes.
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: a property of the code is not evidence
    and involves no choice."""
    if error_raised:
        return Decision(BY_CONSTRUCTION, why="the table has N_max rows and the library's own error refuses a longer "
                                             "input: a property of the code, not a finding")
    return Decision(NOT_REPRODUCED, why="an input longer than the table passed without an error")


def s6_heuristics_order(heuristics: Mapping[str, float], target: float) -> Decision:
    """S6 on the order task: each heuristic's accuracy beyond the trained length against a table trained at the target
    length."""
    short = [h for h, a in heuristics.items() if a < target - SHORTFALL]
    if len(short) == len(heuristics):
        return Decision(REPRODUCED)
    if not short:
        return Decision(NOT_REPRODUCED, why=f"every heuristic reaches the target-length table ({target:.3f})")
    kept = [h for h in heuristics if h not in short]
    return Decision(DEPENDS, why=f"{', '.join(kept)} {agree(kept, 'reaches', 'reach')} the target-length table "
                                 f"({target:.3f}), {', '.join(short)} {agree(short, 'falls', 'fall')} short: it depends on "
                                 "the heuristic and the task")


def s6_heuristics_mlm(loss_spread: float, seed_sd: float, heuristic_losses: Mapping[str, float],
                      no_position_loss: float) -> Decision:
    """S6 on a masked language model: the methods' ``loss_spread`` against their seed sd, and ``heuristic_losses``
    beyond the trained length against ``no_position_loss``."""
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
    return Decision(DEPENDS, why=f"{', '.join(short)} {agree(short, 'falls', 'fall')} above the no-position loss, the "
                                 "others not")


def s6_heuristics_powered(differences: Mapping[str, SeedIntervalLike]) -> Decision:
    """S6 over seeds: ``differences`` maps each heuristic to the interval of its accuracy beyond the trained length
    minus a table trained at that length (paired), against :data:`SHORTFALL`."""
    if not differences:
        raise ValueError("s6_heuristics_powered needs at least one heuristic's interval")
    bounds = {h: interval_bounds(iv) for h, iv in differences.items()}
    short = [h for h, (_, high) in bounds.items() if high < -SHORTFALL]
    reach = [h for h, (low, _) in bounds.items() if low > -SHORTFALL]
    noisiest = max(differences, key=lambda h: seed_design(differences[h], SHORTFALL).sd)
    design = seed_design(differences[noisiest], SHORTFALL)

    def shown(names):
        return ", ".join(f"{h.replace('_', ' ')} {interval_text(differences[h], '{:+.4f}')}" for h in names)

    if len(short) == len(bounds):
        return Decision(REPRODUCED, why=with_power(f"every heuristic falls short by more than {SHORTFALL:g}", design))
    if reach and short:
        return Decision(DEPENDS, why=with_power(f"{shown(reach)} {agree(reach, 'reaches', 'reach')} the target-length table "
                                                 f"within {SHORTFALL:g}, {shown(short)} {agree(short, 'falls', 'fall')} "
                                                 "short: it depends on the heuristic", design))
    if reach:
        return Decision(NOT_REPRODUCED, why=with_power(f"{shown(reach)} {agree(reach, 'reaches', 'reach')} the target-length "
                                                        f"table within {SHORTFALL:g}, and no heuristic is shown to fall "
                                                        "short", design))
    undecided = [h for h in bounds if h not in short]
    return Decision(INCONCLUSIVE, why=with_power(f"{shown(undecided)} {agree(undecided, 'holds', 'hold')} both −{SHORTFALL:g} and smaller "
                                                  "shortfalls", design),
                    would_decide=more_seeds(design, "the same paired comparison at the same size"))


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
    """S7: N(0, 0.02²) beats N(0, 1); mean steps to the loss threshold of each (None or NaN: never reached), and the
    interval over seeds of the final loss (small − large, paired), against :data:`LOSS_EFFECT`."""
    small, large = _steps(steps_small), _steps(steps_large)
    low, high = interval_bounds(final_loss_difference)
    design = seed_design(final_loss_difference, LOSS_EFFECT)
    shown = interval_text(final_loss_difference, "{:+.4f}")
    speed = f"{_steps_text(small)} vs {_steps_text(large)} steps"
    if not small < large:
        return Decision(NOT_REPRODUCED, why=with_power(f"N(0, 1) reached the threshold no later ({_steps_text(large)} vs "
                                                        f"{_steps_text(small)} steps)", design))
    if high < -LOSS_EFFECT:
        return Decision(REPRODUCED, why=with_power(f"caveat: faster ({speed}) and a final loss lower by more than "
                                                    f"{LOSS_EFFECT:g} ({shown})", design))
    if low > -LOSS_EFFECT:
        return Decision(DEPENDS, why=with_power(f"faster ({speed}) but a final loss lower by {LOSS_EFFECT:g} or more is "
                                                 f"excluded ({shown}): what 'beats' measures is not stated", design))
    return Decision(INCONCLUSIVE, why=with_power(f"faster ({speed}), but the final-loss interval {shown} holds both "
                                                  f"−{LOSS_EFFECT:g} and smaller differences", design),
                    would_decide=more_seeds(design, "the same paired comparison at the same size"))


def s8_sinusoidal_init(accuracy: float) -> Decision:
    """S8: sinusoidal initialisation is an option; it trains above chance by :data:`ABOVE_CHANCE`: ``"holds by
    construction"``; else ``"not reproduced"``.
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: an option of the code is not evidence,
    and the seed states no property of it to depend on."""
    if accuracy > CHANCE + ABOVE_CHANCE:
        return Decision(BY_CONSTRUCTION, why=f"an option of the library by construction; it trains (held-out accuracy "
                                             f"{accuracy:.3f})")
    return Decision(NOT_REPRODUCED, why=f"the option exists but a table started from it does not train here "
                                        f"(accuracy {accuracy:.3f})")


#: S9: a model "overfits" when its held-out loss stands this far above its training loss without
#: dropout: fixed before looking, 0.05 nats, several times the seed-to-seed spread of a held-out loss.
OVERFIT_GAP = 0.05


def s9_dropout(generalisation_gap: float, loss_effect: SeedIntervalLike) -> Decision:
    """S9: dropout 0.1 on the embedding sum helps; ``generalisation_gap``: held-out minus training loss without dropout;
    ``loss_effect``: interval over seeds of the held-out loss with minus without dropout (paired).
    It cannot be ``"depends on an unstated choice"``: the rate, 0.1, is the seed's, and the margin is fixed before
    looking."""
    design = seed_design(loss_effect, LOSS_EFFECT)
    would = (more_seeds(design, "the same paired comparison at this size (CPU)") + ", or the paper scale of this "
             "study (width 128, 4 layers, 1,000 sequences, 4,000 steps, a GPU helps)")
    if generalisation_gap <= OVERFIT_GAP:
        return Decision(INCONCLUSIVE, why=f"the model does not overfit here (gap {generalisation_gap:.3f} ≤ "
                                          f"{OVERFIT_GAP} nats), so no regulariser can show an effect",
                        would_decide="the same study with a model that overfits (fewer training sequences or longer "
                                     "training), or the paper scale of this study (a GPU helps)")
    low, high = interval_bounds(loss_effect)
    shown = interval_text(loss_effect, "{:+.4f}")
    if high < -LOSS_EFFECT:
        return Decision(REPRODUCED, why=with_power(f"caveat: dropout lowers the held-out loss by more than "
                                                    f"{LOSS_EFFECT:g} nats ({shown})", design))
    if low > -LOSS_EFFECT:
        return Decision(NOT_REPRODUCED, why=with_power(f"the model overfits (gap {generalisation_gap:.2f} nats), and a "
                                                        f"help of {LOSS_EFFECT:g} nats or more is excluded ({shown})",
                                                        design))
    return Decision(INCONCLUSIVE, why=with_power(f"the model overfits (gap {generalisation_gap:.2f} nats), but the "
                                                  f"effect of dropout on the held-out loss {shown} holds both "
                                                  f"−{LOSS_EFFECT:g} and smaller effects", design),
                    would_decide=would)
