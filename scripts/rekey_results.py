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

``--from CHECKOUT`` moves entries across a change of the key's definition: an entry whose stored key equals the
code key of its modules in ``CHECKOUT`` (a clean checkout of the commit that made it), and whose modules are the
same bytes there and here, moves to this checkout's key, and nothing else in it changes (as when comments and
layout left the key, December 2026: the same code, a new way to hash it).

``--from CHECKOUT --evidence TEXT`` moves entries across a refactor as well: an entry whose stored key equals
the code key of its modules in ``CHECKOUT`` (a clean checkout of the commit that made it) moves to the key of
this checkout, and its manifest records ``restamped``: the key and commit it moved from and ``TEXT``, the proof
that the refactor changes no stored byte (for #46: every entry recomputed at ``quick`` byte-identical, every
experiment's parameters identical at both scales). Such an entry is an interim: recompute it from a clean
commit (``posgeom reproduce``) when the machine time allows, which drops the mark.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
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


def keys_in(checkout: Path, roots_list) -> dict:
    """The code key of each tuple of module roots as the code of ``checkout`` computes it (a child process)."""
    program = ("import json, sys; from posgeom.codekey import code_key; "
               "print(json.dumps([code_key(r) for r in json.load(sys.stdin)]))")
    unique = sorted({tuple(r) for r in roots_list})
    out = subprocess.run([sys.executable, "-c", program], input=json.dumps(unique), capture_output=True, text=True,
                         cwd=checkout, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"}, check=True)
    return dict(zip(unique, json.loads(out.stdout)))


def same_code(roots, checkout: Path) -> bool:
    """Whether the modules ``roots`` run are the same bytes in ``checkout`` as in this checkout."""
    here, there = _as_root(None), checkout / "posgeom"
    for name in module_dependencies(roots):
        theirs = _module_file(name, there)
        if theirs is None or theirs.read_bytes() != _module_file(name, here).read_bytes():
            return False
    return True


def move_across_refactor(registry: Registry, checkout: Path, evidence: str, dry_run: bool, scale=None) -> int:
    """Move the entries made by ``checkout``'s code to this checkout's code key (module docstring)."""
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        raise SystemExit(f"{checkout} has uncommitted changes; --from needs a clean checkout of the commit that made the entries")
    entries = [r for r in registry.entries() if r.manifest.get("code_modules") and r.manifest.get("code_key")
               and scale in (None, r.scale)]
    before = keys_in(checkout, [r.manifest["code_modules"] for r in entries])
    moves, already, left = [], 0, []
    for result in entries:
        roots, stored = tuple(result.manifest["code_modules"]), result.manifest["code_key"]
        new_key = code_key(list(roots))
        if stored == new_key:
            already += 1
        elif stored != before[roots]:
            left.append(f"{result.scale}/{result.experiment}/{result.key}: not made by {commit[:7]}'s code, left as it is")
        else:
            moves.append((result, new_key, same_code(roots, checkout)))
    if not evidence.strip() and not all(same for _, _, same in moves):
        raise SystemExit("--evidence is required with --from when the code changed: say what shows that the refactor "
                         "changes no stored byte")
    for result, new_key, same in moves:
        if not dry_run:
            mark = {} if same else {"restamped": {"from_code_key": result.manifest["code_key"], "from_commit": commit,
                                                  "evidence": evidence.strip()}}
            registry.restamp(result, code_key=new_key, **mark)
    moved = len(moves)
    print(f"{'would move' if dry_run else 'moved'} {moved} entries from {commit[:7]}'s code key to this checkout's; "
          f"{already} already under it")
    print("\n".join(left))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the results folder (holding quick/ and paper/)")
    parser.add_argument("--dry-run", action="store_true", help="list what would change; write nothing")
    parser.add_argument("--from", dest="checkout", type=Path, help="a clean checkout of the commit that made the "
                        "entries: move them across a refactor (module docstring)")
    parser.add_argument("--evidence", default="", help="with --from, where the code changed: what shows the refactor "
                        "changes no stored byte")
    parser.add_argument("--scale", choices=("quick", "paper"), help="with --from: move the entries of this scale only")
    args = parser.parse_args(argv)
    registry = Registry(args.results)
    if args.checkout is not None:
        return move_across_refactor(registry, args.checkout.resolve(), args.evidence, args.dry_run, args.scale)
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
