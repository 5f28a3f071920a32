"""One training-settings family (issue #46, item 5) and one home for Theorem 4's setups (item 2).

The first tests pin what the registry keys on: the settings of every experiment module at both scales
(:func:`posgeom.experiments.settings.as_params` of each ``CONFIGS``-like object and module-level design), and
the parameters every ``run_*`` that trains (and its neighbours) hands to :meth:`posgeom.registry.Registry.run`,
computed without training (``Registry.run`` is replaced by a recorder). The fixture
``tests/data/training_settings_params.json`` was written by this module's ``--write`` on the code before the
training-settings classes were merged, so a changed field name, default or nesting fails here. The committed
paper entries of the experiments that train on a CPU are found under the keys the code builds.

Regenerate the fixture (only on purpose): ``python tests/test_training_settings_family.py --write``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path

import pytest

from posgeom import experiments
from posgeom.config import Settings
from posgeom.experiments.settings import ByScale, as_params
from posgeom.registry import Registry
from posgeom.registry.manifest import canonical, params_key

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).with_name("data") / "training_settings_params.json"

#: Calls whose registry parameters are pinned: (module, function, keyword arguments); each at both scales.
_SEPARATION_CALLS = [dict(corpus=c, task=t, init=i, weight_decay=w)
                     for c, t, i, w in (("drift", "mlm", "normal", 0.0), ("stationary", "mlm", "normal", 0.0),
                                        ("sst2", "mlm", "normal", 0.0), ("imdb", "mlm", "normal", 0.0),
                                        ("drift", "mlm", "tied", 0.0), ("stationary", "mlm", "tied", 0.0),
                                        ("drift", "bag", "tied", 0.0), ("drift", "mlm", "normal", 15.0),
                                        ("stationary", "mlm", "normal", 20.0), ("drift", "bag", "normal", 15.0))]
CALLS = [
    ("necessity", "run_order_task", {}),
    ("necessity", "run_order_task", {"cls_token": False}),
    ("necessity", "run_order_task", {"steps": 7, "seeds": (3,)}),
    ("necessity", "run_equivariance", {}),
    *[("separation", "run_separation", kw) for kw in _SEPARATION_CALLS],
    ("separation", "run_separation", {"steps": 11, "seeds": (0, 1, 2, 3, 4)}),
    ("separation", "run_pretrained_separation", {}),
    ("separation", "run_chapter", {}),
    ("separation_converged", "run_separation_converged", {}),
    ("learned_tables", "run_init_study", {}),
    ("learned_tables", "run_init_study", {"inits": ("normal_1",), "seeds": (0, 1)}),
    ("table_dropout", "run_dropout_study", {}),
    ("learned_powered", "run_tails_powered", {}),
    ("learned_powered", "run_init_powered", {}),
    ("learned_powered", "run_dropout_powered", {}),
    ("lowrank_powered", "run_lowrank_powered", {}),
    ("lowrank_training", "run_lowrank_training", {}),
    ("lowrank_training", "run_lowrank_training", {"tasks": ("synthetic",)}),
    ("extrapolation", "run_extrapolation_order", {}),
    ("extrapolation_mlm", "run_extrapolation_mlm", {}),
    ("extrapolation_powered", "run_heuristics_powered", {}),
    ("undertrained_tails", "run_undertrained_tails", {}),
    ("real_corpora_stress", "run_scratch_table", {"corpus": "sst2"}),
    ("real_corpora_stress", "run_scratch_table", {"corpus": "imdb"}),
    ("real_corpora_stress", "run_scratch_table", {"corpus": "sst2", "max_steps": 9, "lr": 1e-3}),
    ("real_corpora", "run_scratch_tables", {}),
    ("monotonicity_ntk", "run_ntk", {"regime": "lazy"}),
    ("monotonicity_ntk", "run_ntk", {"regime": "lazy_small_init", "seed": 3}),
    ("monotonicity_ntk", "run_ntk", {"regime": "rich", "steps": 13, "rich": {"lr": 0.1}}),
]


class _Anything:
    """What a recorded registry call returns in place of a stored value: any key, any attribute, itself."""

    def __getitem__(self, key):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def get(self, key, default=None):
        return self

    def __iter__(self):
        return iter(())

    def __repr__(self):
        return "<stub>"


def _unstub(obj):
    """``obj`` with every stub (a value read from a recorded call) written as ``"<stub>"``."""
    if isinstance(obj, _Anything):
        return "<stub>"
    if isinstance(obj, dict):
        return {k: _unstub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_unstub(v) for v in obj]
    return obj


class _Stop(Exception):
    pass


def _experiment_modules():
    for info in pkgutil.iter_modules(experiments.__path__):
        if not info.name.startswith("_"):
            yield info.name, importlib.import_module(f"posgeom.experiments.{info.name}")


def settings_snapshot() -> dict:
    """``{"module.NAME": params}``: ``as_params`` of each module-level per-scale settings object (per scale)
    and of each module-level settings dataclass instance of every experiment module."""
    out = {}
    for name, module in _experiment_modules():
        for attr, value in sorted(vars(module).items()):
            where = f"{name}.{attr}"
            if isinstance(value, ByScale):
                out[where] = {scale: canonical(as_params(value[scale])) for scale in ("quick", "paper")}
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                if type(value).__module__.startswith("posgeom.experiments"):
                    out[where] = canonical(as_params(value))
    return out


def run_snapshot(tmp: Path, data_dir: Path) -> dict:
    """``{"module.function(kwargs) @ scale": [[experiment, params], ...]}``: every registry call each of
    :data:`CALLS` makes before it would compute, recorded without computing."""
    out = {}
    original = Registry.run
    calls: list = []

    def record(self, experiment, compute, *, params, scale, seed, device, model=None, force=False, same_code=True):
        calls.append([experiment, canonical(_unstub(params))])
        if len(calls) > 40:
            raise _Stop
        return type("Stub", (), {"values": _Anything(), "arrays": _Anything(), "experiment": experiment})()

    Registry.run = record
    try:
        for module, function, kwargs in CALLS:
            fn = getattr(importlib.import_module(f"posgeom.experiments.{module}"), function)
            for scale in ("quick", "paper"):
                calls.clear()
                settings = Settings(scale=scale, device="cpu", data_dir=data_dir, seed=0, results_dir=tmp)
                try:
                    fn(settings, **kwargs)
                except Exception:  # noqa: BLE001 - a stub read further than the parameters: what was recorded counts
                    pass
                key = f"{module}.{function}({json.dumps(canonical(kwargs), sort_keys=True)}) @ {scale}"
                out[key] = [list(c) for c in calls]
    finally:
        Registry.run = original
    return out


def snapshot(tmp: Path, data_dir: Path) -> dict:
    """The settings and the registry calls, the data read from ``data_dir`` (the book's copies: recorded by
    their checksums, not their path)."""
    return {"settings": settings_snapshot(), "runs": run_snapshot(tmp, data_dir)}


@pytest.fixture(scope="module")
def now(tmp_path_factory, shared_data_dir):
    return snapshot(tmp_path_factory.mktemp("registry"), shared_data_dir)


@pytest.fixture(scope="module")
def before():
    return json.loads(FIXTURE.read_text())


def test_every_pinned_call_records_parameters(before):
    """The fixture is not empty: every call of :data:`CALLS` reached the registry at both scales."""
    missing = [k for k, calls in before["runs"].items() if not calls]
    assert not missing, missing
    assert len(before["runs"]) == 2 * len(CALLS)


@pytest.mark.parametrize("kind", ["settings", "runs"])
def test_parameters_unchanged(now, before, kind):
    """Every settings object and every recorded registry call has the parameters it had before the merge."""
    old, new = before[kind], json.loads(json.dumps(now[kind]))
    assert sorted(new) == sorted(old)
    changed = [k for k in old if json.dumps(old[k], sort_keys=True) != json.dumps(new[k], sort_keys=True)]
    assert not changed, changed


def test_committed_paper_entries_are_found(now):
    """The committed paper entries of the experiments that train on a CPU are keyed by the parameters the code
    builds (a changed name or default would leave them unfound)."""
    committed = {}
    for manifest in (ROOT / "results" / "paper").glob("*/*/v-*/manifest.json"):
        m = json.loads(manifest.read_text())
        committed.setdefault(m["experiment"], set()).add(m["key"])
    built = {}
    for key, calls in now["runs"].items():
        if key.endswith("@ paper"):
            for experiment, params in calls:
                built.setdefault(experiment, set()).add(params_key(params))
    trained = ["separation.converged", "learned_tables.init_powered", "learned_tables.dropout_powered",
               "learned_tables_fail.tails_powered", "learned_tables_fail.heuristics_powered",
               "minimal_parametrisation.lowrank_powered", "necessity.equivariance"]
    for experiment in trained:
        assert committed[experiment] <= built.get(experiment, set()), experiment


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.parent.mkdir(exist_ok=True)
        data_dir = Path(os.environ.get("POSGEOM_DATA_DIR", ROOT.parent / "shared" / "data"))
        FIXTURE.write_text(json.dumps(snapshot(Path(tmp), data_dir), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")


# ---------------------------------------------------------------------------------------------
# one family, one home for the setups (these fail on the code before the merge)


def _blocks(value, path):
    """Every dataclass block inside a settings object, with its path."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield path, value
        for f in dataclasses.fields(value):
            yield from _blocks(getattr(value, f.name), f"{path}.{f.name}")


