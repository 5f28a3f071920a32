"""Issue #46, item 1 (part A): the chapters "Minimal parametrisation", "Sinusoids as MDS", "The geometry of a
corpus" and "Real corpora" read their stored results as typed records, never a stored value by string key.

The counts and line ceilings read the modules' source; the reads are checked against the committed paper-scale
results (the arrays a record holds are the stored ones) and, where paper scale stores nothing, a planted result.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from posgeom.geometry.intervals import SeedInterval
from posgeom.registry import Registry, Result
from posgeom.registry.typed import as_record

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "posgeom" / "chapters"

#: The modules of this part of the issue.
MODULES = ("minimal_parametrisation", "sinusoids_as_mds", "real_corpora", "corpus_geometry")

#: A stored value read by string key: ``result.values["x"]``, ``.values.get("x")``, ``.arrays["x"]``,
#: ``.arrays.get("x")`` (the issue's count).
STRING_KEY_READ = re.compile(r"\.(values|arrays)(\[|\.get\()")

#: No chapter module is longer than this (issue #46: a module a reader can hold; split a coherent part off beyond it).
MAX_LINES = 600

GAP = SeedInterval(mean=0.1, std=0.05, low=0.05, high=0.15, n=5, level=0.95, t=2.776)


@pytest.mark.parametrize("module", MODULES)
def test_the_module_reads_no_stored_value_by_string_key(module):
    source = (CHAPTERS / f"{module}.py").read_text()
    found = [f"{module}.py:{n}: {line.strip()}" for n, line in enumerate(source.splitlines(), 1)
             if STRING_KEY_READ.search(line)]
    assert not found, "stored values read by string key (read the result once with as_record):\n" + "\n".join(found)


def test_every_module_is_within_the_line_ceiling():
    lines = {module: len((CHAPTERS / f"{module}.py").read_text().splitlines()) for module in MODULES}
    over = {module: n for module, n in lines.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def _committed(experiment: str) -> Result:
    entries = Registry(ROOT / "results").entries(experiment, scale="paper")
    if not entries:
        pytest.skip(f"no committed paper result of {experiment}")
    return entries[0]


def _planted(values, arrays=None) -> Result:
    """A result as the registry gives it back: values through JSON, arrays as numpy arrays."""
    return Result("planted", "quick", "k", json.loads(json.dumps(values)), arrays or {}, {})


def _matches(record, stored_value) -> None:
    """Every field of ``record`` equals the stored value it was read from (recursively; an interval through its
    dictionary)."""
    if dataclasses.is_dataclass(record) and not hasattr(record, "as_dict"):
        for f in dataclasses.fields(record):
            _matches(getattr(record, f.name), stored_value[f.metadata.get("stored", f.name)])
    elif hasattr(record, "as_dict"):
        assert record.as_dict() == {k: stored_value[k] for k in record.as_dict()}
    elif isinstance(record, (tuple, dict)):
        assert len(record) == len(stored_value)
        pairs = zip(record, stored_value) if isinstance(record, tuple) else ((record[k], stored_value[k]) for k in record)
        for x, y in pairs:
            _matches(x, y)
    else:
        assert record == stored_value and (record is None) == (stored_value is None), (record, stored_value)


@pytest.mark.parametrize("corpus", ["sst2", "markov (population)"])
def test_one_corpus_of_a_committed_result_reads_into_its_view(corpus):
    from posgeom.experiments.corpus_geometry import KindGeometry
    from posgeom.experiments.records.sinusoids_as_mds import FourierCorpus, ShiftIntervals

    fourier = _committed("sinusoids_as_mds.fourier_match")
    _matches(as_record(fourier, FourierCorpus, at=corpus), fourier.values[corpus])
    if corpus == "sst2":
        shift, kinds = _committed("sinusoids_as_mds.shift_intervals"), _committed("corpus_geometry.hellinger_kinds")
        _matches(as_record(shift, ShiftIntervals, at=corpus), shift.values[corpus])
        _matches(as_record(kinds, KindGeometry, at="sst2.geodesic"), kinds.values["sst2"]["geodesic"])


def test_the_spectra_and_rank_readings_read_the_stored_readings():
    from posgeom.chapters import minimal_parametrisation as mpr
    from posgeom.experiments.minimal_parametrisation import SST2Ranks, StoredRanks
    from posgeom.experiments.corpus_geometry import SYNTHETIC_FAMILIES

    ranks = _committed("minimal_parametrisation.effective_rank")
    sst2 = as_record(ranks, SST2Ranks, at="sst2")
    assert sst2.n_kept == tuple(ranks.values["sst2"]["n_kept"]) and sst2.n_sequences == ranks.values["sst2"]["n_sequences"]
    spectra = mpr.spectra(ranks)
    assert [s.corpus for s in spectra] == [*SYNTHETIC_FAMILIES, "SST-2"]
    for s, prefix in zip(spectra, [*SYNTHETIC_FAMILIES, "sst2_model_1"]):
        np.testing.assert_array_equal(s.eigenvalues, ranks.arrays[f"{prefix}__cross_fitted"].mean(axis=0))
    drift = spectra[SYNTHETIC_FAMILIES.index("drift")]
    assert (drift.threshold, drift.rank_text) == (ranks.values["drift"]["cross_fitted_threshold"][-1],
                                                  ranks.values["drift"]["cross_fitted"][-1])
    readings = ranks.as_(StoredRanks)  # what the page's rank table and prose read
    for family in SYNTHETIC_FAMILIES:
        _matches(getattr(readings, family), ranks.values[family])
    _matches(readings.sst2, ranks.values["sst2"])


def test_the_stress_curves_are_the_stored_curves():
    from posgeom.chapters import minimal_parametrisation as mpr
    from posgeom.experiments.corpus_geometry import SYNTHETIC_FAMILIES

    svr = _committed("minimal_parametrisation.stress_vs_rank")
    curves = mpr.stress_curves(svr)
    assert list(curves) == [*SYNTHETIC_FAMILIES, "sst2"]
    for corpus, (curve, encodings) in curves.items():
        np.testing.assert_array_equal(curve, svr.arrays[f"{corpus}__scale_free"])
        assert encodings == svr.values[corpus]["encodings"]  # both stresses of each encoding


def test_a_shift_statistic_not_stored_is_a_clear_error():
    from posgeom.chapters import sinusoids_as_mds as smr

    shift = _committed("sinusoids_as_mds.shift_intervals")
    assert smr.shift_interval(shift, "sst2", "fourier_match").estimate == shift.values["sst2"]["fourier_match"]["estimate"]
    with pytest.raises(ValueError, match="no shift statistic 'n_used'"):
        smr.shift_interval(shift, "sst2", "n_used")


def test_the_training_comparison_reads_every_stored_summary():
    """Paper scale stores no training comparison (it waits for a GPU): a planted one, as the run stores it."""
    from posgeom.chapters import minimal_parametrisation as mpr
    from posgeom.experiments.lowrank_training import LowrankTrainingRecord

    acc = {"accuracy_mean": 0.9, "accuracy_std": 0.04, "loss_mean": 0.2, "loss_std": 0.07, "n_seeds": 5,
           "position_params": 1024}
    run = {"task": "synthetic", "encoding": "learned", "seed": 0, "test_accuracy": 0.9, "test_loss": 0.3,
           "final_train_loss": 0.1, "position_params": 1024, "runtime_s": 2.0}
    values = {"summary": {"synthetic": {"learned": acc, "lowrank_r1": {**acc, "position_params": 64}}},
              "gaps": {"synthetic": {"learned": {"lowrank_r1": GAP.as_dict()}}}, "level": 0.95, "device": "cpu",
              "runs": [{**run, "stress_scale_free": 0.2}, {**run, "seed": 1, "stress_scale_free": None}]}
    result = _planted(values)
    assert [(r.encoding, r.seed, r.stress_scale_free) for r in mpr.trained_runs(result)] == [("learned", 0, 0.2)]
    t = result.as_(LowrankTrainingRecord)  # what the page's tables and prose read
    _matches(t.summary, values["summary"])
    assert mpr.learned_gap(t) == GAP and t.level == 0.95


def test_the_subset_draws_read_both_spreads():
    """Paper scale draws no subsets: a planted ``run_subset_draws``, read with both its spreads (the page's table of
    the draws, with the cross-half splits skipped, is checked by the chapter's page snapshot at quick)."""
    from posgeom.experiments.real_corpora import SubsetDrawsRecord, corpus_options, corpus_params

    spread = {"shift_r2": {"mean": 0.5, "sd": 0.1, "min": 0.4, "max": 0.6}}
    subsets = _planted({"options": corpus_params(corpus_options("quick", "imdb")), "seeds": [0, 1], "spread": spread,
                        "spread_D": {"share": {**spread["shift_r2"], "mean": 0.7}}},
                       {"table": np.zeros((2, 1)), "table_D": np.zeros((2, 5))}).as_(SubsetDrawsRecord)
    assert subsets.seeds == (0, 1) and subsets.spread["shift_r2"].sd == 0.1
    assert subsets.spread_D["share"].mean == 0.7 and subsets.spread_D["share"].max == 0.6
