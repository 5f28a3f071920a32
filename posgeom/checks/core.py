r"""What every exercise check shares: hidden cases, the switched-off package function, one verdict style.

A check runs the student's function on hidden cases, compares each answer with a private oracle (never the
package function the exercise is about, which is switched off meanwhile: :func:`switched_off`) and prints
``✓ <exercise>: correct on all <n> hidden cases.`` or ``✗ <exercise>: not yet. Case '<label>': <what is wrong>.``,
never the expected value. When the autograder grades (:func:`grading`), the cases are drawn afresh from the
instructor's seed (:func:`case_rng`, :func:`vary`) and the verdict is the weighted share that pass.
Tolerances follow the float precision of the quantity (:func:`array_problem`), so a right formula never fails on
rounding, including one through a square root of a difference (error about $\sqrt{\epsilon}$ times the scale).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
import types
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

__all__ = ["Verdict", "PackageFunctionSwitchedOff", "switched_off", "run_check", "compare_with", "array_problem",
           "number_problem", "functions_switched_off", "case_labels", "grading", "case_rng", "drawing", "vary"]

#: Set while :func:`functions_switched_off` asks a check what it switches off.
_PROBE: contextvars.ContextVar = contextvars.ContextVar("posgeom_check_probe", default=None)
#: Set while the autograder grades (:func:`grading`): the seed, the case weights, the draws' generator.
_GRADING: contextvars.ContextVar = contextvars.ContextVar("posgeom_check_grading", default=None)


class _Probed(Exception):
    """Ends a check called by :func:`functions_switched_off` before it runs any case."""


def _probe(check) -> dict:
    """What ``check`` hands to :func:`run_check` (its switched-off functions and case labels), no case run."""
    found: dict = {}
    token = _PROBE.set(found)
    try:
        check(lambda *args, **kwargs: None)
    except _Probed:
        pass
    finally:
        _PROBE.reset(token)
    return found


def case_labels(check) -> list[str]:
    """The labels of ``check``'s hidden cases, in order (the kinds of case the key weights)."""
    return list(_probe(check)["labels"])


def functions_switched_off(check) -> list[str]:
    """``"module:qualname"`` of the package functions ``check`` switches off (no case is run)."""
    return sorted({f"{g.__module__}:{g.__qualname__}" for f in _probe(check)["switch_off"]
                   for g in (f, getattr(f, "__wrapped__", None), getattr(f, "__func__", None))
                   if callable(g) and getattr(g, "__module__", None) and getattr(g, "__qualname__", None)})


@contextlib.contextmanager
def grading(seed, weights=None):
    """Within the block, checks grade: cases drawn from ``seed``, every case run and weighted.

    Parameters
    ----------
    seed : int or sequence of int
    weights : sequence of float, optional
        One weight per hidden case, in the order of :func:`case_labels` (default: equal).
    """
    seed = [int(s) for s in (seed if isinstance(seed, (list, tuple)) else [seed])]
    state = {"seed": seed, "weights": None if weights is None else [float(w) for w in weights],
             "rng": np.random.default_rng([*seed, 0])}
    token = _GRADING.set(state)
    try:
        yield
    finally:
        _GRADING.reset(token)


def case_rng(stream: int) -> np.random.Generator:
    """``default_rng(stream)`` in practice; seeded by the instructor's seed and ``stream`` when grading."""
    state = _GRADING.get()
    return np.random.default_rng(stream if state is None else [*state["seed"], int(stream)])


def drawing() -> bool:
    """Whether the check runs for the autograder (its cases drawn from the instructor's seed)."""
    return _GRADING.get() is not None


def vary(fixed, low, high):
    """``fixed`` in practice; when grading, uniform in ``[low, high]`` (an integer when both bounds are)."""
    state = _GRADING.get()
    if state is None:
        return fixed
    if isinstance(low, int) and isinstance(high, int):
        return int(state["rng"].integers(low, high + 1))
    return float(state["rng"].uniform(low, high))


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: truthy when every hidden case passed; ``score`` is the weighted share that
    passed (1 or 0 unless grading)."""

    exercise: str
    passed: bool
    n_cases: int
    message: str
    score: float = float("nan")

    def __post_init__(self):
        if math.isnan(self.score):
            object.__setattr__(self, "score", 1.0 if self.passed else 0.0)

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Nothing more in a notebook: the check has printed its line already."""


