r"""Real corpora: the stress of every encoding against the positional geometry of SST-2 and IMDB.

This module holds the experiments of the chapter *Real corpora* (claims C6, C7, C8 of the paper).

**The corpus side.** For a corpus split, a special-token policy and $n$ positions, the positional
marginals $\mu_i$ give the chord Hellinger matrix (paper Eq. 3)

$$D_{ij} = \bigl\|\sqrt{\mu_i} - \sqrt{\mu_j}\bigr\|_2 ,$$

its double-centred Gram matrix $B = -\tfrac12 J D^{(2)} J$ and the sampling-noise floor
$F_{ij} = \sqrt{(\delta_i^2 + \delta_j^2)/2}$ (:func:`posgeom.geometry.noise_floor`).

**"Approximately shift-equivariant, rank 1"** is measured two ways.

* *Shift equivariance*: the Toeplitz projection $T(D)_{ij} = \operatorname{mean}\{D_{kl} : |k-l| = |i-j|\}$
  keeps the part of $D$ that depends on the offset only; its share of the variance of the off-diagonal
  entries is $R^2_{\mathrm{shift}} = 1 - \sum_{i<j}(D - T)^2_{ij} / \sum_{i<j}(D_{ij} - \bar d)^2$.
* *Rank one above the noise floor*: noise adds to $B$ the Gram matrix of the floor,
  $B_F = -\tfrac12 J F^{(2)}_{\text{off}} J$ (independent errors on each $\sqrt{\hat\mu_i}$; its top
  eigenvalue $\lambda_{\max}(B_F)$ is what noise alone can put in one direction). A direction of $B$
  is *above the noise floor* when $\lambda_k(B) > \lambda_{\max}(B_F)$, and the share of the
  above-noise mass held by the first direction is

  $$s_1 = \frac{\lambda_1 - \lambda_{\max}(B_F)}{\sum_k \bigl(\lambda_k - \lambda_{\max}(B_F)\bigr)_+} .$$

  We also report $\lambda_1 / \sum_k \lambda_k^+$ for $B$ and for the debiased
  $\tilde B = -\tfrac12 J (D^{(2)} - F^{(2)})_{\text{off}} J$ ($\mathbb E\,\hat d_{ij}^2 \approx d_{ij}^2 + F_{ij}^2$).

**The resolvable geometry.** The bootstrap floor resamples only tokens already seen, so for a
heavy-tailed vocabulary it underestimates the noise. A model-free estimate splits the sequences into
two random halves $A$, $B$ and compares positions *across* halves. With $a_i = \sqrt{\hat\mu_i^A}$,
$b_j = \sqrt{\hat\mu_j^B}$ and the symmetrised cross products $G_{ij} = \tfrac12(a_i^\top b_j + a_j^\top b_i)$,
independence of the halves gives $\mathbb E\, G_{ij} = \bar a_i^\top \bar a_j$ for every $i, j$ (including
$i = j$), where $\bar a_i = \mathbb E \sqrt{\hat\mu_i}$: the sampling noise cancels in expectation. The
*resolvable* distance is the chord distance between the directions of $\bar a_i$ and $\bar a_j$,

$$R_{ij}^2 = 2 - \frac{2\, G_{ij}}{\sqrt{G_{ii}\, G_{jj}}},$$

which is $\sqrt 2$ for disjoint supports and $0$ for equal distributions whatever the sample size. Tokens
too rare to be seen at half the corpus size shrink $\bar a_i$ and do not count: $R$ is the geometry the
corpus can resolve (:func:`posgeom.geometry.resolvable_distances`); negative $R^2$ (noise) are clipped and their share
is reported.

**The encoding side**: sinusoidal (width $d$), RoPE (head width $d/H$, per unit
vector), ALiBi ($\hat d_{ij} = \bar m |i-j|$, the mean slope or one head), the learned table of a
pretrained model and one trained from scratch here, random tables $\mathcal N(0, \sigma^2)$ over
several seeds, classical MDS at full and low rank, SMACOF started from MDS,
and no encoding. Each gets its ``"paper"`` and ``"scale_free"`` stress.

**ALiBi's paper stress is a parabola in the slope.** With $a_{ij} = |i-j|$ and sums over $i<j$,

$$\sigma_{\text{paper}}(m) = \frac{m^2 \sum a^2 - 2m \sum a d + \sum d^2}{\sum d^2},$$

minimal at $m^* = \sum a d / \sum a^2$ where it equals the ``"scale_free"`` stress; a target value
$t$ above that minimum is reached at the two slopes
$m_\pm = \bigl(\sum ad \pm \sqrt{(\sum ad)^2 - \sum a^2 \sum d^2 (1 - t)}\bigr) / \sum a^2$.
:func:`posgeom.geometry.alibi_slopes_for` computes them; :func:`run_alibi_choices` lists which natural choices
(number of positions, special tokens, Hellinger form, head count, slope) give which value.

The code is split by concern: ``real_corpora_geometry`` (settings, the corpus
geometry, the noise-aware rank), ``real_corpora_draws`` (spreads over cross-half
splits and corpus subsets), ``real_corpora_stress``
(the stress table as typed records, its bootstrap intervals, the learned tables) and
``real_corpora_alibi`` (ALiBi's parabola); this module gathers their public names.
Every experiment goes through :meth:`posgeom.registry.Registry.run`, so its numbers are stored with a
manifest. ``python -m posgeom.experiments real-corpora`` runs them all at the scale of
``POSGEOM_SCALE`` (``paper``: full corpora, BERT-base trained from scratch; a GPU).
"""

