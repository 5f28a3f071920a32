r"""How far a verdict is from flipping: the inputs a rule was called with, the thresholds it reads, and the
verdict again with a threshold moved.

Every rule is wrapped once (:func:`record_inputs`) so that its decision carries its call (:class:`RuleCall`).
The thresholds a rule reads are the module-level numeric constants named in its code or in the code of the
helpers it calls from its package (:func:`thresholds_read`), each with its ``#:`` reason
(:func:`threshold_reason`); the paper's and the seed's own values are not thresholds
(:data:`NOT_THRESHOLD_PREFIXES`, :data:`NOT_THRESHOLDS`). :func:`redecide` decides again with thresholds moved,
and :func:`flip_points` finds, by a scan then a bisection, the nearest values where a verdict changes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

__all__ = ["RuleCall", "plain", "record_inputs", "thresholds_read", "threshold_reason", "moved", "redecide",
           "NOT_THRESHOLD_PREFIXES", "NOT_THRESHOLDS", "SCAN_FACTOR", "SCAN_STEPS", "SCAN_PRECISION", "flip_points"]


@dataclass(frozen=True)
class RuleCall:
    """A rule's call as a claims record stores it: the rule's name and its inputs by parameter name, as plain data."""

    rule: str
    inputs: dict

    def as_dict(self) -> dict:
        return {"rule": self.rule, "inputs": self.inputs}


def plain(value: Any) -> Any:
    """``value`` as plain data a record stores and a rule reads back (intervals and dataclasses as dictionaries,
    arrays as lists, numpy scalars as Python numbers); anything else is a ``TypeError``."""
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return plain(value.as_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if value is None or isinstance(value, str):
        return value if value is None else str(value)
    raise TypeError(f"a rule's input of type {type(value).__name__} cannot be stored as plain data")


def record_inputs(rule: Callable) -> Callable:
    """``rule`` wrapped so that its decision carries its call (:class:`RuleCall`); inputs that cannot be stored as
    plain data leave the decision without a call."""
    signature = inspect.signature(rule)

    @functools.wraps(rule)
    def recorded(*args, **kwargs):
        decision = rule(*args, **kwargs)
        try:
            inputs = {name: plain(value) for name, value in signature.bind(*args, **kwargs).arguments.items()}
        except TypeError:
            return decision
        return dataclasses.replace(decision, call=RuleCall(rule.__name__, inputs))

    return recorded


# The thresholds a rule reads

#: Constants whose names start with these are the paper's or the seed's own values (``PAPER_REDUCTION``,
#: ``SEED_NEIGHBOUR_COS``): moving one changes the claim, not the rule, so it is no test of a verdict.
NOT_THRESHOLD_PREFIXES = ("PAPER_", "SEED_")
#: Constants that are facts or bookkeeping, not thresholds: a two-class task's chance and a random table's
#: violation rate (both 1/2 by symmetry), and the most seeds a design may ask for (it words what would
#: decide, never a verdict).
NOT_THRESHOLDS = frozenset({"CHANCE", "RANDOM_VIOLATION", "MAX_SEEDS"})


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and every code object nested in it (comprehensions, lambdas, inner functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0] if "." in module else module


def _reachable(rule: Callable) -> tuple[Callable, ...]:
    """The rule (unwrapped) and the functions of its own package it calls, transitively."""
    return _reachable_from(inspect.unwrap(rule))


@functools.lru_cache(maxsize=None)
def _reachable_from(rule: Callable) -> tuple[Callable, ...]:
    # cached: a scan decides the same rule again hundreds of times, and a function's code does not change
    package = _package(rule.__module__)
    found, todo = [], [rule]
    while todo:
        fn = todo.pop()
        if fn in found:
            continue
        found.append(fn)
        for code in _codes(fn.__code__):
            for name in code.co_names:
                target = fn.__globals__.get(name)
                if isinstance(target, types.FunctionType):
                    target = inspect.unwrap(target)
                    module = getattr(target, "__module__", "") or ""
                    if module == rule.__module__ or module.startswith(package + "."):
                        todo.append(target)
    return tuple(found)


def _package_modules(rule: Callable) -> list[types.ModuleType]:
    """The rule's module, then every loaded module of its package."""
    package = _package(rule.__module__)
    own = sys.modules[rule.__module__]
    return [own] + [m for k, m in sorted(sys.modules.items())
                    if k.startswith(package + ".") and isinstance(m, types.ModuleType) and m is not own]


_ASSIGNMENT = re.compile(r"^([A-Z][A-Z_0-9]*(?:, [A-Z][A-Z_0-9]*)*) = ")


@functools.lru_cache(maxsize=None)
def _assigned(module_name: str) -> dict[str, str]:
    """The constants ``module_name``'s source assigns at module level, each with the ``#:`` comment above it."""
    try:
        lines = inspect.getsource(sys.modules[module_name]).splitlines()
    except (OSError, TypeError, KeyError):
        return {}
    found = {}
    for k, line in enumerate(lines):
        match = _ASSIGNMENT.match(line)
        if match:
            comment, j = [], k
            while j > 0 and lines[j - 1].startswith("#:"):
                j -= 1
                comment.insert(0, lines[j][2:].strip())
            for name in match.group(1).split(", "):
                found[name] = " ".join(comment)
    return found


