"""The compute functions behind the chapters *Real corpora* and *Monotonicity*, tested without the registry:
spreads over draws, percentile bootstrap intervals, fold bootstraps, resolvable summaries, violation statistics.
"""

from __future__ import annotations

import numpy as np
import pytest

import posgeom
from posgeom import encodings as enc
from posgeom import geometry as geo
from posgeom.encodings.identifiers import Encoding
from posgeom.experiments import monotonicity as mo
from posgeom.experiments import real_corpora as rc
from posgeom.experiments.settings import find, records
from posgeom.experiments.table_rows import TableRow


def _random_D(rng, n, k=3):
    return posgeom.euclidean_distances(rng.standard_normal((n, k)))


def test_spread_is_mean_sd_min_max_per_column():
    table = np.array([[1.0, 2.0, 0.1, 3, 4, 5], [3.0, 2.0, 0.3, 3, 4, 7]])
    s = geo.spread_columns(table)
    assert s["shift_r2"] == {"mean": 2.0, "sd": pytest.approx(np.sqrt(2.0)), "min": 1.0, "max": 3.0}
    assert s["share"]["sd"] == 0.0 and s["alibi"]["max"] == 7
    with pytest.raises(ValueError, match="one column per statistic"):
        geo.spread_columns(np.ones((2, 3)))


def test_resolvable_summary_of_a_known_geometry():
    rng = np.random.default_rng(2)
    R = _random_D(rng, 7, 1)  # points on a line: one direction
    s = geo.resolvable_summary({"R": R, "negative_fraction": 0.25})
    assert s["share"] == pytest.approx(1.0) and s["negative_fraction"] == 0.25
    assert s["negative_mass"] == pytest.approx(0.0, abs=1e-12)
    assert s["eigenvalues"].shape == (7,) and s["profile"].shape == (7,)


def test_draw_statistics_columns():
    rng = np.random.default_rng(3)
    R = _random_D(rng, 6)
    encs = enc.encoding_set(np.arange(6), names=("sinusoidal", "rope", "alibi"), d_model=16, n_heads=2)
    summ = geo.resolvable_summary({"R": R, "negative_fraction": 0.0})
    row = geo.draw_statistics(summ, R, encs)
    assert len(row) == len(geo.DRAW_STATISTICS)
    assert row[3] == pytest.approx(posgeom.stress(R, encs["sinusoidal"], "scale_free", as_distances=True))


def test_stress_rows_are_records_found_by_field():
    rows = records(rc.StressRow, [
        {"row": "alibi", "options": "mean slope", "paper": 0.9, "scale_free": 0.3},
        {"row": "random", "options": "5 seeds", "paper": 1.0, "scale_free": 0.5, "paper_sd": 0.1,
         "scale_free_sd": 0.01},
        {"row": "mds", "rank": 2, "options": "top 2", "paper": 0.2, "scale_free": 0.1},
    ])
    assert find(rows, row=Encoding.ALIBI).scale_free == 0.3 and find(rows, row=Encoding.ALIBI).paper_sd is None
    assert find(rows, row=Encoding.RANDOM).paper_sd == 0.1
    assert find(rows, row=Encoding.RANDOM).label == "random N(0, sigma^2)"
    assert find(rows, row=Encoding.MDS, rank=2).label == "MDS (rank 2)"
    with pytest.raises(KeyError, match="no record"):
        find(rows, row="xpos")


def test_violation_statistics_match_monotonicity_of():
    rng = np.random.default_rng(4)
    D = _random_D(rng, 9, 4)
    encs = enc.encoding_set(np.arange(9), names=("sinusoidal", "rope", "alibi"), d_model=16, n_heads=2)
    encs[TableRow.LEARNED_PRETRAINED] = _random_D(rng, 9)
    v = mo.violation_statistics(D, encs, 2)
    assert v.shape == (len(mo.INTERVAL_ENCODINGS),)
    assert v[0] == pytest.approx(posgeom.geometry.monotonicity_of(D, encs["sinusoidal"])["violation_rate"])
    mds = posgeom.classical_mds(D, k=2)
    assert v[-1] == pytest.approx(posgeom.geometry.monotonicity_of(D, posgeom.euclidean_distances(mds.embedding))["violation_rate"])
    # rank 4 of 4-dimensional points: exact, no violation
    assert mo.violation_statistics(D, encs, 4)[-1] == pytest.approx(0.0, abs=1e-12)


def test_resolvable_draws_skip_splits_that_cannot_resolve_a_position():
    rng = np.random.default_rng(5)
    seqs = [rng.integers(0, 5, size=4) for _ in range(60)]
    encs = enc.encoding_set(np.arange(4), names=("sinusoidal", "rope", "alibi"), d_model=8, n_heads=2)
    table, seeds, skipped = geo.resolvable_draws(seqs, 4, 5, np.arange(4), encs, 3, first_seed=2)
    assert table.shape == (3, len(geo.DRAW_STATISTICS)) and seeds == [2, 3, 4] and skipped == []
    # position 4 is reached by one sequence only: no split can put it in both halves
    lonely = seqs + [np.arange(5)]
    # reached by three sequences (tokens 0, 0, 1): only the splits that part the two 0s resolve it
    three = seqs + [np.array([0, 1, 2, 3, t]) for t in (0, 0, 1)]
    table, seeds, skipped = geo.resolvable_draws(three, 5, 5, np.arange(5), encs5(), 2)
    assert len(seeds) == 2 and sorted(seeds + skipped) == list(range(max(seeds) + 1))
    with pytest.raises(ValueError, match="resolve every kept position"):
        geo.resolvable_draws(lonely, 5, 5, np.arange(5), encs5(), 2)


def encs5():
    return enc.encoding_set(np.arange(5), names=("sinusoidal", "rope", "alibi"), d_model=8, n_heads=2)
