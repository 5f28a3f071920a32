"""How robust each bottom line is: the threshold value at which a claim's bottom line would flip.

Each current check's record holds its rule's call, so its verdict can be decided again with a threshold moved.
A threshold moves in every check that reads it (a constant has one value), over ``SCAN_FACTOR`` either way,
and the flip sought is of the claim's bottom line, not of one row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from ..report import NEEDS_GPU
from . import bottom_line
from ..verdicts import RULES
from ..verdicts.thresholds import SCAN_FACTOR, flip_points, redecide, threshold_reason, thresholds_read
from ..wording import header_words, shortest_clauses

__all__ = ["Flip", "Robustness", "robustness", "REASON_WORDS"]

#: The words of a threshold's reason a sentence quotes (its first clauses): enough to say what it decides.
REASON_WORDS = 14


@dataclass(frozen=True)
class Flip:
    """Where a claim's bottom line flips: threshold ``name`` goes from ``value`` to ``at``, giving ``verdict``."""

    name: str
    reason: str
    value: float
    at: float
    verdict: str

    @property
    def factor(self) -> float:
        """How far the flip is from the value, as a ratio (at least 1)."""
        ratio = self.at / self.value
        return ratio if ratio >= 1 else 1 / ratio

    def text(self) -> str:
        """``"the accuracy margin (…) were raised from 0.01 to 0.0123"``."""
        reason = shortest_clauses(self.reason, REASON_WORDS) if self.reason else ""
        what = header_words(self.name.lower()) + (f" ({reason[:1].lower() + reason[1:]})" if reason else "")
        way = "raised" if abs(self.at) > abs(self.value) else "lowered"
        return f"the {what} were {way} from {self.value:.3g} to {self.at:.3g}"


@dataclass(frozen=True)
class Robustness:
    """How robust a claim's bottom line is: the ``thresholds`` its checks read, the ``flips`` (nearest first), the
    ``unread`` checks without a recorded call (they keep their verdict), and the ``sentence`` that says it."""

    verdict: str
    thresholds: dict
    flips: tuple[Flip, ...]
    unread: int
    sentence: str


def _redecidable(check, known: Mapping[str, Callable]) -> Callable | None:
    """The rule that decides ``check`` again from its recorded inputs to the recorded verdict, or None."""
    rule = known.get(check.rule)
    if rule is None or check.inputs is None:
        return None
    try:
        same = str(redecide(rule, check.inputs).verdict) == check.verdict
    except (TypeError, ValueError, AttributeError, KeyError):  # inputs recorded by other code, in another form
        return None
    return rule if same else None


def robustness(checks: Sequence, *, factor: float = SCAN_FACTOR,
               rules: Mapping[str, Callable] | None = None) -> Robustness:
    """The thresholds at which a claim's bottom line flips, from every recorded check of one claim
    (:class:`posgeom.summary.Check`): each is moved from its value divided by ``factor`` to its value times
    ``factor``; ``rules`` maps the rule names the records hold to the rules (default
    :data:`posgeom.verdicts.RULES`)."""
    checks = list(checks)
    line = bottom_line(checks).verdict
    known = RULES if rules is None else rules
    decided = {k: _redecidable(c, known) for k, c in enumerate(checks) if not c.stale and c.verdict != NEEDS_GPU}
    unread = sum(rule is None for rule in decided.values())
    by_check = {k: rule for k, rule in decided.items() if rule is not None}
    read = {k: thresholds_read(rule) for k, rule in by_check.items()}
    values = {name: value for names in read.values() for name, value in names.items()}

    def decide(name: str, x: float) -> str:
        # the threshold moves in every check that reads it (a constant has one value); the others keep theirs
        moved = [replace(c, verdict=str(redecide(by_check[k], c.inputs, {name: x}).verdict))
                 if name in read.get(k, {}) else c for k, c in enumerate(checks)]
        return bottom_line(moved).verdict

    flips = []
    for name, value in sorted(values.items()):
        rule = next(by_check[k] for k in read if name in read[k])
        for at, verdict in flip_points(lambda x, name=name: decide(name, x), value, factor=factor,
                                       integer=isinstance(value, int)):
            flips.append(Flip(name, threshold_reason(rule, name), value, at, verdict))
    flips.sort(key=lambda f: f.factor)
    sentence = (_sentence(values, flips, unread, factor) if decided
                else "No current check has a verdict yet, so there is nothing to move.")
    return Robustness(line, values, tuple(flips), unread, sentence)


def _sentence(values: dict, flips: list[Flip], unread: int, factor: float) -> str:
    span = f"from a tenth to {factor:g} times its value" if factor == 10 else f"within a factor {factor:g} of its value"
    missing = (f" ({unread} check{'s' if unread != 1 else ''} recorded without {'their' if unread != 1 else 'its'} "
               "rule's inputs left as recorded)") if unread else ""
    if not values:
        if unread:
            return ("Not known: its checks were recorded without their rules' inputs; rerun the chapters "
                    "(posgeom reproduce) to see how far it is from flipping.")
        return "No threshold decides its checks: moving one cannot flip this bottom line."
    if not flips:
        n = len(values)
        return (f"No threshold flips it: moving {'the one' if n == 1 else f'any of the {n}'} its checks read "
                f"{span} leaves the bottom line as it is{missing}.")
    nearest = flips[0]
    others = len({f.name for f in flips} - {nearest.name})
    tail = (f"; {others} other threshold{'s' if others != 1 else ''} flip{'' if others != 1 else 's'} it further off"
            if others else "; no other threshold flips it")
    how_far = "under 1% from its value" if nearest.factor < 1.01 else f"a factor {nearest.factor:.3g} from its value"
    return f'It would become "{nearest.verdict}" if {nearest.text()} ({how_far}){tail}{missing}.'
