"""Compare two results registries entry by entry: did a change alter any number the book shows?

Run every chapter into one registry before a change and into another after it, then::

    posgeom reproduce --scale quick                      # with POSGEOM_RESULTS_DIR=/some/before
    ... change the code ...
    posgeom reproduce --scale quick                      # with POSGEOM_RESULTS_DIR=/some/after
    python benchmarks/compare_results.py /some/before /some/after [--scale quick] [--rtol 1e-9]

Entries are matched by scale, experiment and parameter key. Scalars and arrays are compared with a
relative tolerance (default 1e-9: the same maths in another order differs in the last bits only);
strings exactly, except the fields listed in ``IGNORED`` (what records provenance, not results).
Both layouts of the registry are read: the checksummed one (a ``CURRENT`` pointer to a version
folder) and the earlier one (files directly in the entry folder). Exit code 0 when every entry of
``before`` is in ``after`` with equal values, 1 otherwise (the differences are listed).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

#: Value fields that record where a result came from, or how long it took on this machine, rather than what it is.
#: (``seconds``: a paired design's wall time per seed and per phase, posgeom.experiments.paired_design.)
IGNORED = frozenset({"notebook_sha256", "runtime_s", "tokens_per_s", "cache_hit", "seconds"})
#: Experiments that record how a run went (wall time, memory), not results.
IGNORED_EXPERIMENTS = frozenset({"chapter_runs"})


def entry_files(folder: Path) -> Path | None:
    """The folder holding ``result.json`` of one entry (either layout), or None."""
    pointer = folder / "CURRENT"
    if pointer.is_file():
        version = json.loads(pointer.read_text()).get("version")
        return folder / version if version and (folder / version / "result.json").is_file() else None
    return folder if (folder / "result.json").is_file() else None


def params_identity(params: dict, ignored: frozenset[str]) -> str:
    """The entry's parameters without the ``ignored`` ones, as one canonical string."""
    return json.dumps({k: v for k, v in params.items() if k not in ignored}, sort_keys=True, default=str)


