r"""Self-checks for the coding exercises of Chapters I (the zoo, Theorem 1, Theorem 4).

Each ``check_*`` function calls the student's function on several cases, compares with the reference
in posgeom, prints a verdict (and, when wrong, the first case that differs and by how much) and
returns ``True`` or ``False``.

* :func:`check_kernel_distances` — sinusoidal distances computed from the frequency kernel alone,
  $\|p_i - p_j\| = \sqrt{d\,(1 - K(i - j))}$, $K(\delta) = \frac{2}{d}\sum_k \cos(\delta\omega_k)$
  (reference: :func:`posgeom.encodings.sinusoidal_distances`).
* :func:`check_equivariance_gap` — $\max|f(\Pi X) - \Pi f(X)|$ of an encoder
  (reference: :func:`posgeom.experiments.necessity.equivariance_gap`).
* :func:`check_separation` — $\operatorname{sep}(P)$ raw and over the median pairwise distance
  (reference: :func:`posgeom.geometry.separation`).
"""

from __future__ import annotations

import numpy as np

from ._common import call_student as _call
from ._common import verdict as _verdict

__all__ = ["check_kernel_distances", "check_equivariance_gap", "check_separation"]


def check_kernel_distances(student_fn, *, atol: float = 1e-9) -> bool:
    r"""Check ``student_fn(n, d, base) -> (n, n)``: sinusoidal distances from the kernel, without the table.

    Cases: several ``(n, d, base)`` including ``d = 2`` (one frequency) and a small base.

    Returns
    -------
    bool
    """
    from .. import encodings as enc

    cases = [(5, 2, 10000.0), (16, 8, 10000.0), (40, 64, 10000.0), (12, 6, 100.0), (64, 128, 500.0)]
    for n, d, base in cases:
        ok, got = _call("student_fn", student_fn, n, d, base)
        if not ok:
            return _verdict("kernel distances", False, len(cases), got)
        got = np.asarray(got, dtype=np.float64)
        want = enc.sinusoidal_distances(n, d, base=base)
        if got.shape != want.shape:
            return _verdict("kernel distances", False, len(cases),
                            f"for n={n}, d={d}, base={base} the result has shape {got.shape}, expected {want.shape}.")
        err = float(np.max(np.abs(got - want)))
        if not err <= atol:
            i, j = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
            hint = ""
            if np.allclose(got, want ** 2, atol=1e-6):
                hint = " You returned squared distances: take the square root."
            elif np.allclose(got * np.sqrt(2), want, atol=1e-6) or np.allclose(got, want / np.sqrt(d / 2), atol=1e-6):
                hint = " The scale is off: the squared distance is d (1 - K) with K the *mean* cosine."
            return _verdict(
                "kernel distances", False, len(cases),
                f"for n={n}, d={d}, base={base}: entry ({i}, {j}) is {got[i, j]:.6g}, expected {want[i, j]:.6g} "
                f"(max abs error {err:.2e}).{hint}",
            )
    return _verdict("kernel distances", True, len(cases))


def check_equivariance_gap(student_fn, *, rtol: float = 1e-6, atol: float = 1e-10) -> bool:
    r"""Check ``student_fn(model, input_ids, perm) -> float``, the largest $|f(\Pi X) - \Pi f(X)|$.

    Cases: float64 encoders with no positions (gap ~ 1e-15), learned positions and a causal mask (gaps
    of order 1), random permutations and the reversal; compared with
    :func:`posgeom.experiments.necessity.equivariance_gap`.

    Returns
    -------
    bool
    """
    import torch

    from ..experiments.necessity import equivariance_gap, model_config, reversal
    from ..models import build_model

    rng = np.random.default_rng(0)
    L, V = 10, 30
    x = torch.as_tensor(rng.integers(1, V, size=(3, L)))
    cases = []
    for position, causal in (("none", False), ("learned", False), ("none", True), ("alibi", False)):
        cfg = model_config(position, causal, vocab_size=V, max_len=L, d_model=16, n_layers=2, n_heads=2, d_ff=32,
                           init_std=0.5)
        model = build_model(cfg, "classification", seed=1).double().eval()
        for perm in (rng.permutation(L), reversal(L)):
            cases.append((f"{position}{'+causal' if causal else ''}", model, perm))
    for label, model, perm in cases:
        ok, got = _call("student_fn", student_fn, model, x, perm)
        if not ok:
            return _verdict("equivariance gap", False, len(cases), got)
        try:
            got = float(got)
        except (TypeError, ValueError):
            return _verdict("equivariance gap", False, len(cases),
                            f"for the {label} model the function returned {got!r}, not a number.")
        want = equivariance_gap(model, x, perm)
        if not abs(got - want) <= atol + rtol * abs(want):
            hint = ""
            if want > 1e-6 and got < 1e-9:
                hint = (" You found no gap where there is one: compare f(x[:, perm]) with f(x)[:, perm] — "
                        "permute the input tokens on one side and the output rows on the other.")
            return _verdict("equivariance gap", False, len(cases),
                            f"for the {label} model and perm {perm.tolist()}: got {got:.6g}, "
                            f"expected {want:.6g}.{hint}")
    return _verdict("equivariance gap", True, len(cases))


def check_separation(student_fn, *, atol: float = 1e-10) -> bool:
    r"""Check ``student_fn(P) -> (raw, normalized)`` for tables ``P`` of shape (n, d).

    ``raw`` $= \min_{i \ne j}\|p_i - p_j\|$; ``normalized`` $=$ ``raw`` over the median of the
    pairwise distances $\|p_i - p_j\|$, $i < j$. Cases: Gaussian tables, a table with two equal rows
    (separation 0), a 1-D table, and one with an even number of pairs (median of two middle values).

    Returns
    -------
    bool
    """
    from .. import geometry as geo

    rng = np.random.default_rng(3)
    tied = rng.standard_normal((6, 4))
    tied[4] = tied[1]
    cases = [
        ("gaussian 8 x 5", rng.standard_normal((8, 5))),
        ("gaussian 30 x 16", rng.standard_normal((30, 16)) * 0.02),
        ("two equal rows", tied),
        ("points on a line", np.array([[0.0], [1.0], [3.0], [7.0]])),
        ("4 points, 6 pairs", np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])),
    ]
    for label, P in cases:
        ok, got = _call("student_fn", student_fn, P.copy())
        if not ok:
            return _verdict("separation", False, len(cases), got)
        try:
            raw, norm = (float(v) for v in got)
        except (TypeError, ValueError):
            return _verdict("separation", False, len(cases),
                            f"for the {label} table the function returned {got!r}; return a pair (raw, normalized).")
        want = geo.separation(P)
        if not abs(raw - want.raw) <= atol:
            hint = " Did you include the zero distance of a position to itself?" if raw == 0 and want.raw > 0 else ""
            return _verdict("separation", False, len(cases),
                            f"for the {label} table: raw separation {raw:.6g}, expected {want.raw:.6g}.{hint}")
        if not abs(norm - want.normalized) <= atol * max(1.0, abs(want.normalized)) * 10:
            return _verdict("separation", False, len(cases),
                            f"for the {label} table: normalised separation {norm:.6g}, expected {want.normalized:.6g} "
                            f"(median pairwise distance {want.median:.6g}, over the pairs i < j only).")
    return _verdict("separation", True, len(cases))
