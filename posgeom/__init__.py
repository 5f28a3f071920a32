"""posgeom — the executable companion to *On the Geometry of Positional Encodings in Transformers*.

The package holds every reusable piece of the book: configuration and the results registry
(:mod:`posgeom.config`, :mod:`posgeom.registry`), the geometry core (:mod:`posgeom.geometry`),
corpora (:mod:`posgeom.corpora`), models (:mod:`posgeom.models`) and plotting helpers
(:mod:`posgeom.plotting`). The geometry API is re-exported here, so ``posgeom.stress(...)`` works.

The names are imported on first use (PEP 562), so that ``import posgeom`` and ``posgeom --help`` stay
fast: only what a command needs is ever loaded.
"""

from importlib import import_module as _import_module
from importlib import metadata as _metadata

from . import progress as _progress  # noqa: F401 - imports tqdm.auto quietly, before any library does

try:
    __version__ = _metadata.version("posgeom")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

#: Top-level names that are not geometry, and the module each comes from.
_HOMES = {
    "about": ".about", "Settings": ".config", "get_settings": ".config", "resolve_device": ".config",
    "Registry": ".registry", "Result": ".registry",
}


def __getattr__(name: str):
    if name == "__all__":
        return [*_HOMES, *_import_module(".geometry", __name__).__all__]
    if name in _HOMES:
        value = getattr(_import_module(_HOMES[name], __name__), name)
    else:
        geometry = _import_module(".geometry", __name__)
        if name not in geometry.__all__:
            raise AttributeError(f"module 'posgeom' has no attribute {name!r}")
        value = getattr(geometry, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