class PackageFunctionSwitchedOff(RuntimeError):
    """Raised by a package function that the running check has switched off."""


def _raiser(name: str):
    def switched(*args, **kwargs):
        raise PackageFunctionSwitchedOff(
            f"{name} is switched off during this check: the exercise asks you to compute it yourself"
        )

    return switched


def _switched_off_body(*args, **kwargs):
    # runs as the code of a switched-off function, with that function's module globals: reach the
    # exception class through __import__ (a builtin), not through a global name
    raise __import__("posgeom.checks.core", fromlist=["core"]).PackageFunctionSwitchedOff(
        "this posgeom function is switched off during the check: the exercise asks you to compute it yourself"
    )


def _posgeom_modules() -> list:
    """``(name, module)`` of every posgeom module imported so far."""
    return [(name, module) for name, module in list(sys.modules.items())
            if module is not None and (name == "posgeom" or name.startswith("posgeom."))]


@contextlib.contextmanager
def switched_off(*functions: Callable):
    """Within the block, the posgeom ``functions`` raise :class:`PackageFunctionSwitchedOff`.

    Every posgeom module or class attribute bound to one is replaced, and each plain function's code is swapped
    too, so that a reference taken before the check is switched off as well; all restored on exit.
    """
    swapped = []
    for f in functions:
        for g in (f, getattr(f, "__wrapped__", None)):
            if isinstance(g, types.FunctionType) and not g.__code__.co_freevars and all(g is not h for h, _ in swapped):
                swapped.append((g, g.__code__))
                g.__code__ = _switched_off_body.__code__
    ids = {id(f) for f in functions}  # two live objects never share an id
    replaced = []  # (owner, attribute, function): owners are posgeom's modules and the classes they define (methods)
    for name, module in _posgeom_modules():
        if name.startswith("posgeom.checks"):
            continue
        classes = [v for v in vars(module).values() if isinstance(v, type) and getattr(v, "__module__", "") == name]
        for owner in (module, *classes):
            replaced += [(owner, attr, value) for attr, value in list(vars(owner).items()) if id(value) in ids]
    originals = {}  # id(raiser) -> (raiser, the function it stands for)
    for owner, attr, value in replaced:
        raiser = _raiser(f"posgeom's {getattr(value, '__qualname__', 'function')}")
        originals[id(raiser)] = (raiser, value)
        setattr(owner, attr, raiser)
    try:
        yield
    finally:
        for owner, attr, value in replaced:
            setattr(owner, attr, value)
        # a lazy attribute first read during the block (``posgeom.<name>`` caches what it finds) holds a
        # raiser too: put the function back wherever one was copied
        for _, module in _posgeom_modules():
            for attr, value in list(vars(module).items()):
                hit = originals.get(id(value))
                if hit is not None and hit[0] is value:
                    setattr(module, attr, hit[1])
        for g, code in reversed(swapped):
            g.__code__ = code


def pairwise_oracle(X: np.ndarray) -> np.ndarray:
    """(n, n) Euclidean distances between the rows of ``X`` (n, d), pair by pair: an oracle apart from the package."""
    n = len(X)
    return np.array([[math.sqrt(float(np.sum((X[i] - X[j]) ** 2))) for j in range(n)] for i in range(n)])


def case_distances(X: np.ndarray) -> np.ndarray:
    """(n, n) Euclidean distances between the rows of ``X`` (n, d), vectorised: for building hidden cases."""
    return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def line_distances(n: int) -> np.ndarray:
    """(n, n) distances of n points at 0, 1, ..., n - 1 on a line."""
    return np.abs(np.subtract.outer(np.arange(float(n)), np.arange(float(n))))


