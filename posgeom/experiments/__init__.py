"""Experiments behind the chapters, one module per chapter group.

Each experiment is a function ``run_<name>(settings=None, *, force=False, ...) -> Result`` that
computes through :meth:`posgeom.registry.Registry.run`, so its values, arrays and manifest are
stored and a second call with the same options and code reads them back. Chapters call these
functions and display what they return; ``posgeom reproduce`` calls the same functions.
"""
