"""Experiments behind the chapters, one module per chapter group.

Each is a ``run_<name>(settings=None, *, force=False, ...) -> Result`` computed through
:meth:`posgeom.registry.Registry.run`, so a second call with the same options and code reads it back.
"""
