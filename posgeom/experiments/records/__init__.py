"""The typed record of each experiment's stored result, one module per experiment group.

:func:`posgeom.registry.typed.as_record` reads a stored result into its record, so a reader writes
``ranks.drift.population``, not ``result.values["drift"]["population"]``. No experiment imports these
modules, so a record changes no code key; ``tests/test_registry_typed.py`` reads every committed paper result.
"""
