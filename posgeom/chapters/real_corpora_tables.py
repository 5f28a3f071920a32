"""The tables of the chapter "Real corpora" that read a stored result as it is, without the chapter's typed
views: the stress table of each corpus, the spread of the geometry over its draws, and MDS against SMACOF at
low rank (re-exported by :mod:`posgeom.chapters.real_corpora`)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..registry import Result
from ..registry.typed import as_record
from ..experiments.real_corpora import mds_row, smacof_row, stress_records
from ..experiments.settings import find
from .records import DrawSpread, ResolvableSplits, StoredStressTable

__all__ = ["stress_dataframe", "draws_table", "smacof_table", "SubsetDraws"]


def stress_dataframe(result: Result) -> pd.DataFrame:
    """A stored stress table (``run_stress_table``) as a table: one row per encoding, the options used and both
    stresses.

    Random tables show ``mean ± sd`` over their seeds.

    Returns
    -------
    pandas.DataFrame
        Index ``encoding``; columns ``options``, "the paper's stress", "scale-free stress" and
        "scale-free stress against resolvable R" (the normalisations in words, docs/STYLE.md).
    """
    labels = {"paper": "the paper's stress", "scale_free": "scale-free stress",
              "scale_free_resolvable": "scale-free stress against resolvable R"}
    out = []
    for row in stress_records(result):
        rec = {"encoding": row.encoding, "options": row.options}
        for z, label in labels.items():
            v = getattr(row, z)
            if v is None:
                continue
            text = f"{v:.4g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.1e}"
            if getattr(row, f"{z}_sd") is not None:
                text += f" ± {getattr(row, z + '_sd'):.2g}"
            rec[label] = text
        out.append(rec)
    return pd.DataFrame.from_records(out).set_index("encoding")


_DRAW_LABELS = {"shift_r2": "offset-only share R²", "share": "λ1 / Σλ⁺", "negative_fraction": "pairs with R² < 0",
                "sinusoidal": "sinusoidal, scale-free stress", "rope": "RoPE, scale-free stress",
                "alibi": "ALiBi, scale-free stress"}


@dataclass(frozen=True)
class SubsetDraws:
    """A stored ``run_subset_draws``, typed: the subsets drawn, and each statistic's spread over them for the
    resolvable geometry R (``spread``) and for D (``spread_D``)."""

    seeds: tuple[int, ...]
    spread: dict[str, DrawSpread]
    spread_D: dict[str, DrawSpread]


def _spread_text(e, fmt="{:.3f}") -> str:
    """Mean ± sample sd and the range over the draws (written as a range, not to be read as an interval)."""
    return f"{fmt.format(e.mean)} ± {fmt.format(e.sd)} (range {fmt.format(e.min)} to {fmt.format(e.max)})"


def draws_table(splits: dict, subsets: dict) -> pd.DataFrame:
    """The spread of the geometry's statistics over the cross-half splits (R) and, where drawn, subsets (R, D)."""
    draws = []
    for c, res in splits.items():
        sp = as_record(res, ResolvableSplits)
        draws.append({"draw": f"{c}: {len(sp.seeds)} cross-half splits (R)"
                              + (f", seeds {list(sp.skipped)} skipped (a kept position without a token shared by the "
                                 "halves)" if sp.skipped else ""),
                      **{_DRAW_LABELS[k]: _spread_text(v) for k, v in sp.spread.items()}})
    for c, res in subsets.items():
        sub = as_record(res, SubsetDraws)
        for label, spread in (("R", sub.spread), ("D", sub.spread_D)):
            draws.append({"draw": f"{c}: {len(sub.seeds)} subsets ({label})",
                          **{_DRAW_LABELS[k]: _spread_text(v) for k, v in spread.items()}})
    return pd.DataFrame(draws).set_index("draw").T


def smacof_table(tables: dict) -> pd.DataFrame:
    """Classical MDS against SMACOF at each low rank k of the stress tables ("paper" stress)."""
    lo = []
    for corpus, tab in tables.items():
        rows = stress_records(tab)
        for k in as_record(tab, StoredStressTable).smacof_k:
            smacof = find(rows, encoding=smacof_row(k))
            lo.append({"corpus": corpus, "rank k": int(k), "MDS, the paper's stress": find(rows, encoding=mds_row(k)).paper,
                       "SMACOF, the paper's stress": smacof.paper, "SMACOF iterations": smacof.options})
    return pd.DataFrame(lo).set_index(["corpus", "rank k"])
