r"""The chapter "Real corpora" (:mod:`posgeom.experiments.real_corpora`): typed reads, the captions and the rows for
C6, C7 and C8."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..corpora.identifiers import Corpus
from ..encodings.identifiers import Encoding
from ..experiments.settings import find
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..experiments.real_corpora import (CONFIGS, RANK_OPTIONS, AlibiChoicesRecord, CorpusGeometryRecord,
                                        NoiseAwareRankRecord, ResolvableSplitsRecord, StressIntervalsRecord,
                                        StressRow, StressTableRecord, stress_records)
from ..experiments.real_corpora_geometry import corpus_options
from ..report import ComparisonRow, decided_rows
from ..wording import describe_scales, describe_sequences, model_words, rank_words, special_words

__all__ = ["PlainText", "describe_corpus", "geometry_facts", "alibi_parabola", "RESOLVED_NOISE_SHARE", "RowInputs",
           "c6_row", "c7_value_row", "c7_ranking_row", "c7_shift_row", "c8_row", "comparison_rows", "CORPUS_LABELS",
           "corpus_caption", "captions"]

#: A corpus's resolvable geometry counts as resolved when, in every cross-half split, fewer than this share
#: of its pairs are noise (R² < 0).
RESOLVED_NOISE_SHARE = 0.1


class PlainText(str):
    """Text whose display is the text itself, without quotes (for MyST-NB ``glue`` of computed phrases)."""

    __repr__ = str.__str__


def describe_corpus(g: CorpusGeometryRecord) -> str:
    """One line: the corpus, its sequences and positions, what was dropped or truncated, and the reach."""
    o = g.options
    return (f"{o.corpus}/{o.split}: {g.n_sequences:,} sequences, n = {g.n_positions} positions ({g.n_kept} kept, "
            f"dropped {list(g.dropped)}), {g.n_truncated:,} truncated, special tokens {o.special!r}, reach N_i from "
            f"{g.reach_min:,} to {g.reach_max:,}")


#: The summaries of a corpus geometry that the pages glue as ``<corpus>_<name>`` (:func:`geometry_facts`).
GLUED_SUMMARIES = ("n_sequences", "n_positions", "n_kept", "dropped", "n_truncated", "reach_min", "reach_max",
                   "shift_r2", "share_raw", "rank_above_noise", "rank_mass_90", "resolvable_shift_r2",
                   "resolvable_share", "resolvable_negative_fraction", "noise_top", "self_noise_max")


def geometry_facts(g: CorpusGeometryRecord) -> dict:
    """What the page glues of a corpus geometry: the corpus, split and special tokens as text, and its summaries."""
    o = g.options
    return {"corpus": str(o.corpus), "split": o.split, "special": o.special,
            **{name: getattr(g, name) for name in GLUED_SUMMARIES}}


def alibi_parabola(choices: Result, n_positions: int) -> pd.Series:
    """ALiBi's "paper" stress as a parabola in its slope under the chapter's choices (``m_star``, ``m_minus``, ...)."""
    par = pd.DataFrame([asdict(p) for p in choices.as_(AlibiChoicesRecord).parabolas])
    return par[(par.n == n_positions) & (par.special == "model") & (par.kind == "chord")].iloc[0]


@dataclass(frozen=True)
class RowInputs:
    """What the rows read, once: the stored runs, typed, by corpus key, and the notes the rows share."""

    scale: str
    geometries: dict         # CorpusGeometryRecord by corpus
    stress: dict             # the stress table's rows (StressRow), by corpus
    alibi_heads: np.ndarray  # the "paper" stress of each of ALiBi's heads on SST-2
    parabola: pd.Series      # ALiBi's "paper" stress as a parabola in its slope on SST-2 (alibi_parabola)
    ranks: dict              # NoiseAwareRankRecord of the corpora the scale computes it for
    splits: dict             # ResolvableSplitsRecord by corpus
    intervals: dict          # StressIntervalsRecord of the corpora the scale computes them for
    alibi_lowest_in: list
    imdb_resolved: bool      # IMDB's resolvable geometry has fewer than RESOLVED_NOISE_SHARE noisy pairs
    iv_note: str             # how the bracketed intervals were computed
    imdb_note: str           # why IMDB is left out where it is not resolved ("" where it is)

    def table_row(self, corpus: Corpus, row: str, rank: int | None = None) -> StressRow:
        """The stress table's row ``row`` (an encoding or a ``TableRow``) at ``rank`` on ``corpus``."""
        return find(self.stress[corpus], row=row, rank=rank)

    def iv(self, corpus: Corpus, row: str, norm: StressNormalization, fmt: str = "{:.3f}") -> str:
        """A headline stress with its bootstrap interval, or the value and why it has none."""
        if corpus in self.intervals:
            return self.intervals[corpus].statistics[row][norm].text(fmt)
        return fmt.format(getattr(self.table_row(corpus, row), norm)) + " (no interval at this scale)"

    def scale_free_difference(self, corpus: Corpus, a: str, b: str):
        """The bootstrap interval of the scale-free stress of row ``a`` minus row ``b`` on ``corpus``."""
        return self.intervals[corpus].differences[a][b][StressNormalization.SCALE_FREE]

    def iv_diff(self, corpus: Corpus, a: str, b: str, fmt: str = "{:.4f}") -> str:
        """:meth:`scale_free_difference` as text."""
        return self.scale_free_difference(corpus, a, b).text(fmt)

    def split_spread(self, corpus: str, key: str) -> str:
        """``key`` of the resolvable geometry over the cross-half splits: mean ± sd over the splits."""
        e = self.splits[corpus].spread[key]
        return f"{e.mean:.3f} ± {e.sd:.3f} over {len(self.splits[corpus].seeds)} splits"