def _defined(rule: Callable) -> dict[str, str]:
    """The constants assigned in the modules of ``rule``'s package, with their reasons (the first module's wins)."""
    found: dict[str, str] = {}
    for module in _package_modules(inspect.unwrap(rule)):
        for name, reason in _assigned(module.__name__).items():
            found.setdefault(name, reason)
    return found


def _is_threshold(name: str, value: Any) -> bool:
    return (not name.startswith(NOT_THRESHOLD_PREFIXES) and name not in NOT_THRESHOLDS
            and isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)))


def thresholds_read(rule: Callable) -> dict[str, int | float]:
    """The thresholds ``rule`` reads, by name, with their values now: the numeric constants assigned at module level
    in its package and named in its code or its package's functions it calls."""
    defined = _defined(rule)
    found = {}
    for fn in _reachable(rule):
        for code in _codes(fn.__code__):
            for name in code.co_names:
                value = fn.__globals__.get(name)
                if name in defined and name in fn.__globals__ and _is_threshold(name, value):
                    # a count stays a whole number (a rule may use it as one); any other threshold is a float
                    found[name] = int(value) if isinstance(value, (int, np.integer)) else float(value)
    return dict(sorted(found.items()))


def threshold_reason(rule: Callable, name: str) -> str:
    """The ``#:`` reason written above the threshold ``name``; ``""`` when none is found."""
    return _defined(rule).get(name, "")


@contextmanager
def moved(rule: Callable, values: Mapping[str, float]):
    """Within the block, the thresholds ``values`` (name → value) hold those values in every module whose functions
    ``rule`` reaches; restored on leaving."""
    saved = []
    try:
        for fn in _reachable(rule):
            for name, value in values.items():
                if name in fn.__globals__ and not any(g is fn.__globals__ and n == name for g, n, _ in saved):
                    saved.append((fn.__globals__, name, fn.__globals__[name]))
                    fn.__globals__[name] = value
        yield
    finally:
        for namespace, name, value in reversed(saved):
            namespace[name] = value


def redecide(rule: Callable, inputs: Mapping[str, Any], values: Mapping[str, float] | None = None):
    """The decision of ``rule`` (unwrapped) on recorded ``inputs``, with the thresholds ``values`` moved."""
    fn = inspect.unwrap(rule)
    args, kwargs = [], {}
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.name not in inputs:
            continue
        value = inputs[parameter.name]
        if parameter.kind is parameter.POSITIONAL_ONLY:
            args.append(value)
        elif parameter.kind is parameter.VAR_POSITIONAL:
            args.extend(value)
        elif parameter.kind is parameter.VAR_KEYWORD:
            kwargs.update(value)
        else:
            kwargs[parameter.name] = value
    unknown = sorted(set(inputs) - set(inspect.signature(fn).parameters))
    if unknown:
        raise TypeError(f"{fn.__name__} has no parameter {', '.join(unknown)} (the inputs were recorded by other code)")
    with moved(fn, values or {}):
        return fn(*args, **kwargs)


# Where a verdict flips

#: A threshold is moved from its value divided by this to its value times this: an order of magnitude either
#: way, wider than any reason given beside a threshold would stretch it, so a verdict that flips nowhere in
#: it does not rest on the exact value.
SCAN_FACTOR = 10.0
#: Grid points on each side of the value, evenly spaced in log: steps of 10 % at a factor of 10, so a
#: verdict that changes and changes back within less than 10 % of a threshold can be missed (none does:
#: every rule compares a number with a threshold once).
SCAN_STEPS = 24
#: A flip point is located to this relative precision by bisection between two grid points: three digits,
#: what a sentence shows.
SCAN_PRECISION = 1e-3


def flip_points(decide: Callable[[float], str], value: float, *, factor: float = SCAN_FACTOR,
                steps: int = SCAN_STEPS, precision: float = SCAN_PRECISION,
                integer: bool = False) -> list[tuple[float, str]]:
    """The nearest values on each side of ``value`` (below first), within a factor ``factor``, where ``decide``
    returns another verdict than at ``value``: ``[(value where it flips, the verdict there), ...]``.

    ``decide(x)`` is the verdict with the threshold at ``x``. Each side is scanned on ``steps`` points spaced
    evenly in log, then bisected to ``precision``; with ``integer`` only whole values are tried. A value of 0 is
    not scanned.
    """
    if value == 0 or not math.isfinite(value):
        return []
    now = decide(value)
    found = []
    for direction in (-1, 1):
        points = [float(value * r) for r in factor ** (direction * np.arange(1, steps + 1) / steps)]
        if integer:
            points = [p for p in dict.fromkeys(int(round(p)) for p in points) if p != value and p != 0]
        inside = value
        for x in points:
            if decide(x) == now:
                inside = x
                continue
            outside = x
            while not _adjacent(inside, outside, precision, integer):
                middle = ((math.floor((inside + outside) / 2) if direction > 0 else math.ceil((inside + outside) / 2))
                          if integer else math.copysign(math.sqrt(inside * outside), value))
                if decide(middle) == now:
                    inside = middle
                else:
                    outside = middle
            found.append((outside, decide(outside)))
            break
    return found


def _adjacent(inside: float, outside: float, precision: float, integer: bool) -> bool:
    if integer:
        return abs(outside - inside) <= 1
    return abs(math.log(outside / inside)) <= math.log1p(precision)