def test_every_training_block_is_a_member_of_the_one_family():
    """A settings block that trains — it has a batch size and a learning rate — is a
    :class:`~posgeom.experiments.settings.TrainingOptions`, in every experiment's settings at both scales, and
    the blocks the chapters train with are among them."""
    from posgeom.experiments.settings import TrainingOptions

    members, strays = set(), []
    for name, module in _experiment_modules():
        for attr, value in vars(module).items():
            objects = ([value["quick"], value["paper"]] if isinstance(value, ByScale) else
                       [value] if dataclasses.is_dataclass(value) and not isinstance(value, type) else [])
            for obj in objects:
                for path, block in _blocks(obj, f"{name}.{attr}"):
                    names = {f.name for f in dataclasses.fields(block)}
                    if {"batch_size", "lr"} <= names:
                        if isinstance(block, TrainingOptions):
                            members.add(path)
                        else:
                            strays.append(path)
    assert not strays, strays
    for path in ("necessity.CONFIGS.train", "separation.CONFIGS.train", "real_corpora_geometry.CONFIGS.scratch_sst2",
                 "real_corpora_geometry.CONFIGS.scratch_imdb", "learned_tables.CONFIGS.train",
                 "table_dropout.CONFIGS.train", "extrapolation.CONFIGS.tails.train", "extrapolation.CONFIGS.order.train",
                 "extrapolation.CONFIGS.mlm.train", "lowrank_training.TRAIN_CONFIGS",
                 "minimal_parametrisation.CONFIGS.train"):
        assert path in members, path


