r"""The decision rules of the "Paper vs this book" tables: one named rule per check, fed with numbers.

A chapter never writes a verdict or its reason: it computes the check's numbers (estimates, intervals,
seeds, the model used) and calls the rule of that check, which returns a :class:`Decision` — the
verdict, the sentence that explains it, and, for a check that could not test its claim, the run that
would. A reason states only what its rule computed.

The five verdicts (:data:`VERDICTS`):

- ``"reproduced"``, ``"depends on an unstated choice"``, ``"not reproduced"``: the evidence;
- ``"inconclusive here"``: the check could not test the claim (a stand-in model for a claim about
  another model, an effect within the noise, a model that did not learn); never counted for or against;
- ``"holds by construction"``: the check cannot fail (an identity, an exact construction, a library's
  own error); it confirms the algebra or the code, not the claim, and is counted apart from the evidence.

**Stand-in models.** A check run on a model other than the one a claim is about (the MiniLM stand-in
for BERT-base, or for GPT-2) is ``"inconclusive here"`` whether it agrees with the claim or not
(:func:`stand_in`); only a claim about every model of its kind (S2, S3: "a learned table") is decided
on whichever learned table was measured.

Every threshold is a module constant with the reason it has that value. Intervals are read through
their public attributes ``low`` and ``high`` (a mapping with those keys works too), so the rules do not
depend on how an interval was computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .geometry.power import TARGET_POWER, SeedDesign, seed_design

REPRODUCED = "reproduced"
DEPENDS = "depends on an unstated choice"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive here"
BY_CONSTRUCTION = "holds by construction"
#: Every verdict a row may carry, the evidence first.
VERDICTS = (REPRODUCED, DEPENDS, NOT_REPRODUCED, INCONCLUSIVE, BY_CONSTRUCTION)
#: The verdicts that weigh for or against a claim (the others are counted apart).
EVIDENCE = (REPRODUCED, DEPENDS, NOT_REPRODUCED)

#: The paper's model (Section 3 of the specification: BERT-base, bert-base-uncased).
PAPER_MODEL = "bert-base-uncased"
#: The model behind the second seed's neighbouring-similarity figure (0.9): GPT-2's learned table.
SEED_S1_MODEL = "gpt2"
#: Its name on the Hugging Face hub (what ``posgeom decide S1`` loads).
SEED_S1_HUB = "openai-community/gpt2"


def decide_command(claim: str, model: str, scale: str = "paper") -> str:
    """The command that decides ``claim`` on ``model`` where the model can be loaded (``posgeom decide``):
    what an ``"inconclusive here"`` verdict blocked by a model prints, so that a reader with the hub runs it."""
    return f"posgeom decide {claim} --model {model} --scale {scale}"


@dataclass(frozen=True)
class Decision:
    """What a rule decided: ``verdict`` (one of :data:`VERDICTS`), ``why`` (the sentence, computed by
    the rule; required for every verdict but ``"reproduced"``, where it is an optional caveat),
    ``would_decide`` (the run that would decide the claim: required for ``"inconclusive here"``,
    allowed for ``"holds by construction"``, refused otherwise) and ``stand_in`` (the stand-in model
    the check used, empty when it used the claim's own model)."""

    verdict: str
    why: str = ""
    would_decide: str = ""
    stand_in: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; valid verdicts are {', '.join(VERDICTS)}")
        if self.verdict != REPRODUCED and not self.why.strip():
            raise ValueError(f"a verdict of {self.verdict!r} needs a `why`")
        if self.verdict == INCONCLUSIVE and not self.would_decide.strip():
            raise ValueError(f"an {INCONCLUSIVE!r} verdict needs `would_decide`, the run that would decide the "
                             "claim (model, scale, data)")
        if self.verdict not in (INCONCLUSIVE, BY_CONSTRUCTION) and self.would_decide:
            raise ValueError(f"`would_decide` belongs to an {INCONCLUSIVE!r} or {BY_CONSTRUCTION!r} verdict only; "
                             f"this verdict is {self.verdict!r}")


def _bounds(interval) -> tuple[float, float]:
    """``(low, high)`` of an interval object (attributes) or mapping (keys)."""
    if isinstance(interval, Mapping):
        return float(interval["low"]), float(interval["high"])
    return float(interval.low), float(interval.high)


def _iv(interval, fmt: str = "{:.3g}") -> str:
    low, high = _bounds(interval)
    return f"[{fmt.format(low)}, {fmt.format(high)}]"


def _with_power(why: str, design: SeedDesign) -> str:
    """``why`` followed by the design's power (every decision over seeds states it)."""
    return f"{why}; {design.text()}" if why else design.text()


#: The most seeds a design run on the CPU may ask for: the seed-level studies of the book's small models take
#: seconds to a minute a seed, so a hundred is an overnight run on a laptop; beyond it, the noise of the
#: measure (not the number of seeds) is what to change.
MAX_SEEDS = 100


def _more_seeds(design: SeedDesign, what: str) -> str:
    """What would decide an underpowered check: ``what`` over the seeds that reach the target power, or, when
    that is more than :data:`MAX_SEEDS`, a less noisy design."""
    if design.needed is not None and design.needed <= MAX_SEEDS:
        return f"{what} over {design.needed} seeds ({TARGET_POWER:.0%} power for the smallest effect that matters)"
    more = "more seeds than can be run" if design.needed is None else f"{design.needed} seeds"
    return f"a less noisy design than {what} ({TARGET_POWER:.0%} power would need {more} at this noise)"


def _values(xs) -> np.ndarray:
    arr = np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("a rule needs at least one value; got an empty sequence")
    return arr


def is_model(model: str, wanted: str) -> bool:
    """Whether the model description ``model`` names the model ``wanted`` (case-insensitive, as a whole name:
    ``"bert-base-uncased (pretrained)"`` names ``"bert-base-uncased"``, ``"distilbert-base-uncased"`` does not;
    a hub owner is optional: ``"openai-community/gpt2"`` names ``"gpt2"``)."""
    name = wanted.lower().split("/")[-1]
    return re.search(rf"(?<![a-z0-9.-]){re.escape(name)}(?![a-z0-9.-])", model.lower()) is not None


def stand_in(model: str, claim_model: str, claim: str) -> Decision | None:
    """``"inconclusive here"`` when ``model`` is a stand-in for ``claim_model``, else None.

    The standard of the book: a check on a stand-in model says nothing about the claim's model, whether
    it agrees or not, so it is never counted as evidence.
    """
    if is_model(model, claim_model):
        return None
    return Decision(INCONCLUSIVE, why=f"{model} is a stand-in for {claim_model}, the model {claim} is about: its "
                                      "value neither confirms nor refutes the claim",
                    would_decide=f"the same measurement on {claim_model} from the hub (paper scale)", stand_in=model)


# --------------------------------------------------------------------------------------------
# C1: Theorem 1
# --------------------------------------------------------------------------------------------

#: Largest permutation-equivariance gap of a float64 forward pass counted as exact: rounding of sums
#: over a few dozen terms is about 1e-15; 1e-9 leaves six orders of margin and is far below any real gap.
EQUIVARIANCE_TOL = 1e-9
#: Chance accuracy of the order task (two classes, balanced).
CHANCE = 0.5
#: An accuracy counts as above chance when it exceeds it by this much: fixed before looking, ten points,
#: well beyond the seed-to-seed spread of a balanced binary task with hundreds of test sequences.
ABOVE_CHANCE = 0.10


def c1_equivariance(perm_gap: float, nope_accuracies) -> Decision:
    """C1, the theorem as stated: a NoPE encoder is permutation-equivariant, hence at chance on the order task.

    Equivariance of a content-only bidirectional encoder is an identity of its algebra, and a model
    that gives a sequence and its reversal the same output is at chance on reversal pairs exactly: the
    check cannot fail unless the code is wrong. Outcomes: ``"holds by construction"`` (gap within
    :data:`EQUIVARIANCE_TOL`, NoPE at chance in every seed) or ``"not reproduced"``. It cannot be
    ``"reproduced"`` or ``"depends on an unstated choice"``: an identity is not evidence and involves
    no choice.
    """
    acc = _values(nope_accuracies)
    if perm_gap <= EQUIVARIANCE_TOL and np.all(np.abs(acc - CHANCE) < 1e-12):
        return Decision(BY_CONSTRUCTION, why=f"permutation gap {perm_gap:.1e} ≤ {EQUIVARIANCE_TOL:.0e} and NoPE "
                                             f"exactly at chance in all {acc.size} seeds: an identity of the "
                                             "architecture, confirmed to rounding")
    return Decision(NOT_REPRODUCED, why=f"permutation gap {perm_gap:.1e} (tolerance {EQUIVARIANCE_TOL:.0e}), NoPE "
                                        f"accuracy {acc.min():.3f}–{acc.max():.3f}: the model is not equivariant")


def c1_causal_mask(accuracies) -> Decision:
    """C1 with a causal mask (outside the theorem's bidirectional setting).

    Above chance by :data:`ABOVE_CHANCE` (mean over seeds): ``"depends on an unstated choice"`` (the
    mask, which the theorem leaves out, is itself a positional signal); otherwise ``"reproduced"``.
    It cannot be ``"not reproduced"``: the theorem says nothing about a causal mask.
    """
    acc = _values(accuracies)
    if acc.mean() > CHANCE + ABOVE_CHANCE:
        return Decision(DEPENDS, why=f"NoPE with a causal mask reaches {acc.mean():.3f} > {CHANCE + ABOVE_CHANCE:.2f}: "
                                     "the theorem holds for bidirectional encoders only; a causal mask is a "
                                     "positional signal")
    return Decision(REPRODUCED, why=f"caveat: even with a causal mask NoPE stays within {ABOVE_CHANCE:.2f} of chance "
                                    f"({acc.mean():.3f})")


def c1_symmetric_signal(accuracies, reversal_gap: float) -> Decision:
    """C1 with a relative signal that keeps the reversal (ALiBi without ``[CLS]``).

    Reversal gap within :data:`EQUIVARIANCE_TOL` and accuracy within :data:`ABOVE_CHANCE` of chance:
    ``"depends on an unstated choice"`` (which positional signal: one must break every permutation the
    data distinguish); otherwise ``"reproduced"``. It cannot be ``"not reproduced"``: the theorem is
    about the absence of a signal, and this check has one.
    """
    acc = _values(accuracies)
    if reversal_gap <= EQUIVARIANCE_TOL and acc.mean() <= CHANCE + ABOVE_CHANCE:
        return Decision(DEPENDS, why=f"reversal gap {reversal_gap:.1e} and accuracy {acc.mean():.3f}: the signal "
                                     "|i − j| keeps the reversal, so a positional signal restores order only if it "
                                     "breaks every permutation")
    return Decision(REPRODUCED, why=f"caveat: this signal breaks the reversal (gap {reversal_gap:.1e}, accuracy "
                                    f"{acc.mean():.3f})")


# --------------------------------------------------------------------------------------------
# C2: Theorem 4
# --------------------------------------------------------------------------------------------

#: A separation at or below this counts as collapsed: a N(0, 0.02²) table of width 32 starts with a
#: separation of about 0.1, float32 rounding is about 1e-7; 1e-3 is two orders from both.
SEP_TOL = 1e-3
#: A table is "ordered" when the Spearman correlation of its distances with |i − j| reaches this: fixed
#: before looking, half of a perfectly ordered table's 1.
ORDERED_RHO = 0.5
#: A table "collapses" under weight decay when its median distance ends below this share of its start,
#: and "keeps its scale" above :data:`KEEP_SHARE`: fixed before looking, a factor 10 and a factor 2.
COLLAPSE_SHARE, KEEP_SHARE = 0.1, 0.5


def c2_separation(hold_intervals, broken_separations) -> Decision:
    """C2 at the theorem's conditions: does a trained table keep positions apart, and is that the conditions' doing?

    ``hold_intervals``: intervals over seeds of the final separation of tables trained under the
    conditions; ``broken_separations``: final separations of the controls that break a condition.
    A lower bound at or below :data:`SEP_TOL`: ``"not reproduced"``. Controls that stay separated too:
    ``"holds by construction"`` — separation is inherited from the initialisation or SGD noise, so this
    check cannot fail. A control that collapses while the trained tables stay apart: ``"reproduced"``.
    It cannot be ``"depends on an unstated choice"``: what the conditions decide beyond separation is :func:`c2_broken_conditions`'s question.
    """
    lows = [_bounds(iv)[0] for iv in hold_intervals]
    if not lows:
        raise ValueError("c2_separation needs at least one interval of the separation under the conditions")
    broken = _values(broken_separations)
    if min(lows) <= SEP_TOL:
        return Decision(NOT_REPRODUCED, why=f"under the conditions the interval of sep(P) reaches {min(lows):.1e} "
                                            f"≤ {SEP_TOL:.0e}: two positions end (nearly) together")
    if broken.min() > SEP_TOL:
        return Decision(BY_CONSTRUCTION,
                        why=f"sep(P) > {SEP_TOL:.0e} under the conditions (lowest bound {min(lows):.3g}) and in the "
                            f"runs that break them (lowest {broken.min():.3g}): separation is inherited from the "
                            "initialisation and SGD noise, so this check cannot fail",
                        would_decide="runs that reach a minimum with a force towards collapse (weight decay) "
                                     "against the stationary and bag-of-tokens controls: on the CPU at the smallest "
                                     "model that keeps the conditions (posgeom.experiments.separation_converged, "
                                     "the chapter's last C2 row), and at BERT-base's shape on the drift corpus and "
                                     "SST-2, 5 seeds each (GPU)")
    return Decision(REPRODUCED, why=f"caveat: separated under the conditions (lowest bound {min(lows):.3g}), a "
                                    f"control that breaks them collapses ({broken.min():.1e})")


def c2_broken_conditions(broken_separations, rho_hold: float, rho_broken) -> Decision:
    """C2 with a condition broken on purpose: what do the conditions decide?

    A control that collapses (separation ≤ :data:`SEP_TOL`): ``"reproduced"`` (the conditions are what
    keeps positions apart). Controls separated but unordered (Spearman with |i − j| below
    :data:`ORDERED_RHO`) while the conditions-hold table is ordered: ``"depends on an unstated
    choice"`` (which property of the table the claim is about). Controls as ordered as the table under
    the conditions: ``"not reproduced"`` (the conditions decide nothing here).
    """
    broken, rho_b = _values(broken_separations), _values(rho_broken)
    if broken.min() <= SEP_TOL:
        return Decision(REPRODUCED, why=f"caveat: a control that breaks a condition collapses (sep {broken.min():.1e})")
    if rho_hold >= ORDERED_RHO and rho_b.max() < ORDERED_RHO:
        return Decision(DEPENDS, why=f"sep(P) > 0 with a condition broken too (lowest {broken.min():.3g}); what the "
                                     f"conditions decide is whether the table is ordered (ρ with |i − j| {rho_hold:.2f} "
                                     f"against at most {rho_b.max():.2f}): which property the claim is about")
    return Decision(NOT_REPRODUCED, why=f"the controls stay separated (lowest {broken.min():.3g}) and ordered "
                                        f"(ρ up to {rho_b.max():.2f} against {rho_hold:.2f}): the conditions "
                                        "make no difference here")


def c2_weight_decay(shrink_broken, shrink_hold) -> Decision:
    """C2 under weight decay: final / initial median distance per seed, for the order-insensitive control and
    for the conditions-hold table.

    The control collapses (all below :data:`COLLAPSE_SHARE`) and the table keeps its scale (all above
    :data:`KEEP_SHARE`): ``"depends on an unstated choice"`` (weight decay, which the paper does not
    state). The table collapses too: ``"not reproduced"``. Otherwise ``"inconclusive here"`` (the decay
    is too weak to show within the run). It cannot be ``"reproduced"``: the claim says nothing of weight
    decay, so the most this check can show is that the claim depends on it.
    """
    b, h = _values(shrink_broken), _values(shrink_hold)
    if h.max() < COLLAPSE_SHARE:
        return Decision(NOT_REPRODUCED, why=f"with the conditions holding the table collapses too (to at most "
                                            f"{h.max():.1%} of its scale)")
    if b.max() < COLLAPSE_SHARE and h.min() > KEEP_SHARE:
        return Decision(DEPENDS, why=f"the unneeded table collapses (to at most {b.max():.1%}), the needed one keeps "
                                     f"at least {h.min():.1%}: whether an unneeded table collapses depends on weight "
                                     "decay, which the paper does not state")
    return Decision(INCONCLUSIVE, why=f"neither a clear collapse (control at {b.min():.1%}–{b.max():.1%}) nor a clear "
                                      f"hold (table at {h.min():.1%}–{h.max():.1%})",
                    would_decide="longer runs (10,000+ steps) with weight decay, 5 seeds each, on the drift and "
                                 "stationary corpora")



#: C2 trained with weight decay: the smallest ratio that matters between the separation of a table the loss
#: needs and the floor of one it does not use, as a difference of log10 separations — a quarter above the
#: floor. The floor itself varies by about 7 % from seed to seed (log10 sd about 0.03 in the pilots), so a
#: quarter is about three of its sds: less could be a lucky floor, more would ask more than "apart".
FLOOR_EFFECT = float(np.log10(1.25))


def c2_converged(difference, control_separations) -> Decision:
    """C2 trained with a force towards collapse (weight decay) against its controls, on the pairs of positions
    whose marginals the training sample tells apart (:mod:`posgeom.experiments.separation_converged`).

    ``difference``: interval over seeds, paired by seed, of log10 sep(P) under the conditions minus log10 sep(P)
    on the stationary corpus (the same loss and noise, a table the loss does not use: the floor), both over the
    same pairs; ``control_separations``: per seed, sep(P) of the order-insensitive control over those pairs.

    The control does not collapse (median above :data:`SEP_TOL`): ``"holds by construction"`` — the decay does
    not pull even an unneeded table together within the run, so staying apart shows nothing. Otherwise the
    interval above 0: ``"reproduced"``; below 0: ``"not reproduced"`` (the loss pulls distinct positions closer
    than noise keeps an unused table); holding 0: ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the weight decay is the design's force, not a choice the
    claim leaves open (:func:`c2_weight_decay` is where it is one).
    """
    control = _values(control_separations)
    low, high = _bounds(difference)
    design = seed_design(difference, FLOOR_EFFECT)
    mean = (low + high) / 2  # the interval is Student-t's, symmetric about the mean
    ratio = f"{10 ** mean:.2f}× the floor (log10 ratio {_iv(difference, '{:+.3f}')})"
    if np.median(control) > SEP_TOL:
        return Decision(BY_CONSTRUCTION,
                        why=_with_power(f"the order-insensitive control stays apart too (median sep(P) "
                                        f"{np.median(control):.2g} > {SEP_TOL:.0e}): the decay pulls no table together "
                                        "within the run, so staying apart shows nothing", design),
                        would_decide="the same design with longer runs or a stronger weight decay, until the "
                                     "order-insensitive control collapses (CPU)")
    collapsed = f"the order-insensitive control collapses (median sep(P) {np.median(control):.1e})"
    if low > 0:
        return Decision(REPRODUCED, why=_with_power(f"pairs the sample tells apart end at {ratio}; {collapsed}",
                                                    design))
    if high < 0:
        return Decision(NOT_REPRODUCED, why=_with_power(f"pairs the sample tells apart end closer than a table the "
                                                        f"loss does not use: {ratio}; {collapsed}", design))
    return Decision(INCONCLUSIVE, why=_with_power(f"the ratio to the floor holds 1: {ratio}", design),
                    would_decide=_more_seeds(design, "the same paired comparison at this size (CPU)"))

# --------------------------------------------------------------------------------------------
# C3, C6: Proposition 6, Algorithm 1
# --------------------------------------------------------------------------------------------

#: Largest relative error counted as "exact" for a float64 reconstruction: rounding of an eigensolver
#: on matrices of a few hundred rows is about 1e-12; 1e-8 leaves margin and is far from any real error.
ROUNDING_TOL = 1e-8
#: A SMACOF gain over classical MDS counts as real above this: one per cent of the stress, fixed before
#: looking, far above the solver's tolerance.
GAIN_MARGIN = 0.01


def c3_full_rank_mds(max_error: float) -> Decision:
    """C3: full-rank classical MDS reproduces the chord Hellinger distances.

    The chord distance is Euclidean (the rows √μ_i embed it), so full-rank MDS reproduces it exactly on
    any corpus: ``"holds by construction"`` when the error is within :data:`ROUNDING_TOL`, else
    ``"not reproduced"`` (a defect). It cannot be ``"reproduced"``: an identity is not evidence.
    It cannot be ``"depends on an unstated choice"``: an identity involves no choice.
    """
    if max_error <= ROUNDING_TOL:
        return Decision(BY_CONSTRUCTION, why=f"relative error {max_error:.1e} ≤ {ROUNDING_TOL:.0e}: the chord Hellinger "
                                             "distance is Euclidean, so full-rank MDS is exact on any corpus; this "
                                             "checks the algebra, not the corpus")
    return Decision(NOT_REPRODUCED, why=f"full-rank MDS misses the distances by {max_error:.1e} > {ROUNDING_TOL:.0e}")


def c6_near_zero(stresses, note: str = "") -> Decision:
    """C6: full-rank MDS has near-zero stress (the largest absolute stress over corpora and bounds given).

    Within :data:`ROUNDING_TOL`: ``"holds by construction"`` (same identity as :func:`c3_full_rank_mds`);
    above: ``"not reproduced"``. It cannot be ``"reproduced"``: an identity is not evidence.
    It cannot be ``"depends on an unstated choice"``: an identity involves no choice.
    """
    worst = float(np.max(np.abs(_values(stresses))))
    if worst <= ROUNDING_TOL:
        return Decision(BY_CONSTRUCTION, why=f"stress within {worst:.0e} of 0: the chord Hellinger distance is "
                                             "Euclidean, so full-rank MDS reproduces it up to rounding on any corpus"
                                             + note)
    return Decision(NOT_REPRODUCED, why=f"full-rank MDS leaves a stress of {worst:.1e} > {ROUNDING_TOL:.0e}" + note)


def c3_least_stress(smacof_gains, one_hot_mds: float, one_hot_best: float) -> Decision:
    """C3: classical MDS has the least stress (Eq. 4) of any encoding of its rank.

    A SMACOF refinement that lowers the stress by more than :data:`GAIN_MARGIN` somewhere, or a layout of
    the three one-hot points with a lower stress than MDS's: ``"not reproduced"``; otherwise
    ``"reproduced"``.     It cannot be ``"depends on an unstated choice"``: the stress is Eq. 4 as written.
    """
    gains = _values(smacof_gains)
    found = []
    if gains.max() > GAIN_MARGIN:
        found.append(f"SMACOF lowers MDS's stress by up to {gains.max():.0%} (> {GAIN_MARGIN:.0%})")
    if one_hot_best < one_hot_mds - ROUNDING_TOL:
        found.append(f"three one-hot points have a layout at {one_hot_best:.4f} below MDS's {one_hot_mds:.4f}")
    if found:
        return Decision(NOT_REPRODUCED, why=" and ".join(found) + ": classical MDS minimises the strain, not the stress")
    return Decision(REPRODUCED, why=f"caveat: SMACOF gains at most {gains.max():.1%}, and no layout of three one-hot "
                                    "points beats MDS's")


def c3_exact_impossible(chord_error: float, rank_b: int, width: int) -> Decision:
    """C3's remark: exact reproduction is impossible (curved geometry).

    Chord MDS exact (within :data:`ROUNDING_TOL`) and ``rank(B) ≤ width``: ``"not reproduced"`` (an exact
    encoding exists). Exact, but ``rank(B) > width``: ``"depends on an unstated choice"`` (impossible at
    that width, for a reason of rank, not curvature). Not exact: ``"reproduced"``.
    """
    if chord_error > ROUNDING_TOL:
        return Decision(REPRODUCED, why=f"caveat: full-rank MDS misses the chord distances by {chord_error:.1e}")
    if rank_b <= width:
        return Decision(NOT_REPRODUCED, why=f"chord MDS is exact ({chord_error:.1e}) and rank(B) = {rank_b} ≤ d = {width}: "
                                            "the chord Hellinger distance of Eq. 3 is Euclidean; only rank(B) > d "
                                            "prevents an exact encoding")
    return Decision(DEPENDS, why=f"chord MDS is exact at full rank, but rank(B) = {rank_b} > d = {width}: impossible at "
                                 "this width because of rank, not curvature; the width is the choice")


def c3_beats_other_encodings(differences: Mapping[str, object]) -> Decision:
    """C3: MDS at a fixed low rank beats the sinusoidal table on every corpus (intervals of MDS − sinusoidal).

    Every interval below 0: ``"reproduced"``. One above 0: ``"depends on an unstated choice"`` (the
    rank: at full rank MDS is exact and beats every encoding, at this rank it loses there). Otherwise
    ``"inconclusive here"`` (within the sampling noise). It cannot be ``"not reproduced"``: full-rank MDS
    is exact, so at some rank MDS always wins.
    """
    if not differences:
        raise ValueError("c3_beats_other_encodings needs at least one corpus's interval of MDS − sinusoidal")
    bounds = {c: _bounds(iv) for c, iv in differences.items()}
    above = [c for c, (lo, _) in bounds.items() if lo > 0]
    if all(hi < 0 for _, hi in bounds.values()):
        return Decision(REPRODUCED, why="caveat: MDS − sinusoidal is below 0 beyond the sampling noise on every corpus")
    if above:
        return Decision(DEPENDS, why=f"at this rank sinusoidal is below MDS beyond the noise on {', '.join(above)}; "
                                     "at full rank MDS is exact: it depends on the rank and on rank(B)")
    undecided = [c for c, (lo, hi) in bounds.items() if lo <= 0 <= hi]
    return Decision(INCONCLUSIVE, why=f"the interval of MDS − sinusoidal holds 0 on {', '.join(undecided)}",
                    would_decide="the same comparison on more sequences (paper scale, all training sequences)")


# --------------------------------------------------------------------------------------------
# C4: sinusoids as MDS
# --------------------------------------------------------------------------------------------

#: A Fourier match counts as exact above 1 − this (a match is at most 1); float64 rounding.
FOURIER_TOL = 1e-8
#: A sinusoidal table is "approximately optimal" when its scale-free stress exceeds MDS's by at most
#: this: fixed before looking, 0.01 of a scale-free stress (whose range is [0, 1]).
NEAR_OPTIMAL = 0.01


def c4_circulant(fourier_match: float, eigen_error: float) -> Decision:
    """C4 for a circulant (stationary) corpus: MDS eigenvectors are Fourier modes.

    A circulant matrix is diagonalised by the Fourier basis (a theorem), so the check cannot fail:
    ``"holds by construction"`` when the match is within :data:`FOURIER_TOL` of 1 and the eigenvalues equal
    the formula to :data:`ROUNDING_TOL`; else ``"not reproduced"``. It cannot be ``"reproduced"`` or
    ``"depends on an unstated choice"``: an identity is not evidence and involves no choice.
    """
    if fourier_match >= 1 - FOURIER_TOL and eigen_error <= ROUNDING_TOL:
        return Decision(BY_CONSTRUCTION, why=f"Fourier match {fourier_match:.6f}, eigenvalues = formula to "
                                             f"{eigen_error:.0e}: a circulant matrix is diagonalised by Fourier modes")
    return Decision(NOT_REPRODUCED, why=f"Fourier match {fourier_match:.6f}, eigenvalue error {eigen_error:.1e}: the "
                                        "population matrix is not circulant as constructed")


def c4_sinusoidal_table(sinusoidal_stress: float, mds_stress: float, slow: int, n_frequencies: int) -> Decision:
    """C4: the standard sinusoidal table is approximately optimal for a stationary corpus.

    Scale-free stress within :data:`NEAR_OPTIMAL` of MDS's: ``"reproduced"``; otherwise ``"depends on an
    unstated choice"`` (the frequency set: the sinusoidal *form* is optimal, the standard base-10000 set
    is not). It cannot be ``"not reproduced"``: for a circulant corpus the optimum is sinusoidal
    (:func:`c4_circulant`), so only the frequencies can miss.
    """
    gap = sinusoidal_stress - mds_stress
    if gap <= NEAR_OPTIMAL:
        return Decision(REPRODUCED, why=f"caveat: the table is within {gap:.4f} of MDS's scale-free stress")
    return Decision(DEPENDS, why=f"the table's scale-free stress exceeds MDS's by {gap:.4f} > {NEAR_OPTIMAL}: "
                                 f"{slow} of its {n_frequencies} frequencies are below 2π/n, the lowest optimal one; the "
                                 "sinusoidal form is optimal, the standard frequency set is not")


# --------------------------------------------------------------------------------------------
# C5: Remark 8
# --------------------------------------------------------------------------------------------

#: The paper's 88% (seed summary: n = d = 50, r = 3), and the rounding of a whole percentage.
PAPER_SAVINGS, SAVINGS_ROUNDING = 0.88, 0.005
#: The paper's 99.8% reduction of stress.
PAPER_REDUCTION = 0.998
#: The largest accuracy loss counted as "no loss of performance": one point, fixed before looking.
ACCURACY_MARGIN = 0.01


def c5_parameter_savings(n: int, d: int, r: int) -> Decision:
    """C5's count: ``1 − r (n + d) / (n d)`` against the paper's 88%.

    Arithmetic, so ``"holds by construction"`` when it rounds to 88%, else ``"not reproduced"``.
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: arithmetic is not evidence and involves no choice.
    """
    savings = 1 - r * (n + d) / (n * d)
    if abs(savings - PAPER_SAVINGS) <= SAVINGS_ROUNDING:
        return Decision(BY_CONSTRUCTION, why=f"1 − r(n + d)/(n d) = {savings:.2%} for n = {n}, d = {d}, r = {r}: "
                                             "arithmetic, which cannot fail")
    return Decision(NOT_REPRODUCED, why=f"1 − r(n + d)/(n d) = {savings:.2%}, not {PAPER_SAVINGS:.0%}")


def c5_stress_reduction(share_paper: float, share_scale_free: float) -> Decision:
    """C5: rank 3 cuts the stress by 99.8% against sinusoidal: the share of synthetic settings where the
    reduction reaches :data:`PAPER_REDUCTION` in every draw, under each normalisation.

    Both shares 1: ``"reproduced"``; both 0: ``"not reproduced"``; otherwise ``"depends on an unstated
    choice"`` (the normalisation of the stress and the synthetic generator).
    """
    if share_paper == 1 and share_scale_free == 1:
        return Decision(REPRODUCED)
    if share_paper == 0 and share_scale_free == 0:
        return Decision(NOT_REPRODUCED, why=f"no synthetic setting reaches {PAPER_REDUCTION:.1%} under either normalisation")
    return Decision(DEPENDS, why=f"{PAPER_REDUCTION:.1%} is reached in {share_paper:.0%} of the settings under 'paper' and "
                                 f"{share_scale_free:.0%} under 'scale_free': it depends on the normalisation of the "
                                 "stress and the synthetic generator")


def c5_lowrank_performance(gap) -> Decision:
    """C5 (seed summary): no loss of performance with the low-rank table; ``gap``: interval over seeds of the
    accuracy of the learned table minus the rank-1 table's, paired by seed.

    Upper bound ≤ :data:`ACCURACY_MARGIN`: ``"reproduced"``; lower bound above it: ``"not reproduced"``;
    otherwise ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the margin is fixed before looking.
    """
    low, high = _bounds(gap)
    design = seed_design(gap, ACCURACY_MARGIN)
    # four decimals: a bound a few ten-thousandths from the one-point margin must read on the right side of it
    shown = _iv(gap, "{:+.4f}")
    if high <= ACCURACY_MARGIN:
        return Decision(REPRODUCED, why=_with_power(f"caveat: a loss above {ACCURACY_MARGIN:.0%} of accuracy is excluded "
                                                    f"(gap {shown}), a smaller one is not", design))
    if low > ACCURACY_MARGIN:
        return Decision(NOT_REPRODUCED, why=_with_power(f"the interval of the gap {shown} lies above "
                                                        f"{ACCURACY_MARGIN:.0%}: the rank-1 table loses accuracy", design))
    return Decision(INCONCLUSIVE, why=_with_power(f"the interval of the gap {shown} holds both 0 and a "
                                                  f"loss above {ACCURACY_MARGIN:.0%}", design),
                    would_decide=_more_seeds(design, "the same paired comparison at the same model size") +
                    ", or the paper-scale BERT-base run on SST-2")


# --------------------------------------------------------------------------------------------
# C7, C8: the real-corpus stress table
# --------------------------------------------------------------------------------------------

#: ALiBi's stress on SST-2 reported by the paper.
PAPER_ALIBI_STRESS = 0.563
#: The share of the corpus geometry explained by offset alone above which it counts as "shift
#: equivariant": fixed before looking, a half.
SHIFT_SHARE = 0.5
#: Sinusoidal and RoPE count as "nearly identical" when their scale-free stresses differ by at most this
#: (an interval within ± it), and as different under 'paper' when one is this many times the other.
NEARLY_IDENTICAL, DIFFERENT_RATIO = 0.01, 2.0


def c7_alibi_value(parabola_minimum: float) -> Decision:
    """C7's number: ALiBi's ``"paper"`` stress is a parabola in its slope, so any value at or above its
    minimum is reachable by some slope.

    0.563 reachable: ``"depends on an unstated choice"`` (the slope, head and normalisation, none given);
    below the minimum: ``"not reproduced"``. It cannot be ``"reproduced"``: without the paper's slope no
    value of ours is *the* paper's, only one that some slope reaches.
    """
    if parabola_minimum <= PAPER_ALIBI_STRESS:
        return Decision(DEPENDS, why=f"ALiBi's 'paper' stress is a parabola in its slope with minimum "
                                     f"{parabola_minimum:.3f} ≤ {PAPER_ALIBI_STRESS}: {PAPER_ALIBI_STRESS} is reached by "
                                     "some slope; the paper gives neither the slope nor the head nor the normalisation")
    return Decision(NOT_REPRODUCED, why=f"no slope reaches {PAPER_ALIBI_STRESS}: the parabola's minimum is "
                                        f"{parabola_minimum:.3f}")


def c7_alibi_ranking(alibi_minus_sinusoidal, alibi_minus_rope, lowest_in: Sequence[str] = ()) -> Decision:
    """C7: ALiBi's scale-free stress is below sinusoidal's and RoPE's (intervals of the differences), and
    ``lowest_in``: the variants of a choice the paper leaves open (the smoothing α, ...) where ALiBi is
    lowest.

    Both intervals below 0: ``"reproduced"``. Both above 0: ``"not reproduced"``, unless ALiBi is lowest
    in some variant of an open choice — then ``"depends on an unstated choice"`` (no rule stated before
    looking picks a variant). Otherwise ``"inconclusive here"``.
    """
    (ls, hs), (lr, hr) = _bounds(alibi_minus_sinusoidal), _bounds(alibi_minus_rope)
    text = (f"ALiBi − sinusoidal {_iv(alibi_minus_sinusoidal, '{:+.4f}')}, ALiBi − RoPE "
            f"{_iv(alibi_minus_rope, '{:+.4f}')}")
    if hs < 0 and hr < 0:
        return Decision(REPRODUCED, why=f"caveat: {text}, both below 0")
    if ls > 0 and lr > 0:
        if lowest_in:
            return Decision(DEPENDS, why=f"at the baseline ALiBi is above both ({text}: both intervals exclude 0), "
                                         f"but lowest in {', '.join(lowest_in)}, a choice the paper leaves open")
        return Decision(NOT_REPRODUCED, why=f"{text}: both intervals exclude 0, ALiBi is above both, and in no "
                                            "variant of an open choice is it lowest")
    return Decision(INCONCLUSIVE, why=f"{text}: an interval holds 0",
                    would_decide="the same differences on all of SST-2's training phrases (paper scale)")


def c7_shift_equivariance(rank_interval: tuple[int, int], shift_share: float) -> Decision:
    """C7's premise: SST-2's statistics are approximately shift-equivariant, of rank 1.

    ``rank_interval``: the noise-aware rank's interval over half-splits; ``shift_share``: the share
    of the geometry explained by offset alone. Rank 1 throughout and share ≥ :data:`SHIFT_SHARE`:
    ``"reproduced"``; a rank interval starting at 2 or more: ``"not reproduced"``; otherwise
    ``"depends on an unstated choice"`` (what "approximately" allows).
    """
    low, high = int(rank_interval[0]), int(rank_interval[1])
    if high <= 1 and shift_share >= SHIFT_SHARE:
        return Decision(REPRODUCED, why=f"caveat: rank 1 in every half-split, offset-only share {shift_share:.2f}")
    if low >= 2:
        return Decision(NOT_REPRODUCED, why=f"SST-2's geometry is not one-dimensional: at least {low} directions stand "
                                            f"above the noise in the half-splits (offset-only share {shift_share:.2f})")
    return Decision(DEPENDS, why=f"noise-aware rank {low}–{high}, offset-only share {shift_share:.2f} (threshold "
                                 f"{SHIFT_SHARE}): 'approximately' needs a threshold the paper does not give")


def c8_sinusoidal_rope(scale_free_difference, paper_ratio: float, *, model: str | None = None) -> Decision:
    """C8: sinusoidal and RoPE have nearly identical stress.

    ``scale_free_difference``: interval (or exact value) of sinusoidal − RoPE under ``"scale_free"`` (or,
    without a corpus, the exact scale-free stress of one geometry against the other: 0 when the shapes agree);
    ``paper_ratio``: the larger over the smaller under ``"paper"`` (or of their raw scales). ``model``:
    the model whose shapes were used, when not the paper's (then ``"inconclusive here"``).
    Within ±:data:`NEARLY_IDENTICAL` and ratio below :data:`DIFFERENT_RATIO`: ``"reproduced"``; within,
    but the ratio above: ``"depends on an unstated choice"`` (the normalisation); outside:
    ``"not reproduced"``.
    """
    if model is not None:
        blocked = stand_in(model, PAPER_MODEL, "C8")
        if blocked is not None:
            return Decision(INCONCLUSIVE, why=f"computed with the shapes of {model}, a stand-in for {PAPER_MODEL}'s "
                                              "(width, heads): it neither confirms nor refutes the claim",
                            would_decide=f"the same formulas with {PAPER_MODEL}'s shapes (d = 768, 12 heads), from "
                                         "its config at paper scale", stand_in=model)
    if isinstance(scale_free_difference, (int, float)):
        low = high = float(scale_free_difference)
        diff = f"{low:+.4f}"
    else:
        low, high = _bounds(scale_free_difference)
        diff = _iv(scale_free_difference, "{:+.4f}")
    if max(abs(low), abs(high)) > NEARLY_IDENTICAL:
        return Decision(NOT_REPRODUCED, why=f"sinusoidal − RoPE = {diff} under 'scale_free', beyond ±{NEARLY_IDENTICAL}")
    if paper_ratio >= DIFFERENT_RATIO:
        return Decision(DEPENDS, why=f"nearly identical under 'scale_free' ({diff}, within ±{NEARLY_IDENTICAL}); under "
                                     f"'paper' they differ by a factor {paper_ratio:.0f}: it depends on the normalisation")
    return Decision(REPRODUCED, why=f"caveat: {diff} under 'scale_free', factor {paper_ratio:.2f} under 'paper'")


# --------------------------------------------------------------------------------------------
# C9, C10, C11
# --------------------------------------------------------------------------------------------

#: The paper's violation rate of P_MDS, and the margin of a match: three points, the width of a
#: bootstrap interval of a violation rate at n = 64 (fixed before looking).
PAPER_MDS_VIOLATION, VIOLATION_MARGIN = 0.22, 0.03
#: A random table's expected violation rate (ties excluded, by symmetry: exactly 1/2).
RANDOM_VIOLATION = 0.5
#: A "moderate" correlation: Spearman of at least 0.3 (Cohen's conventional medium effect).
MODERATE_RHO = 0.3
#: The layer (counted from 1) where the paper places BERT's reorganisation.
PAPER_PEAK_LAYER = 3


def c9_mds_violation(violation_by_rank) -> Decision:
    """C9: P_MDS's violation rate is 22%; ``violation_by_rank``: the rates of MDS at each rank computed.

    Within :data:`VIOLATION_MARGIN` of 22% at every rank: ``"reproduced"``; 22% within the range over
    ranks: ``"depends on an unstated choice"`` (the rank, which the paper does not give); outside it:
    ``"not reproduced"``.
    """
    rates = _values(violation_by_rank)
    span = f"{rates.min():.1%}–{rates.max():.1%}"
    if np.all(np.abs(rates - PAPER_MDS_VIOLATION) <= VIOLATION_MARGIN):
        return Decision(REPRODUCED, why=f"caveat: {span} over the ranks computed")
    if rates.min() - VIOLATION_MARGIN <= PAPER_MDS_VIOLATION <= rates.max() + VIOLATION_MARGIN:
        return Decision(DEPENDS, why=f"the violation rate of P_MDS runs over {span} with the rank: "
                                     f"{PAPER_MDS_VIOLATION:.0%} matches a rank the paper does not give")
    return Decision(NOT_REPRODUCED, why=f"no rank comes within {VIOLATION_MARGIN:.0%} of {PAPER_MDS_VIOLATION:.0%} ({span})")


def c9_random_violation(rates) -> Decision:
    """C9's reference: a random table violates 50% of the order (mean over seeds and corpora).

    A random table's expected rate is 1/2 by symmetry, so the check cannot fail: ``"holds by
    construction"`` within :data:`VIOLATION_MARGIN`, else ``"not reproduced"`` (a defect).
    It cannot be ``"reproduced"`` or ``"depends on an unstated choice"``: a symmetry is not evidence and involves no choice.
    """
    r = _values(rates)
    if np.all(np.abs(r - RANDOM_VIOLATION) <= VIOLATION_MARGIN):
        return Decision(BY_CONSTRUCTION, why=f"{r.min():.1%}–{r.max():.1%}: a random table's expected violation rate "
                                             "is 1/2 by symmetry")
    return Decision(NOT_REPRODUCED, why=f"random tables at {r.min():.1%}–{r.max():.1%}, beyond {VIOLATION_MARGIN:.0%} of 50%")


def c9_pretrained_correlation(spearman_by_corpus: Mapping[str, float], model: str) -> Decision:
    """C9: pretrained models show a moderate positive correlation (Spearman per corpus).

    A stand-in for the paper's BERT-base: ``"inconclusive here"``. Otherwise every corpus at
    :data:`MODERATE_RHO` or more: ``"reproduced"``; every corpus at 0 or less: ``"not reproduced"``;
    else ``"depends on an unstated choice"`` (the corpus and n).
    """
    blocked = stand_in(model, PAPER_MODEL, "C9")
    if blocked is not None:
        return blocked
    rho = {c: float(v) for c, v in spearman_by_corpus.items()}
    text = ", ".join(f"{c} {v:.2f}" for c, v in rho.items())
    if all(v >= MODERATE_RHO for v in rho.values()):
        return Decision(REPRODUCED, why=f"caveat: Spearman {text}")
    if all(v <= 0 for v in rho.values()):
        return Decision(NOT_REPRODUCED, why=f"Spearman {text}: no positive correlation")
    return Decision(DEPENDS, why=f"Spearman {text}: moderate on some corpora only, so it depends on the corpus and n")


def c10_layer_peak(model: str, peaks: Mapping[str, int], propagated: str) -> Decision:
    """C10: the projected stress of BERT peaks at layer 3; ``peaks``: the peak layer (from 1) of each
    definition and normalisation, ``propagated``: the key of the headline definition.

    A stand-in for BERT-base: ``"inconclusive here"``. The headline definition at layer 3:
    ``"reproduced"``; another definition there: ``"depends on an unstated choice"``; none:
    ``"not reproduced"``.
    """
    blocked = stand_in(model, PAPER_MODEL, "C10")
    if blocked is not None:
        return Decision(INCONCLUSIVE, why=blocked.why + "; the paper does not say whether it counts layers from 0 or 1",
                        would_decide=f"{decide_command('C10', PAPER_MODEL)} ({PAPER_MODEL} from the hub, 12 layers, on "
                                     "SST-2; its per-layer curve read under both counting conventions)", stand_in=model)
    at3 = [k for k, v in peaks.items() if int(v) == PAPER_PEAK_LAYER]
    if peaks[propagated] == PAPER_PEAK_LAYER:
        return Decision(REPRODUCED)
    if at3:
        return Decision(DEPENDS, why=f"only {', '.join(at3)} peak at layer {PAPER_PEAK_LAYER}: it depends on the projection")
    return Decision(NOT_REPRODUCED, why=f"no reading of the projected stress peaks at layer {PAPER_PEAK_LAYER} on {model}")


#: C11: a lazy classifier "has learned" when every seed's training loss ends below half of ln 2 (chance
#: on two classes is ln 2): fixed before looking.
LEARNED_LOSS = 0.5 * np.log(2)
#: C11: training is "lazy" when the tangent kernel moves by less than 10 % (and less than in every rich
#: run): fixed before looking, the usual reading of "the kernel stays near its initial value".
LAZY_KERNEL_CHANGE = 0.1


def ntk_learned(train_losses) -> bool:
    """Every seed's final training loss is below :data:`LEARNED_LOSS`."""
    return bool(_values(train_losses).max() < LEARNED_LOSS)


def ntk_lazy(kernel_change_lazy, kernel_change_rich) -> bool:
    """The lazy runs' kernel moves less than :data:`LAZY_KERNEL_CHANGE` and less than every rich run's."""
    lazy, rich = _values(kernel_change_lazy), _values(kernel_change_rich)
    return bool(lazy.max() < LAZY_KERNEL_CHANGE and lazy.max() < rich.min())


#: C11: the weakest order worth the name, a violation rate five points below random's 50% (fixed before
#: looking): the effect the power of the seed intervals is stated for.
ORDER_EFFECT = 0.05


def c11_ntk_order(train_losses, kernel_change_lazy, kernel_change_rich, displacement, table) -> Decision:
    """C11: in the NTK regime monotonicity holds at the trained fixed point.

    ``train_losses``: final training loss of each lazy seed (:func:`ntk_learned`); ``kernel_change_*``:
    relative change of the tangent kernel per seed (:func:`ntk_lazy`); ``displacement`` and ``table``:
    intervals over seeds of the violation rate of ΔP and of P. Not learned or not lazy:
    ``"inconclusive here"``. Both ordered (upper bound below 50%): ``"reproduced"``; only ΔP:
    ``"depends on an unstated choice"`` (the initialisation's scale); ΔP not ordered: ``"not reproduced"``.
    """
    learned, lazy = ntk_learned(train_losses), ntk_lazy(kernel_change_lazy, kernel_change_rich)
    if not (learned and lazy):
        return Decision(INCONCLUSIVE, why=(f"the lazy-regime classifier has not learned (training loss not below "
                                           f"{LEARNED_LOSS:.3f} on every seed)" if not learned else
                                           "the 'lazy' runs are not lazy: their kernel moves as much as the rich runs'")
                        + ", so the order left in its table says nothing about a fixed point in the NTK regime",
                        would_decide="a lazy-regime [CLS] classifier trained until its loss is well below ln 2, over "
                                     "at least 5 seeds, on SST-2 (paper scale, a GPU)")
    _, d_high = _bounds(displacement)
    _, t_high = _bounds(table)
    power = f"displacement's {seed_design(displacement, ORDER_EFFECT).text()}"
    if d_high < RANDOM_VIOLATION and t_high < RANDOM_VIOLATION:
        return Decision(REPRODUCED, why=f"caveat: ΔP {_iv(displacement, '{:.0%}')} and P {_iv(table, '{:.0%}')} both "
                                        f"below 50% violation; a one-layer model, not BERT; {power}")
    if d_high < RANDOM_VIOLATION:
        return Decision(DEPENDS, why=f"the displacement is ordered ({_iv(displacement, '{:.0%}')}), the table itself "
                                     f"not ({_iv(table, '{:.0%}')}): only if its initialisation is small; the order is "
                                     f"that of count vectors (an unstated token-locality hypothesis); {power}")
    return Decision(NOT_REPRODUCED, why=f"a lazy classifier that fits its training set leaves the displacement of its "
                                        f"table no better ordered than random (violation {_iv(displacement, '{:.0%}')} "
                                        f"reaches 50%); a one-layer model on 16 positions, not BERT; {power}")


# --------------------------------------------------------------------------------------------
# S1–S9: the second seed
# --------------------------------------------------------------------------------------------

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


def s4_undertrained_tail(difference) -> Decision:
    """S4: rarely reached positions are under-trained; ``difference``: interval over seeds of the tail
    accuracy with skewed lengths minus uniform lengths (paired by seed).

    Below 0: ``"reproduced"``; above 0: ``"not reproduced"``; holding 0: ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the comparison (skewed against uniform lengths) is the claim itself.
    """
    low, high = _bounds(difference)
    design = seed_design(difference, TAIL_EFFECT)
    if high < 0:
        return Decision(REPRODUCED, why=_with_power("", design))
    if low > 0:
        return Decision(NOT_REPRODUCED, why=_with_power(f"the tail is learned better with skewed lengths "
                                                        f"({_iv(difference)}), the opposite of the claim", design))
    return Decision(INCONCLUSIVE, why=_with_power(f"the interval of the difference {_iv(difference)} holds 0", design),
                    would_decide=_more_seeds(design, "the same paired comparison at the same size") +
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


def s7_small_init(steps_small, steps_large, final_loss_difference) -> Decision:
    """S7: N(0, 0.02²) beats N(0, 1); mean steps to the loss threshold of each (None or NaN: never reached),
    and the interval over seeds of the final loss (small − large, paired).

    Faster and the interval below 0: ``"reproduced"``; faster only: ``"depends on an unstated choice"``
    (what "beats" measures: speed or final loss); not faster: ``"not reproduced"``.
    """
    small, large = _steps(steps_small), _steps(steps_large)
    low, high = _bounds(final_loss_difference)
    design = seed_design(final_loss_difference, LOSS_EFFECT)
    faster = small < large
    if faster and high < 0:
        return Decision(REPRODUCED, why=_with_power("", design))
    if faster:
        return Decision(DEPENDS, why=_with_power(f"faster ({_steps_text(small)} vs {_steps_text(large)} steps) but the "
                                                 f"final-loss interval {_iv(final_loss_difference, '{:+.3f}')} is not "
                                                 "below 0: what 'beats' measures is not stated", design))
    return Decision(NOT_REPRODUCED, why=_with_power(f"N(0, 1) reached the threshold no later ({_steps_text(large)} vs "
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


def s9_dropout(generalisation_gap: float, loss_effect) -> Decision:
    """S9: dropout 0.1 on the embedding sum helps; ``generalisation_gap``: held-out minus training loss without
    dropout (mean over seeds); ``loss_effect``: interval over seeds of the held-out loss with dropout minus
    without (paired).

    A model that does not overfit (gap ≤ :data:`OVERFIT_GAP`): ``"inconclusive here"``. Otherwise below
    0: ``"reproduced"``; above 0: ``"not reproduced"``; holding 0: ``"inconclusive here"``.
    It cannot be ``"depends on an unstated choice"``: the rate, 0.1, is the seed's.
    """
    design = seed_design(loss_effect, LOSS_EFFECT)
    would = (_more_seeds(design, "the same paired comparison at this size (CPU)") + ", or the paper scale of this "
             "study (width 128, 4 layers, 1,000 sequences, 4,000 steps, a GPU helps)")
    if generalisation_gap <= OVERFIT_GAP:
        return Decision(INCONCLUSIVE, why=f"the model does not overfit here (gap {generalisation_gap:.3f} ≤ "
                                          f"{OVERFIT_GAP} nats), so no regulariser can show an effect",
                        would_decide="the same study with a model that overfits (fewer training sequences or longer "
                                     "training), or the paper scale of this study (a GPU helps)")
    low, high = _bounds(loss_effect)
    if high < 0:
        return Decision(REPRODUCED, why=_with_power("", design))
    if low > 0:
        return Decision(NOT_REPRODUCED, why=_with_power(f"the model overfits (gap {generalisation_gap:.2f} nats) and "
                                                        f"dropout makes the held-out loss worse "
                                                        f"({_iv(loss_effect, '{:+.3f}')})", design))
    return Decision(INCONCLUSIVE, why=_with_power(f"the model overfits (gap {generalisation_gap:.2f} nats), but the "
                                                  f"effect of dropout on the held-out loss {_iv(loss_effect, '{:+.3f}')} "
                                                  "holds 0", design),
                    would_decide=would)


#: Every rule, by name (the tests reach each of their outcomes).
RULES = {name: obj for name, obj in list(globals().items())
         if callable(obj) and name[:2] in {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "s1", "s2", "s3",
                                           "s4", "s5", "s6", "s7", "s8", "s9"}}

__all__ = [
    "REPRODUCED", "DEPENDS", "NOT_REPRODUCED", "INCONCLUSIVE", "BY_CONSTRUCTION", "VERDICTS", "EVIDENCE",
    "PAPER_MODEL", "Decision", "is_model", "stand_in", "ntk_learned", "ntk_lazy", "RULES", "decide_command",
    "ACCURACY_MARGIN", "TAIL_EFFECT", "LOSS_EFFECT", "ORDER_EFFECT", "FLOOR_EFFECT", "MAX_SEEDS",
    "c1_equivariance", "c1_causal_mask", "c1_symmetric_signal", "c2_separation", "c2_broken_conditions",
    "c2_weight_decay", "c2_converged", "c3_full_rank_mds", "c6_near_zero", "c3_least_stress", "c3_exact_impossible",
    "c3_beats_other_encodings", "c4_circulant", "c4_sinusoidal_table", "c5_parameter_savings",
    "c5_stress_reduction", "c5_lowrank_performance", "c7_alibi_value", "c7_alibi_ranking",
    "c7_shift_equivariance", "c8_sinusoidal_rope", "c9_mds_violation", "c9_random_violation",
    "c9_pretrained_correlation", "c10_layer_peak", "c11_ntk_order", "s1_neighbour_similarity",
    "s2_first_positions_apart", "s3_frequency_bands", "s4_undertrained_tail", "s5_no_vector_beyond",
    "s6_heuristics_order", "s6_heuristics_mlm", "s7_small_init", "s8_sinusoidal_init", "s9_dropout",
]
