"""Experiments store records (posgeom.registry.typed.to_stored), and the registry gives them back typed.

The oracle of :func:`to_stored` is :func:`as_record`: a record stored and read back is the same record; and the
stored layout is what a hand-written dict of the same values would have stored (the layout of every committed
result stays as it was when its experiment built a dict).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from posgeom.geometry.bootstrap import Interval
from posgeom.geometry.intervals import SeedInterval, seed_interval
from posgeom.registry import Registry
from posgeom.registry.manifest import canonical, params_key
from posgeom.registry.typed import as_record, named_record_type, record_name, stored, to_stored


class Norm(enum.StrEnum):
    PAPER = "paper"
    SCALE_FREE = "scale_free"


@dataclass(frozen=True)
class Pair:
    paper: float
    scale_free: float
    curve: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class Record:
    n: int
    corpus: str = stored("options.corpus")
    special: bool = stored("options.special")
    norm: Norm = Norm.PAPER
    pairs: dict[str, Pair] = field(default_factory=dict)
    rows: tuple[Pair, ...] = ()
    D: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    note: str | None = stored("note", omit_none=True, default=None)


def planted() -> Record:
    return Record(
        n=3, corpus="sst2", special=False, norm=Norm.SCALE_FREE,
        pairs={"rope": Pair(0.5, 0.25, np.array([1.0, 2.0]))},
        rows=(Pair(1.0, 2.0), Pair(3.0, 4.0)), D=np.arange(4.0).reshape(2, 2),
    )


def test_to_stored_writes_the_layout_a_hand_written_dict_had():
    values, arrays = to_stored(planted())
    assert values == {
        "n": 3, "options": {"corpus": "sst2", "special": False}, "norm": "scale_free",
        "pairs": {"rope": {"paper": 0.5, "scale_free": 0.25, "curve": [1.0, 2.0]}},
        "rows": [{"paper": 1.0, "scale_free": 2.0, "curve": []}, {"paper": 3.0, "scale_free": 4.0, "curve": []}],
    }
    assert list(arrays) == ["D"] and np.array_equal(arrays["D"], np.arange(4.0).reshape(2, 2))
    assert "note" not in values  # omit_none: absent, so as_record gives the default back
    assert json.dumps(canonical(values), sort_keys=True)  # JSON-ready


def test_a_record_stored_and_read_back_is_the_same_record(tmp_path):
    registry = Registry(tmp_path)
    result = registry.run("demo", planted, params={"a": 1}, scale="quick", seed=0, device="cpu")
    back = result.record
    assert type(back) is Record and result.manifest["record"] == record_name(Record)
    assert (back.n, back.corpus, back.special, back.norm, back.note) == (3, "sst2", False, Norm.SCALE_FREE, None)
    assert back.rows[1].scale_free == 4.0 and np.array_equal(back.pairs["rope"].curve, [1.0, 2.0])
    assert np.array_equal(back.D, planted().D)
    again = result.as_(Record)
    assert [r.scale_free for r in again.rows] == [2.0, 4.0] and np.array_equal(again.D, back.D)


def test_values_stored_without_a_record_say_how_to_read_them(tmp_path):
    result = Registry(tmp_path).run("plain", lambda: {"x": 1.0}, params={}, scale="quick", seed=0, device="cpu")
    assert "record" not in result.manifest
    with pytest.raises(ValueError, match="stored as values, not as a record"):
        _ = result.record


def test_a_record_type_that_no_longer_exists_is_a_clear_error():
    assert named_record_type(record_name(Record)) is Record
    with pytest.raises(ValueError, match="no longer exists"):
        named_record_type("posgeom.registry:NoSuchRecord")
    with pytest.raises(ValueError, match="not a dataclass"):
        named_record_type("posgeom.registry:Registry")


def test_to_stored_refuses_what_is_not_a_record_and_paths_that_collide():
    with pytest.raises(TypeError, match="dataclass instance"):
        to_stored({"x": 1})

    @dataclass
    class Clash:
        a: int = stored("x.y")
        b: int = stored("x.y")

    with pytest.raises(ValueError, match="two fields are stored at 'x.y'"):
        to_stored(Clash(1, 2))


@dataclass(frozen=True)
class Gaps:
    seeds: SeedInterval
    boot: Interval


def test_intervals_are_stored_as_their_own_as_dict():
    gap, boot = seed_interval([1.0, 2.0, 3.0, 4.0, 5.0]), Interval(1.0, 0.5, 1.5)
    values, _ = to_stored(Gaps(gap, boot))
    assert values == {"seeds": gap.as_dict(), "boot": boot.as_dict()}


def test_an_identifier_is_recorded_as_its_text():
    assert canonical({"norm": Norm.PAPER}) == {"norm": "paper"} and type(canonical(Norm.PAPER)) is str
    assert params_key({"norm": Norm.PAPER}) == params_key({"norm": "paper"})


def test_as_record_of_to_stored_round_trips_nested_paths():
    values, arrays = to_stored(planted())

    class Stored:
        pass

    holder = Stored()
    holder.values, holder.arrays = values, arrays
    back = as_record(holder, Record)
    rope = back.pairs["rope"]
    assert (rope.paper, rope.scale_free, rope.curve.tolist()) == (0.5, 0.25, [1.0, 2.0])
    assert len(back.rows) == 2 and all(
        (a.paper, a.scale_free) == (b.paper, b.scale_free) for a, b in zip(back.rows, planted().rows))


@dataclass(frozen=True)
class Curves:
    steps: np.ndarray
    curves: dict[str, np.ndarray] = stored("{}__curve")
    tables: dict[str, np.ndarray] = stored("table/{}", default_factory=dict)


def test_a_family_of_arrays_is_stored_one_array_per_key_and_read_back(tmp_path):
    record = Curves(np.arange(3), {"rope": np.ones((2, 3)), "none+causal": np.zeros((2, 3))},
                    {"cos": np.eye(2)})
    values, arrays = to_stored(record)
    assert values == {} and sorted(arrays) == ["none+causal__curve", "rope__curve", "steps", "table/cos"]
    back = Registry(tmp_path).run("curves", lambda: record, params={}, scale="quick", seed=0, device="cpu").record
    assert sorted(back.curves) == ["none+causal", "rope"] and np.array_equal(back.curves["rope"], np.ones((2, 3)))
    assert list(back.tables) == ["cos"] and np.array_equal(back.steps, np.arange(3))


@dataclass(frozen=True)
class Corpora:
    corpora: list[str]
    pairs: dict[str, Pair] = stored("{}")
    curves: dict[str, np.ndarray] = stored("{}__curve")


def test_a_family_of_values_holds_the_stored_keys_no_other_field_reads(tmp_path):
    record = Corpora(["sst2", "markov v>n"], {"sst2": Pair(0.5, 0.25), "markov v>n": Pair(1.0, 2.0)},
                     {"sst2": np.ones(2)})
    values, arrays = to_stored(record)
    assert values == {"corpora": ["sst2", "markov v>n"], "sst2": {"paper": 0.5, "scale_free": 0.25, "curve": []},
                      "markov v>n": {"paper": 1.0, "scale_free": 2.0, "curve": []}} and list(arrays) == ["sst2__curve"]
    back = Registry(tmp_path).run("corpora", lambda: record, params={}, scale="quick", seed=0, device="cpu").record
    assert back.pairs == {"sst2": Pair(0.5, 0.25, back.pairs["sst2"].curve), "markov v>n": back.pairs["markov v>n"]}
    assert back.pairs["markov v>n"].scale_free == 2.0 and back.corpora == record.corpora


def test_build_converts_computed_mappings_as_a_stored_result_is_read():
    from posgeom.registry.typed import build

    gap, boot = seed_interval([1.0, 2.0, 3.0, 4.0, 5.0]), Interval(0.5, 0.4, 0.6)
    assert build(Gaps, {"seeds": gap.as_dict(), "boot": boot.as_dict()}) == Gaps(gap, boot)
    corpora = build(Corpora, {"corpora": ["a"], "a": {"paper": 1, "scale_free": 2}}, {"a__curve": [1.0]})
    assert corpora.pairs["a"].paper == 1.0 and type(corpora.pairs["a"].paper) is float
    assert corpora.curves["a"].tolist() == [1.0]
    with pytest.raises(KeyError, match="Corpora.corpora stores no 'corpora'"):
        build(Corpora, {})
    with pytest.raises(TypeError, match="Gaps has no field for 'extra'; add one or leave the value out"):
        build(Gaps, {"seeds": gap.as_dict(), "boot": boot.as_dict(), "extra": 1})  # nothing computed is dropped