def compare_with(oracle: Callable, *, number: bool = False, flat: bool = False, **tolerance) -> Callable:
    """A ``compare`` for :func:`run_check`: what differs between the answer and ``oracle(*args)``, by
    :func:`array_problem` (:func:`number_problem` when ``number``); ``flat``: an array answer of any shape is read
    flattened; ``tolerance``: their ``atol``, ``rtol``, ``what`` and ``sqrt``."""
    problem = number_problem if number else array_problem

    def compare(answer, *args):
        return problem(np.ravel(answer) if flat and np.ndim(answer) else answer, oracle(*args), **tolerance)

    return compare


def run_check(exercise: str, student_fn, cases: Iterable[tuple[str, tuple]], compare, *,
              switch_off: tuple = (), hints: Callable | str | None = None, quiet: bool = False) -> Verdict:
    """Run ``student_fn`` on hidden cases and print the verdict.

    Parameters
    ----------
    exercise : str
    student_fn : callable
    cases : iterable of (label, args)
        Hidden cases; the arrays are copied before each call.
    compare : callable
        ``compare(answer, *args) -> str | None``: what is wrong (without the expected value), or None
        (:func:`compare_with` builds one from an oracle).
    switch_off : tuple of callables
        Package functions that must not be used (:func:`switched_off`).
    hints : callable or str, optional
        ``hints(answer, *args) -> str``: a hint for a common mistake, or ``""``; a string is the hint for any mistake.
    quiet : bool
        Do not print (the autograder collects the verdicts itself).

    Returns
    -------
    Verdict
    """
    probe = _PROBE.get()
    cases = list(cases)
    if probe is not None:
        probe.update(switch_off=list(switch_off), labels=[label for label, _ in cases])
        raise _Probed
    if not callable(student_fn):
        raise TypeError(f"pass your function itself to the check, not its result; got a {type(student_fn).__name__}")
    state = _GRADING.get()
    results = []  # (label, what is wrong or None) of each case run
    for label, args in cases:
        problem, stop = _run_case(student_fn, args, compare, switch_off, hints)
        results.append((label, problem))
        # practice stops at the first failing case; grading runs every case until the answering process is gone
        if stop or (problem is not None and state is None):
            break
    verdict = _verdict(exercise, results, len(cases), state)
    if not quiet:
        print(verdict.message)
    return verdict


def _run_case(student_fn, args, compare, switch_off, hints) -> tuple[str | None, bool]:
    """What is wrong with the answer to one case (None when right), and whether the rest cannot run."""
    with switched_off(*switch_off):
        try:
            answer = student_fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
        except PackageFunctionSwitchedOff as err:
            return f"{err}.", False
        except NotImplementedError:
            return "the function is not written yet (it raises NotImplementedError).", True
        except TimeoutError as err:
            return f"your function did not answer in time ({err}).", True
        except Exception as err:  # noqa: BLE001 - a student's error is a verdict, not a crash
            if type(err) is RuntimeError:  # the grader's answering process ended (out of memory, exited)
                return f"{err}.", True
            return f"your function raised {type(err).__name__}: {err}.", False
    try:
        wrong = compare(answer, *args)
    except (TypeError, ValueError, IndexError) as err:
        wrong = f"the answer could not be read ({err})"
    if not wrong:
        return None, False
    try:
        hint = hints(answer, *args) if callable(hints) else (hints or "")
    except (TypeError, ValueError, IndexError):  # a hint's test on an unreadable answer: no hint
        hint = ""
    return f"{wrong}." + (f" Hint: {hint}" if hint else ""), False


def _verdict(exercise: str, results: list, n_cases: int, state: dict | None) -> Verdict:
    """The verdict on the cases run (those not run fail): in practice all or nothing, naming the failing case;
    when grading, the weighted share that pass and the first failure's property (never the drawn case)."""
    weights = [1.0] * n_cases if state is None or state["weights"] is None else list(state["weights"])
    if len(weights) != n_cases:
        raise ValueError(f"the key gives {len(weights)} case weights for {exercise!r}, which has {n_cases} hidden "
                         "cases; rebuild the key with posgeom classroom build")
    passed = [problem is None for _, problem in results] + [False] * (n_cases - len(results))
    if all(passed):
        return Verdict(exercise, True, n_cases, f"✓ {exercise}: correct on all {n_cases} hidden cases.", 1.0)
    total = sum(weights)
    score = sum(w for w, ok in zip(weights, passed) if ok) / total if state is not None and total > 0 else 0.0
    label, first = next((label, problem) for label, problem in results if problem is not None)
    if first.startswith("the function is not written"):
        message = f"not yet. {first}"
    elif state is None:
        message = f"not yet. Case '{label}': {first}"
    else:
        message = f"{sum(passed)} of {n_cases} hidden cases correct. A failing case: {first}"
    return Verdict(exercise, False, n_cases, f"✗ {exercise}: {message}", score)


