r"""The decision rules' shared standards: the five verdicts, :class:`Decision`, stand-in models, the power of a
decision over seeds.

A chapter computes a check's numbers and calls its rule, which returns a :class:`Decision`: the verdict, the
sentence that explains it (stating only what the rule computed), and, for a check that could not test its
claim, the run that would. ``"inconclusive here"`` (a stand-in model, an effect within the noise, a model that
did not learn) and ``"holds by construction"`` (an identity, an exact construction, a library's own error) are
counted apart from the evidence. A check on a stand-in model is inconclusive whether it agrees or not
(:func:`stand_in`). Rules read an interval through ``low`` and ``high`` only (:data:`IntervalLike`), and a
decision over seeds also its ``sd`` and ``n`` to state its power.
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
    """The ``posgeom decide`` command that decides ``claim`` on ``model`` where the model can be loaded."""
    return f"posgeom decide {claim} --model {model} --scale {scale}"


@dataclass(frozen=True)
class Decision:
    """What a rule decided.

    ``why`` is required for every verdict but ``"reproduced"`` (where it is a caveat); ``would_decide``, the run
    that would decide the claim, is required for ``"inconclusive here"``, allowed for ``"holds by construction"``
    and refused otherwise; ``stand_in`` names the stand-in model used. ``call`` (the rule's name and inputs, set by
    the package) is not part of what was decided: two decisions that differ only by it are equal.
    """

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
    """The verb that agrees with a list of names as a subject (never a template plural such as "reach(es)")."""
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
    """What would decide an underpowered check: ``what`` over the seeds that reach the target power, or a less
    noisy design when that is more than :data:`MAX_SEEDS`."""
    if design.needed is not None and design.needed <= MAX_SEEDS:
        return f"{what} over {design.needed} seeds ({TARGET_POWER:.0%} power for the smallest effect that matters)"
    more = "more seeds than can be run" if design.needed is None else f"{design.needed} seeds"
    return f"a less noisy design than {what} ({TARGET_POWER:.0%} power would need {more} at this noise)"


def as_values(xs: Values) -> np.ndarray:
    """Values as a flat float array; an empty sequence is refused."""
    arr = np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("a rule needs at least one value; got an empty sequence")
    return arr


def is_model(model: str, wanted: str) -> bool:
    """Whether the description ``model`` names ``wanted`` as a whole name, case-insensitive, hub owner optional
    (``"bert-base-uncased (pretrained)"`` names ``"bert-base-uncased"``; ``"distilbert-base-uncased"`` does not)."""
    name = wanted.lower().split("/")[-1]
    return re.search(rf"(?<![a-z0-9.-]){re.escape(name)}(?![a-z0-9.-])", model.lower()) is not None


def stand_in(model: str, claim_model: str, claim: str) -> Decision | None:
    """``"inconclusive here"`` when ``model`` is a stand-in for ``claim_model`` (never evidence), else None."""
    if is_model(model, claim_model):
        return None
    return Decision(INCONCLUSIVE, why=f"{model} is a stand-in for {claim_model}, the model {claim} is about: its "
                                      "value neither confirms nor refutes the claim",
                    would_decide=f"the same measurement on {claim_model} from the hub (paper scale)", stand_in=model)