def test_every_training_class_is_defined_once_in_the_family():
    """No experiment module defines a class with a batch size and a learning rate outside the family, and the
    family's blocks are defined in ``settings.py`` (the modules that use them import them)."""
    import inspect

    from posgeom.experiments import settings
    from posgeom.experiments.settings import TrainingOptions

    outside = []
    for name, module in _experiment_modules():
        for attr, cls in vars(module).items():
            if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__:
                names = {f.name for f in dataclasses.fields(cls)}
                if {"batch_size", "lr"} <= names and not issubclass(cls, TrainingOptions):
                    outside.append(f"{name}.{attr}")
    assert not outside, outside
    from posgeom.experiments import necessity, real_corpora_geometry, separation, learned_tables, table_dropout

    assert necessity.OrderTraining is settings.OrderTraining
    assert separation.SeparationTraining is settings.SeparationTraining
    assert real_corpora_geometry.ScratchTraining is settings.ScratchTraining
    assert learned_tables.TableTraining is table_dropout.TableTraining is settings.TableTraining


def _string_constants(path: Path) -> list[str]:
    import ast

    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_setups_of_theorem4_are_defined_once():
    """The three setups' labels are written in one place of the package (the :class:`Setup` of
    ``experiments/separation.py``); every other module names a setup by its member."""
    labels = {"conditions hold", "stationary corpus", "order-insensitive loss"}
    where = {}
    for path in sorted((ROOT / "posgeom").rglob("*.py")):
        for text in _string_constants(path):
            if text in labels:
                where.setdefault(str(path.relative_to(ROOT)), set()).add(text)
    assert where == {"posgeom/experiments/separation.py": labels}

    from posgeom.experiments.separation import SETUPS, Setup

    assert [s.label for s in Setup] == ["conditions hold", "stationary corpus", "order-insensitive loss"]
    # the stored form that separation.converged's parameters record: by identifier, labels for display only
    assert SETUPS == {"hold": {"corpus": "drift", "task": "mlm"}, "stationary": {"corpus": "stationary", "task": "mlm"},
                      "control": {"corpus": "drift", "task": "bag"}}
