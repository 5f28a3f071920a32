"""The ``posgeom`` command line.

Subcommands live in :mod:`posgeom.commands`. Every error ends in one line on stderr (control characters
escaped): exit status 2 for bad input (:data:`INPUT_ERRORS`, argparse's usage errors included), 1 for a
failure at run time; ``--debug`` shows the traceback instead. A warning is one line too.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from importlib import import_module


def _command(name: str):
    """The ``add`` function of ``posgeom.commands.<name>``, imported when the parser is built."""

    def add(subparsers) -> None:
        import_module(f"posgeom.commands.{name}").add(subparsers)

    add.__name__ = add.__qualname__ = f"add_{name}"
    return add


#: Functions that each add one subcommand (:mod:`posgeom.commands`); a new command appends its own.
SUBCOMMANDS = [_command(name) for name in ("about", "corpus", "reproduce", "data", "diagnose", "results", "counts",
                                           "classroom", "costs", "experiments", "book", "decide")]

#: Exceptions that mean "the input (options, files, environment) is wrong": exit status 2.
INPUT_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)
#: Longest error line printed (the rest of a long library message is cut).
MAX_MESSAGE = 600


class _Parser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one line, like every other error."""

    def error(self, message):
        from .validation import printable
        self.exit(2, f"{self.prog}: error: {printable(' '.join(message.split()))} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    # sub-parsers are made of the same class (add_subparsers' default parser_class)
    parser = _Parser(prog="posgeom", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(subparsers)
    for sub in set(subparsers.choices.values()):  # --debug also after the subcommand's name
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def error_line(err: BaseException) -> str:
    """``err`` as one line of at most :data:`MAX_MESSAGE` characters, its type named unless a bad-input error."""
    from .validation import printable
    message = err.args[0] if isinstance(err, KeyError) and len(err.args) == 1 else err  # KeyError quotes str()
    text = printable(" ".join(str(message).split()))  # a file name or metadata may hold terminal escapes
    if not isinstance(err, (ValueError, TypeError)):
        text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3] + "..."
    return text


def warning_line(command: str):
    """A ``warnings.formatwarning`` showing one line, ``posgeom COMMAND: warning: ...``, without the source line."""
    from .validation import printable
    def format_warning(message, category, filename, lineno, line=None) -> str:
        return f"posgeom {command}: warning: {printable(' '.join(str(message).split()))}\n"

    return format_warning


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    python_format, warnings.formatwarning = warnings.formatwarning, warning_line(args.command)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"posgeom {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every error ends in one line (or the traceback with --debug)
        if getattr(args, "debug", False):
            raise
        code = 2 if isinstance(err, INPUT_ERRORS) else 1
        hint = "" if code == 2 else " (a failure at run time; rerun with --debug for the traceback)"
        print(f"posgeom {args.command}: error: {error_line(err)}{hint}", file=sys.stderr)
        return code
    finally:
        warnings.formatwarning = python_format


if __name__ == "__main__":
    sys.exit(main())
