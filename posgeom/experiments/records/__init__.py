"""The typed record of each experiment's stored result, one module per experiment group.

A stored result is plain data (``values``, JSON, and named ``arrays``); the record names the fields a reader
uses and their types, and :func:`posgeom.registry.typed.as_record` reads a result into it, so that a chapter, a
test or ``posgeom decide`` writes ``ranks.drift.population`` and never ``result.values["drift"]["population"]``.
A record may leave out what the result also stores. ``tests/test_registry_typed.py`` reads every committed
paper-scale result into its record, which holds the records and the experiments to one shape.

The experiments still return plain mappings: an experiment that is next changed (and so recomputed) should build
its record here and store it, which moves no stored number. Nothing here computes, and no experiment imports
these modules, so a record changes no code key of a computed result.
"""
