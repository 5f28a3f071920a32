r"""The chapter "Monotonicity" (:mod:`posgeom.experiments.monotonicity`, ``monotonicity_ntk``): the rows for C9 and
C11, C11's power check and the captions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import geometry as geo, verdicts as rules
from ..config import settings_or_default as _settings
from ..corpora.identifiers import Corpus
from ..encodings.identifiers import Encoding
from ..experiments.monotonicity import (CONFIGS, MonotonicityRow, MonotonicityTableRecord, ViolationIntervalsRecord,
                                        monotonicity_records)
from ..experiments.monotonicity_ntk import REGIMES
from ..experiments.real_corpora import CONFIGS as CORPUS_CONFIGS
from ..experiments.real_corpora_geometry import NoiseAwareRankRecord, corpus_options
from ..experiments.settings import find
from ..experiments.table_rows import TableRow
from ..registry import Result
from ..registry.typed import as_record
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_scales, describe_sequences, short_float
from .real_corpora import corpus_caption
from ..experiments.records.monotonicity import NTKRun

__all__ = ["monotonicity_dataframe", "order_row", "ntk_outcome", "displacement_violation", "power_checks",
           "OrderInputs", "natural_rank_rates", "c9_mds_row", "c9_random_row", "c9_pretrained_row", "c11_row",
           "comparison_rows", "captions"]


def monotonicity_dataframe(result: Result, intervals: Result | None = None) -> pd.DataFrame:
    """A stored ``run_monotonicity_table`` as a table, random rows as ``mean ± sd``, with intervals where given."""
    iv = intervals.as_(ViolationIntervalsRecord).statistics if intervals is not None else {}

    def text(row, key):
        sd = getattr(row, f"{key}_sd")
        return f"{getattr(row, key):.3f}" + (f" ± {sd:.3f}" if sd is not None else "")

    return pd.DataFrame.from_records([{
        "encoding": row.label, "options": row.options,
        # the bootstrap's estimate is this rate (same D, same encoding): its interval text holds it
        "violation rate": iv[row.row].text("{:.3f}") if row.row in iv else text(row, "violation_rate"),
        "Spearman ρ": text(row, "spearman"), "violation rate vs resolvable R": text(row, "violation_rate_resolvable"),
        "ties in D̂": f"{row.tied_fraction:.0%}"} for row in monotonicity_records(result)]).set_index("encoding")


def order_row(table: MonotonicityTableRecord, row: str, rank: int | None = None) -> MonotonicityRow:
    """The row ``row`` (an encoding or a ``TableRow``) at ``rank`` of a monotonicity table."""
    return find(table.rows, row=row, rank=rank)


def ntk_outcome(runs: dict) -> dict[tuple[str, int], NTKRun]:
    """``{(regime, seed): NTKRun}`` from ``run_ntk_all``'s ``{(regime, seed): Result}``."""
    return {(regime, seed): as_record(r, NTKRun, regime=regime, seed=int(seed), model=r.model)
            for (regime, seed), r in runs.items()}


def _seeds_text(x, fmt="{:.0%}") -> str:
    """Mean, and the range over the seeds."""
    return f"{fmt.format(np.mean(x))} [{fmt.format(np.min(x))}–{fmt.format(np.max(x))}]"


def displacement_violation(ntk: dict, settings=None) -> geo.SeedInterval:
    """C11's interval: the violation rate of the lazy runs' displacement ΔP, over the lazy seeds (95 %)."""
    cfg = CONFIGS[_settings(settings).scale].ntk
    return geo.seed_interval([ntk["lazy", s].violation_delta for s in cfg.seeds], 0.95)


def power_checks(ntk: dict, settings=None) -> list[PowerCheck]:
    """C11's decision over seeds for the power table (:func:`posgeom.report.power_frame`)."""
    return [PowerCheck("C11", "violation rate of ΔP, lazy runs", displacement_violation(ntk, settings),
                       rules.ORDER_EFFECT)]