def _row(x: RowInputs, claim: str, ours: str, corpus: str, decision, options: str, **paper) -> ComparisonRow:
    """A row of a pure-geometry check (no model) at the scale in force, stating first the options all rows share."""
    return ComparisonRow(claim, ours, x.scale, "none (pure geometry)", corpus, decision, options="n = 64 (SST-2) / "
                         "512 (IMDB), the model's special tokens, chord Hellinger, BERT-base shapes" + options, **paper)


def c6_row(x: RowInputs) -> ComparisonRow:
    """C6: full-rank MDS's "paper" stress on each corpus, decided by :func:`posgeom.verdicts.c6_near_zero`."""
    sst2, imdb = (x.table_row(c, Encoding.MDS).paper for c in Corpus)
    imdb_text = f", IMDB {imdb:.1e}" if x.imdb_resolved else f" (IMDB {imdb:.1e} against its noisy D only)"
    return _row(x, "C6", f"SST-2 {sst2:.1e}{imdb_text} (the paper's stress; no interval: rounding error of an exact "
                "construction)", "SST-2 train; IMDB train subset", rules.c6_near_zero([sst2, imdb], note=x.imdb_note),
                "", paper="≈ 0")


def c7_value_row(x: RowInputs) -> ComparisonRow:
    """C7's number: ALiBi's "paper" stress on SST-2 at its standard slopes (:func:`posgeom.verdicts.c7_alibi_value`)."""
    heads = x.alibi_heads
    alibi = x.intervals[Corpus.SST2].statistics[Encoding.ALIBI][StressNormalization.PAPER]
    return _row(x, "C7", f"mean slope (H = 12): {alibi.text('{:.3f}')}; single heads "
                f"{heads.min():.3f} to {heads.max():.3f}; off ALiBi's slopes, 0.563 is reached at "
                f"m = {x.parabola.m_minus:.4f} or {x.parabola.m_plus:.4f} (solved on this sample's parabola)",
                "SST-2 train", rules.c7_alibi_value(alibi, heads),
                "; " + x.iv_note, paper="0.563")


def c7_ranking_row(x: RowInputs) -> ComparisonRow:
    """C7's ranking on SST-2 (:func:`posgeom.verdicts.c7_alibi_ranking`)."""
    lowest, sst2, sf = x.alibi_lowest_in, Corpus.SST2, StressNormalization.SCALE_FREE
    variants = (f"; ALiBi lowest in the variants {', '.join(lowest)} of the corpus chapter's sensitivity table"
                if lowest else "; in no variant of the corpus chapter's sensitivity table is ALiBi lowest")
    alibi, sinusoidal, rope = Encoding.ALIBI, Encoding.SINUSOIDAL, Encoding.ROPE
    return _row(x, "C7", f"scale-free stress: ALiBi {x.iv(sst2, alibi, sf)} vs sinusoidal "
                f"{x.iv(sst2, sinusoidal, sf)}, RoPE {x.iv(sst2, rope, sf)} (D); "
                f"ALiBi − sinusoidal {x.iv_diff(sst2, alibi, sinusoidal)}, ALiBi − RoPE "
                f"{x.iv_diff(sst2, alibi, rope)}; resolvable: ALiBi {x.split_spread(sst2, alibi)} vs "
                f"sinusoidal {x.split_spread(sst2, sinusoidal)}, RoPE {x.split_spread(sst2, rope)}",
                "SST-2 train", rules.c7_alibi_ranking(x.scale_free_difference(sst2, alibi, sinusoidal),
                                                      x.scale_free_difference(sst2, alibi, rope), lowest_in=lowest),
                "; " + x.iv_note + variants, paper="ALiBi far below sinusoidal and RoPE")


