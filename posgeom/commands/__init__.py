"""The ``posgeom`` subcommands, one module per command (``posgeom.cli.SUBCOMMANDS`` lists them).

Each module's ``add(subparsers)`` adds its parser and sets ``func`` (the handler, returning an exit code).
A module imports only the standard library at its top, so that ``posgeom --help`` stays under a second.
Every argument parser of the package is here (the workers of ``posgeom reproduce`` are hidden options of it).
"""
