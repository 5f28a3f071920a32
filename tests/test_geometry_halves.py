"""Cross-half estimates (resolvable_distances, resolvable_draws), dealt by group or sequence by sequence, against a
naive loop."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.geometry import (
    draw_statistics, fold_members, resolvable_distances, resolvable_draws, resolvable_summary,
)


def _corpus(n=300, length=(3, 9), vocab=15, seed=0):
    rng = np.random.default_rng(seed)
    # the token at position i is drawn from {i, ..., i + 5}: distributions that move with the position
    return [np.minimum(np.arange(L) + rng.integers(0, 6, size=L), vocab - 1)
            for L in rng.integers(*length, size=n)]


def _naive_R2(seqs, half_a, half_b, positions, vocab):
    """R^2 by loops: root-marginals of each half per position, then the symmetrised cross products."""
    def roots(half):
        out = []
        for i in positions:
            c = np.zeros(vocab)
            for s in half:
                if len(seqs[s]) > i:
                    c[seqs[s][i]] += 1
            out.append(np.sqrt(c / c.sum()))
        return out

    a, b = roots(half_a), roots(half_b)
    k = len(positions)
    G = np.array([[0.5 * (a[i] @ b[j] + a[j] @ b[i]) for j in range(k)] for i in range(k)])
    R2 = np.array([[2 - 2 * G[i, j] / np.sqrt(G[i, i] * G[j, j]) for j in range(k)] for i in range(k)])
    np.fill_diagonal(R2, 0.0)
    return R2


def test_grouped_halves_match_a_naive_loop_and_keep_each_group_on_one_side():
    seqs = _corpus()
    groups = np.arange(len(seqs)) // 4  # four rows per group, like the phrases of one sentence
    positions = np.arange(3)
    res = resolvable_distances(seqs, 9, 15, positions, seed=3, groups=groups)
    half_a, half_b = fold_members(len(seqs), 2, seed=3, groups=groups)
    assert not set(groups[half_a]) & set(groups[half_b])
    np.testing.assert_allclose(res["R2"], _naive_R2(seqs, half_a, half_b, positions, 15), atol=1e-12)
    iu = np.triu_indices(3, 1)
    assert res["negative_fraction"] == pytest.approx(np.mean(res["R2"][iu] < 0))


def test_an_unresolvable_position_is_refused_in_words():
    seqs = _corpus(n=40, length=(3, 4))
    with pytest.raises(ValueError, match="not reached in both halves"):
        resolvable_distances(seqs, 9, 15, np.arange(6), seed=0, groups=np.arange(40))


def test_grouped_draws_have_the_shape_of_the_ungrouped_ones():
    seqs = _corpus(n=400)
    pos = np.arange(3)
    line = np.abs(np.subtract.outer(pos, pos)).astype(float)
    enc = {"sinusoidal": line, "rope": np.sqrt(line), "alibi": 2 * line}
    groups = np.arange(400) // 5
    grouped, seeds, skipped = resolvable_draws(seqs, 9, 15, pos, enc, 3, groups=groups)
    plain = resolvable_draws(seqs, 9, 15, pos, enc, 3)[0]
    assert grouped.shape == plain.shape and seeds == [0, 1, 2] and skipped == []
    # each row is the grouped estimate of its seed, and differs from the one dealing sequence by sequence
    for row, s in zip(grouped, seeds):
        res = resolvable_distances(seqs, 9, 15, pos, seed=s, groups=groups)
        assert row.tolist() == draw_statistics(resolvable_summary(res), res["R"], enc)
    assert not np.array_equal(grouped, plain)


def test_without_groups_the_halves_are_the_two_halves_of_one_permutation():
    """The split of the stored results: perm[:N // 2] and perm[N // 2:], also for an odd N (where dealing two
    folds by array_split would give the first half one sequence more)."""
    seqs = _corpus(n=301)
    perm = np.random.default_rng(5).permutation(301)
    res = resolvable_distances(seqs, 9, 15, np.arange(3), seed=5)
    np.testing.assert_allclose(res["R2"], _naive_R2(seqs, perm[:150], perm[150:], np.arange(3), 15), atol=1e-12)
    with pytest.raises(ValueError, match="at least 4 sequences"):
        resolvable_distances(seqs[:3], 9, 15)