from __future__ import annotations

from ..config import Settings, settings_or_default as _settings
from ..registry import Result
from .real_corpora_alibi import run_alibi_choices
from .real_corpora_draws import (
    DRAW_STATISTICS, draw_statistics, resolvable_draws, run_resolvable_splits, run_subset_draws, spread,
)
from .real_corpora_geometry import (
    CONFIGS, CORPUS_NAMES, chapter_settings, NORMALIZATIONS, PAPER_ALIBI_SST2, RANK_OPTIONS, AlibiGrid, CorpusSource,
    DrawOptions, EncodingOptions, IntervalOptions, NoiseOptions, PlainText, RealCorporaOptions, ScratchModel,
    ScratchTraining, SmacofOptions, check_corpus, corpus_geometry_of, corpus_geometry_values, corpus_options,
    encoding_shape, paper_results, rank_report, resolvable_summary,
    run_corpus_geometry, run_noise_aware_rank, source_description,
)
from .real_corpora_stress import (
    INTERVAL_DIFFERENCES, INTERVAL_STATISTICS, RANDOM_ROW, STRESS_ENCODINGS, StressRow, alibi_head_stresses,
    interval_text, mds_row, pretrained_table, run_scratch_table,
    run_stress_intervals, run_stress_table, smacof_row, stress_dataframe, stress_pair, stress_records, stress_rows,
    train_scratch_table,
)


def run_scratch_tables(settings: Settings | None = None, *, force: bool = False,
                       progress: bool = True) -> dict[str, Result]:
    """The tables trained from scratch for every corpus of ``scratch_corpora`` at this scale, by corpus.

    The chapter's one training step: ``posgeom reproduce`` runs it under ``torchrun`` at paper scale with
    several GPUs, and :func:`run_stress_table` then reads the stored tables.
    """
    settings = _settings(settings)
    return {corpus: run_scratch_table(settings, corpus=corpus, force=force, progress=progress)
            for corpus in chapter_settings(settings.scale).scratch_corpora}


def run_all(settings: Settings | None = None, *, corpora=CORPUS_NAMES, force: bool = False,
            progress: bool = True) -> dict[str, Result]:
    """Run every experiment of the chapter for ``corpora`` at ``settings.scale``; returns them by name."""
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    out: dict[str, Result] = {}
    for corpus in corpora:
        out[f"geometry_{corpus}"] = run_corpus_geometry(settings, corpus=corpus, force=force)
        if corpus in cfg.scratch_corpora:
            out[f"scratch_{corpus}"] = run_scratch_table(settings, corpus=corpus, force=force, progress=progress)
        out[f"stress_{corpus}"] = run_stress_table(settings, corpus=corpus, force=force, progress=progress)
        if corpus in cfg.rank_corpora:
            out[f"rank_{corpus}"] = run_noise_aware_rank(settings, corpus=corpus, force=force)
        if corpus in cfg.intervals.corpora:
            out[f"intervals_{corpus}"] = run_stress_intervals(settings, corpus=corpus, force=force)
        out[f"splits_{corpus}"] = run_resolvable_splits(settings, corpus=corpus, force=force)
        if corpus in cfg.draws.subset_corpora:
            out[f"subsets_{corpus}"] = run_subset_draws(settings, corpus=corpus, force=force)
    out["alibi_choices_sst2"] = run_alibi_choices(settings, corpus="sst2", force=force)
    return out


__all__ = [
    "CONFIGS", "chapter_settings", "RealCorporaOptions", "CorpusSource", "NoiseOptions", "EncodingOptions", "SmacofOptions", "ScratchModel",
    "ScratchTraining", "AlibiGrid", "IntervalOptions", "DrawOptions", "CORPUS_NAMES", "PAPER_ALIBI_SST2",
    "NORMALIZATIONS", "run_scratch_tables", "PlainText", "check_corpus", "corpus_options", "encoding_shape", "source_description",
    "corpus_geometry_of", "resolvable_summary", "corpus_geometry_values",
    "run_corpus_geometry", "RANK_OPTIONS", "rank_report", "run_noise_aware_rank", "DRAW_STATISTICS",
    "draw_statistics", "spread", "resolvable_draws", "run_resolvable_splits", "run_subset_draws",
    "STRESS_ENCODINGS", "RANDOM_ROW", "StressRow", "mds_row", "smacof_row", "stress_records", "pretrained_table",
    "train_scratch_table", "run_scratch_table", "stress_pair", "alibi_head_stresses", "stress_rows", "run_stress_table",
    "stress_dataframe", "INTERVAL_STATISTICS", "INTERVAL_DIFFERENCES",
    "run_stress_intervals", "interval_text", "run_alibi_choices", "paper_results", "run_all",
]
