"""Move stored results from the byte code key to the docstring-free one, without recomputing anything.

Until December 2026 a code key hashed the raw bytes of its modules, so rewording a docstring marked every
result made through that module stale. :func:`posgeom.codekey.code_key` now hashes
:func:`posgeom.codekey.keyed_source` (docstrings and blank lines left out). This script moves a results folder
across, one entry at a time, with :meth:`posgeom.registry.Registry.restamp` (under the entry's lock, atomically):

* an entry whose stored key equals the byte key of its modules *now* was made by the code of this checkout
  (byte for byte), so its new key is the docstring-free key of that same code: the manifest is rewritten
  with it, and nothing else in the entry changes;
* an entry already under the new key is left as it is (running the script again changes nothing);
* any other entry (stale already, or with no code key) is left exactly as it is, and listed.

Run it once, from a clean checkout, before any module is edited:
``python scripts/rekey_results.py results`` (``--dry-run`` lists what it would do).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from posgeom.codekey import _as_root, _module_file, code_key, module_dependencies
from posgeom.registry import Registry


def byte_key(roots) -> str:
    """The code key as it was: SHA-256 of the raw bytes of the modules and everything they import."""
    root = _as_root(None)
    digest = hashlib.sha256()
    for name in module_dependencies(roots):
        digest.update(name.encode() + b"\0")
        digest.update(_module_file(name, root).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the results folder (holding quick/ and paper/)")
    parser.add_argument("--dry-run", action="store_true", help="list what would change; write nothing")
    args = parser.parse_args(argv)
    registry = Registry(args.results)
    moved, already, left = 0, 0, []
    for result in registry.entries():
        roots, stored = result.manifest.get("code_modules"), result.manifest.get("code_key")
        if not roots or not stored:
            continue  # a record of no code (a chapter run): nothing to move
        new_key = code_key(roots)
        if stored == new_key:
            already += 1  # moved before (or made since by the new key)
            continue
        if byte_key(roots) != stored:
            left.append(f"{result.scale}/{result.experiment}/{result.key}: stale before the move, left as it is")
            continue
        if not args.dry_run:
            registry.restamp(result, code_key=new_key)
        moved += 1
    print(f"{'would move' if args.dry_run else 'moved'} {moved} entries to the docstring-free code key; "
          f"{already} already under it")
    print("\n".join(left))
    return 0


if __name__ == "__main__":
    sys.exit(main())
