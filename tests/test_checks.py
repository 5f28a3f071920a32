"""The exercise checks: a right answer passes, common wrong answers fail, the package function the
exercise is about cannot pass (it is switched off), expected values are never printed, and each
check's private oracle agrees with the package function (a copy taken past the switch)."""

from __future__ import annotations

import itertools
import math
import types

import numpy as np
import pytest
import torch

import posgeom
from posgeom import encodings as enc
from posgeom.checks import core
from posgeom.checks import learned_tables as lt_checks
from posgeom.checks import optimal_encoding as oe
from posgeom.checks import paper_experiments as pe
from posgeom.checks import why_position as wp
from posgeom.checks import your_model as ym
from posgeom.models import equivariance as eqv


def _unswitchable(f):
    """A copy of a package function that the checks' switch does not reach (the oracle comparison)."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


def _pdist(X):
    X = np.asarray(X, dtype=np.float64)
    return np.sqrt(np.maximum(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1), 0.0))


# --- right answers, written from the formulas -------------------------------------------------------

def sinusoid_distances(n, d, base):
    w = base ** (-2.0 * np.arange(d // 2) / d)
    delta = np.subtract.outer(np.arange(n), np.arange(n))
    K = np.cos(delta[..., None] * w).mean(-1)
    return np.sqrt(np.maximum(d * (1 - K), 0.0))


def sinusoid_kernel(offsets, d, base):
    w = base ** (-2.0 * np.arange(d // 2) / d)
    return np.cos(np.asarray(offsets, dtype=float)[:, None] * w).mean(-1)


def separation(P):
    D = _pdist(P)[np.triu_indices(len(P), 1)]
    return D.min(), D.min() / np.median(D)


def tied_rows(P, tol):
    D = _pdist(P)
    return [(i, j) for i, j in itertools.combinations(range(len(P)), 2) if D[i, j] <= tol]


def hellinger(P):
    return _pdist(np.sqrt(P))


def double_centring(D):
    J = np.eye(len(D)) - 1 / len(D)
    return -0.5 * J @ (D**2) @ J


def mds(D, k):
    lam, U = np.linalg.eigh(double_centring(D))
    lam, U = lam[::-1][:k], U[:, ::-1][:, :k]
    return U * np.sqrt(np.clip(lam, 0, None))


def rank_for_stress(D, thr):
    iu = np.triu_indices(len(D), 1)
    for k in range(1, len(D) + 1):
        dh, d = _pdist(mds(D, k))[iu], D[iu]
        if dh @ dh > 0 and 1 - (dh @ d) ** 2 / ((dh @ dh) * (d @ d)) <= thr:
            return k
    return len(D)


def circulant(g):
    n = len(g)
    i = np.arange(n)
    return g[(i[None, :] - i[:, None]) % n]


def violation(D, Dh):
    iu = np.triu_indices(len(D), 1)
    a, b = D[iu], Dh[iu]
    s = np.sign(np.subtract.outer(a, a)) * np.sign(np.subtract.outer(b, b))
    s = s[np.triu_indices(a.size, 1)]
    return (s < 0).sum() / (s != 0).sum()


def kendall(D, Dh):
    return 1 - 2 * violation(D, Dh)


def slopes(D, target):
    iu = np.triu_indices(len(D), 1)
    a, d = np.abs(np.subtract.outer(np.arange(len(D)), np.arange(len(D))))[iu].astype(float), D[iu]
    r = math.sqrt((a @ d) ** 2 - (a @ a) * (d @ d) * (1 - target))
    return ((a @ d) - r) / (a @ a), ((a @ d) + r) / (a @ a)


def logit_distances(G):
    S = (G + G.T) / 2
    s = np.diag(S)
    return np.sqrt(np.clip(s[:, None] + s[None, :] - 2 * S, 0, None))


def lag_similarity(P):
    U = P / np.linalg.norm(P, axis=1, keepdims=True)
    C = U @ U.T
    return np.array([np.diag(C, k).mean() for k in range(len(P))])


def interpolate(P, m):
    s = np.linspace(0, len(P) - 1, m)
    return np.stack([np.interp(s, np.arange(len(P)), col) for col in P.T], axis=1)


def rotary(n, theta):
    delta = np.subtract.outer(np.arange(n), np.arange(n))
    K = np.cos(delta[..., None] * np.asarray(theta)).mean(-1)
    return np.sqrt(np.maximum(2 * (1 - K), 0.0))


def offset_profile(D):
    n = len(D)
    means = np.array([np.diagonal(D, o).mean() for o in range(1, n)])
    return means / means.max()


@torch.no_grad()
def gap(model, x, perm):
    perm = torch.as_tensor(perm)
    return float((model.encoder(x[:, perm]) - model.encoder(x)[:, perm]).abs().max())


RIGHT = [
    (wp.check_sinusoid_distances, sinusoid_distances),
    (wp.check_sinusoid_kernel, sinusoid_kernel),
    (wp.check_equivariance_gap, gap),
    (wp.check_permutation_of_logits, lambda S, p: S[np.ix_(p, p)]),
    (wp.check_separation, separation),
    (wp.check_tied_rows, tied_rows),
    (oe.check_hellinger_matrix, hellinger),
    (oe.check_noise_floor, lambda v, N: (v - 1) / (2 * N)),
    (oe.check_classical_mds, mds),
    (oe.check_double_centring, double_centring),
    (oe.check_rank_for_stress, rank_for_stress),
    (oe.check_parameter_savings, lambda n, d, k: 1 - k * (n + d) / (n * d)),
    (oe.check_circulant_eigenvalues, lambda g: np.linalg.eigvalsh(double_centring(circulant(g)))),
    (oe.check_circulant_matrix, circulant),
    (pe.check_alibi_slopes, slopes),
    (pe.check_best_alibi_slope, lambda D: slopes(D, 1.0)[0] / 2 + slopes(D, 1.0)[1] / 2),
    (pe.check_violation_rate, violation),
    (pe.check_kendall_tau, kendall),
    (pe.check_logit_distances, logit_distances),
    (pe.check_alibi_logits, lambda n, m: -m * np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)),
    (lt_checks.check_lag_similarity, lag_similarity),
    (lt_checks.check_band_width,
     lambda P, level: next((k for k, s in enumerate(lag_similarity(P)) if k and s < level), len(P))),
    (lt_checks.check_interpolation, interpolate),
    (lt_checks.check_reuse_last, lambda P, m: P[np.minimum(np.arange(m), len(P) - 1)]),
    (ym.check_rotary_distances, rotary),
    (ym.check_offset_profile, offset_profile),
]


@pytest.mark.parametrize("check, answer", RIGHT, ids=[c.__name__ for c, _ in RIGHT])
def test_a_right_answer_passes_and_a_stub_fails(check, answer, capsys):
    verdict = check(answer)
    assert verdict and verdict.passed, verdict.message
    assert capsys.readouterr().out.startswith("✓ ")

    def stub(*args):
        raise NotImplementedError("write it")

    assert not check(stub)
    assert "not written yet" in capsys.readouterr().out


def _centred(D):
    J = np.eye(len(D)) - 1.0 / len(D)
    return J @ D @ J


WRONG = [
    (wp.check_sinusoid_distances, lambda n, d, b: sinusoid_distances(n, d, b) ** 2, "squared"),
    (wp.check_separation, lambda P: (0.0, 0.0), "zero distance"),
    (wp.check_equivariance_gap, lambda m, x, p: 0.0, "the gap is wrong: an error of order 1e+00"),
    (oe.check_hellinger_matrix, lambda P: hellinger(P) / np.sqrt(2), "sqrt 2"),
    (oe.check_noise_floor, lambda v, N: (v - 1) / (4 * N), "one sample"),
    (oe.check_classical_mds, lambda D, k: 2 * mds(D, k), "is wrong"),
    (oe.check_rank_for_stress, lambda D, t: rank_for_stress(D, t) + 1, "too large"),
    (pe.check_alibi_slopes, lambda D, t: slopes(D, t)[::-1], "wrong order"),
    (pe.check_logit_distances, lambda G: logit_distances(G) ** 2, "is wrong"),
    (lt_checks.check_lag_similarity, lambda P: lag_similarity(P - P.mean(0)), "do not centre the rows"),
    (oe.check_double_centring, lambda D: -0.5 * _centred(D), "square the distances"),
    (pe.check_alibi_logits, lambda n, m: np.abs(np.subtract.outer(np.arange(n), np.arange(n))) * m, "penalty"),
    (lt_checks.check_interpolation, lambda P, m: P[np.minimum(np.arange(m), len(P) - 1)], "extension"),
    (ym.check_rotary_distances, lambda n, t: rotary(n, t) ** 2, "squared"),
    (ym.check_offset_profile, lambda D: offset_profile(D)[1:], "shape"),
]


@pytest.mark.parametrize("check, answer, says", WRONG, ids=[c.__name__ for c, _, _ in WRONG])
def test_a_common_mistake_fails_with_a_hint(check, answer, says, capsys):
    assert not check(answer)
    out = capsys.readouterr().out
    assert out.startswith("✗ ") and says in out


PACKAGE = [
    (wp.check_sinusoid_distances, lambda n, d, b: enc.sinusoidal_distances(n, d, base=b)),
    (wp.check_sinusoid_distances, lambda n, d, b: _pdist(enc.sinusoidal_table(n, d, base=b))),
    (wp.check_equivariance_gap, eqv.equivariance_gap),
    (wp.check_separation, lambda P: (posgeom.separation(P).raw, posgeom.separation(P).normalized)),
    (oe.check_hellinger_matrix, posgeom.hellinger_matrix),
    (oe.check_classical_mds, lambda D, k: posgeom.classical_mds(D, k=k).embedding),
    (oe.check_rank_for_stress, lambda D, t: posgeom.effective_rank(D, "stress", threshold=t, normalization="scale_free")),
    (oe.check_circulant_eigenvalues, posgeom.geometry.circulant_eigenvalues),
    (pe.check_alibi_slopes, lambda D, t: posgeom.geometry.alibi_slopes_for(t, posgeom.geometry.alibi_parabola(D))),
    (pe.check_violation_rate, lambda D, Dh: posgeom.violation_rate(D, Dh, as_distances=True)),
    (pe.check_logit_distances, posgeom.geometry.kernel_distances),
    (lt_checks.check_lag_similarity, lambda P: posgeom.geometry.similarity_by_lag(posgeom.geometry.cosine_similarity_matrix(P))["mean"]),
    (ym.check_rotary_distances, enc.rotary_distances),
]


@pytest.mark.parametrize("check, answer", PACKAGE, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(PACKAGE)])
def test_the_package_function_cannot_pass_and_is_restored_after(check, answer, capsys):
    assert not check(answer)
    assert "switched off" in capsys.readouterr().out
    assert posgeom.hellinger_matrix(np.eye(2))[0, 1] == pytest.approx(math.sqrt(2))  # restored
    assert posgeom.separation(np.eye(3)).raw == pytest.approx(math.sqrt(2))


def test_a_reference_taken_before_the_check_is_switched_off_too():
    early = posgeom.hellinger_matrix
    with core.switched_off(posgeom.hellinger_matrix):
        with pytest.raises(core.PackageFunctionSwitchedOff):
            early(np.eye(2))
    assert early(np.eye(2))[0, 1] == pytest.approx(math.sqrt(2))


_VIOLATION = _unswitchable(posgeom.violation_rate)
_SLOPES, _PARABOLA = _unswitchable(posgeom.geometry.alibi_slopes_for), _unswitchable(posgeom.geometry.alibi_parabola)
_TABLE = _unswitchable(enc.sinusoidal_table)
_FREQUENCY_KERNEL = _unswitchable(enc.rotary_distances)

ORACLE = [  # the package's implementation, copied past the switch, passes: oracle and package agree
    (oe.check_hellinger_matrix, _unswitchable(posgeom.hellinger_matrix)),
    (pe.check_violation_rate, lambda D, Dh: _VIOLATION(D, Dh, as_distances=True)),
    (pe.check_logit_distances, _unswitchable(posgeom.geometry.kernel_distances)),
    (oe.check_circulant_eigenvalues, _unswitchable(posgeom.geometry.circulant_eigenvalues)),
    (pe.check_alibi_slopes, lambda D, t: _SLOPES(t, _PARABOLA(D))),
    (wp.check_sinusoid_distances, lambda n, d, b: _pdist(_TABLE(n, d, base=b))),
    (wp.check_equivariance_gap, torch.no_grad()(_unswitchable(eqv.equivariance_gap.__wrapped__))),
    (ym.check_rotary_distances, _FREQUENCY_KERNEL),
]


@pytest.mark.parametrize("check, answer", ORACLE, ids=[c.__name__ for c, _ in ORACLE])
def test_the_private_oracle_agrees_with_the_package(check, answer):
    assert check(answer)


def test_a_verdict_never_shows_the_expected_value(capsys):
    expected = f"{math.sqrt(2):.4g}"
    oe.check_hellinger_matrix(lambda P: np.zeros((len(P), len(P))))
    out = capsys.readouterr().out
    assert out.startswith("✗ ") and expected not in out and "1.41" not in out


def test_a_function_is_required():
    with pytest.raises(TypeError, match="pass your function itself"):
        oe.check_hellinger_matrix(np.eye(3))


def test_a_lazy_top_level_name_read_during_a_check_is_restored(monkeypatch):
    """``posgeom.<name>`` is imported on first use and cached: read first inside a check, it must not keep
    the switched-off stand-in afterwards."""
    import posgeom
    import posgeom.geometry as geometry
    from posgeom.checks.core import PackageFunctionSwitchedOff, switched_off

    monkeypatch.delitem(vars(posgeom), "classical_mds", raising=False)  # as if never read yet
    with switched_off(geometry.classical_mds):
        with pytest.raises(PackageFunctionSwitchedOff):
            posgeom.classical_mds(np.zeros((2, 2)))  # the first read caches the stand-in
    assert posgeom.classical_mds is geometry.classical_mds


def test_a_right_formula_never_fails_on_rounding(capsys):
    """sqrt(2 - 2 BC), the chapter's own formula, is exact only to about sqrt(eps): it must pass."""
    def through_bc(P):
        S = np.sqrt(P)
        return np.sqrt(np.maximum(2.0 - 2.0 * S @ S.T, 0.0))

    assert oe.check_hellinger_matrix(through_bc), capsys.readouterr().out