def read_registry(root: Path, scale: str | None, ignore_params: frozenset[str] = frozenset(),
                  old_layout: bool = False) -> dict[tuple[str, str, str], tuple[dict, dict]]:
    """``(scale, experiment, key) -> (values, arrays)`` for every entry under ``root``.

    With ``ignore_params``, ``key`` is the parameters (from the manifest) without those names instead of the
    folder's hash: entries whose keys differ only there (a data folder recorded by path before, by content
    after) are matched. With ``old_layout``, values and parameters are read in today's layout first
    (:func:`relayout`, :func:`relayout_params`), and ``key`` is the hash of the parameters read so.
    """
    out = {}
    for folder in sorted(p for p in root.glob("*/*/*") if p.is_dir() and not p.name.startswith(".")):
        sc, experiment, key = folder.parent.parent.name, folder.parent.name, folder.name
        if (scale is not None and sc != scale) or experiment in IGNORED_EXPERIMENTS:
            continue
        files = entry_files(folder)
        if files is None:
            continue
        if ignore_params or (old_layout and (files / "manifest.json").is_file()):
            params = json.loads((files / "manifest.json").read_text()).get("params", {})
            relaid = relayout_params(experiment, params) if old_layout else params
            if ignore_params:
                key = params_identity(relaid, ignore_params)
            elif relaid != params:  # parameters renamed with the layout: the folder's hash changed with them
                from posgeom.registry.manifest import params_key
                key = params_key(relaid)
        values = json.loads((files / "result.json").read_text())
        values = relayout(experiment, values) if old_layout else values
        arrays = {}
        if (files / "arrays.npz").is_file():
            with np.load(files / "arrays.npz", allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        out[(sc, experiment, key)] = (values, arrays)
    return out


def _row_ids() -> dict[str, dict]:
    """``{label: {"row": id, "rank": k}}``: the rows of the real-corpora tables before they were stored by identifier
    (2026-12-06), by the label they were stored under (``posgeom.experiments.table_rows.row_label``)."""
    from posgeom.encodings.identifiers import Encoding
    from posgeom.experiments.table_rows import TableRow, row_label
    ids = {row_label(r): {"row": str(r)} for r in (*Encoding, *TableRow) if r not in (TableRow.SMACOF,)}
    for k in range(1, 1025):
        ids[row_label(Encoding.MDS, k)] = {"row": str(Encoding.MDS), "rank": k}
        ids[row_label(TableRow.SMACOF, k)] = {"row": str(TableRow.SMACOF), "rank": k}
    return ids


def _nested(flat: dict, ids: dict) -> dict:
    """Intervals keyed ``"<row>|<norm>"``, ``"<a>-<b>|<norm>"`` or ``"<a>-<b>"`` (rows by label or identifier), nested."""
    out: dict = {}
    for name, interval in flat.items():
        rows, *norm = name.split("|")
        parts = [ids.get(r, {"row": r})["row"] for r in rows.split("-")] + norm
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = interval
    return out


def _table_ids() -> dict[str, str]:
    """``{label: identifier}``: the tables of the low-rank training comparison before they were stored by identifier
    (2026-12-06), by the label they were stored under (``TrainedTable.label``)."""
    from posgeom.experiments.lowrank_training import TrainedTable
    return {t.label: str(t) for t in TrainedTable}


def _tables_nested(gaps: dict, ids: dict) -> dict:
    """Gaps keyed ``"<a> - <b>"`` (tables by label), or already nested by identifier, as ``{a: {b: gap}}``."""
    out: dict = {}
    for name, gap in gaps.items():
        if " - " in name:
            a, b = name.split(" - ")
            out.setdefault(ids.get(a, a), {})[ids.get(b, b)] = gap
        else:
            out.setdefault(name, {}).update(gap)
    return out


def _relabelled(run: dict, ids: dict) -> dict:
    """A training run whose ``encoding`` names its table by label, with the table's identifier in its place."""
    return {**run, "encoding": ids.get(run["encoding"], run["encoding"])}


def relayout_params(experiment: str, params: dict) -> dict:
    """The parameters of an entry stored before the low-rank training comparison's tables and Theorem 4's setups were
    named by identifier (2026-12-06) as they are stored after it; any other entry's, or one's already stored so, as
    they are."""
    ids = _table_ids()
    if experiment == "minimal_parametrisation.lowrank_training":
        return {**params, "encodings": [[ids.get(e[0], e[0]), *e[1:]] for e in params["encodings"]],
                "sst2_encodings": [ids.get(e, e) for e in params["sst2_encodings"]]}
    if experiment == "minimal_parametrisation.lowrank_powered":
        design = params["design"]
        return {**params, "design": {**design, "encodings": [ids.get(e, e) for e in design["encodings"]]}}
    if experiment == "separation.converged":  # the setups keyed by label before, by identifier after
        from posgeom.experiments.separation import Setup
        labels = {s.label: str(s) for s in Setup}
        return {**params, "setups": {labels.get(k, k): v for k, v in params["setups"].items()}}
    return params


def relayout(experiment: str, values: dict) -> dict:
    """An entry stored before rows and bootstrap intervals were named by identifier (2026-12-06) in the layout after
    it; any other entry, or one already in that layout, as it is."""
    ids = _row_ids()
    if experiment.startswith(("real_corpora_stress_intervals_", "monotonicity_violation_intervals_")):
        return {**values, "statistics": _nested(values["statistics"], ids),
                "differences": _nested(values["differences"], ids)}
    if experiment == "optimal_encoding.comparison_intervals":
        return {c: {**v, "statistics": _nested(v["statistics"], ids), "differences": _nested(v["differences"], ids)}
                for c, v in values.items()}
    if experiment.startswith(("real_corpora_stress_", "monotonicity_table_")):
        rows = [{**{k: v for k, v in r.items() if k != "encoding"}, **ids.get(r["encoding"], {"row": r["encoding"]})}
                if "encoding" in r else r for r in values["rows"]]
        return {**values, "rows": rows}
    tables = _table_ids()
    if experiment == "minimal_parametrisation.lowrank_training":
        return {**values, "runs": [_relabelled(r, tables) for r in values["runs"]],
                "summary": {t: {tables.get(e, e): v for e, v in s.items()} for t, s in values["summary"].items()},
                "gaps": {t: _tables_nested(g, tables) for t, g in values["gaps"].items()}}
    if experiment == "minimal_parametrisation.lowrank_powered":
        per_seed = {part: [{**r, "tables": [_relabelled(x, tables) for x in r["tables"]]} for r in values[part]]
                    for part in ("pilot", "runs")}
        return {**values, **per_seed, "stalled": {tables.get(e, e): s for e, s in values["stalled"].items()}}
    if experiment == "inside_bert_layers" and not any(isinstance(p, dict) for p in values["peaks"].values()):
        # peaks keyed "<definition>_<normalisation>", nested after
        peaks: dict = {}
        for reading, layer in values["peaks"].items():
            definition, normalisation = reading.split("_", 1)  # no definition has an underscore
            peaks.setdefault(definition, {})[normalisation] = layer
        return {**values, "peaks": peaks}
    if experiment == "separation.converged":
        # each seed's per-setup mappings keyed by the setup's label before (2026-12-06), by its identifier after
        from posgeom.experiments.separation import Setup
        ids = {s.label: str(s) for s in Setup}
        setups = ("sep_all", "median", "loss")
        seeds = [[{**r, **{k: {ids.get(s, s): x for s, x in r[k].items()} for k in setups}} for r in values[part]]
                 for part in ("pilot", "runs")]
        return {**values, "pilot": seeds[0], "runs": seeds[1]}
    return values


def differences(a, b, rtol: float, where: str = "") -> list[str]:
    """Every place where ``a`` and ``b`` differ beyond ``rtol`` (numbers) or at all (the rest)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if key in IGNORED:
                continue
            if key not in a or key not in b:
                out.append(f"{where}.{key}: only in {'after' if key in b else 'before'}")
            else:
                out += differences(a[key], b[key], rtol, f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items before, {len(b)} after"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, rtol, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rtol, abs_tol=rtol):
            return []
        return [f"{where}: {a!r} before, {b!r} after"]
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return [f"{where}: shape/dtype {a.shape} {a.dtype} before, {b.shape} {b.dtype} after"]
        if a.dtype.kind in "fc":
            same = np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            same = np.array_equal(a, b)
        if same:
            return []
        worst = float(np.nanmax(np.abs(a.astype(float) - b.astype(float)))) if a.dtype.kind in "fciub" else math.nan
        return [f"{where}: arrays differ (largest difference {worst:.3g})"]
    return [] if a == b else [f"{where}: {a!r} before, {b!r} after"]


def compare(before: Path, after: Path, *, scale: str | None = None, rtol: float = 1e-9,
            ignore_params: frozenset[str] = frozenset(), old_layout: bool = False) -> list[str]:
    """Every difference between two registries (entries missing from ``after`` included); with ``old_layout``,
    ``before``'s entries and their parameters are read in today's layout first (:func:`relayout`,
    :func:`relayout_params`)."""
    old, new = read_registry(before, scale, ignore_params, old_layout), read_registry(after, scale, ignore_params)
    if not old:
        return [f"no entries under {before}" + (f" at scale {scale}" if scale else "")]
    out = []
    for ident, (values, arrays) in old.items():
        name = "/".join(ident)
        if ident not in new:
            out.append(f"{name}: missing after")
            continue
        out += differences(values, new[ident][0], rtol, name)
        out += differences(arrays, new[ident][1], rtol, name + ":arrays")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="registry made before the change")
    parser.add_argument("after", type=Path, help="registry made after the change")
    parser.add_argument("--scale", help="compare only this scale (default: all)")
    parser.add_argument("--rtol", type=float, default=1e-9, help="relative tolerance for numbers (default 1e-9)")
    parser.add_argument("--ignore-param", action="append", default=[], metavar="NAME",
                        help="match entries by their parameters without NAME (repeatable), e.g. data")
    parser.add_argument("--old-layout", action="store_true",
                        help="read `before` (values and parameters) as stored before rows, intervals and "
                             "tables were named by identifier")
    args = parser.parse_args(argv)
    found = compare(args.before, args.after, scale=args.scale, rtol=args.rtol,
                    ignore_params=frozenset(args.ignore_param), old_layout=args.old_layout)
    n = len(read_registry(args.before, args.scale))
    if found:
        print(f"{len(found)} difference(s) over {n} entries:")
        print("\n".join(f"  {line}" for line in found))
        return 1
    print(f"{n} entries: every value and array of {args.before} is unchanged in {args.after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
