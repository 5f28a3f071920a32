"""The training studies of the chapter "Learned tables in practice": the initialisation study
(:func:`posgeom.experiments.learned_tables.run_init_study`) and the dropout study
(:mod:`posgeom.experiments.table_dropout`) as the chapter's tables and quoted numbers; re-exported by
:mod:`posgeom.chapters.learned_tables`, whose rows for S7–S9 read them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import settings_or_default as _settings
from ..geometry import paired_difference
from ..registry import Result
from ..registry.typed import as_record
from ..experiments import table_dropout as td
from ..experiments.learned_tables import CONFIGS, init_runs

__all__ = [
    "BASE", "BIG", "SINUSOIDAL", "MDS", "init_frame", "init_table", "finite_values", "reached_text", "variant_mean",
    "init_loss_difference", "init_summary", "dropout_effects", "dropout_summary", "StoredInitStudy",
    "StoredDropoutStudy",
]

#: The variants of the initialisation study the chapter compares (its names in :data:`posgeom.models.table_studies.INITS`).
BASE, BIG, SINUSOIDAL, MDS = "normal_0.02", "normal_1", "sinusoidal", "mds"


@dataclass(frozen=True)
class StoredInitStudy:
    """A stored ``run_init_study``, typed: its variants (initialisation and dropout rate) and seeds, every
    variant's tables before and after training (variants, seeds, n, d), and the task's distance matrix ``D``."""

    variants: tuple[tuple[str, float], ...]
    seeds: tuple[int, ...]
    tables_initial: np.ndarray
    tables_final: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class StoredDropoutStudy:
    """A stored ``run_dropout_study``, typed: its dropout rates and seeds, the training sequences, and the times
    each is seen (``passes``)."""

    dropouts: tuple[float, ...]
    seeds: tuple[int, ...]
    n_train: int
    passes: float

    @property
    def rate(self) -> float:
        """The rate compared with no dropout: the largest."""
        return max(self.dropouts)


def init_frame(result: Result) -> pd.DataFrame:
    """One row per run of the initialisation study (``run_init_study``): its settings and outcomes, with the
    table's geometry before and after, and ``variant`` naming the initialisation (and dropout)."""
    runs = pd.DataFrame([{
        **{k: getattr(r, k) for k in ("init", "dropout", "seed", "steps_to_threshold", "final_loss", "eval_loss",
                                      "eval_accuracy", "relative_change")},
        "initial row norm": r.initial["row_norm"], "final row norm": r.final["row_norm"],
        "final neighbour cos": r.final["neighbour_cos"], "final stress (scale_free)": r.final["stress_scale_free"],
    } for r in init_runs(result)])
    runs["variant"] = runs["init"] + np.where(runs["dropout"] > 0, " + dropout " + runs["dropout"].astype(str), "")
    return runs


def finite_values(x) -> np.ndarray:
    """The finite values of ``x`` (a seed that never reached the loss threshold stores ``None``)."""
    return np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=float)


def reached_text(x) -> str:
    """How many seeds reached the threshold, of how many: ``"3/5"``."""
    return f"{len(finite_values(x))}/{len(x)}"


