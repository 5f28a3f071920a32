"""The one set of input validators, shared by every layer (it imports nothing but NumPy).

Every check takes the value, its name, then its limits (``check_int(x, "n", 1)``), and fails with a one-line
message that names the problem and says how to fix it; nothing is silently dropped, clipped or symmetrised.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

#: Relative tolerance for symmetry and zero diagonal of a distance matrix: ``|D - D^T| <= SYM_RTOL * max(1, max D)``.
SYM_RTOL = 1e-10


def as_float_matrix(x, name: str) -> np.ndarray:
    """``x`` as a finite 2-D float64 array, or a ``ValueError`` naming ``name`` (``TypeError`` if complex)."""
    reject_complex(x, name)
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 2-D array of real numbers; got {type(x).__name__} ({exc})") from exc
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D; got an array of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(
            f"{name} contains NaN or infinite entries (first at index {tuple(int(b) for b in bad)}); "
            "remove or impute them first"
        )
    return arr


def reject_complex(x, name: str) -> None:
    """A ``TypeError`` when ``x`` holds complex numbers (converting them to float would drop the imaginary part)."""
    objects = isinstance(x, np.ndarray) and x.dtype == object
    if np.iscomplexobj(x) or (objects and any(isinstance(e, complex) for e in x.flat)):
        raise TypeError(f"{name} must hold real numbers; got complex values (pass the real part, x.real, if meant)")


def check_distance_matrix(D, name: str = "D", *, min_n: int = 2) -> np.ndarray:
    """Validate a dissimilarity matrix: square (n, n), n >= ``min_n``, finite, non-negative, symmetric,
    zero diagonal (up to :data:`SYM_RTOL`).

    Returns
    -------
    D : ndarray of shape (n, n), float64
        The validated matrix (a float64 view or copy; never symmetrised).
    """
    D = as_float_matrix(D, name)
    if D.shape[0] != D.shape[1]:
        raise ValueError(
            f"{name} must be a square (n, n) distance matrix; got shape {D.shape}. "
            "If you hold an (n, d) encoding, pass euclidean_distances(P) instead"
        )
    n = D.shape[0]
    if n < min_n:
        raise ValueError(f"{name} must describe at least {min_n} positions; got n = {n}")
    if np.any(D < 0):
        i, j = np.argwhere(D < 0)[0]
        raise ValueError(f"{name} has negative entries (e.g. {name}[{i}, {j}] = {D[i, j]:.3g}); distances are >= 0")
    scale = max(1.0, float(D.max()))
    asym = float(np.max(np.abs(D - D.T)))
    if asym > SYM_RTOL * scale:
        i, j = np.unravel_index(int(np.argmax(np.abs(D - D.T))), D.shape)
        raise ValueError(
            f"{name} is not symmetric: |{name}[{i}, {j}] - {name}[{j}, {i}]| = {asym:.3g}. "
            f"If the asymmetry is rounding, pass ({name} + {name}.T) / 2"
        )
    diag = float(np.max(np.abs(np.diag(D))))
    if diag > SYM_RTOL * scale:
        raise ValueError(f"{name} must have a zero diagonal; max |diag| = {diag:.3g}")
    return D


#: Largest distance whose square (times a few, as in double centring) stays finite in float64.
MAX_SQUARABLE = 1e150


def check_squarable(D: np.ndarray, name: str = "D") -> np.ndarray:
    """A ``ValueError`` when ``D``'s entries are too large to square in float64 (double centring, SMACOF)."""
    top = float(np.max(np.abs(D))) if D.size else 0.0
    if top > MAX_SQUARABLE:
        raise ValueError(
            f"{name}'s largest entry {top:.3g} is too large to square in float64 (limit {MAX_SQUARABLE:.0e}); "
            f"divide {name} by a constant first (an embedding scales with it, stress and ranks do not change)"
        )
    return D


def is_distance_matrix(X: np.ndarray) -> bool:
    """True when ``X`` is square, non-negative, symmetric and zero on the diagonal (same tolerance)."""
    if X.ndim != 2 or X.shape[0] != X.shape[1] or X.shape[0] == 0:
        return False
    if np.any(X < 0) or not np.all(np.isfinite(X)):
        return False
    scale = max(1.0, float(np.max(X)))
    return bool(np.max(np.abs(X - X.T)) <= SYM_RTOL * scale and np.max(np.abs(np.diag(X))) <= SYM_RTOL * scale)


def upper(D: np.ndarray) -> np.ndarray:
    """The strictly upper triangle ``D[i, j], i < j`` as a vector of length n (n - 1) / 2, row-major."""
    iu = np.triu_indices(D.shape[0], k=1)
    return D[iu]


def power_of_two_scale(*arrays: np.ndarray) -> float:
    """``2^e`` with the largest ``|x|`` of ``arrays`` in ``[2^e, 2^(e+1))`` (1.0 when all are 0): dividing by it
    is exact and brings the values into [0, 2), so squares and sums of squares neither overflow nor underflow."""
    top = max((float(np.max(np.abs(a))) if np.size(a) else 0.0) for a in arrays)
    if top == 0.0 or not np.isfinite(top):
        return 1.0
    # top = m 2^k with m in [0.5, 1): 2^(k-1) <= top < 2^k, and 2^(k-1) <= 2^1023 never overflows
    return float(np.ldexp(1.0, int(np.frexp(top)[1]) - 1))