_EPS = float(np.finfo(np.float64).eps)


def _tolerance(want: np.ndarray, atol: float, rtol: float, sqrt: bool) -> tuple[float, float]:
    """(atol, rtol) no tighter than float64 rounding allows; a square root of a difference that cancels is
    exact only to about sqrt(eps) times the scale."""
    finite = np.abs(want[np.isfinite(want)]) if np.size(want) else np.zeros(0)
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    floor = 64 * _EPS * scale
    if sqrt:
        floor = max(floor, 8 * math.sqrt(_EPS) * scale)
    return max(atol, floor), max(rtol, 64 * _EPS)


def _order(x: float) -> str:
    """The order of magnitude of a positive error, e.g. ``1e-03`` (not the error itself)."""
    return "1e{:+03d}".format(int(math.floor(math.log10(x)))) if x > 0 and math.isfinite(x) else "inf"


def array_problem(answer, want: np.ndarray, *, atol: float = 0.0, rtol: float = 0.0, what: str = "the result",
                  sqrt: bool = False) -> str | None:
    """What differs between an array answer and the oracle's, without the oracle's values.

    Parameters
    ----------
    answer : array-like
    want : ndarray
    atol, rtol : float
        Tolerances; raised to what float64 rounding allows for a quantity of this scale.
    what : str
        The name of the result in the message.
    sqrt : bool
        The quantity is a square root of a difference, exact only to about sqrt(eps) times its scale.

    Returns
    -------
    str or None
        The shape, NaN, a symmetry, a diagonal or the order of the largest relative error and where, or None.
    """
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(answer, dtype=np.float64)
    if got.shape != want.shape:
        return f"{what} has shape {got.shape}, which is not the shape asked for"
    if not np.all(np.isfinite(got)):
        return f"{what} contains NaN or infinite values"
    atol, rtol = _tolerance(want, atol, rtol, sqrt)
    err = np.abs(got - want)
    bound = atol + rtol * np.abs(want)
    if np.all(err <= bound):
        return None
    if got.ndim == 2 and got.shape[0] == got.shape[1] and got.shape[0] > 1:
        if np.allclose(want, want.T, atol=atol, rtol=rtol) and not np.allclose(got, got.T, atol=atol, rtol=rtol):
            return f"{what} should be symmetric and is not"
        if np.all(np.abs(np.diag(want)) <= atol) and not np.all(np.abs(np.diag(got)) <= atol):
            return f"the diagonal of {what} should be 0 and is not"
    where = np.unravel_index(int(np.argmax(err - bound)), want.shape)
    place = f" at index {tuple(int(i) for i in where)}" if got.ndim else ""
    scale = max(float(np.abs(want).max()) if want.size else 0.0, atol)
    return f"{what} is wrong{place}: an error of order {_order(float(err[where]) / scale)} relative to its scale"


def number_problem(answer, want: float, *, atol: float = 0.0, rtol: float = 0.0, what: str = "the value",
                   sqrt: bool = False) -> str | None:
    """What differs between a scalar answer and the oracle's, without the oracle's value (nor its sign)."""
    if isinstance(answer, (list, tuple, dict, str)) or np.ndim(answer) != 0:
        return f"{what} should be one number, got {type(answer).__name__}"
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return f"{what} should be a number, got {type(answer).__name__}"
    if not math.isfinite(got):
        return f"{what} is NaN or infinite"
    atol, rtol = _tolerance(np.array([want], dtype=np.float64), atol, rtol, sqrt)
    if abs(got - want) <= atol + rtol * abs(want):
        return None
    return f"{what} is wrong: an error of order {_order(abs(got - want) / max(abs(want), atol))} relative to its size"
