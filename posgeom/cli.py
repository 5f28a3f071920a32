"""The ``posgeom`` command line.

Subcommands register themselves through :data:`SUBCOMMANDS`: each entry is a function that
adds its parser to ``argparse`` sub-parsers and sets ``func`` (the handler, returning an exit code).
"""

from __future__ import annotations

import argparse
import sys


def _add_about(subparsers) -> None:
    p = subparsers.add_parser("about", help="print versions, device, scale, data and model availability")
    p.add_argument("--scale", help="quick or paper (default: POSGEOM_SCALE or quick)")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:N or mps (default: POSGEOM_DEVICE or auto)")
    p.add_argument("--pretrained", help="pretrained model (default: POSGEOM_PRETRAINED or bert-base-uncased)")

    def run(args) -> int:
        from .about import about
        from .config import get_settings

        about(get_settings(scale=args.scale, device=args.device, pretrained=args.pretrained))
        return 0

    p.set_defaults(func=run)


#: Functions that each add one subcommand; other modules append theirs here.
SUBCOMMANDS = [_add_about]


def _add_corpora(subparsers) -> None:
    """``posgeom corpus-report`` and ``posgeom stress`` (see :mod:`posgeom.corpora.cli`)."""
    from .corpora.cli import add_corpus_report, add_stress

    add_corpus_report(subparsers)
    add_stress(subparsers)


SUBCOMMANDS.append(_add_corpora)


def _add_counts(subparsers) -> None:
    """``posgeom counts`` (see :mod:`posgeom.corpora.counts_cli`)."""
    from .corpora.counts_cli import add_counts

    add_counts(subparsers)


SUBCOMMANDS.append(_add_counts)


def _add_reproduce(subparsers) -> None:
    """``posgeom reproduce`` (see :mod:`posgeom.reproduce`)."""
    from .reproduce import add_reproduce

    add_reproduce(subparsers)


SUBCOMMANDS.append(_add_reproduce)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="posgeom", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as err:  # bad input: one clear line, no traceback
        print(f"posgeom {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
