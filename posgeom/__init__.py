"""posgeom — the executable companion to *On the Geometry of Positional Encodings in Transformers*.

The geometry API (:mod:`posgeom.geometry`) is re-exported here, so ``posgeom.stress(...)`` works; names are
imported on first use (PEP 562), so that ``import posgeom`` and ``posgeom --help`` stay fast.
"""

from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec
from importlib import metadata as _metadata

from . import progress as _progress  # noqa: F401 - imports tqdm.auto quietly, before any library does
from .offline import apply_environment as _apply_environment

try:  # the build's data, model and offline decision for every run, kernels started by hand included
    _apply_environment()
except ValueError:  # a bad POSGEOM_* value: get_settings() reports it where it is used
    pass

try:
    __version__ = _metadata.version("posgeom")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

# ``about`` is both a submodule and the function it defines: bind the function now, so that a later
# ``import posgeom.about`` (which would set the attribute to the module) finds the module imported.
from .about import about  # noqa: E402, F401 - after the environment is decided; exported by __getattr__

#: Top-level names that are not geometry, and the module each comes from.
_HOMES = {
    "Settings": ".config", "get_settings": ".config", "resolve_device": ".config",
    "Registry": ".registry", "Result": ".registry",
}


def _geometry_names() -> list:
    return _import_module(".geometry", __name__).__all__


def __getattr__(name: str):
    if name == "__all__":
        return ["about", *_HOMES, *_import_module(".geometry", __name__).__all__]
    if name.startswith("_"):  # probes such as __wrapped__ or _ipython_display_ load nothing
        raise AttributeError(f"module 'posgeom' has no attribute {name!r}")
    if name in _HOMES:
        value = getattr(_import_module(_HOMES[name], __name__), name)
    elif name in _geometry_names():
        value = getattr(_import_module(".geometry", __name__), name)
    elif _find_spec(f"{__name__}.{name}") is not None:
        value = _import_module(f".{name}", __name__)  # a submodule: posgeom.corpora, posgeom.models, ...
    else:
        raise AttributeError(f"module 'posgeom' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
