"""What every self-check function shares: calling the student's code safely, and the verdict line."""

from __future__ import annotations

import numpy as np


def verdict(name: str, ok: bool, n_cases: int, detail: str = "") -> bool:
    """Print ``✓ name: correct on all n cases.`` or ``✗ name: not yet. detail``; return ``ok``."""
    if ok:
        print(f"✓ {name}: correct on all {n_cases} cases.")
    else:
        print(f"✗ {name}: not yet. {detail}")
    return ok


def call_student(name: str, fn, *args):
    """Call the student's function; an exception becomes ``(False, message)`` instead of a traceback."""
    try:
        return True, fn(*args)
    except Exception as err:  # noqa: BLE001 - any error of the student's code is reported, not raised
        shapes = ", ".join(f"array{np.shape(a)}" if isinstance(a, np.ndarray) else repr(a) for a in args)
        return False, f"calling {name}({shapes}) raised {type(err).__name__}: {err}"