def test_a_wrong_answer_is_named_without_its_expected_value_or_sign(capsys):
    assert not oe.check_noise_floor(lambda v, N: 0.0)
    out = capsys.readouterr().out
    assert "error of order 1e+00 relative" in out and "too small" not in out and "e-0" not in out.split("order")[0]
    assert not oe.check_hellinger_matrix(lambda P: np.ones((len(P), len(P))))
    assert "the diagonal of the distance matrix should be 0" in capsys.readouterr().out
    assert not oe.check_double_centring(lambda D: np.triu(np.ones_like(D)))
    assert "B should be symmetric" in capsys.readouterr().out


def test_a_hint_only_when_its_condition_holds(capsys):
    def right(offsets, d, base):
        w = base ** (-2.0 * np.arange(d // 2) / d)
        return np.cos(np.outer(offsets, w)).mean(axis=1)

    assert not wp.check_sinusoid_kernel(lambda o, d, b: 2 * right(o, d, b))
    assert "K(0) must be 1" in capsys.readouterr().out
    assert not wp.check_sinusoid_kernel(lambda o, d, b: right(o, d, b) ** 3)  # K(0) = 1, wrong elsewhere
    assert "K(0) must be 1" not in capsys.readouterr().out


def test_the_grader_learns_which_functions_a_check_switches_off():
    names = core.functions_switched_off(oe.check_double_centring)
    assert "posgeom.geometry.mds:double_centered_gram" in names or any(n.endswith(":double_centered_gram") for n in names)
    assert any(n.endswith(":classical_mds") for n in names)
    assert any(n.endswith(":hellinger_matrix") for n in core.functions_switched_off(oe.check_hellinger_matrix))


def test_no_hint_names_a_mistake_the_answer_does_not_make(capsys):
    assert not oe.check_double_centring(lambda D: np.zeros_like(D) + 1.0)
    out = capsys.readouterr().out
    assert "Hint" not in out, out
    assert not pe.check_alibi_logits(lambda n, m: np.zeros((n, n)) - 1.0)
    assert "penalty" not in capsys.readouterr().out
