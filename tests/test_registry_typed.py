"""Typed reads of stored results (posgeom.registry.typed.as_record): planted records of every shape the
chapters read, the experiments' own row records, and the committed paper results against the chapters'
former dict-by-key adapters."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from posgeom.geometry.bootstrap import Interval
from posgeom.geometry.intervals import SeedInterval
from posgeom.registry import Registry, Result
from posgeom.registry.typed import as_record, stored

ROOT = Path(__file__).resolve().parents[1]


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    name: str
    steps: int
    gap: SeedInterval
    band: Interval | None = None


@dataclass(frozen=True)
class Planted:
    corpus: str = stored("options.corpus")
    count: int
    share: float
    colour: Colour
    inner: Inner
    rows: tuple[Inner, ...]
    by_name: dict[str, float]
    dropped: tuple
    pair: tuple[int, float]
    maybe: float | None
    table: np.ndarray
    curve: np.ndarray
    note: str = "none"


def stored_result(values, arrays=None, experiment="planted"):
    """A result as the registry gives it back: values through JSON, arrays as numpy arrays."""
    return Result(experiment, "quick", "k", json.loads(json.dumps(values)), arrays or {}, {})


GAP = SeedInterval(mean=0.1, std=0.05, low=0.05, high=0.15, n=5, level=0.95, t=2.776)
PLANTED = {
    "options": {"corpus": "sst2", "split": "train"}, "count": 3.0, "share": 1, "colour": "blue",
    "inner": {"name": "a", "steps": 10, "gap": GAP.as_dict(), "extra": "ignored"},
    "rows": [{"name": "b", "steps": 2, "gap": GAP.as_dict(), "band": Interval(0.5, 0.4, 0.6).as_dict()}],
    "by_name": {"x": 1, "y": 2.5}, "dropped": [0, 1], "pair": [3, 4], "maybe": None, "curve": [1.0, 2.0], "unused": [1, 2, 3],
}


def test_a_stored_result_is_read_into_its_record_with_every_type():
    record = as_record(stored_result(PLANTED, {"table": np.eye(2)}), Planted)
    assert record.corpus == "sst2" and record.count == 3 and type(record.count) is int
    assert record.share == 1.0 and type(record.share) is float and record.colour is Colour.BLUE
    assert record.inner == Inner("a", 10, GAP) and record.rows == (Inner("b", 2, GAP, Interval(0.5, 0.4, 0.6)),)
    assert record.by_name == {"x": 1.0, "y": 2.5} and record.dropped == (0, 1) and record.maybe is None
    assert record.pair == (3, 4.0) and type(record.pair[0]) is int and type(record.pair[1]) is float
    np.testing.assert_array_equal(record.table, np.eye(2))
    assert isinstance(record.curve, np.ndarray) and record.curve.tolist() == [1.0, 2.0]  # from values
    assert record.note == "none"  # not stored: the default
    sub = as_record(stored_result(PLANTED, {"table": np.eye(2)}), Inner, at="inner")
    assert sub == Inner("a", 10, GAP)
    # a field the result does not store (its key, the manifest's model) is given as it is
    assert as_record(stored_result(PLANTED, {"table": np.eye(2)}), Inner, at="inner", steps=7).steps == 7
    # a path reaches into a stored list by position
    @dataclass(frozen=True)
    class Second:
        second: int = stored("dropped.1")

    @dataclass(frozen=True)
    class Third:
        third: int = stored("dropped.2")

    assert as_record(stored_result(PLANTED), Second).second == 1
    with pytest.raises(KeyError, match=r"stores no 'dropped.2' \(at '2'"):
        as_record(stored_result(PLANTED), Third)
    # a record among several stored side by side: its values at one key, its arrays under one prefix
    two = stored_result({"a": PLANTED, "b": PLANTED}, {"a/table": np.eye(2), "b/table": np.zeros(1), "table": 1})
    assert as_record(two, Planted, at="b", arrays_at="b").table.tolist() == [0.0]
    # or named "<prefix>__<name>"; a prefix is a whole name: "b" does not read "b_k3__table"
    assert as_record(stored_result({"b": PLANTED}, {"b__table": np.ones(1)}), Planted, at="b", arrays_at="b").table == 1
    with pytest.raises(KeyError, match="table"):
        as_record(stored_result({"b": PLANTED}, {"b_k3__table": np.ones(1)}), Planted, at="b", arrays_at="b")
    with pytest.raises(TypeError, match="Inner has no field seed"):
        as_record(stored_result(PLANTED), Inner, at="inner", seed=1)


@pytest.mark.parametrize("change, message", [
    (lambda v: v.pop("share"), "stores no 'share' .*the stored keys are: by_name, colour"),
    (lambda v: v["options"].pop("corpus"), r"Planted.corpus stores no 'options.corpus' \(at 'corpus' the stored keys"),
    (lambda v: v.update(count=2.5), "Planted.count is stored as 2.5, not a whole number"),
    (lambda v: v.update(share=None), "Planted.share is stored as None, but the record does not allow None"),
    (lambda v: v.update(colour="green"), "'green' is not a valid Colour"),
    (lambda v: v["rows"][0].update(steps="2"), r"Planted.rows\[0\]: Inner.steps is stored as '2', not a whole"),
    (lambda v: v.update(rows={"a": 1}), "Planted.rows is stored as a dict, not a sequence"),
])
def test_a_stored_value_that_does_not_fit_the_record_is_a_clear_error(change, message):
    values = json.loads(json.dumps(PLANTED))
    change(values)
    with pytest.raises((KeyError, ValueError, TypeError), match=message):
        as_record(stored_result(values, {"table": np.eye(2)}), Planted)


def test_only_dataclasses_and_results_are_read():
    with pytest.raises(TypeError, match="builds a dataclass; <class 'dict'> is not one"):
        as_record(stored_result(PLANTED), dict)
    with pytest.raises(TypeError, match="reads a stored Result"):
        as_record({"count": 1}, Planted)
    with pytest.raises(ValueError, match="a dotted name"):
        stored("options..corpus")


# the experiments' own row records, stored as the experiments store them (rows of plain data)


def _row_types():
    from posgeom.experiments.corpus_geometry import SensitivityRow
    from posgeom.experiments.monotonicity import MonotonicityRow
    from posgeom.experiments.real_corpora_stress import StressRow

    return SensitivityRow, MonotonicityRow, StressRow


def _planted_row(cls, k: int):
    """A row of ``cls`` with every field set from its annotation (the optional ones left out on odd rows)."""
    out = {}
    for f in dataclasses.fields(cls):
        kind = str(f.type)
        if f.default is not dataclasses.MISSING and k % 2:
            continue
        out[f.name] = (f"{f.name}-{k}" if kind.startswith("str") else k + 1 if kind.startswith("int")
                       else {"sinusoidal": 0.5 + k} if kind.startswith("dict") else 0.25 * (k + 1))
    return out


@pytest.mark.parametrize("index", range(3), ids=["SensitivityRow", "MonotonicityRow", "StressRow"])
def test_every_row_record_a_chapter_reads_comes_back_as_the_experiment_wrote_it(index):
    from posgeom.experiments.settings import records

    cls = _row_types()[index]
    rows = [_planted_row(cls, k) for k in range(3)]

    Table = dataclasses.make_dataclass("Table", [("rows", tuple[cls, ...])], frozen=True)
    typed = as_record(stored_result({"rows": rows}), Table).rows
    assert list(typed) == records(cls, rows) and all(type(r) is cls for r in typed)


def _committed(experiment):
    entries = Registry(ROOT / "results").entries(experiment, scale="paper")
    if not entries:
        pytest.skip(f"no committed paper result of {experiment}")
    return entries[0]


@pytest.mark.parametrize("corpus", ["sst2", "imdb"])
def test_the_facts_the_real_corpora_page_glues_are_the_stored_values(corpus):
    from posgeom.chapters.real_corpora import geometry_facts
    from posgeom.experiments.real_corpora import CorpusGeometryRecord

    result = _committed(f"real_corpora_geometry_{corpus}")
    facts, v, o = geometry_facts(result.as_(CorpusGeometryRecord)), result.values, result.values["options"]
    assert (facts["corpus"], facts["split"], facts["special"]) == (o["corpus"], o["split"], o["special"])
    assert type(facts["corpus"]) is str  # glued as the page shows it, not as the identifier's repr
    assert facts["dropped"] == tuple(v["dropped"]) and facts["n_sequences"] == v["n_sequences"]
    assert facts["shift_r2"] == v["shift_r2"] and facts["rank_mass_90"] == v["rank_mass_90"]


def test_the_committed_sensitivity_rows_read_as_the_experiments_reader_does():
    from posgeom.experiments.corpus_geometry import SensitivityRow
    from posgeom.experiments.settings import records

    Sensitivity = dataclasses.make_dataclass("Sensitivity", [("variants", tuple[SensitivityRow, ...], field(default=()))])
    result = _committed("corpus_geometry.sensitivity")
    assert list(as_record(result, Sensitivity).variants) == records(SensitivityRow, result.values["variants"])


def _matches(record, stored_value, arrays=None) -> None:
    """Every field of ``record`` equals the stored value (or array) it was read from (recursively)."""
    if dataclasses.is_dataclass(record) and not hasattr(type(record), "from_dict"):
        for f in dataclasses.fields(record):
            path, value = f.metadata.get("stored", f.name), getattr(record, f.name)
            if isinstance(value, np.ndarray) and arrays is not None and path in arrays:
                np.testing.assert_array_equal(value, arrays[path])
                continue
            if "{}" in path and arrays is not None:  # an array family: one stored array per key
                assert value, (f.name, "no stored array of the family")
                for key, array in value.items():
                    np.testing.assert_array_equal(array, arrays[path.replace("{}", key)])
                continue
            here = stored_value
            for part in path.split("."):  # a dotted path, as as_record follows it
                if isinstance(here, list) and part.isdigit() and int(part) < len(here):
                    here = here[int(part)]  # "omega_range.0": an item of a stored list
                    continue
                if not isinstance(here, dict) or part not in here:
                    here = dataclasses.MISSING
                    break
                here = here[part]
            if here is dataclasses.MISSING:  # not stored: only a field with a default may be missing
                assert f.default is not dataclasses.MISSING and value == f.default, (f.name, value)
                continue
            _matches(value, here)
    elif hasattr(record, "as_dict"):
        assert record == type(record).from_dict(stored_value)
    elif isinstance(record, np.ndarray):  # an array field read from a list among the values
        np.testing.assert_array_equal(record, np.asarray(stored_value))
    elif isinstance(record, tuple):
        assert len(record) == len(stored_value)
        for x, y in zip(record, stored_value):
            _matches(x, y)
    elif isinstance(record, dict):
        assert record.keys() == stored_value.keys()
        for k in record:
            _matches(record[k], stored_value[k])
    else:
        assert record == stored_value and (record is None) == (stored_value is None), (record, stored_value)


#: The views of posgeom.experiments.records, each with a committed paper result.
RECORD_ENTRIES = [("StoredFourier", "sinusoids_as_mds.fourier_match")]  # the corpora's list, beside FourierMatch

#: Views of results that wait for a GPU at paper scale (nothing committed): read from a planted result instead.
GPU_ONLY = set()


def test_a_planted_order_task_reads_into_its_record():
    """The order task trains (a GPU at paper scale); tests/test_experiments_chapters1.py reads a computed one."""
    from posgeom.experiments.necessity import StoredOrderTask
    from posgeom.models.tasks import OrderTaskRow

    row = {"position": "none", "causal": True, "accuracy": [1.0, 0.98], "mean": 0.99, "std": 0.014, "min": 0.98,
           "max": 1.0}
    values = {"models": {"none+causal": row}, "chance": 0.5, "n_test": 64, "seq_len": 9}
    task = as_record(stored_result(values, {"steps": np.array([0, 50, 100]), "none+causal__curve": np.ones((2, 3))}),
                     StoredOrderTask)
    assert task.models == {"none+causal": OrderTaskRow(**row)} and task.steps.tolist() == [0, 50, 100]
    assert (task.chance, task.n_test, task.seq_len) == (0.5, 64, 9)
    with pytest.raises(KeyError, match="seq_len"):
        as_record(stored_result({k: v for k, v in values.items() if k != "seq_len"}), StoredOrderTask)

# issue #46, item 1 (the learned-tables group): the extrapolation study trains, and waits for a GPU at paper scale.
GPU_ONLY |= {"StoredExtrapolation"}

# run_ntk stores nothing at paper scale: its view (NTKRun) is checked on planted results


def _records() -> dict:
    """Every record of :mod:`posgeom.experiments.records`, by name (a name is one record's, package-wide)."""
    import pkgutil
    from importlib import import_module

    import posgeom.experiments.records as package

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = import_module(f"{package.__name__}.{info.name}")
        for name in module.__all__:
            assert name not in found, f"{name} is defined twice in posgeom.experiments.records"
            found[name] = getattr(module, name)
    return found


#: Records of one part of a committed result (``as_record(result, R, at=..., arrays_at=...)``), read here; an
#: experiment's own record named ``"module:Record"``.
PARTS = [("posgeom.experiments.zoo:ZooEncoding", "zoo.distances", "encodings.alibi", None),
         ("posgeom.experiments.corpus_geometry:KindGeometry", "corpus_geometry.hellinger_kinds", "sst2.geodesic", None),
         ("posgeom.experiments.optimal_encoding:StressIntervals", "optimal_encoding.comparison_intervals", "sst2", None),
         ("posgeom.experiments.optimal_encoding:SmacofGain", "optimal_encoding.smacof_gain", "sst2", None),
         ("posgeom.experiments.optimal_encoding:ExactEmbedding", "optimal_encoding.exact_embedding", "sst2", None)]

#: Records checked against committed results by a test of their own (another shape than one ``as_record``).
CHECKED_ELSEWHERE = {
    # tests/test_chapters_typed_reads_a.py, each for one corpus of its result
    "FourierCorpus", "ShiftIntervals",
}

#: Nothing committed at paper scale: trained runs (a GPU there) and IMDB's subset draws (quick only); each is read
#: from planted results in tests/test_chapter_reports.py, test_chapters_typed_reads_a.py or _b.py.
GPU_ONLY |= {"NTKRun"}


def _nested(names: set, records: dict) -> set:
    """``names`` and every record a field of theirs holds or they derive from, recursively (read through them)."""
    found, frontier = set(names), list(names)
    while frontier:
        cls = records[frontier.pop()]
        if not dataclasses.is_dataclass(cls):  # an alias of a stored shape (extrapolation's Scores)
            continue
        used = {m for f in dataclasses.fields(cls) for m in re.findall(r"\w+", str(f.type))}
        used |= {base.__name__ for base in cls.__mro__[1:]}
        for name in (used & set(records)) - found:
            found.add(name)
            frontier.append(name)
    return found


def test_every_record_is_held_to_a_committed_result_or_accounted_for():
    """Each record of posgeom.experiments.records is read from a committed paper result (an entry above, a part, a
    test of its own, or inside one of those), or has nothing committed at paper scale; no entry names no record."""
    records = _records()
    named = {n for n, _ in RECORD_ENTRIES} | {n for n, *_ in PARTS if ":" not in n} | CHECKED_ELSEWHERE | GPU_ONLY
    assert named - set(records) == set(), "entries here that name no record"
    assert set(records) - _nested(named, records) == set(), "records held to no committed result: add an entry"


@pytest.mark.parametrize("name, experiment, at, arrays_at", PARTS, ids=[p[0] for p in PARTS])
def test_one_part_of_a_committed_result_reads_into_its_record(name, experiment, at, arrays_at):
    from posgeom.registry.typed import named_record_type

    result = _committed(experiment)
    record_type = named_record_type(name) if ":" in name else _records()[name]
    record = as_record(result, record_type, at=at, arrays_at=arrays_at)
    values = result.values
    for part in at.split("."):
        values = values[part]
    arrays = {k.split("__", 1)[1]: a for k, a in result.arrays.items() if k.startswith(f"{arrays_at}__")} \
        if arrays_at else result.arrays
    _matches(record, values, arrays)


def test_a_lowrank_training_reads_into_its_record():
    from posgeom.chapters.minimal_parametrisation import learned_gap
    from posgeom.experiments.lowrank_training import LowrankTrainingRecord, TrainedTable

    acc = {"accuracy_mean": 0.9, "accuracy_std": 0.04, "loss_mean": 0.2, "loss_std": 0.07, "n_seeds": 5,
           "position_params": 1024}
    values = {"summary": {"synthetic": {"learned": acc, "lowrank_r1": {**acc, "position_params": 64}}},
              "gaps": {"synthetic": {"learned": {"lowrank_r1": GAP.as_dict()}}}, "level": 0.95, "device": "cpu",
              "runs": [{"task": "synthetic", "encoding": "learned", "seed": 0, "test_accuracy": 0.9, "test_loss": 0.3,
                        "stress_scale_free": None, "final_train_loss": 0.1, "position_params": 1024, "runtime_s": 2.0}]}
    t = as_record(stored_result(values), LowrankTrainingRecord)
    assert learned_gap(t) == GAP and t.summary["synthetic"][TrainedTable.LOWRANK_R1].position_params == 64
    assert all(type(k) is TrainedTable for k in t.summary["synthetic"]) and t.runs[0].encoding is TrainedTable.LEARNED
    assert t.runs[0].stress_scale_free is None and t.level == 0.95


@pytest.mark.parametrize("name, experiment", RECORD_ENTRIES, ids=[e for _, e in RECORD_ENTRIES])
def test_a_committed_result_reads_into_the_chapters_view_of_it(name, experiment):
    result = _committed(experiment)
    _matches(as_record(result, _records()[name]), result.values, result.arrays)


def test_a_monotonicity_table_reads_into_its_record_and_the_chapter_finds_its_rows():
    from posgeom.chapters.monotonicity import order_row
    from posgeom.experiments.monotonicity import MonotonicityRow, MonotonicityTableRecord

    rows = [_planted_row(MonotonicityRow, k) for k in range(2)]
    values = {"model": "m", "closest_rank": 18, "closest_violation": 0.21, "corpus": "imdb", "n_kept": 512,
              "rows": rows}
    t = as_record(stored_result(values, {"mds_ranks": np.array([1, 2]), "mds_violation": np.array([0.3, 0.2]),
                                         "mds_spearman": np.array([0.5, 0.6]), "random_violation": np.ones(3)}),
                  MonotonicityTableRecord)
    assert t.closest_rank == 18 and order_row(t, "row-1") == MonotonicityRow(**rows[1])
    assert t.mds_violation.tolist() == [0.3, 0.2] and t.random_violation.size == 3 and t.mds_ranks.tolist() == [1, 2]


# issue #46, item 1: every stored experiment is its record. The powered designs are read from paper results at every
# scale (posgeom.experiments.paired_design.read_or_run), so a quick run never stores them: the committed results are
# where their layouts are held.
_EXPERIMENT_ENTRIES = [r for r in Registry(ROOT / "results").entries(scale="paper")
                       if r.experiment not in ("claims", "chapter_runs")]


def test_the_committed_experiments_are_there_to_check():
    assert len({r.experiment for r in _EXPERIMENT_ENTRIES}) >= 50, "results/paper lost committed experiments"


@pytest.mark.parametrize("result", _EXPERIMENT_ENTRIES, ids=lambda r: r.experiment)
def test_every_committed_experiment_names_its_record_and_reads_back_to_the_same_bytes(result):
    """Since the recompute of issue #46 every stored experiment is its record: ``Result.record`` gives it back and
    storing that record again writes what is committed."""
    from posgeom.registry.manifest import canonical
    from posgeom.registry.typed import to_stored

    values, arrays = to_stored(result.record)
    assert json.dumps(canonical(values), sort_keys=True) == json.dumps(canonical(result.values), sort_keys=True)
    assert sorted(arrays) == sorted(result.arrays)
    for name, array in arrays.items():
        assert array.dtype == result.arrays[name].dtype
        np.testing.assert_array_equal(array, result.arrays[name])


def test_a_mapping_keyed_by_whole_numbers_is_read_back_from_its_json_text():
    @dataclass(frozen=True)
    class ByN:
        by_n: dict[int, float]

    record = as_record(stored_result({"by_n": {5: 0.5, 64: 1.0}}), ByN)  # JSON writes the keys as "5", "64"
    assert record.by_n == {5: 0.5, 64: 1.0} and all(type(k) is int for k in record.by_n)
    with pytest.raises(ValueError, match="not a whole number"):
        as_record(stored_result({"by_n": {"five": 0.5}}), ByN)
