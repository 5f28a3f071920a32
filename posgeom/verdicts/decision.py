r"""The decision rules of the "Paper vs this book" tables: one named rule per check, fed with numbers.

A chapter never writes a verdict or its reason: it computes the check's numbers (estimates, intervals,
seeds, the model used) and calls the rule of that check, which returns a :class:`Decision` — the
verdict, the sentence that explains it, and, for a check that could not test its claim, the run that
would. A reason states only what its rule computed.

The five verdicts (:class:`Verdict`, a ``str`` Enum whose values are the words, so that a stored row and a
page read the word itself):

- ``"reproduced"``, ``"depends on an unstated choice"``, ``"not reproduced"``: the evidence;
- ``"inconclusive here"``: the check could not test the claim (a stand-in model for a claim about
  another model, an effect within the noise, a model that did not learn); never counted for or against;
- ``"holds by construction"``: the check cannot fail (an identity, an exact construction, a library's
  own error); it confirms the algebra or the code, not the claim, and is counted apart from the evidence.

**Stand-in models.** A check run on a model other than the one a claim is about (the MiniLM stand-in
for BERT-base, or for GPT-2) is ``"inconclusive here"`` whether it agrees with the claim or not
(:func:`stand_in`); only a claim about every model of its kind (S3: "a learned table") is decided
on whichever learned table was measured (S2, whose first positions the seed ties to GPT-2's first tokens, is not).

Every threshold is a module constant with the reason it has that value. The rules read an interval as
an :data:`IntervalLike` (a :class:`~posgeom.geometry.SeedInterval`, a bootstrap
:class:`~posgeom.geometry.bootstrap.Interval`, or the dictionary either stores), through ``low`` and
``high`` only, so they do not depend on how the interval was computed; a decision over seeds also reads
its ``sd`` and ``n`` (:data:`SeedIntervalLike`) to state its power.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Mapping, Sequence, Union

import numpy as np

from ..geometry.bootstrap import Interval
from ..geometry.intervals import TARGET_POWER, SeedDesign, SeedInterval
from .thresholds import RuleCall

__all__ = [
    "Verdict", "REPRODUCED", "DEPENDS", "NOT_REPRODUCED", "INCONCLUSIVE", "BY_CONSTRUCTION", "VERDICTS", "EVIDENCE",
    "PAPER_MODEL", "SEED_S1_MODEL", "SEED_S1_HUB", "IntervalLike", "SeedIntervalLike", "Values", "Decision",
    "decide_command", "is_model", "stand_in", "MAX_SEEDS",
    # the helpers the rules of every part share (not re-exported by the package)
    "interval_bounds", "interval_text", "with_power", "more_seeds", "as_values",
]


class Verdict(str, Enum):
    """A verdict of a "Paper vs this book" row; its value is the word the row shows and stores."""

    REPRODUCED = "reproduced"
    DEPENDS = "depends on an unstated choice"
    NOT_REPRODUCED = "not reproduced"
    INCONCLUSIVE = "inconclusive here"
    BY_CONSTRUCTION = "holds by construction"

    # the word, not "Verdict.REPRODUCED", wherever a verdict is printed, formatted, put in a table or glued to a
    # page (myst-nb shows a glued value's repr: 'reproduced', as the plain string showed it)
    __str__ = str.__str__
    __format__ = str.__format__

    def __repr__(self) -> str:  # a method, not the slot wrapper itself: Sphinx's autodoc describes it then
        return str.__repr__(self)


REPRODUCED, DEPENDS, NOT_REPRODUCED = Verdict.REPRODUCED, Verdict.DEPENDS, Verdict.NOT_REPRODUCED
INCONCLUSIVE, BY_CONSTRUCTION = Verdict.INCONCLUSIVE, Verdict.BY_CONSTRUCTION
#: Every verdict a row may carry, the evidence first.
VERDICTS = tuple(Verdict)
#: The verdicts that weigh for or against a claim (the others are counted apart).
EVIDENCE = (REPRODUCED, DEPENDS, NOT_REPRODUCED)

#: An interval as the rules read it: its ``low`` and ``high``.
IntervalLike = Union[SeedInterval, Interval, Mapping[str, float]]
#: An interval over seeds, whose ``sd`` and ``n`` give the power of a decision taken on it.
SeedIntervalLike = Union[SeedInterval, Mapping[str, float]]
#: Per-seed (or per-corpus) values a rule summarises: at least one finite number.
Values = Union[Iterable[float], np.ndarray]

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
    the check used, empty when it used the claim's own model). ``call`` is the rule's call that returned
    the decision (its name and inputs, :class:`~posgeom.verdicts.thresholds.RuleCall`), set by the package
    for every rule: it is not part of what was decided (two decisions that differ only by it are equal)."""

    verdict: Verdict
    why: str = ""
    would_decide: str = ""
    stand_in: str = ""
    call: RuleCall | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        try:
            verdict = Verdict(self.verdict)
        except ValueError:
            raise ValueError(f"unknown verdict {self.verdict!r}; valid verdicts are {', '.join(VERDICTS)}") from None
        object.__setattr__(self, "verdict", verdict)  # the word given as a plain string becomes its Verdict
        if verdict != REPRODUCED and not self.why.strip():
            raise ValueError(f"a verdict of {verdict.value!r} needs a `why`")
        if verdict == INCONCLUSIVE and not self.would_decide.strip():
            raise ValueError(f"an {INCONCLUSIVE.value!r} verdict needs `would_decide`, the run that would decide the "
                             "claim (model, scale, data)")
        if verdict not in (INCONCLUSIVE, BY_CONSTRUCTION) and self.would_decide:
            raise ValueError(f"`would_decide` belongs to an {INCONCLUSIVE.value!r} or {BY_CONSTRUCTION.value!r} verdict "
                             f"only; this verdict is {verdict.value!r}")