def comparison_rows(sst2: Result, imdb: Result, intervals: dict, ranks: dict, ntk: dict,
                    settings=None) -> list[ComparisonRow]:
    """The chapter's rows, C9 (three checks) and C11 (from ``{(regime, seed): NTKRun}``, :func:`ntk_outcome`)."""
    settings = _settings(settings)
    x = OrderInputs(settings.scale, {Corpus.SST2: sst2, Corpus.IMDB: imdb}, intervals, ranks,
                    CORPUS_CONFIGS[settings.scale].intervals)
    return decided_rows([("C9", lambda: c9_mds_row(x)), ("C9", lambda: c9_random_row(x)),
                         ("C9", lambda: c9_pretrained_row(x)), ("C11", lambda: c11_row(ntk, settings))], settings)


@dataclass(frozen=True)
class OrderInputs:
    """What the C9 rows read, by corpus: the monotonicity tables (typed by the row that needs them, so that a table
    waiting for a GPU makes only its rows wait), the violation intervals and the noise-aware ranks."""

    scale: str
    tables: dict
    intervals: dict
    ranks: dict
    icfg: object

    def table(self, corpus: Corpus) -> MonotonicityTableRecord:
        """The monotonicity table of ``corpus``, typed."""
        return self.tables[corpus].as_(MonotonicityTableRecord)

    def row(self, ours: str, model: str, decision, options: str, paper: str) -> ComparisonRow:
        """A C9 row: both corpora, the options every row states and then ``options``."""
        return ComparisonRow("C9", ours, self.scale, model, "SST-2 train; IMDB train subset", decision, paper=paper,
                             options="n = 64 (SST-2) / 512 (IMDB), the model's special tokens, chord Hellinger" + options)

    @property
    def iv_note(self) -> str:
        """How the bracketed intervals were computed."""
        return (f"[brackets]: {self.icfg.level:.0%} percentile bootstrap interval re-centred on the estimate (SST-2's "
                f"training phrases resampled with their sentence; {self.icfg.n_boot} replicates of "
                f"{self.icfg.n_folds} folds; MDS recomputed on each replicate at the closest rank)")

    def viol_text(self, corpus: Corpus, row: str) -> str:
        """A violation rate with its bootstrap interval (the rate only, where this scale computes none)."""
        if corpus in self.intervals:
            return self.intervals[corpus].as_(ViolationIntervalsRecord).statistics[row].text("{:.1%}")
        return f"{order_row(self.table(corpus), row).violation_rate:.1%} (no interval at this scale)"


def natural_rank_rates(x: OrderInputs) -> dict[str, float]:
    """P_MDS's violation rate by corpus at rank 1 and each rank of the noise-aware rank interval the table scored."""
    out = {}
    for corpus, label in ((Corpus.SST2, "SST-2"), (Corpus.IMDB, "IMDB")):
        t, (low, high) = x.table(corpus), x.ranks[corpus].as_(NoiseAwareRankRecord).interval
        for k in sorted({1, *range(int(low), int(high) + 1)}):
            hit = np.flatnonzero(t.mds_ranks == k)
            if hit.size:
                out[f"rank {k} on {label}"] = float(t.mds_violation[hit[0]])
    return out


def c9_mds_row(x: OrderInputs) -> ComparisonRow:
    """C9: P_MDS's violation rate at its natural ranks against the paper's 22% (:func:`posgeom.verdicts.c9_mds_violation`)."""
    s, i = x.table(Corpus.SST2), x.table(Corpus.IMDB)
    natural, closest = natural_rank_rates(x), TableRow.MDS_CLOSEST_RANK
    return x.row("natural ranks: " + "; ".join(f"{k} {v:.1%}" for k, v in natural.items())
                 + f". Closest to 22%: SST-2 rank {s.closest_rank}, {x.viol_text(Corpus.SST2, closest)}; "
                 f"IMDB rank {i.closest_rank}, {i.closest_violation:.1%}"
                 + (f" {x.viol_text(Corpus.IMDB, closest)}" if Corpus.IMDB in x.intervals else "")
                 + "; 0% at full rank", "none (pure geometry)",
                 rules.c9_mds_violation(natural, np.concatenate([s.mds_violation, i.mds_violation])),
                 "; natural ranks: 1 and the noise-aware rank's interval; " + x.iv_note, "P_MDS 22%")


