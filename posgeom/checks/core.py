r"""What every exercise check shares: hidden cases, the switched-off package function, one verdict style.

A check runs the student's function on cases the student does not see, compares each answer with a
private oracle (a naive loop or a closed form written in the check module, never the package function
the exercise is about), and prints one line:

* ``✓ <exercise>: correct on all <n> hidden cases.``
* ``✗ <exercise>: not yet. Case '<label>': <what is wrong>.`` — the case is named, the expected value
  is never printed (it would give the answer away); a hint follows when the mistake is a common one.

While the student's function runs, the package functions that would answer the exercise are switched
off (:func:`switched_off`): calling them raises :class:`PackageFunctionSwitchedOff`, so a one-line
call to posgeom cannot pass.
"""

from __future__ import annotations

import contextlib
import sys
import types
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

__all__ = ["Verdict", "PackageFunctionSwitchedOff", "switched_off", "run_check", "array_problem", "number_problem"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: truthy when every hidden case passed.

    Attributes
    ----------
    exercise : str
        The exercise's short name (as printed).
    passed : bool
    n_cases : int
        Number of hidden cases.
    message : str
        The line printed for the student.
    """

    exercise: str
    passed: bool
    n_cases: int
    message: str

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


@contextlib.contextmanager
def switched_off(*functions: Callable):
    """Within the block, the posgeom ``functions`` raise :class:`PackageFunctionSwitchedOff`.

    Two layers, both restored on exit (also when the block raises): every attribute of an imported
    ``posgeom`` module or class bound to one of the functions is replaced (the top-level re-exports
    included), and the code of each plain Python function (and of the function a decorator wraps)
    is swapped for one that raises, so a reference taken before the check is switched off too.
    """
    swapped = []
    for f in functions:
        for g in (f, getattr(f, "__wrapped__", None)):
            if isinstance(g, types.FunctionType) and not g.__code__.co_freevars and all(g is not h for h, _ in swapped):
                swapped.append((g, g.__code__))
                g.__code__ = _switched_off_body.__code__
    names = {id(f): f"posgeom's {getattr(f, '__qualname__', 'function')}" for f in functions}
    owners = []  # the modules of posgeom and the classes they define (for methods)
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "posgeom" or name.startswith("posgeom.")) or name.startswith("posgeom.checks"):
            continue
        owners.append(module)
        owners += [v for v in vars(module).values()
                   if isinstance(v, type) and getattr(v, "__module__", "") == name]
    replaced = []
    for owner in owners:
        for attr, value in list(vars(owner).items()):
            if id(value) in names and any(value is f for f in functions):
                replaced.append((owner, attr, value))
    originals = {}  # id(raiser) -> the function it stands for
    for owner, attr, value in replaced:
        raiser = _raiser(names[id(value)])
        originals[id(raiser)] = (raiser, value)
        setattr(owner, attr, raiser)
    try:
        yield
    finally:
        for owner, attr, value in replaced:
            setattr(owner, attr, value)
        # a lazy attribute first read during the block (``posgeom.<name>`` caches what it finds) holds a
        # raiser too: put the function back wherever one was copied
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "posgeom" or name.startswith("posgeom.")):
                continue
            for attr, value in list(vars(module).items()):
                hit = originals.get(id(value))
                if hit is not None and hit[0] is value:
                    setattr(module, attr, hit[1])
        for g, code in reversed(swapped):
            g.__code__ = code


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def run_check(exercise: str, student_fn, cases: Iterable[tuple[str, tuple]], compare, *,
              switch_off: tuple = (), hints: Callable | None = None, quiet: bool = False) -> Verdict:
    """Run ``student_fn`` on hidden cases and print the verdict.

    Parameters
    ----------
    exercise : str
        Short name of the exercise, as printed.
    student_fn : callable
        The student's function.
    cases : iterable of (label, args)
        Hidden cases: a label to name a failing case, and the arguments (arrays are copied).
    compare : callable
        ``compare(answer, *args) -> str | None``: what is wrong with the answer (without the expected
        value), or None when it is right.
    switch_off : tuple of callables
        Package functions that must not be used (:func:`switched_off`).
    hints : callable, optional
        ``hints(answer, *args) -> str``: a hint for a common mistake, or ``""``.
    quiet : bool
        Do not print (the autograder collects the verdicts itself).

    Returns
    -------
    Verdict
    """
    cases = list(cases)
    if not callable(student_fn):
        raise TypeError(f"pass your function itself to the check, not its result; got a {type(student_fn).__name__}")
    problem = None
    for label, args in cases:
        with switched_off(*switch_off):
            try:
                answer = student_fn(*(_copy(a) for a in args))
            except PackageFunctionSwitchedOff as err:
                problem = f"Case '{label}': {err}."
                break
            except NotImplementedError:
                problem = "the function is not written yet (it raises NotImplementedError)."
                break
            except Exception as err:  # noqa: BLE001 - a student's error is a verdict, not a crash
                problem = f"Case '{label}': your function raised {type(err).__name__}: {err}."
                break
        try:
            wrong = compare(answer, *args)
        except (TypeError, ValueError) as err:
            wrong = f"the answer could not be read ({err})"
        if wrong:
            hint = hints(answer, *args) if hints is not None else ""
            problem = f"Case '{label}': {wrong}." + (f" Hint: {hint}" if hint else "")
            break
    if problem is None:
        verdict = Verdict(exercise, True, len(cases), f"✓ {exercise}: correct on all {len(cases)} hidden cases.")
    else:
        verdict = Verdict(exercise, False, len(cases), f"✗ {exercise}: not yet. {problem}")
    if not quiet:
        print(verdict.message)
    return verdict


def array_problem(answer, want: np.ndarray, *, atol: float, rtol: float = 0.0, what: str = "the result") -> str | None:
    """What differs between an array answer and the oracle's, without the oracle's values."""
    got = np.asarray(answer, dtype=np.float64)
    if got.shape != want.shape:
        return f"{what} has shape {got.shape}, which is not the shape asked for"
    if not np.all(np.isfinite(got)):
        return f"{what} contains NaN or infinite values"
    err = np.abs(got - want)
    bound = atol + rtol * np.abs(want)
    if np.all(err <= bound):
        return None
    where = np.unravel_index(int(np.argmax(err - bound)), want.shape)
    place = f" at index {tuple(int(i) for i in where)}" if got.ndim else ""
    return f"{what} is off by {float(err[where]):.2e}{place}"


def number_problem(answer, want: float, *, atol: float, rtol: float = 0.0, what: str = "the value") -> str | None:
    """What differs between a scalar answer and the oracle's, without the oracle's value."""
    try:
        got = float(answer)
    except (TypeError, ValueError):
        return f"{what} should be a number, got {type(answer).__name__}"
    if abs(got - want) <= atol + rtol * abs(want):
        return None
    return f"{what} is off by {abs(got - want):.2e} ({'too large' if got > want else 'too small'})"
