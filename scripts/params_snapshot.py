"""What every experiment would ask the registry for, without computing anything: a before/after check for a
refactor of keyed code (an identifier made an Enum, a settings class moved) before a recompute is started.

Usage (from a checkout's root, with its environment active)::

    python scripts/params_snapshot.py before.json
    ... change posgeom/experiments/, geometry/, corpora/ ...
    python scripts/params_snapshot.py after.json
    python scripts/params_snapshot.py --compare before.json after.json    # IDENTICAL or the differences

Each public ``run_*`` of ``posgeom.experiments`` that needs no argument is called with its defaults at both scales, and so is every
pinned call of ``posgeom reproduce --cpu-parts`` (``posgeom.reproduce.cpu_parts.CPU_PARTS``), in a process per
scale. The first call each makes to the registry (``Registry.run`` or ``Registry.load``) is recorded (the
experiment's name, its canonical parameters, seed, device and the module of ``compute``) and stops it there:
nothing is computed, read or written. A function that fails before reaching the registry records its error.
Work done before the first registry call (reading a corpus's counts) is done, so a paper-scale snapshot reads
the corpora; the counts are cached after the first run.

The snapshot proves the *parameters* unchanged; the numbers are for the recompute to prove.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Stop(Exception):
    """Raised by the patched registry at the first call: the call is recorded, nothing runs."""


def _calls() -> list[tuple[str, dict]]:
    """``(module:function, kwargs)`` of every public run_* (defaults) and every pinned CPU part."""
    import posgeom.experiments as package
    from posgeom.reproduce.cpu_parts import CPU_PARTS

    calls = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"posgeom.experiments.{info.name}")
        for name, fn in sorted(vars(module).items()):
            if name.startswith("run_") and inspect.isfunction(fn) and fn.__module__ == module.__name__:
                required = [p for p in inspect.signature(fn).parameters.values()
                            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
                if not required:  # a generic runner (paired_design) is reached through its callers
                    calls.append((f"{info.name}:{name}", {}))
    calls += [(part.entry, dict(part.kwargs)) for part in CPU_PARTS]
    return calls


def _record(scale: str) -> dict[str, dict]:
    """The first registry call of every call of :func:`_calls` at ``scale`` (run in this process)."""
    from posgeom.registry import Registry
    from posgeom.registry.manifest import canonical

    seen: dict = {}

    def run(self, experiment, compute=None, *, params, scale, seed=None, device=None, **_):
        seen.update(experiment=experiment, params=canonical(params), scale=scale, seed=seed, device=device,
                    code=getattr(compute, "__module__", None))
        raise _Stop

    def load(self, experiment, *, params, scale):
        seen.update(experiment=experiment, params=canonical(params), scale=scale, read=True)
        raise _Stop

    Registry.run, Registry.load = run, load
    out = {}
    for entry, kwargs in _calls():
        module, function = entry.split(":")
        fn = getattr(importlib.import_module(f"posgeom.experiments.{module}"), function)
        seen.clear()
        try:
            fn(**kwargs)
            outcome = {"returned without a registry call": True}
        except _Stop:
            outcome = dict(seen)
        except Exception as err:  # noqa: BLE001 - recorded, compared like any other outcome
            outcome = {"error": f"{type(err).__name__}: {err}"}
        out[f"{scale} {entry} {json.dumps(kwargs, sort_keys=True)}"] = outcome
    return out


def snapshot(path: Path, scales=("quick", "paper")) -> str:
    """Record ``scales`` (one process each) into ``path``; returns the sha256 of the file."""
    calls = {}
    for scale in scales:
        env = {**os.environ, "POSGEOM_SCALE": scale, "POSGEOM_PROGRESS": "0"}
        done = subprocess.run([sys.executable, __file__, "--one-scale", scale], env=env, capture_output=True,
                              text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"the {scale} snapshot failed:\n{done.stderr[-4000:]}")
        calls.update(json.loads(done.stdout.splitlines()[-1]))
    data = json.dumps(calls, indent=1, sort_keys=True).encode()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def compare(a: Path, b: Path) -> int:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    lines = [f"only in {a.name}: {k}" for k in sorted(set(before) - set(after))]
    lines += [f"only in {b.name}: {k}" for k in sorted(set(after) - set(before))]
    lines += [f"{k}:\n  {before[k]}\n  {after[k]}" for k in sorted(set(before) & set(after)) if before[k] != after[k]]
    print("\n".join(lines) if lines else f"IDENTICAL ({len(before)} calls)")
    return 1 if lines else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="OUT.json, or with --compare: BEFORE.json AFTER.json")
    parser.add_argument("--compare", action="store_true", help="compare two snapshots")
    parser.add_argument("--scales", nargs="+", default=["quick", "paper"], choices=["quick", "paper"],
                        help="the scales to record (default: both)")
    parser.add_argument("--one-scale", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args(argv)
    if args.one_scale:
        print(json.dumps(_record(args.one_scale), sort_keys=True))
        return 0
    if args.compare:
        return compare(*args.paths[:2])
    digest = snapshot(args.paths[0], args.scales)
    calls = json.loads(args.paths[0].read_text())
    errors = sum("error" in v for v in calls.values())
    print(f"{len(calls)} calls recorded ({errors} stopped by an error before the registry), sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