def init_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per variant of :func:`init_frame`: mean ± sd over seeds of each outcome, and how many seeds reached the
    loss threshold."""
    def mean_sd(x):
        x = finite_values(x)
        return f"{x.mean():.3g} ± {x.std():.2g}" if x.size else "—"

    return runs.groupby("variant", sort=False).agg(
        steps_to_loss_0_3=("steps_to_threshold", mean_sd), reached=("steps_to_threshold", reached_text),
        final_loss=("final_loss", mean_sd), eval_accuracy=("eval_accuracy", mean_sd),
        initial_row_norm=("initial row norm", mean_sd), relative_change=("relative_change", mean_sd),
        final_neighbour_cos=("final neighbour cos", mean_sd))


def variant_mean(runs: pd.DataFrame, variant: str, column: str) -> float:
    """The mean of ``column`` over the seeds of ``variant`` that have a value (NaN when none has)."""
    x = runs.loc[runs["variant"] == variant, column].astype(float)
    return float(x.dropna().mean()) if x.notna().any() else float("nan")


def init_loss_difference(init: Result):
    """S7's interval: the final loss of N(0, 0.02²) minus N(0, 1), paired by training seed (95 %, Student t).

    Returns
    -------
    posgeom.geometry.SeedInterval
    """
    by_seed = init_frame(init).set_index(["variant", "seed"])["final_loss"]
    seeds = as_record(init, StoredInitStudy).seeds
    return paired_difference([by_seed[(BASE, k)] for k in seeds], [by_seed[(BIG, k)] for k in seeds])


def init_summary(result: Result, settings=None) -> dict:
    """The numbers the chapter quotes from the initialisation study (S7, S8; glued as ``ltinit_<key>``):
    ``init_<outcome>_<variant>`` the mean over seeds for N(0, 0.02²) (``base``), N(0, 1) (``big``), sinusoidal,
    MDS and N(0, 0.02²) with dropout (``drop``); a token embedding's expected norm 0.02 √d; Spearman's ρ of final
    stress with held-out loss over all runs (``fragile_rho``); the task's d(0, 1) and ‖p_0 − p_1‖ of the MDS
    table before (``gap0``, largest) and after training (over seeds); and the sentences on them."""
    from scipy.stats import spearmanr

    runs = init_frame(result)
    variants = {"base": BASE, "big": BIG, "sin": SINUSOIDAL, "mds": MDS,
                "drop": [v for v in runs["variant"].unique() if "dropout" in v][0]}
    four = ("base", "big", "sin", "mds")
    means = {f"init_{name}_{key}": variant_mean(runs, variants[key], column)
             for name, column, keys in (("steps", "steps_to_threshold", four), ("loss", "final_loss", ("base", "big")),
                                        ("acc", "eval_accuracy", ("base", "big")),
                                        ("evloss", "eval_loss", ("base", "drop")), ("norm", "initial row norm", four),
                                        ("change", "relative_change", four))
             for key in keys}
    # a small table is "rewritten" when even the least-changed small one moves 5× more than the most-changed large one
    small_change = min(means["init_change_base"], means["init_change_mds"])
    large_change = max(means["init_change_big"], means["init_change_sin"])
    s7_ok = (means["init_steps_base"] < means["init_steps_big"] and means["init_loss_base"] < means["init_loss_big"])
    study = as_record(result, StoredInitStudy)
    k_mds = [i for i, (name, _) in enumerate(study.variants) if name == MDS][0]
    before, after = study.tables_initial[k_mds], study.tables_final[k_mds]
    # ‖p_0 − p_1‖ per seed, before and after training
    gap0 = np.linalg.norm(before[:, 0] - before[:, 1], axis=1)
    gapT = np.linalg.norm(after[:, 0] - after[:, 1], axis=1)
    return {
        **means, "init_reached_sin": reached_text(runs.loc[runs["variant"] == SINUSOIDAL, "steps_to_threshold"].tolist()),
        "change_comment": ("A small table is rewritten by training; a large one keeps essentially the geometry it was "
                           "given." if small_change > 5 * large_change else
                           "Small and large tables change by comparable relative amounts."),
        "token_norm": float(0.02 * np.sqrt(CONFIGS[_settings(settings).scale].model.d_model)),
        "s7_word": "faster and to a lower loss" if s7_ok else "not both faster and lower",
        "fragile_rho": float(spearmanr(runs["final stress (scale_free)"], runs["eval_loss"]).statistic),
        "fragile_n": len(runs), "d01": float(study.D[0, 1]), "gap0": float(gap0.max()),
        "gapT_min": float(gapT.min()), "gapT_max": float(gapT.max()),
    }


def dropout_effects(dropout: Result):
    """The dropout study's comparison (S9): ``(study, runs without dropout, eff_loss, eff_acc)``, the last two the
    effect of the largest rate on held-out loss and accuracy, paired by seed (``SeedInterval``)."""
    runs, study = td.dropout_runs(dropout), as_record(dropout, StoredDropoutStudy)
    return (study, [r for r in runs if r.dropout == 0.0],
            *(td.dropout_effect(runs, study.rate, field_name=f) for f in ("eval_loss", "eval_accuracy")))


def dropout_summary(dropout: Result, init: Result) -> dict:
    """The numbers the chapter quotes from the dropout study (S9; glued as ``lt_<key>``): the generalisation gap
    of the initialisation study's N(0, 0.02²) runs (``s9_gap_big``) and of the runs without dropout, and dropout's
    held-out effects, mean [95% interval]."""
    study, none, eff_loss, eff_acc = dropout_effects(dropout)
    frame = init_frame(init)
    return {
        "s9_gap_big": variant_mean(frame, BASE, "eval_loss") - variant_mean(frame, BASE, "final_loss"),
        "s9_n_train": study.n_train, "s9_passes": study.passes, "s9_n_seeds": len(study.seeds),
        "s9_gap_small": float(np.mean([r.gap for r in none])),
        "s9_train_acc": float(np.mean([r.train_accuracy for r in none])), "s9_rate": study.rate,
        "s9_eff_loss": eff_loss.text("{:+.3f}", with_t=False), "s9_eff_acc": eff_acc.text("{:+.3f}", with_t=False),
        "s9_eff_t": f"{eff_loss.t:.2f}",
    }