def c7_shift_row(x: RowInputs) -> ComparisonRow:
    """C7's premise: SST-2's geometry is shift-equivariant, of rank 1 (:func:`posgeom.verdicts.c7_shift_equivariance`)."""
    sst2 = Corpus.SST2
    g, rank, n_splits = x.geometries[sst2], x.ranks[sst2], RANK_OPTIONS["n_resamples"]
    return _row(x, "C7", f"offset-only share {g.shift_r2:.2f} (D), {x.split_spread(sst2, 'shift_r2')} "
                f"(resolvable); first direction {g.share_raw:.0%} (D), {x.split_spread(sst2, 'share')} (resolvable), "
                f"{rank.first_share:.0%} (cross-fitted); noise-aware rank {rank_words(rank.text, n_splits)}",
                "SST-2 train", rules.c7_shift_equivariance(rank.interval, x.splits[sst2].spread["shift_r2"].mean),
                f", cross-half resolvable geometry, noise-aware rank over {n_splits} half-splits",
                paper="approximately shift-equivariant, rank 1",
                premise="SST-2's statistics are approximately shift-equivariant, of rank 1")


def c8_row(x: RowInputs) -> ComparisonRow:
    """C8: sinusoidal and RoPE nearly identical under "scale_free" (:func:`posgeom.verdicts.c8_sinusoidal_rope`)."""
    sinusoidal, rope, sf = Encoding.SINUSOIDAL, Encoding.ROPE, StressNormalization.SCALE_FREE

    def versus(c):  # sinusoidal's scale-free stress against RoPE's on corpus c
        return f"{x.iv(c, sinusoidal, sf, '{:.4f}')} vs {x.iv(c, rope, sf, '{:.4f}')}"
    imdb = "" if not x.imdb_resolved else (f"; IMDB {versus(Corpus.IMDB)}" + (
        f", difference {x.iv_diff(Corpus.IMDB, sinusoidal, rope)}" if Corpus.IMDB in x.intervals else ""))
    sin, rope_paper = (x.table_row(Corpus.SST2, e).paper for e in (sinusoidal, rope))
    return _row(x, "C8", f"SST-2 {versus(Corpus.SST2)}, difference {x.iv_diff(Corpus.SST2, sinusoidal, rope)}{imdb} "
                "(scale-free stress)", "SST-2 train" + ("; IMDB train subset" if x.imdb_resolved else ""),
                rules.c8_sinusoidal_rope(x.scale_free_difference(Corpus.SST2, sinusoidal, rope), sin / rope_paper),
                f"; {x.iv_note}; the paper's stress on SST-2: sinusoidal {sin:.0f} vs RoPE {rope_paper:.3f}"
                + x.imdb_note)


