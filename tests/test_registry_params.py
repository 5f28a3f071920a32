"""Typed reads of a stored result's manifest: :attr:`Result.model`, :attr:`Result.runtime_s` and
:meth:`Result.params_as`, with the raw manifest as the oracle.

A block of parameters is stored with ``as_params`` (every field of its settings dataclass); read back with
``params_as`` it is the same dataclass, field for field what the manifest holds; a missing block or field, or a
value of another type, is a one-line error naming the entry, the path and what is stored there.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

import pytest

from posgeom.experiments.extrapolation import Finetune, OrderExtrapolation
from posgeom.experiments.lowrank_powered import PoweredDesign
from posgeom.experiments.lowrank_training import TrainModel
from posgeom.experiments.paired_design import PairedDesign
from posgeom.experiments.separation_converged import ConvergedDesign
from posgeom.experiments.settings import ModelShape, OrderTask, TableTraining, as_params
from posgeom.registry import Registry, Result

DESIGN = PoweredDesign(steps=7, paired=PairedDesign(effect=0.02, pilot_seeds=(200, 201), max_seeds=9),
                       stalled_loss=0.5)
ORDER = OrderExtrapolation(L=6, finetune=Finetune(steps=3, lr=0.01))


@dataclass(frozen=True)
class TopLevel:
    """The top-level parameters of :func:`saved` that a page reads (``seed`` and ``order`` left unread)."""

    design: PoweredDesign
    model: ModelShape
    data_seed: int


def as_json(settings) -> dict:
    """A settings dataclass as its manifest stores it (tuples as lists): the oracle's form."""
    return json.loads(json.dumps(asdict(settings)))


@pytest.fixture
def saved(tmp_path) -> Result:
    """A result saved and read back through the registry, with the blocks a run_* stores and a key beside them."""
    params = {"design": as_params(DESIGN), "model": as_params(ModelShape(d_model=8)), "data_seed": 3,
              "order": {**as_params(ORDER), "heuristics": ["reuse_last"]}}
    return Registry(tmp_path).save("planted.design", {"n": 1}, params=params, scale="quick", seed=0, device="cpu",
                                   model="1-layer encoder of width 8", runtime_s=2.5)


def test_model_and_runtime_are_the_manifest_values(saved):
    assert saved.model == saved.manifest["model"] == "1-layer encoder of width 8"
    assert saved.runtime_s == saved.manifest["runtime_s"] == 2.5


def test_model_and_runtime_are_none_where_the_manifest_records_none():
    result = Result("x", "quick", "k", {}, {}, {"model": None})
    assert result.model is None and result.runtime_s is None


def test_a_runtime_stored_as_a_whole_number_reads_as_seconds():
    runtime = Result("x", "quick", "k", {}, {}, {"runtime_s": 3}).runtime_s
    assert runtime == 3.0 and isinstance(runtime, float)


@pytest.mark.parametrize("name, stored", [("model", 3), ("runtime_s", "slow"), ("runtime_s", True)])
def test_a_manifest_field_of_another_type_is_an_error_naming_it(name, stored):
    result = Result("planted.design", "quick", "k", {}, {}, {name: stored})
    with pytest.raises(ValueError, match=rf"planted.design \(quick/k\): the manifest's {name}"):
        getattr(result, name)


def test_a_block_reads_into_the_dataclass_it_was_stored_from(saved):
    design = saved.params_as(PoweredDesign, "design")
    assert design == DESIGN
    assert as_json(design) == saved.manifest["params"]["design"]
    model = saved.params_as(ModelShape, "model")
    assert as_json(model) == saved.manifest["params"]["model"] and model.d_model == 8


def test_a_nested_path_reads_the_block_inside_a_block(saved):
    raw = saved.manifest["params"]
    paired = saved.params_as(PairedDesign, "design.paired")
    assert paired == DESIGN.paired and as_json(paired) == raw["design"]["paired"]
    assert paired.pilot_seeds == (200, 201)  # a stored list, as the dataclass declares it
    finetune = saved.params_as(Finetune, "order.finetune")
    assert finetune.steps == raw["order"]["finetune"]["steps"] == 3
    assert finetune.lr == raw["order"]["finetune"]["lr"] == 0.01


def test_the_whole_parameters_read_without_a_path(saved):
    top = saved.params_as(TopLevel)
    assert top.design == DESIGN and top.data_seed == saved.manifest["params"]["data_seed"] == 3
    assert as_json(top.model) == saved.manifest["params"]["model"]


def test_stored_keys_the_dataclass_does_not_declare_are_left_unread(saved):
    # the order block holds "heuristics" beside the OrderExtrapolation's fields (as build would refuse to store)
    assert "heuristics" in saved.manifest["params"]["order"]
    assert saved.params_as(OrderExtrapolation, "order") == ORDER


def test_has_params_says_whether_a_path_is_stored(saved):
    assert saved.has_params("design") and saved.has_params("design.paired") and saved.has_params("order.finetune.lr")
    assert not saved.has_params("design.effect") and not saved.has_params("tails")


def _one_line_error(error, *parts: str) -> None:
    text = str(error.value)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, (part, text)


