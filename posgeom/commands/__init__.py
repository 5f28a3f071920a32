"""The ``posgeom`` subcommands, one module per command.

Each module has an ``add(subparsers)`` function that adds its parser to the ``argparse`` sub-parsers
and sets ``func`` (the handler, returning an exit code); ``posgeom.cli.SUBCOMMANDS`` lists them.
A module imports only the standard library at its top and what its handler needs inside the handler,
so that ``posgeom --help`` stays under a second.

* :mod:`posgeom.commands.about` — ``posgeom about``;
* :mod:`posgeom.commands.corpus` — ``posgeom corpus-report`` and ``posgeom stress``;
* :mod:`posgeom.commands.reproduce` — ``posgeom reproduce``;
* :mod:`posgeom.commands.data` — ``posgeom data`` and ``posgeom data download``;
* :mod:`posgeom.commands.diagnose` — ``posgeom diagnose``;
* :mod:`posgeom.commands.results` — ``posgeom results check``;
* :mod:`posgeom.commands.counts` — ``posgeom counts``;
* :mod:`posgeom.commands.classroom` — ``posgeom classroom``;
* :mod:`posgeom.commands.costs` — ``posgeom costs`` (the paper scale's cost model, the README's table);
* :mod:`posgeom.commands.experiments` — ``posgeom experiments CHAPTER``, also ``python -m posgeom.experiments``;
* :mod:`posgeom.commands.book` — ``posgeom book`` (the chapters in parallel, then the strict build).
* :mod:`posgeom.commands.decide` — ``posgeom decide CLAIM --model NAME`` (a check blocked by a missing model,
  decided on one that can be loaded: :mod:`posgeom.decide`).

Every argument parser of the package is here (``python -m posgeom.experiments`` hands its arguments to
``posgeom experiments``; the internal workers of ``posgeom reproduce`` are hidden options of it).
"""
