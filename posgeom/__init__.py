"""posgeom — the executable companion to *On the Geometry of Positional Encodings in Transformers*.

The package holds every reusable piece of the book: configuration and the results registry
(:mod:`posgeom.config`, :mod:`posgeom.registry`), the geometry core (:mod:`posgeom.geometry`),
corpora (:mod:`posgeom.corpora`), models (:mod:`posgeom.models`) and plotting helpers
(:mod:`posgeom.plotting`). The geometry API is re-exported here, so ``posgeom.stress(...)`` works.
"""

from importlib import metadata as _metadata

from . import progress as _progress  # noqa: F401 - imports tqdm.auto quietly, before any library does
from .offline import apply_environment as _apply_environment

try:  # the build's data, model and offline decision for every run, kernels started by hand included
    _apply_environment()
except ValueError:  # a bad POSGEOM_* value: get_settings() reports it where it is used
    pass
from .about import about
from .config import Settings, get_settings, resolve_device
from .geometry import *  # noqa: F401,F403 - the public geometry API lives at the top level
from .geometry import __all__ as _geometry_all
from .registry import Registry, Result

try:
    __version__ = _metadata.version("posgeom")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["about", "Settings", "get_settings", "resolve_device", "Registry", "Result", *_geometry_all]  # noqa: PLE0604