def unscale(values: np.ndarray, scale: float, name: str = "values") -> np.ndarray:
    """``values * scale`` in place (undoing :func:`power_of_two_scale`), or a ``ValueError`` when a result
    exceeds the float64 range."""
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if scale > 1.0 and top > np.finfo(np.float64).max / scale:
        raise ValueError(
            f"some {name} exceed the float64 range (about {top:.3g} x {scale:.3g}); divide the input by a constant"
        )
    values *= scale
    return values


def check_rng(seed) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from an int, None or an existing Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def as_square_matrix(x, name: str = "D", *, min_n: int = 1) -> np.ndarray:
    """``x`` as a finite square (n, n) float64 array with n >= ``min_n`` (any sign, any symmetry)."""
    arr = as_float_matrix(x, name)
    if arr.shape[0] != arr.shape[1] or arr.shape[0] < min_n:
        raise ValueError(f"{name} must be a square (n, n) matrix with n >= {min_n}; got shape {arr.shape}")
    return arr


def check_table(P, name: str = "P", min_rows: int = 2) -> np.ndarray:
    """A finite (n, d) float64 position table with n >= ``min_rows`` and d >= 1, or a ``ValueError``."""
    P = as_float_matrix(P, name)
    if P.shape[0] < min_rows or P.shape[1] < 1:
        raise ValueError(f"{name} needs at least {min_rows} rows and 1 column; got shape {P.shape}")
    return P


def _int_in(x, lo: int, hi: int | None) -> bool:
    """True when ``x`` is an integer (not a ``bool``) in ``[lo, hi]`` (``hi`` None: no upper bound)."""
    return isinstance(x, Integral) and not isinstance(x, bool) and lo <= x and (hi is None or x <= hi)


def _int_range(lo: int, hi: int | None) -> str:
    return f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"


def check_int(x, name: str, lo: int, hi: int | None = None) -> int:
    """``x`` as an ``int`` (not a ``bool``) in ``[lo, hi]`` (``hi`` None: unbounded), or a ``ValueError``."""
    if not _int_in(x, lo, hi):
        raise ValueError(f"{name} must be an integer {_int_range(lo, hi)}; got {x!r}")
    return int(x)


def check_optional_int(x, name: str, lo: int, hi: int | None = None, *, none: str = "") -> int | None:
    """None, or ``x`` as :func:`check_int` gives it; the message says what None means (``none``)."""
    if x is None:
        return None
    if not _int_in(x, lo, hi):
        meaning = f" ({none})" if none else ""
        raise ValueError(f"{name} must be an integer {_int_range(lo, hi)} or None{meaning}; got {x!r}")
    return int(x)


def check_real(x, name: str, lo: float, hi: float | None = None, *, open_lo: bool = False) -> float:
    """``x`` as a finite ``float`` in ``[lo, hi]`` (``lo`` excluded when ``open_lo``), or a ``ValueError``."""
    rng = f"{'>' if open_lo else '>='} {lo:g}" + ("" if hi is None else f" and <= {hi:g}")
    message = f"{name} must be a finite number {rng}; got {x!r}"
    if isinstance(x, (bool, str, bytes)):
        raise ValueError(message)
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not math.isfinite(value) or value < lo or (open_lo and value == lo) or (hi is not None and value > hi):
        raise ValueError(message)
    return value


def check_choice(value, name: str, choices, *, plural: str | None = None):
    """``value`` when it is one of ``choices``, else a ``ValueError`` listing them (``plural``: ``name + "s"``)."""
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; valid {plural or name + 's'} are {', '.join(map(str, choices))}")
    return value


def check_choices(values, name: str, choices, *, plural: str | None = None) -> tuple:
    """``values`` as a tuple when every one is among ``choices``, else a ``ValueError`` naming the others."""
    values, plural = tuple(values), plural or name + "s"
    bad = [v for v in values if v not in choices]
    if bad:
        raise ValueError(f"unknown {plural} {bad}; valid {plural} are {', '.join(map(str, choices))}")
    return values


def check_positive_int(value, name: str) -> int:
    """``value`` as an ``int`` >= 1, or a ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_even(value, name: str) -> int:
    """``value`` as an even positive ``int`` (sines and cosines come in pairs), or a ``ValueError``."""
    value = check_positive_int(value, name)
    if value % 2:
        raise ValueError(
            f"{name} must be even (sines and cosines come in pairs), got {value}; use {value - 1} or {value + 1}"
        )
    return value


def check_positive_float(value, name: str, hint: str = "") -> float:
    """``value`` as a finite ``float`` > 0, or a ``ValueError`` naming ``name`` (and ``hint``, what to use)."""
    message = f"{name} must be a positive number{f' ({hint})' if hint else ''}, got {value!r}"
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(message)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number{f' ({hint})' if hint else ''}, got {value!r}")
    return value


def printable(text) -> str:
    r"""``text`` safe to print on a terminal: every control or format character but newlines as its Python escape
    (``"\x1b[31m"`` prints as ``\x1b[31m``), so text read from files cannot recolour or hide a line."""
    return "\n".join("".join(c if c.isprintable() else repr(c)[1:-1] for c in line) for line in str(text).split("\n"))


def check_bounds(bounds, name: str = "bounds") -> tuple[float, float]:
    """``bounds`` as a float pair ``lo < hi`` (None: no bound on that side), or a ``ValueError``."""
    if bounds is None:
        return -np.inf, np.inf
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi), None for no bound on a side; got {bounds!r}") from None
    lo = -np.inf if lo is None else float(lo)
    hi = np.inf if hi is None else float(hi)
    if not lo < hi:
        raise ValueError(f"{name} must satisfy lo < hi; got ({lo}, {hi})")
    return lo, hi