def comparison_rows(geometries: dict, tables: dict, choices: Result, ranks: dict, splits: dict, intervals: dict,
                    alibi_lowest_in: list, settings=None) -> list:
    """The chapter's rows for C6, C7 (three checks) and C8, from one :class:`RowInputs`.

    Parameters
    ----------
    geometries, tables, ranks, splits, intervals : dict of str to Result
        By corpus key: ``run_corpus_geometry``, ``run_stress_table``, ``run_noise_aware_rank``,
        ``run_resolvable_splits`` and ``run_stress_intervals`` (the last three where the scale computes them).
    choices : Result
        ``run_alibi_choices`` of SST-2.
    alibi_lowest_in : list of str
        The variants of the corpus chapter's sensitivity table in which ALiBi has the lowest scale-free stress.
    settings : Settings, optional

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """
    # what every row shares is read here, once (a run that waits for a GPU stops here, as before any row)
    settings = _settings(settings)
    icfg = CONFIGS[settings.scale].intervals
    splits = {c: r.as_(ResolvableSplitsRecord) for c, r in splits.items()}
    neg = splits[Corpus.IMDB].spread["negative_fraction"]
    iv_note = (f"[brackets]: {icfg.level:.0%} percentile bootstrap interval re-centred on the estimate (SST-2's "
               f"training phrases resampled with their sentence, IMDB's reviews one by one; {icfg.n_boot} replicates "
               f"of {icfg.n_folds} folds)")
    imdb_note = ("" if neg.max < RESOLVED_NOISE_SHARE else
                 f"; IMDB not resolved at this scale ({neg.mean:.0%} of its pairs are noise in the cross-half "
                 "estimate): more reviews (the full 25,000, paper scale) would resolve it")
    geometries = {c: r.as_(CorpusGeometryRecord) for c, r in geometries.items()}
    x = RowInputs(settings.scale, geometries, {c: stress_records(t) for c, t in tables.items()},
                  tables[Corpus.SST2].as_(StressTableRecord).alibi_head_paper,
                  alibi_parabola(choices, geometries[Corpus.SST2].n_positions),
                  {c: r.as_(NoiseAwareRankRecord) for c, r in ranks.items()}, splits,
                  {c: r.as_(StressIntervalsRecord) for c, r in intervals.items()}, alibi_lowest_in,
                  neg.max < RESOLVED_NOISE_SHARE, iv_note, imdb_note)
    return decided_rows([("C6", lambda: c6_row(x)), ("C7", lambda: c7_value_row(x)), ("C7", lambda: c7_ranking_row(x)),
                         ("C7", lambda: c7_shift_row(x)), ("C8", lambda: c8_row(x))], settings)


#: Each corpus as the pages name it, and what its sequences are called.
CORPUS_LABELS = {"sst2": "SST-2", "imdb": "IMDB"}
_UNITS = {"sst2": "sequences", "imdb": "reviews"}


def corpus_caption(scale: str, corpus: str) -> str:
    """A real corpus as the chapters count it at ``scale``: ``"SST-2 train (all sequences, n = 64, ...)"``."""
    opts = corpus_options(scale, corpus)
    size = describe_sequences(opts.max_sequences, _UNITS[corpus], random=True)
    return f"{CORPUS_LABELS[corpus]} {opts.split} ({size}, n = {opts.n_positions}, {special_words(opts.special)})"


def _scratch(scale: str) -> str:
    """The tables trained from scratch at ``scale`` in words: the model and the MLM steps per corpus."""
    conf = CONFIGS[scale]
    steps = " and ".join(f"{conf.scratch(c).max_steps:,} steps on {CORPUS_LABELS[c]}" for c in conf.scratch_corpora)
    # the shape in words (docs/STYLE.md: no configuration pasted into a sentence)
    return (f"{model_words(conf.scratch(conf.scratch_corpora[0]).model)}, trained by masked language modelling "
            f"for {steps}")


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``rccap_<key>``), and the box's at both scales."""
    settings = _settings(settings)
    quick = CONFIGS["quick"]
    # the sequences of each corpus counted at both scales
    sizes = {c: describe_scales(*(describe_sequences(corpus_options(s, c).max_sequences, _UNITS[c], random=True)
                                  for s in ("quick", "paper"))) for c in CORPUS_LABELS}
    return {
        "scale": settings.scale, "sst2": corpus_caption(settings.scale, "sst2"),
        "imdb": corpus_caption(settings.scale, "imdb"),
        "n_rep": int(CONFIGS[settings.scale].noise.n_rep),  # bootstrap replicates of the noise floor
        "quick_splits": int(quick.draws.n_splits),  # the cross-half splits per corpus at quick
        # the tables trained from scratch at each scale, for the "What this chapter needs" box
        "quick_scratch": _scratch("quick"), "paper_scratch": _scratch("paper"),
        # what takes the time at quick: IMDB's noise-aware rank (its positions, RANK_OPTIONS' half-splits)...
        "quick_rank": (f"{corpus_options('quick', 'imdb').n_positions} positions, "
                       f"{RANK_OPTIONS['n_resamples']} half-splits" if "imdb" in quick.rank_corpora else "not computed"),
        # ... and the subsets run_subset_draws redraws (each corpus of subset_corpora, each seed of subset_seeds)
        "quick_subsets": " and ".join(f"{len(quick.draws.subset_seeds)} {CORPUS_LABELS[c]} subsets"
                                      for c in quick.draws.subset_corpora) or "no subsets",
        "sst2_size": sizes["sst2"], "imdb_size": sizes["imdb"]}  # the sequences counted at both scales
