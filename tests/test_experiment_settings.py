"""The shared typed settings of the experiments: paper = quick + overrides, params as plain dicts."""

from dataclasses import dataclass, field

import pytest

from posgeom.experiments.settings import as_params, by_scale, find, records


@dataclass(frozen=True)
class Model:
    d_model: int = 64
    n_layers: int = 2


@dataclass(frozen=True)
class Options:
    n: int = 64
    seeds: tuple[int, ...] = (0, 1)
    model: Model = field(default_factory=Model)


def test_paper_is_quick_plus_changes_including_nested():
    s = by_scale(Options(), n=512, model={"d_model": 768})
    assert s["quick"] == Options()
    assert s["paper"] == Options(n=512, model=Model(d_model=768, n_layers=2))
    assert s.changes() == {"n": (64, 512), "model": (Model(), Model(768, 2))}


def test_params_are_the_plain_nested_dict():
    assert as_params(Options()) == {"n": 64, "seeds": (0, 1), "model": {"d_model": 64, "n_layers": 2}}


def test_bad_input_is_one_clear_error():
    with pytest.raises(TypeError, match="no field 'm'"):
        by_scale(Options(), m=3)
    with pytest.raises(ValueError, match="unknown scale"):
        by_scale(Options())["huge"]
    with pytest.raises(TypeError, match="dataclass instance"):
        as_params({"n": 1})


def test_records_and_find():
    rows = records(Model, [{"d_model": 8, "n_layers": 1}, {"d_model": 16, "n_layers": 1}])
    assert find(rows, d_model=16) == Model(16, 1)
    with pytest.raises(KeyError, match="2 records"):
        find(rows, n_layers=1)
    with pytest.raises(KeyError, match="no record"):
        find(rows, d_model=3)
    with pytest.raises(ValueError, match="does not declare"):
        records(Model, [{"d_model": 8, "width": 3}])


def test_no_experiment_redefines_a_shared_settings_block():
    """A settings block whose fields are those of a shared block of experiments/settings.py (ModelShape,
    AdamWTraining, NoiseOptions, OrderTask, ...) is that block, or a subclass that adds fields: never a copy."""
    import dataclasses
    import importlib
    import inspect
    import pkgutil

    import posgeom.experiments as experiments
    from posgeom.experiments import settings

    shared = {name: cls for name, cls in vars(settings).items()
              if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls.__module__ == settings.__name__
              and name != "ByScale"}
    fields_of = {name: {f.name for f in dataclasses.fields(cls)} for name, cls in shared.items()}
    copies = []
    for info in pkgutil.iter_modules(experiments.__path__):
        module = importlib.import_module(f"posgeom.experiments.{info.name}")
        for name, cls in vars(module).items():
            if not (inspect.isclass(cls) and dataclasses.is_dataclass(cls)) or cls.__module__ != module.__name__:
                continue
            own = {f.name for f in dataclasses.fields(cls)}
            copies += [f"{module.__name__}.{name} copies settings.{base}" for base, names in fields_of.items()
                       if own == names and not issubclass(cls, shared[base])]
    assert not copies, copies