def c9_random_row(x: OrderInputs) -> ComparisonRow:
    """C9's reference: random tables violate 50% of the order (:func:`posgeom.verdicts.c9_random_violation`)."""
    s = x.table(Corpus.SST2)
    rand_s, rand_i = order_row(s, Encoding.RANDOM), order_row(x.table(Corpus.IMDB), Encoding.RANDOM)
    return x.row(f"{rand_s.violation_rate:.1%} ± {rand_s.violation_rate_sd:.1%} (SST-2), "
                 f"{rand_i.violation_rate:.1%} ± {rand_i.violation_rate_sd:.1%} (IMDB) (mean ± sd over seeds)",
                 "none (random tables)", rules.c9_random_violation([rand_s.violation_rate, rand_i.violation_rate]),
                 f", N(0, 0.02²), d = 768, {len(s.random_violation)} seeds", "random 50%")


def c9_pretrained_row(x: OrderInputs) -> ComparisonRow:
    """C9: pretrained tables correlate moderately with the order (:func:`posgeom.verdicts.c9_pretrained_correlation`)."""
    sst2, imdb, pretrained = Corpus.SST2, Corpus.IMDB, TableRow.LEARNED_PRETRAINED
    d_pre = (x.intervals[sst2].as_(ViolationIntervalsRecord).differences[pretrained][Encoding.SINUSOIDAL]
             if sst2 in x.intervals else None)
    pre = {c: order_row(x.table(c), pretrained).spearman for c in Corpus}
    model = x.table(sst2).model
    return x.row(f"Spearman {pre[sst2]:.2f} (SST-2), {pre[imdb]:.2f} (IMDB); violation rate "
                 f"{x.viol_text(sst2, pretrained)} (SST-2)"
                 + (f", pretrained − sinusoidal {d_pre.estimate:+.1%} [{d_pre.low:+.1%}, {d_pre.high:+.1%}]"
                    if d_pre is not None else ""), model,
                 rules.c9_pretrained_correlation({"SST-2 (n = 64)": pre[sst2], "IMDB (n = 512)": pre[imdb]}, model),
                 "; " + x.iv_note, "pretrained: moderate positive correlation")


def c11_row(ntk: dict, settings=None) -> ComparisonRow:
    """C11 (:func:`posgeom.verdicts.c11_ntk_order`) from ``{(regime, seed): NTKRun}``."""
    sc = _settings(settings).scale
    cfg = CONFIGS[sc].ntk

    def over_seeds(regime, *values):  # final values of the regime's runs, one array over its seeds each
        return [np.array([getattr(ntk[regime, s], v) for s in cfg.seeds_of(regime)]) for v in values]

    loss_lazy, kc_lazy, vd_lazy, v_lazy = over_seeds("lazy", "final_train_loss", "kernel_change", "violation_delta",
                                                     "violation")
    (kc_rich,), (v_small,) = over_seeds("rich", "kernel_change"), over_seeds("lazy_small_init", "violation")
    # is the displacement (and the table) ordered like the corpus? intervals of the mean violation rate over the lazy seeds
    vd_iv, v_iv = displacement_violation(ntk, settings), geo.seed_interval(v_lazy, 0.95)
    c11 = rules.c11_ntk_order(loss_lazy, kc_lazy, kc_rich, vd_iv, v_iv)
    # The claim's condition is the NTK regime, which the rule measures (the kernel moves by less than
    # rules.LAZY_KERNEL_CHANGE): reaching it by the output scale α rather than by width is a route to the
    # condition, not a change of it, so this row decides C11 (its options say how the regime was reached).
    if rules.ntk_learned(loss_lazy) and rules.ntk_lazy(kc_lazy, kc_rich):
        ours = (f"lazy (training loss {_seeds_text(loss_lazy, '{:.3f}')}, kernel change {_seeds_text(kc_lazy, '{:.1%}')}): "
                f"violation of ΔP {vd_iv.text('{:.1%}')} (95% interval), of P {_seeds_text(v_lazy, '{:.1%}')}; "
                f"of P started near a point {_seeds_text(v_small)}")
        model, paper = "[CLS] classifier, lazy training (output scale α), SGD", "monotone fixed point in the NTK regime"
        options = (f"the NTK regime reached by the output scale α = {cfg.lazy.output_scale:g} (lazy training) rather "
                   f"than by width; {len(cfg.seeds)} seeds, {cfg.train_sequences} training sentences fitted, "
                   f"{cfg.steps} SGD steps, one layer of width {cfg.lazy.d_model}; rich regime for contrast")
    else:
        ours = (f"lazy: training loss {_seeds_text(loss_lazy, '{:.3f}')}, kernel change {_seeds_text(kc_lazy, '{:.1%}')} "
                f"(rich {_seeds_text(kc_rich, '{:.1%}')}); violation of ΔP {_seeds_text(vd_lazy)}")
        model, paper = "[CLS] classifier trained by SGD (1 layer)", None
        options = f"{len(cfg.seeds)} seeds, {cfg.steps} SGD steps"
    return ComparisonRow("C11", ours, sc, model, "SST-2 train, positions 0-15", c11, options=options, paper=paper)


