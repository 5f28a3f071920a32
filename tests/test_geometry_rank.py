"""The noise-aware rank (posgeom.geometry.rank): cross-fitted eigenvalues against naive loops, and the
planted-rank validation on synthetic corpora; the resolvable (cross-half) distances."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom
from posgeom import geometry as geo
from posgeom.corpora import synthetic as syn


def naive_root_rows(seqs, n, v):
    c = np.zeros((n, v))
    for x in seqs:
        for i, t in enumerate(x[:n]):
            c[i, t] += 1
    return np.sqrt(c / c.sum(1, keepdims=True))


def test_cross_fitted_gram_and_eigenvalues_match_naive_loops():
    rng = np.random.default_rng(1)
    seqs = [rng.integers(0, 20, size=int(rng.integers(4, 7))) for _ in range(80)]
    a, b = geo.positional_counts(seqs[:40], 4, 20), geo.positional_counts(seqs[40:], 4, 20)
    G, positions = geo.cross_fitted_gram(a, b)
    ra, rb = naive_root_rows(seqs[:40], 4, 20), naive_root_rows(seqs[40:], 4, 20)
    naive = np.array([[(ra[i] @ rb[j] + ra[j] @ rb[i]) / 2 for j in range(4)] for i in range(4)])
    assert positions.tolist() == [0, 1, 2, 3] and np.allclose(G, naive, atol=1e-12)
    # eigenvalues on the complement of 1 = the eigenvalues of J G J without its structural zero
    J = np.eye(4) - 0.25
    full = np.sort(np.linalg.eigvalsh(J @ naive @ J))[::-1]
    w = geo.cross_fitted_eigenvalues(G)
    drop = np.argmin(np.abs(full))  # the eigenvector 1 of J G J has eigenvalue 0
    assert w.shape == (3,) and np.allclose(w, np.delete(full, drop), atol=1e-12)
    with pytest.raises(ValueError, match="symmetric"):
        geo.cross_fitted_eigenvalues(np.triu(np.ones((3, 3))))
    with pytest.raises(ValueError, match="same n_positions"):
        geo.cross_fitted_gram(a, geo.positional_counts(seqs[40:], 5, 20))


def test_the_noise_free_gram_is_estimated_without_bias():
    # the mean cross-fitted spectrum of a noisy sample is close to the population's; the plug-in B is not
    c = syn.planted_rank(4_000, 16, 100, rank=3, strength=0.3, seed=2)
    res = geo.noise_aware_rank(c.sequences(), 16, 100, n_resamples=20)
    pop = geo.classical_mds(geo.hellinger_matrix(c.population), k=1).eigenvalues
    plug_in = geo.classical_mds(geo.hellinger_matrix(c.counts()), k=1).eigenvalues
    # the population has no mass beyond rank 3; the plug-in spectrum has the noise's
    assert abs(res.mean_eigenvalues[3:].sum()) < 0.2 * abs(plug_in[3:].sum())
    assert np.allclose(res.mean_eigenvalues[:3], pop[:3], rtol=0.25)


@pytest.mark.parametrize("rank", [1, 3, 10])
@pytest.mark.parametrize("strength", [0.5, 0.1])
def test_planted_rank_recovered_where_the_signal_exceeds_the_noise_undetermined_where_not(rank, strength):
    """Population rank exactly `rank`; at each size the smallest planted eigenvalue is compared with the
    estimator's threshold tau: above it the rank is recovered, below tau / 2 (the null's conservative
    margin) the answer is "undetermined", and in between it never claims more than the planted rank."""
    outcomes = set()
    for size in (200, 1_000, 5_000, 20_000):
        c = syn.planted_rank(size, 32, 200, rank=rank, strength=strength, seed=0)
        pop = geo.classical_mds(geo.hellinger_matrix(c.population), k=1).eigenvalues
        assert geo.effective_rank(pop, "tol", tol=1e-9) == rank
        res = geo.noise_aware_rank(c.sequences(), 32, 200, n_resamples=50)
        signal = pop[rank - 1]
        case = (rank, strength, size, str(res), res.threshold, signal)
        if signal > res.threshold:
            assert res.determined and res.rank == rank and str(res) == f"{rank} (90% interval {rank})", case
            outcomes.add("recovered")
        elif signal < res.threshold / 2:
            assert not res.determined and str(res).startswith("undetermined"), case
            outcomes.add("undetermined")
        else:
            assert res.interval[1] <= rank and (res.rank is None or res.rank <= rank), case
        assert res.interval[1] <= rank, case  # never more directions than there are
    assert "recovered" in outcomes  # the largest corpus always resolves the planted rank
    if strength == 0.1 and rank > 1:
        assert "undetermined" in outcomes  # and a weak signal in a small corpus is flagged


def test_no_structure_gives_rank_zero_and_drift_its_population_rank():
    stationary = syn.stationary(20_000, 24, 200, seed=3)
    assert geo.noise_aware_rank(stationary.sequences(), 24, 200, n_resamples=30).rank == 0
    drift = syn.drift(20_000, 24, 200, anchors=4, seed=3)
    assert geo.noise_aware_rank(drift.sequences(), 24, 200, n_resamples=30).rank == 3


def test_noise_aware_rank_is_seeded_and_validates_its_input():
    c = syn.planted_rank(400, 12, 50, rank=2, strength=0.5, seed=0)
    one = geo.noise_aware_rank(c.sequences(), 12, 50, n_resamples=5, seed=4)
    two = geo.noise_aware_rank(c.sequences(), 12, 50, n_resamples=5, seed=4)
    assert np.array_equal(one.eigenvalues, two.eigenvalues) and one.threshold == two.threshold
    with pytest.raises(ValueError, match="multiple of 4"):
        geo.noise_aware_rank(c.sequences(), 12, 50, n_folds=6)
    with pytest.raises(ValueError, match="too few"):
        geo.noise_aware_rank(c.sequences()[:10], 12, 50)
    with pytest.raises(ValueError, match="level"):
        geo.noise_aware_rank(c.sequences(), 12, 50, level=1.5)
    with pytest.raises(ValueError, match="not reached in every part"):
        geo.noise_aware_rank(c.sequences(), 14, 50, positions=[0, 13])
    with pytest.raises(ValueError, match="n_resamples"):
        geo.noise_aware_rank(c.sequences(), 12, 50, n_resamples=1)


def test_resolvable_distances_match_a_naive_cross_half_loop():
    rng = np.random.default_rng(8)
    seqs = [rng.integers(0, 30, size=int(rng.integers(3, 7))) for _ in range(60)]
    res = geo.resolvable_distances(seqs, 5, 30, seed=3)
    perm = np.random.default_rng(3).permutation(60)
    halves = [[seqs[i] for i in perm[:30]], [seqs[i] for i in perm[30:]]]
    root = []
    for h in halves:
        c = np.zeros((5, 30))
        for x in h:
            for i, t in enumerate(x[:5]):
                c[i, t] += 1
        root.append(np.sqrt(c / c.sum(1, keepdims=True)))
    G = np.array([[(root[0][i] @ root[1][j] + root[0][j] @ root[1][i]) / 2 for j in range(5)] for i in range(5)])
    R2 = np.array([[0.0 if i == j else 2 - 2 * G[i, j] / np.sqrt(G[i, i] * G[j, j]) for j in range(5)]
                   for i in range(5)])
    assert np.allclose(res["G"], G, atol=1e-12)
    assert np.allclose(res["R2"], R2, atol=1e-12)


def test_resolvable_distances_keep_the_rows_of_the_given_positions():
    # positions 5 and 6 are reached by one sequence only, so one half misses them: the kept positions stop at 4
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, 30, size=int(rng.integers(3, 6))) for _ in range(80)] + [rng.integers(0, 30, size=7)]
    full = geo.resolvable_distances(seqs, 7, 30, seed=2)
    assert np.array_equal(full["positions"], np.arange(5))
    keep = np.array([4, 0, 3])
    rows = np.searchsorted(full["positions"], keep)
    some = geo.resolvable_distances(seqs, 7, 30, keep, seed=2)
    assert np.array_equal(some["positions"], keep)
    for key in ("G", "R2", "R"):
        assert np.allclose(some[key], full[key][np.ix_(rows, rows)], rtol=0, atol=1e-12)


def test_resolvable_distances_remove_sampling_noise():
    rng = np.random.default_rng(9)
    p = rng.dirichlet(np.full(300, 0.2))
    seqs = [rng.choice(300, size=6, p=p) for _ in range(400)]  # every position has the same distribution
    D = posgeom.hellinger_matrix(posgeom.positional_counts(seqs, 6, 300))
    res = geo.resolvable_distances(seqs, 6, 300, seed=0)
    iu = np.triu_indices(6, 1)
    assert np.mean(D[iu] ** 2) > 0.1                              # the raw geometry is mostly noise
    assert abs(np.mean(res["R2"][iu])) < 0.2 * np.mean(D[iu] ** 2)  # the resolvable one is not
    # two blocks of positions with disjoint supports: sqrt(2) across, about 0 within
    seqs2 = [np.concatenate([rng.choice(300, 3, p=p), 300 + rng.choice(300, 3, p=p)]) for _ in range(400)]
    R = geo.resolvable_distances(seqs2, 6, 600, seed=0)["R"]
    D2 = posgeom.hellinger_matrix(posgeom.positional_counts(seqs2, 6, 600))
    assert np.allclose(R[:3, 3:], np.sqrt(2))
    within = np.triu(np.ones((3, 3), dtype=bool), 1)
    for block in (np.s_[:3, :3], np.s_[3:, 3:]):
        assert (R[block][within] ** 2).mean() < 0.5 * (D2[block][within] ** 2).mean()
    with pytest.raises(ValueError, match="at least 4"):
        geo.resolvable_distances(seqs[:3], 6, 300)