def test_a_missing_block_is_an_error_naming_the_entry_the_path_and_what_is_there(saved):
    with pytest.raises(KeyError) as error:
        saved.params_as(PairedDesign, "design.pairs")
    _one_line_error(error, "planted.design", f"quick/{saved.key}", "'design.pairs'", "encodings, paired, stalled_loss")
    with pytest.raises(KeyError) as error:
        saved.params_as(OrderTask, "tails")
    _one_line_error(error, "planted.design", "'tails'", "data_seed, design, model, order")


def test_a_field_the_block_lacks_is_an_error_even_with_a_default(saved):
    # every field of a ModelShape has a default; the design block stores none of them
    with pytest.raises(KeyError) as error:
        saved.params_as(ModelShape, "design")
    _one_line_error(error, "planted.design", "params.design", "ModelShape.d_model", "stalled_loss, steps")
    # an OrderExtrapolation block has no n_positions: read as an OrderTask, it lacks one
    with pytest.raises(KeyError) as error:
        saved.params_as(OrderTask, "order")
    _one_line_error(error, "params.order", "OrderTask.n_positions", "L, encodings")


def test_a_field_a_nested_block_lacks_is_an_error(tmp_path):
    from types import SimpleNamespace

    from posgeom.registry.typed import as_record

    design = as_params(DESIGN)
    del design["paired"]["max_seeds"]  # a field of PairedDesign with a default, missing from the stored block
    result = Registry(tmp_path).save("planted.design", {}, params={"design": design}, scale="quick", seed=0,
                                     device="cpu")
    # a record's reader puts the default in; the parameters of a run must say what ran, so params_as refuses
    assert as_record(SimpleNamespace(values=design, arrays={}), PoweredDesign).paired.max_seeds == 100
    with pytest.raises(KeyError) as error:
        result.params_as(PoweredDesign, "design")
    _one_line_error(error, "planted.design", "PoweredDesign.paired", "PairedDesign.max_seeds", "effect, level")


def test_a_value_of_another_type_is_an_error_naming_the_field():
    result = Result("planted.design", "quick", "k", {}, {}, {"params": {"design": {**as_params(DESIGN),
                                                                                   "steps": "many"}}})
    with pytest.raises(ValueError, match=r"planted.design \(quick/k\) params.design: PoweredDesign.steps"):
        result.params_as(PoweredDesign, "design")


def test_a_value_that_is_not_a_block_or_a_type_that_is_not_a_dataclass_is_refused(saved):
    with pytest.raises(TypeError, match=r"params.order.finetune.steps is stored as int 3, not as the mapping"):
        saved.params_as(Finetune, "order.finetune.steps")
    with pytest.raises(TypeError, match="into a dataclass"):
        saved.params_as(dict, "design")


def test_a_manifest_without_parameters_is_an_error():
    result = Result("planted.design", "quick", "k", {}, {}, {"model": "m"})
    with pytest.raises(KeyError, match="stores no parameters"):
        result.params_as(PairedDesign, "design")


# ------------------------------------------------------------------------ the committed results the chapters read

#: (experiment, path, settings dataclass): every block a chapter reads of a committed powered design.
CHAPTER_READS = [
    ("learned_tables_fail.tails_powered", "tails", OrderTask),
    ("learned_tables_fail.heuristics_powered", "order.finetune", Finetune),
    ("learned_tables_fail.heuristics_powered", "order", OrderExtrapolation),
    ("learned_tables.dropout_powered", "order", OrderTask),
    ("learned_tables.dropout_powered", "train", TableTraining),
    ("minimal_parametrisation.lowrank_powered", "design", PoweredDesign),
    ("minimal_parametrisation.lowrank_powered", "model", TrainModel),
    ("separation.converged", "design", ConvergedDesign),
]


def _committed(repo_root, experiment) -> Result:
    (result,) = Registry(repo_root / "results").entries(experiment, scale="paper")
    return result


@pytest.mark.parametrize("experiment, at, settings_type", CHAPTER_READS)
def test_each_block_a_chapter_reads_is_the_committed_manifest_field_for_field(repo_root, experiment, at,
                                                                              settings_type):
    result = _committed(repo_root, experiment)
    raw = result.manifest["params"]
    for part in at.split("."):
        raw = raw[part]
    read = as_json(result.params_as(settings_type, at))
    assert read == {f.name: raw[f.name] for f in fields(settings_type)}


@pytest.mark.parametrize("experiment", ["learned_tables_fail.tails_powered", "learned_tables.init_powered",
                                        "learned_tables.dropout_powered", "learned_tables_fail.heuristics_powered",
                                        "minimal_parametrisation.lowrank_powered", "separation.converged"])
def test_a_powered_design_reads_its_paired_design_wrapped_or_not(repo_root, experiment):
    from posgeom.chapters.powered import design_summary

    result = _committed(repo_root, experiment)
    design = result.manifest["params"]["design"]
    design = design.get("paired", design)  # C2's and C5's designs wrap theirs
    assert design_summary(result).max_seeds == design["max_seeds"]
    assert result.model == result.manifest["model"] and result.runtime_s == result.manifest["runtime_s"]