def _regime_words(regime, table: str) -> str:
    """One NTK regime in words: width, depth, weights, table, SGD rate, output scale."""
    layers = f"{regime.n_layers} layer{'s' if regime.n_layers != 1 else ''}"
    weights = f"weights N(0, {regime.init_std if regime.init_std is not None else 0.02:g}²)"
    scale = f", output scale {regime.output_scale:g}" if regime.output_scale is not None else ""
    return f"d = {regime.d_model}, {layers}, {weights}, table {table}, SGD rate {regime.lr:g}{scale}"


def _ntk_runs(scale: str) -> str:
    """The NTK runs at ``scale`` in words, counted as ``run_ntk_all`` loops (each regime over its seeds)."""
    ntk = CONFIGS[scale].ntk
    contrasts = [r for r in REGIMES if r != "lazy"]
    widths = "; ".join(f"{'lazy with a small table' if r == 'lazy_small_init' else r}, width {ntk.regime(r).d_model}"
                       for r in contrasts)
    return (f"{sum(len(ntk.seeds_of(r)) for r in REGIMES)} SGD runs of {ntk.steps:,} steps on SST-2 with n = "
            f"{ntk.n_positions}: {len(ntk.seeds)} seeds of the lazy regime (width {ntk.lazy.d_model}) and "
            f"{len(ntk.contrast_seeds)} of each of its {len(contrasts)} contrasts ({widths})")


def _ntk_sentences(ntk, unit: str = "") -> str:
    """The NTK runs' training sentences: all of them, or how many (followed by ``unit``)."""
    return "all training sentences" if ntk.train_sequences is None else f"{ntk.train_sequences:,}{unit}"


def captions(settings=None) -> dict:
    """The captions' facts at the scale in force (glued as ``mocap_<key>``), and the box's at both scales."""
    scale = _settings(settings).scale
    ntk, paper = CONFIGS[scale].ntk, CONFIGS["paper"]
    small, imdb_ranks = short_float(ntk.lazy_small_init.table_sigma), paper.mds_ranks("imdb")
    sizes = {c: describe_scales(*(describe_sequences(corpus_options(s, c).max_sequences, unit, random=True)
                                  for s in ("quick", "paper"))) for c, unit in (("sst2", "sentences"), ("imdb", "reviews"))}
    return {
        "scale": scale, "sst2": corpus_caption(scale, "sst2"), "imdb": corpus_caption(scale, "imdb"),
        "ntk_positions": f"0-{ntk.n_positions - 1}",
        "ntk_regimes": (f"lazy: {_regime_words(ntk.lazy, 'N(0, 0.02²)')}; lazy, small table: "
                        f"{_regime_words(ntk.lazy_small_init, f'N(0, {small}²)')}; rich: "
                        f"{_regime_words(ntk.rich, 'N(0, 0.02²)')}"),
        "ntk_steps": f"{ntk.steps:,} SGD steps of {ntk.batch_size} sentences from {_ntk_sentences(ntk)}",
        "ntk_probes": int(ntk.probe_sequences), "quick_ntk": _ntk_runs("quick"), "paper_ntk": _ntk_runs("paper"),
        "paper_random_seeds": len(paper.random_seeds),
        "paper_imdb_ranks": ("every MDS rank" if imdb_ranks is None
                             else "MDS ranks " + ", ".join(str(int(k)) for k in imdb_ranks)),
        "sst2_sentences": sizes["sst2"], "imdb_reviews": sizes["imdb"],
        "ntk_data": describe_scales(*(f"{_ntk_sentences(CONFIGS[s].ntk, ' training sentences')} and "
                                      f"{CONFIGS[s].ntk.probe_sequences:,} probe sentences" for s in ("quick", "paper")))}
