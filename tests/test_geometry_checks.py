"""Self-checks for exercises: right answers pass, typical mistakes fail with a useful message."""

from __future__ import annotations

import numpy as np

from posgeom.geometry import (
    check_classical_mds,
    check_hellinger,
    check_hellinger_matrix,
    check_stress,
    classical_mds,
    euclidean_distances,
)


def test_check_hellinger(capsys):
    assert check_hellinger(lambda p, q: np.linalg.norm(np.sqrt(p) - np.sqrt(q)))
    assert "PASS check_hellinger" in capsys.readouterr().out
    assert not check_hellinger(lambda p, q: np.linalg.norm(np.sqrt(p) - np.sqrt(q)) / np.sqrt(2))
    assert "d / sqrt(2)" in capsys.readouterr().out
    assert not check_hellinger(lambda p, q: np.sum((np.sqrt(p) - np.sqrt(q)) ** 2))
    assert "d^2" in capsys.readouterr().out
    assert not check_hellinger(lambda p, q: np.sqrt(2 - 2 * np.sum(np.sqrt(p * q))) + 1e-3)
    assert "FAIL" in capsys.readouterr().out

    def crashes(p, q):
        raise RuntimeError("oops")

    assert not check_hellinger(crashes)
    assert "raised RuntimeError: oops" in capsys.readouterr().out


def test_check_hellinger_matrix(capsys):
    def good(mu):
        S = np.sqrt(mu)
        return np.sqrt(((S[:, None, :] - S[None, :, :]) ** 2).sum(-1))

    assert check_hellinger_matrix(good)
    # the naive Gram formula with clipping is fine at 1e-6 but not at the default 1e-9
    naive = lambda mu: np.sqrt(np.maximum(2 - 2 * np.sqrt(mu) @ np.sqrt(mu).T, 0))  # noqa: E731
    assert check_hellinger_matrix(naive, atol=1e-6)
    assert not check_hellinger_matrix(lambda mu: good(mu)[:-1])
    assert "expected shape" in capsys.readouterr().out


def test_check_classical_mds(capsys):
    assert check_classical_mds(lambda D, k: classical_mds(D, k).embedding @ np.diag([-1] + [1] * (k - 1)))

    def no_centring(D, k):
        w, U = np.linalg.eigh(-0.5 * D**2)
        idx = np.argsort(w)[::-1][:k]
        return U[:, idx] * np.sqrt(np.abs(w[idx]))

    assert not check_classical_mds(no_centring)
    assert "double centring" in capsys.readouterr().out


def test_check_stress(capsys):
    def paper(D, Dh):
        iu = np.triu_indices(D.shape[0], 1)
        return np.sum((Dh[iu] - D[iu]) ** 2) / np.sum(D[iu] ** 2)

    assert check_stress(paper)
    assert check_stress(lambda D, Dh: np.sqrt(paper(D, Dh)), "smacof_r")
    assert not check_stress(lambda D, Dh: np.sqrt(paper(D, Dh)))
    assert "'smacof_r' normalisation" in capsys.readouterr().out
    # summing over all i != j gives the same ratio: accepted
    assert check_stress(lambda D, Dh: np.sum((Dh - D) ** 2) / np.sum(D**2))
    assert euclidean_distances(np.eye(2)).shape == (2, 2)
