"""Oracle tests of the geometry behind the rows of the real-corpora and monotonicity tables: ALiBi's line at
many slopes, the fitted MDS/SMACOF rows, the mean and sd over random draws, the bootstrap over sequences with
differences, and one subset draw's statistics of D."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom
from posgeom import encodings as enc
from posgeom import geometry as geo
from posgeom.encodings.identifiers import Encoding
from posgeom.experiments.table_rows import TableRow


def _target(n=9, seed=0):
    rng = np.random.default_rng(seed)
    return geo.euclidean_distances(rng.standard_normal((n, 3)))


def test_line_stresses_match_alibi_heads_and_the_parabola():
    D, positions = _target(), np.array([0, 1, 2, 4, 5, 7, 8, 10, 11])
    slopes = enc.alibi_slopes(8)
    got = geo.line_stresses(D, positions, slopes)
    sub = np.ix_(positions, positions)
    for h in range(8):
        A = enc.alibi_distances(12, 8, head=h)[sub]
        assert got["paper"][h] == geo.stress(D, A, "paper", as_distances=True)
        assert got["scale_free"][h] == geo.stress(D, A, "scale_free", as_distances=True)
    par = geo.alibi_parabola(D, positions)
    assert np.allclose(got["paper"], geo.alibi_paper_stress(slopes, par))


def test_alibi_choices_rows_and_the_slopes_of_a_target():
    D, positions = _target(), np.arange(9)
    heads = {4: enc.alibi_slopes(4), 8: enc.alibi_slopes(8)}
    choices = geo.head_slope_choices(heads)
    assert [c[:2] for c in choices[:2]] == [(4, "mean"), (4, "head 0")] and len(choices) == 2 + 4 + 8
    assert choices[0][2] == pytest.approx(heads[4].mean())
    par = geo.alibi_parabola(D, positions)
    target = par["minimum"] + 0.1
    parabola, rows = geo.alibi_choices(D, positions, heads, target)
    assert [(r["heads"], r["slope_choice"], r["slope"]) for r in rows] == choices
    for r in rows:
        assert r["paper"] == pytest.approx(geo.stress(D, r["slope"] * np.abs(np.subtract.outer(positions, positions)),
                                                      "paper", as_distances=True))
        assert r["scale_free"] == par["minimum"]
    assert geo.alibi_paper_stress([parabola["m_minus"], parabola["m_plus"]], par) == pytest.approx([target, target])
    unreachable, _ = geo.alibi_choices(D, positions, heads, par["minimum"] - 0.01)
    assert np.isnan(unreachable["m_minus"]) and np.isnan(unreachable["m_plus"])


def test_fitted_embeddings_are_mds_and_smacof_rows():
    D = _target(8)
    fits = geo.fitted_embeddings(D, (1, 2, 8), (1,), full_rank=True, max_iter=50, eps=1e-9)
    assert [(f.row, f.rank) for f in fits] == [("mds", None), ("mds", 1), ("mds", 2), ("smacof", 1)]
    # the identifiers of the table rows they fill (posgeom.experiments.table_rows)
    assert (geo.FittedMethod.MDS, geo.FittedMethod.SMACOF) == (Encoding.MDS, TableRow.SMACOF)
    assert np.allclose(fits[0].distances, D, atol=1e-10)  # Euclidean D: full-rank MDS is exact
    assert np.allclose(fits[2].distances, geo.euclidean_distances(geo.classical_mds(D, k=2).embedding))
    sm = geo.smacof(D, 1, max_iter=50, eps=1e-9)
    assert fits[3].n_iter == sm.n_iter and fits[3].options.startswith(f"from MDS, {sm.n_iter} iterations")
    assert fits[3].options.endswith("(iteration cap)") == (not sm.converged)
    assert np.allclose(fits[3].distances, geo.euclidean_distances(sm.embedding))
    assert geo.fitted_embeddings(D) == []


def test_mean_sd_over_draws():
    draws = [{"a": 1.0, "b": 4.0}, {"a": 2.0, "b": 0.0}, {"a": 6.0, "b": 2.0}]
    row = geo.mean_sd(draws)
    assert list(row) == ["a", "b", "a_sd", "b_sd"]
    assert row["a"] == pytest.approx(3.0) and row["a_sd"] == pytest.approx(np.std([1, 2, 6], ddof=1))
    assert list(geo.mean_sd(draws, ("b",))) == ["b", "b_sd"]
    with pytest.raises(ValueError, match="two draws"):
        geo.mean_sd(draws[:1])


def test_sequence_intervals_equal_the_steps_they_gather():
    rng = np.random.default_rng(1)
    sequences = [rng.integers(0, 30, size=rng.integers(4, 9)) for _ in range(200)]
    counts = geo.positional_counts(sequences, 6, 30)
    marg = geo.positional_marginals(counts)
    D = geo.hellinger_matrix(marg)
    S = enc.sinusoidal_distances(6, 16)[np.ix_(marg.positions, marg.positions)]
    A = enc.alibi_distances(6, 4)[np.ix_(marg.positions, marg.positions)]

    def statistics(D):
        return np.array([geo.stress(D, S, "scale_free", as_distances=True),
                         geo.stress(D, A, "scale_free", as_distances=True)])

    values, reps = geo.sequence_intervals(D, sequences, 6, 30, marg.positions, statistics, ["sin", "alibi"],
                                          differences={"sin-alibi": ("sin", "alibi")}, n_boot=20, n_folds=12,
                                          seed=3, bounds=(0.0, 1.0))
    folds = geo.fold_counts(sequences, 6, 30, n_folds=12, seed=3)
    intervals, ref = geo.bootstrap_intervals(D, folds, marg.positions, statistics, n_boot=20, seed=3, bounds=(0.0, 1.0))
    assert np.array_equal(reps, ref) and values["n_used"] == len(ref)
    assert values["statistics"]["sin"] == intervals[0].as_dict()
    assert values["differences"]["sin-alibi"] == geo.difference_interval(intervals, ref, 0, 1, 0.95,
                                                                         bounds=(-1.0, 1.0)).as_dict()
    # tuple keys nest, a key that is not a tuple is one level
    nested = geo.nested_intervals({("sin", "scale_free"): values["statistics"]["sin"],
                                   "alibi": values["statistics"]["alibi"]})
    assert nested == {"sin": {"scale_free": intervals[0]}, "alibi": intervals[1]}


def test_corpus_draw_statistics_columns():
    D = _target(7)
    encs = {e: enc.encoding_set(np.arange(7), names=(e,), d_model=16, n_heads=4)[e] for e in ("sinusoidal", "rope", "alibi")}
    row = geo.corpus_draw_statistics(D, encs)
    assert len(row) == len(geo.CORPUS_DRAW_STATISTICS)
    assert row[0] == pytest.approx(geo.toeplitz_projection(D)[2])
    w = geo.gram_eigenvalues(D**2)
    assert row[1] == pytest.approx(w[0] / np.maximum(w, 0).sum())
    assert row[4] == pytest.approx(posgeom.stress(D, encs["alibi"], "scale_free", as_distances=True))
