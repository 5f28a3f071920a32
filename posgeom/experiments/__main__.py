"""``python -m posgeom.experiments CHAPTER [--corpus ...] [--force]``: one chapter's experiments outside
the book; the command ``posgeom experiments`` (:mod:`posgeom.commands.experiments`) under its usual name."""

from __future__ import annotations

import sys

from ..cli import main

if __name__ == "__main__":
    sys.exit(main(["experiments", *sys.argv[1:]]))