def agree(names: Sequence[str], singular: str, plural: str) -> str:
    """The verb that agrees with a list of names written as a subject ("interpolate reaches", "reuse, new rows
    fall"): a reason never carries a template plural such as "reach(es)"."""
    return singular if len(names) == 1 else plural


def interval_bounds(interval: IntervalLike) -> tuple[float, float]:
    """``(low, high)`` of an interval (:data:`IntervalLike`)."""
    if isinstance(interval, (SeedInterval, Interval)):
        return float(interval.low), float(interval.high)
    if isinstance(interval, Mapping):
        missing = [k for k in ("low", "high") if k not in interval]
        if missing:
            raise ValueError(f"an interval needs 'low' and 'high'; this mapping lacks {', '.join(missing)} "
                             f"(it has {', '.join(map(str, interval)) or 'no keys'})")
        return float(interval["low"]), float(interval["high"])
    raise TypeError(f"a rule reads an interval as a SeedInterval, a bootstrap Interval or their stored dictionary; "
                    f"got {type(interval).__name__}")


def interval_text(interval: IntervalLike, fmt: str = "{:.3g}") -> str:
    """``[low, high]`` of an interval, each bound in ``fmt``."""
    low, high = interval_bounds(interval)
    return f"[{fmt.format(low)}, {fmt.format(high)}]"


def with_power(why: str, design: SeedDesign) -> str:
    """``why`` followed by the design's power (every decision over seeds states it)."""
    return f"{why}; {design.text()}" if why else design.text()


#: The most seeds a design run on the CPU may ask for: the seed-level studies of the book's small models take
#: seconds to a minute a seed, so a hundred is an overnight run on a laptop; beyond it, the noise of the
#: measure (not the number of seeds) is what to change.
MAX_SEEDS = 100


def more_seeds(design: SeedDesign, what: str) -> str:
    """What would decide an underpowered check: ``what`` over the seeds that reach the target power, or, when
    that is more than :data:`MAX_SEEDS`, a less noisy design."""
    if design.needed is not None and design.needed <= MAX_SEEDS:
        return f"{what} over {design.needed} seeds ({TARGET_POWER:.0%} power for the smallest effect that matters)"
    more = "more seeds than can be run" if design.needed is None else f"{design.needed} seeds"
    return f"a less noisy design than {what} ({TARGET_POWER:.0%} power would need {more} at this noise)"


def as_values(xs: Values) -> np.ndarray:
    """Values as a flat float array; an empty sequence is refused (a rule needs at least one value)."""
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
