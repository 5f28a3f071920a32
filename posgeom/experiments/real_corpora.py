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
:func:`alibi_slopes_for` computes them; :func:`run_alibi_choices` lists which natural choices
(number of positions, special tokens, Hellinger form, head count, slope) give which value.

Every experiment goes through :meth:`posgeom.registry.Registry.run`, so its numbers are stored with a
manifest. ``python -m posgeom.experiments.real_corpora`` runs them all at the scale of
``POSGEOM_SCALE`` (``paper``: full corpora, BERT-base trained from scratch; a GPU).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..corpora.distances import CorpusDistances, CorpusOptions, corpus_distances
from ..corpora.tokenize import table_rows
from ..registry import Registry, Result

CORPUS_NAMES = ("sst2", "imdb")
#: The paper's ALiBi stress on SST-2 (claim C7).
PAPER_ALIBI_SST2 = 0.563
NORMALIZATIONS = ("paper", "scale_free")
#: The fixed encodings of the stress table (:func:`posgeom.encodings.encoding_set`), in its row order.
STRESS_ENCODINGS = ("sinusoidal", "rope", "alibi", "alibi (kernel rule)", "equidistant")

_SCRATCH_MODEL_QUICK = {"d_model": 64, "n_layers": 2, "n_heads": 2, "d_ff": 256}
_SCRATCH_MODEL_PAPER = {"d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 3072}

#: Per-scale settings. ``quick`` runs on a 2-core CPU; ``paper`` is the full corpora and BERT-base
#: trained from scratch (a GPU). The fixed encodings use BERT-base's geometry at both scales
#: (d = 768, H = 12, d_head = 64): they are formulas and cost nothing.
CONFIGS: dict[str, dict[str, Any]] = {
    "quick": {
        "corpora": {
            "sst2": {"split": "train", "n_positions": 64, "max_sequences": None, "br_tags": "keep"},
            # a seeded random subset of the 25,000 training reviews (the file is ordered by label)
            "imdb": {"split": "train", "n_positions": 512, "max_sequences": 5000, "br_tags": "space"},
        },
        "special": "model",
        "min_count": 1,
        "kind": "chord",
        "subset_seed": 0,
        "noise": {"method": "bootstrap", "n_rep": 8},
        "encodings": {
            "d_model": 768, "n_heads": 12, "base": 10000.0, "layout": "interleaved",
            "random_sigma": 0.02, "random_seeds": [0, 1, 2, 3, 4],
        },
        "mds_ranks": [1, 2, 3, 5, 10],
        "smacof": {"ranks": [1, 2, 3], "max_iter": 300, "eps": 1e-6},
        "scratch": {
            # one CPU thread: a model this small runs faster on one than on two (posgeom.models.threads)
            "sst2": {"model": _SCRATCH_MODEL_QUICK, "max_steps": 100, "batch_size": 32, "lr": 2e-3,
                     "warmup_steps": 10, "every": 20, "threads": 1},
            "imdb": {"model": _SCRATCH_MODEL_QUICK, "max_steps": 40, "batch_size": 4, "lr": 2e-3,
                     "warmup_steps": 4, "every": 10, "threads": 1},
        },
        # corpora whose stress table includes a table trained from scratch (IMDB's n = 512 is too slow
        # for a 2-core CPU: at quick scale only SST-2 gets one; run_scratch_table(corpus="imdb") still works)
        "scratch_corpora": ["sst2"],
        "alibi_choices": {"n_positions": [32, 64], "specials": ["model", "content"],
                          "kinds": ["chord", "normalized"], "head_counts": [8, 12, 16]},
        # corpora whose noise-aware rank the chapter computes (IMDB's n = 512 takes minutes on 2 cores)
        "rank_corpora": ["sst2"],
        # bootstrap intervals of the headline stresses: replicates, folds (clusters of random sequences)
        "intervals": {"corpora": ["sst2"], "n_boot": 200, "n_folds": 100, "level": 0.95},
    },
    "paper": {
        "corpora": {
            "sst2": {"split": "train", "n_positions": 64, "max_sequences": None, "br_tags": "keep"},
            "imdb": {"split": "train", "n_positions": 512, "max_sequences": None, "br_tags": "space"},
        },
        "special": "model",
        "min_count": 1,
        "kind": "chord",
        "subset_seed": 0,
        "noise": {"method": "bootstrap", "n_rep": 50},
        "encodings": {
            "d_model": 768, "n_heads": 12, "base": 10000.0, "layout": "interleaved",
            "random_sigma": 0.02, "random_seeds": list(range(20)),
        },
        "mds_ranks": [1, 2, 3, 5, 10, 20],
        "smacof": {"ranks": [1, 2, 3], "max_iter": 5000, "eps": 1e-9},
        "scratch": {
            "sst2": {"model": _SCRATCH_MODEL_PAPER, "max_steps": 20000, "batch_size": 128, "lr": 1e-4,
                     "warmup_steps": 1000, "every": 500, "threads": None},
            "imdb": {"model": _SCRATCH_MODEL_PAPER, "max_steps": 20000, "batch_size": 32, "lr": 1e-4,
                     "warmup_steps": 1000, "every": 500, "threads": None},
        },
        "scratch_corpora": ["sst2", "imdb"],
        "alibi_choices": {"n_positions": [16, 32, 48, 64], "specials": ["model", "content"],
                          "kinds": ["chord", "normalized", "geodesic"], "head_counts": [8, 12, 16]},
        "rank_corpora": ["sst2", "imdb"],
        "intervals": {"corpora": ["sst2", "imdb"], "n_boot": 1000, "n_folds": 200, "level": 0.95},
    },
}


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------


class PlainText:
    """Text whose display is the text itself, without quotes (for MyST-NB ``glue`` of computed phrases)."""

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def _check_corpus(corpus: str) -> str:
    if corpus not in CORPUS_NAMES:
        raise ValueError(f"unknown corpus {corpus!r}; valid corpora are {', '.join(CORPUS_NAMES)}")
    return corpus


def corpus_options(scale: str, corpus: str, **overrides) -> dict[str, Any]:
    """The options that define a corpus's geometry at ``scale``, with ``overrides`` applied.

    Parameters
    ----------
    scale : {"quick", "paper"}
    corpus : {"sst2", "imdb"}
    **overrides
        Any of ``split``, ``n_positions``, ``max_sequences``, ``br_tags``, ``special``,
        ``min_count``, ``kind``, ``subset_seed``.

    Returns
    -------
    dict
        ``corpus``, ``split``, ``n_positions``, ``max_sequences``, ``br_tags``, ``special``,
        ``min_count``, ``kind``, ``subset_seed``.
    """
    if scale not in CONFIGS:
        raise ValueError(f"unknown scale {scale!r}; valid scales are {', '.join(CONFIGS)}")
    cfg = CONFIGS[scale]
    opts = {"corpus": _check_corpus(corpus), **cfg["corpora"][corpus]}
    opts.update(special=cfg["special"], min_count=cfg["min_count"], kind=cfg["kind"], subset_seed=cfg["subset_seed"])
    unknown = set(overrides) - set(opts)
    if unknown:
        raise ValueError(f"unknown corpus option(s) {sorted(unknown)}; valid options are {sorted(opts)}")
    opts.update(overrides)
    return opts


# --------------------------------------------------------------------------------------------
# Corpus → tokens → counts → D
# --------------------------------------------------------------------------------------------


def _source_description(settings: Settings, opts: dict[str, Any]) -> dict[str, Any]:
    from ..corpora.real import resolve_source

    return resolve_source(opts["corpus"], opts["split"], data_dir=settings.data_dir).describe()


def corpus_geometry_of(settings: Settings, opts: dict[str, Any]) -> CorpusDistances:
    """The corpus under ``opts`` (:func:`corpus_options`) through the one route,
    :func:`posgeom.corpora.distances.corpus_distances`, with its token ids (no registry: the cheap part).

    Returns
    -------
    posgeom.corpora.distances.CorpusDistances
        ``D`` (n_kept, n_kept), ``positions``, ``tokens``, ``counts`` (n, v), ``marginals`` (n_kept, v).
    """
    return corpus_distances(CorpusOptions.from_dict(opts), data_dir=settings.data_dir, with_tokens=True)


def _gram_eigenvalues(D2_off: np.ndarray) -> np.ndarray:
    """Eigenvalues (descending) of -1/2 J D2 J for a matrix of squared distances with zero diagonal."""
    n = D2_off.shape[0]
    J = np.eye(n) - 1.0 / n
    B = -0.5 * J @ D2_off @ J
    return np.linalg.eigvalsh((B + B.T) / 2)[::-1]


def rank_one_report(D, F) -> dict[str, Any]:
    r"""How much of $B$ one direction holds, raw, debiased and above the noise floor (module docstring).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Chord Hellinger distances.
    F : array-like of shape (n, n)
        Noise floor in the same units (:attr:`posgeom.geometry.NoiseFloor.matrix`).

    Returns
    -------
    dict
        ``eigenvalues`` (n,) of $B$, ``eigenvalues_debiased`` (n,) of $\tilde B$, ``eigenvalues_noise``
        (n,) of $B_F$; scalars ``share_raw`` $= \lambda_1/\sum\lambda^+$, ``share_debiased``,
        ``noise_top`` $= \lambda_{\max}(B_F)$, ``rank_above_noise``, ``share_above_noise`` $= s_1$.
    """
    D = np.asarray(D, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    if F.shape != D.shape:
        raise ValueError(f"the noise floor has shape {F.shape} but D has shape {D.shape}; they must match")
    off = ~np.eye(D.shape[0], dtype=bool)
    F2 = np.where(off, F**2, 0.0)
    w = _gram_eigenvalues(D**2)
    # E dhat^2 ~ d^2 + F^2: the debiased squared distances
    w_deb = _gram_eigenvalues(np.where(off, D**2 - F**2, 0.0))
    w_noise = _gram_eigenvalues(F2)
    # eigenvalues within rounding of the noise top (or of 0 when F = 0) do not count as directions
    top = float(w_noise[0]) + 1e-12 * float(w[0])
    excess = np.maximum(w - top, 0.0)
    pos = np.maximum(w, 0.0)
    pos_deb = np.maximum(w_deb, 0.0)
    return {
        "eigenvalues": w, "eigenvalues_debiased": w_deb, "eigenvalues_noise": w_noise,
        "share_raw": float(w[0] / pos.sum()),
        "share_debiased": float(w_deb[0] / pos_deb.sum()) if pos_deb.sum() > 0 else float("nan"),
        "noise_top": top,
        "rank_above_noise": int(np.count_nonzero(w > top)),
        # s_1 = (lambda_1 - lambda_max(B_F)) / sum_k (lambda_k - lambda_max(B_F))_+
        "share_above_noise": float(excess[0] / excess.sum()) if excess.sum() > 0 else float("nan"),
    }


def run_corpus_geometry(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                        **overrides) -> Result:
    r"""The positional geometry of a real corpus: Hellinger matrix, noise floor, spectrum, shift equivariance.

    Parameters
    ----------
    settings : Settings, optional
        Scale, data folder, seed, results folder (default ``posgeom.get_settings``).
    corpus : {"sst2", "imdb"}
    force : bool
        Recompute even when the registry holds the result.
    **overrides
        Corpus options (:func:`corpus_options`), or ``noise_method`` / ``noise_rep``.

    Returns
    -------
    Result
        ``arrays``: ``D`` (n_kept, n_kept), ``positions`` (n_kept,), ``reach`` (n_kept,), ``noise``
        (n_kept, n_kept), ``self_noise`` (n_kept,), ``profile`` (n_kept,), ``eigenvalues``,
        ``eigenvalues_debiased``, ``eigenvalues_noise`` (n_kept,), ``full_lengths`` (n_sequences,); the
        resolvable geometry ``R`` (n_kept, n_kept), ``G_self`` (n_kept,) $G_{ii}$, ``profile_resolvable`` and
        ``eigenvalues_resolvable`` (n_kept,).
        ``values``: options, source, counts summary, ``shift_r2``, ``share_raw``, ``share_debiased``,
        ``noise_top``, ``rank_above_noise``, ``share_above_noise``, effective ranks, and for the
        resolvable geometry ``resolvable_shift_r2``, ``resolvable_share`` ($\lambda_1/\sum\lambda^+$),
        ``resolvable_negative_fraction``, ``resolvable_negative_mass``.
    """
    settings = _settings(settings)
    noise_cfg = dict(CONFIGS[settings.scale]["noise"])
    noise_cfg["method"] = overrides.pop("noise_method", noise_cfg["method"])
    noise_cfg["n_rep"] = overrides.pop("noise_rep", noise_cfg["n_rep"])
    opts = corpus_options(settings.scale, corpus, **overrides)
    params = {**opts, "noise": noise_cfg, "data": _source_description(settings, opts)}

    def compute():
        corpus_geo = corpus_geometry_of(settings, opts)
        tokens, counts, marginals, D = corpus_geo.tokens, corpus_geo.counts, corpus_geo.marginals, corpus_geo.D
        floor = geo.noise_floor(counts, method=noise_cfg["method"], n_rep=noise_cfg["n_rep"], seed=settings.seed,
                                min_count=opts["min_count"], kind=opts["kind"])
        _, profile, r2 = geo.toeplitz_projection(D)
        rep = rank_one_report(D, floor.matrix)
        res = geo.resolvable_distances(tokens.sequences(), opts["n_positions"], tokens.vocab_size,
                                       marginals.positions, seed=settings.seed)
        R = res["R"]
        _, profile_res, r2_res = geo.toeplitz_projection(R)
        w_res = _gram_eigenvalues(R**2)
        values = {
            "options": opts, "source": params["data"], "tokenizer": tokens.tokenizer,
            "n_sequences": tokens.n_sequences, "n_truncated": tokens.n_truncated,
            "n_positions": int(opts["n_positions"]), "n_kept": int(marginals.n_positions),
            "dropped": [int(i) for i in marginals.dropped],
            "reach_min": int(marginals.reach.min()), "reach_max": int(marginals.reach.max()),
            "noise_method": noise_cfg["method"], "noise_rep": noise_cfg["n_rep"],
            "self_noise_max": float(floor.self_noise.max()),
            "shift_r2": r2,
            **{k: v for k, v in rep.items() if not k.startswith("eigenvalues")},
            "resolvable_shift_r2": r2_res,
            "resolvable_share": float(w_res[0] / np.maximum(w_res, 0.0).sum()),
            "resolvable_negative_fraction": res["negative_fraction"],
            "resolvable_negative_mass": float(-w_res[w_res < 0].sum() / np.abs(w_res).sum()),
            "rank_tol": geo.effective_rank(rep["eigenvalues"], "tol", tol=1e-3),
            "rank_mass_90": geo.effective_rank(rep["eigenvalues"], "mass", q=0.9),
            "rank_mass_99": geo.effective_rank(rep["eigenvalues"], "mass", q=0.99),
        }
        arrays = {
            "D": D, "positions": marginals.positions, "reach": marginals.reach, "noise": floor.matrix,
            "self_noise": floor.self_noise, "profile": profile, "full_lengths": tokens.full_lengths,
            "eigenvalues": rep["eigenvalues"], "eigenvalues_debiased": rep["eigenvalues_debiased"],
            "eigenvalues_noise": rep["eigenvalues_noise"],
            "R": R, "G_self": np.diag(res["G"]).copy(), "profile_resolvable": profile_res,
            "eigenvalues_resolvable": w_res,
        }
        return values, arrays

    return Registry(settings.results_dir).run(
        f"real_corpora_geometry_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


#: Options of the noise-aware rank (:func:`posgeom.geometry.noise_aware_rank`) shared by every chapter
#: that reports the rank of a corpus, so that the same matrix gets the same number.
RANK_OPTIONS = {"n_folds": 12, "n_resamples": 50, "level": 0.9}


def rank_report(nar) -> dict[str, Any]:
    """The values stored for a :class:`posgeom.geometry.NoiseAwareRank` (plain data)."""
    w = nar.mean_eigenvalues
    return {
        "rank": nar.rank, "interval": [int(x) for x in nar.interval], "text": str(nar), "level": nar.level,
        "threshold": nar.threshold, "residual_share": nar.residual_share, "n_positions": int(nar.positions.size),
        "n_sequences": nar.n_sequences,
        # lambda_1 / sum_k lambda_k^+ of the mean cross-fitted eigenvalues
        "first_share": float(w[0] / np.maximum(w, 0.0).sum()),
    }


def run_noise_aware_rank(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                         **overrides) -> Result:
    r"""The noise-aware rank of a real corpus's positional geometry (:func:`posgeom.geometry.noise_aware_rank`).

    Cross-fitted eigenvalues over random half-splits of the sequences, the rank against the
    split-difference null, and its interval, with :data:`RANK_OPTIONS` and the settings' seed.

    Returns
    -------
    Result
        ``values``: ``options``, :func:`rank_report` (``rank`` None when undetermined, ``interval``,
        ``text``, ``threshold``, ``first_share``, ...). ``arrays``: ``eigenvalues`` (n_resamples, k - 1),
        ``counts`` (n_resamples,), ``positions`` (k,).
    """
    settings = _settings(settings)
    opts = corpus_options(settings.scale, corpus, **overrides)
    params = {**opts, "rank": RANK_OPTIONS, "data": _source_description(settings, opts)}

    def compute():
        tokens = corpus_geometry_of(settings, opts).tokens
        nar = geo.noise_aware_rank(tokens.sequences(), opts["n_positions"], tokens.vocab_size, seed=settings.seed,
                                   **RANK_OPTIONS)
        values = {"options": opts, **rank_report(nar)}
        return values, {"eigenvalues": nar.eigenvalues, "counts": nar.counts, "positions": nar.positions}

    return Registry(settings.results_dir).run(
        f"real_corpora_rank_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


#: The headline stresses that get a bootstrap interval: (label, encoding of :func:`posgeom.encodings.encoding_set`
#: or ``"alibi (best head)"``, normalisation).
INTERVAL_STATISTICS = (
    ("sinusoidal", "scale_free"), ("rope", "scale_free"), ("alibi", "scale_free"), ("sinusoidal", "paper"),
    ("rope", "paper"), ("alibi", "paper"), ("alibi (best head)", "paper"), ("alibi (best head)", "scale_free"),
)
#: Differences the chapter interprets: (a, b, normalisation) for stress(a) - stress(b).
INTERVAL_DIFFERENCES = (("sinusoidal", "rope", "scale_free"), ("alibi", "sinusoidal", "scale_free"),
                        ("alibi", "rope", "scale_free"), ("alibi (best head)", "sinusoidal", "scale_free"))


def run_stress_intervals(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                         **overrides) -> Result:
    r"""Bootstrap intervals over sequences for the headline stresses of a real corpus.

    The sequences are dealt into ``n_folds`` random folds (:func:`posgeom.geometry.fold_counts`); each of
    ``n_boot`` replicates draws the folds with replacement (a bootstrap of clusters of random sequences,
    which approximates the bootstrap of sequences), recomputes the chord Hellinger matrix on the
    positions of the point estimate, and the stress of each encoding of :data:`INTERVAL_STATISTICS` and
    each difference of :data:`INTERVAL_DIFFERENCES`. ALiBi's best head is the one of the point estimate.
    Intervals: basic bootstrap $[2t - q_{hi}, 2t - q_{lo}]$ at ``level``, an interval for the value without
    sampling noise (a stress against a noisy $D$ is biased by the noise, and a replicate adds the same
    bias again, so the interval may exclude the estimate itself when that bias exceeds the spread). A
    replicate that misses a kept position is left out (counted in ``n_used``).

    Returns
    -------
    Result
        ``values``: ``options``, ``interval`` (the bootstrap options), ``best_head``, ``n_used``,
        ``statistics`` {"<encoding>|<norm>": {"estimate", "low", "high", "bootstrap_mean"}}, ``differences``
        {"<a>-<b>|<norm>": the same}. ``arrays``: ``replicates`` (n_used, n_statistics).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    icfg = cfg["intervals"]
    opts = corpus_options(settings.scale, corpus, **overrides)
    params = {**opts, "intervals": {k: v for k, v in icfg.items() if k != "corpora"}, "encodings": cfg["encodings"],
              "data": _source_description(settings, opts)}

    def compute():
        from ..progress import tqdm

        geometry = corpus_geometry_of(settings, opts)
        tokens, marginals = geometry.tokens, geometry.marginals
        positions = marginals.positions
        n_all = int(opts["n_positions"])
        sub = np.ix_(positions, positions)
        ecfg = cfg["encodings"]
        H = ecfg["n_heads"]
        D0 = geo.hellinger_matrix(marginals, kind=opts["kind"])
        head_paper = [geo.stress(D0, enc.alibi_distances(n_all, H, head=h)[sub], "paper", as_distances=True)
                      for h in range(H)]
        best = int(np.argmin(head_paper))
        encs = enc.encoding_set(positions, names=STRESS_ENCODINGS, **encoding_shape(settings.scale))
        encs["alibi (best head)"] = enc.alibi_distances(n_all, H, head=best)[sub]
        names = [f"{e}|{z}" for e, z in INTERVAL_STATISTICS]

        def statistics(D):
            return np.array([geo.stress(D, encs[e], z, as_distances=True) for e, z in INTERVAL_STATISTICS])

        folds = geo.fold_counts(tokens.sequences(), n_all, tokens.vocab_size, n_folds=icfg["n_folds"],
                                seed=settings.seed)
        rng = np.random.default_rng(settings.seed)
        reps = []
        for _ in tqdm(range(icfg["n_boot"]), desc=f"bootstrap {corpus}", leave=False):
            pick = np.bincount(rng.integers(0, len(folds), size=len(folds)), minlength=len(folds))
            c = sum(int(w) * f.counts for f, w in zip(folds, pick) if w)
            c = c[positions]
            reach = np.asarray(c.sum(axis=1)).ravel()
            if np.any(reach == 0):
                continue
            # chord Hellinger matrix of the replicate's marginals mu_i = c_i / N_i
            n_seq = int(sum(int(w) * f.n_sequences for f, w in zip(folds, pick)))
            D = geo.hellinger_matrix(geo.PositionalCounts(c, n_seq), kind=opts["kind"])
            reps.append(statistics(D))
        reps = np.array(reps)
        point = statistics(D0)
        lo_q, hi_q = (1 - icfg["level"]) / 2, (1 + icfg["level"]) / 2

        def interval(est, col):
            # basic bootstrap interval [2 t - q_hi, 2 t - q_lo]: the resampling noise shifts a noise-biased
            # statistic the way the sample's own noise shifted it from the population value
            q_lo, q_hi = np.quantile(col, lo_q), np.quantile(col, hi_q)
            return {"estimate": float(est), "low": float(2 * est - q_hi), "high": float(2 * est - q_lo),
                    "bootstrap_mean": float(np.mean(col))}

        stats = {name: interval(point[j], reps[:, j]) for j, name in enumerate(names)}
        diffs = {}
        for a, b, z in INTERVAL_DIFFERENCES:
            ja, jb = names.index(f"{a}|{z}"), names.index(f"{b}|{z}")
            diffs[f"{a}-{b}|{z}"] = interval(point[ja] - point[jb], reps[:, ja] - reps[:, jb])
        values = {"options": opts, "interval": {k: v for k, v in icfg.items() if k != "corpora"}, "best_head": best,
                  "n_used": int(len(reps)), "statistics": stats, "differences": diffs}
        return values, {"replicates": reps}

    return Registry(settings.results_dir).run(
        f"real_corpora_stress_intervals_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


def interval_text(entry: dict[str, float], fmt: str = "{:.3f}") -> str:
    """``estimate [low, high]`` of one statistic of :func:`run_stress_intervals`."""
    return f"{fmt.format(entry['estimate'])} [{fmt.format(entry['low'])}, {fmt.format(entry['high'])}]"


# --------------------------------------------------------------------------------------------
# Learned tables: pretrained, and trained from scratch
# --------------------------------------------------------------------------------------------


def pretrained_table(settings: Settings | None = None) -> np.ndarray:
    """The learned position table of ``settings.pretrained``, as :func:`posgeom.models.resolve.position_table`.

    Returns
    -------
    P : ndarray of shape (N_max, d), float64
    """
    from ..models.resolve import position_table

    return position_table(_settings(settings).pretrained)


def run_scratch_table(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                      progress: bool = True, corpus_overrides: dict | None = None, **overrides) -> Result:
    """Train a BERT-style MLM encoder with a learned table from scratch on the corpus; keep its table.

    The model (``CONFIGS[scale]["scratch"][corpus]["model"]``, ``max_len`` = the corpus's ``n``) starts
    from BERT's initialisation (table rows $\\mathcal N(0, 0.02^2)$) and is trained by MLM (80/10/10
    masking) on the corpus's token ids under the same special-token policy; the position geometry
    (stress, violation rate against the corpus's $D$) is recorded during training.

    Parameters
    ----------
    corpus_overrides : dict, optional
        Corpus options (:func:`corpus_options`) of the training data and of the target geometry.
    overrides
        ``max_steps``, ``batch_size``, ``lr``, ``warmup_steps``, ``every``, ``threads`` (CPU threads,
        None to keep torch's setting) or ``model`` (a dict of :class:`posgeom.models.encoder.EncoderConfig` fields).

    Returns
    -------
    Result
        ``arrays``: ``table`` (n, d), ``table_init`` (n, d), ``losses`` (steps,), and the recorded series
        ``step``, ``stress_paper``, ``stress_scale_free``, ``violation_rate``, ``spearman``, ``separation``.
        ``values``: the options, ``final_loss``, ``tokens_per_s``, final geometry.
    """
    import torch

    from ..models import PositionGeometry, TokenData, TrainConfig, build_model, get_config, train
    from ..models.threads import torch_threads

    settings = _settings(settings)
    cfg = copy.deepcopy(CONFIGS[settings.scale]["scratch"][_check_corpus(corpus)])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown training option(s) {sorted(unknown)}; valid options are {sorted(cfg)}")
    cfg.update(overrides)
    opts = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    device = resolve_device(settings.device)
    n = int(opts["n_positions"])
    params = {"corpus": opts, "train": cfg, "data": geometry.values["source"], "seed": settings.seed}

    def compute():
        tokens = corpus_geometry_of(settings, opts).tokens
        ids, mask = tokens.model_inputs()
        D = geometry.arrays["D"]
        rows = table_rows(opts["special"], geometry.arrays["positions"])
        if rows.max() >= n:
            raise ValueError("the content policy needs one more table row than positions; lower n_positions")
        model_cfg = get_config("quick", **{**cfg["model"], "max_len": n})
        model = build_model(model_cfg, "mlm", seed=settings.seed)
        table0 = model.positional.table().detach().double().cpu().numpy().copy()

        class _Rows(PositionGeometry):
            # the corpus's D covers the kept positions only: measure the same rows of the table
            def measure(self, m):
                P = m.positional.table().detach().double().cpu().numpy()[rows]
                out = {}
                sep = geo.separation(P)
                out.update(separation=sep.raw, separation_normalized=sep.normalized, median_distance=sep.median)
                for z in self.normalizations:
                    out[f"stress_{z}"] = geo.stress(D, P, z)
                out["violation_rate"] = geo.violation_rate(D, P)
                out["spearman"] = geo.spearman(D, P)
                return out

        cb = _Rows(every=cfg["every"], target=D)
        with torch_threads(cfg.get("threads"), device):
            result = train(
                model, TokenData(ids, mask),
                TrainConfig(task="mlm", batch_size=cfg["batch_size"], max_steps=cfg["max_steps"], lr=cfg["lr"],
                            warmup_steps=cfg["warmup_steps"], seed=settings.seed, device=device, progress=progress),
                callbacks=[cb],
            )
        with torch.no_grad():
            table = model.positional.table().detach().double().cpu().numpy()
        series = cb.as_arrays()
        values = {
            "corpus": corpus, "options": opts, "train": cfg, "final_loss": result.final_loss,
            "tokens_per_s": result.tokens_per_s, "runtime_s": result.runtime_s, "steps": result.steps,
            "device": result.device, "final": {k: float(v[-1]) for k, v in series.items()},
        }
        arrays = {"table": table, "table_init": table0, "losses": np.asarray(result.losses), **series}
        return values, arrays

    model_name = f"posgeom MLM encoder from scratch ({cfg['model']['n_layers']} layers, d={cfg['model']['d_model']})"
    return Registry(settings.results_dir).run(
        f"real_corpora_scratch_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device=device, model=model_name, force=force,
    )


# --------------------------------------------------------------------------------------------
# Encodings and the stress table
# --------------------------------------------------------------------------------------------


def encoding_shape(scale: str) -> dict[str, Any]:
    """The model shape of the chapter's fixed encodings at ``scale``: the keyword arguments
    ``d_model``, ``n_heads``, ``base``, ``layout`` of :func:`posgeom.encodings.encoding_set`."""
    ecfg = CONFIGS[scale]["encodings"]
    return {k: ecfg[k] for k in ("d_model", "n_heads", "base", "layout")}


def _stress_pair(D: np.ndarray, Dhat: np.ndarray, R: np.ndarray | None = None) -> dict[str, float]:
    """Both stresses against D and, when given, the "scale_free" stress against the resolvable geometry R."""
    out = {z: geo.stress(D, Dhat, z, as_distances=True) for z in NORMALIZATIONS}
    if R is not None:
        out["scale_free_resolvable"] = geo.stress(R, Dhat, "scale_free", as_distances=True)
    return out


def run_stress_table(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                     train_scratch: bool | None = None, progress: bool = True, corpus_overrides: dict | None = None,
                     scratch_overrides: dict | None = None) -> Result:
    """The stress of every encoding against the corpus's Hellinger geometry, both normalisations.

    Rows: sinusoidal, RoPE, ALiBi (mean slope; best and worst single head), ALiBi read as a kernel,
    the pretrained model's learned table, a table trained from scratch (:func:`run_scratch_table`,
    by default for the corpora of ``CONFIGS[scale]["scratch_corpora"]``), random tables (mean and sd
    over seeds), the equidistant encoding, classical MDS at full rank and at the ranks of
    ``CONFIGS[scale]["mds_ranks"]``, SMACOF from MDS, and no encoding.

    Parameters
    ----------
    corpus_overrides, scratch_overrides : dict, optional
        Corpus options (:func:`corpus_options`) and training options (:func:`run_scratch_table`).

    Returns
    -------
    Result
        ``values["rows"]``: a list of ``{"encoding", "options", "paper", "scale_free",
        "scale_free_resolvable"}`` (the last against the resolvable geometry ``R``; ``*_sd`` for
        the random tables); ``values["model"]``: the pretrained model used.
        ``arrays``: ``alibi_head_paper`` (H,), ``alibi_head_scale_free`` (H,), ``smacof_k`` (k,)
        and ``smacof_iters`` (k,).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    if train_scratch is None:
        train_scratch = corpus in cfg["scratch_corpora"]
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    scratch = run_scratch_table(settings, corpus=corpus, progress=progress, corpus_overrides=corpus_overrides,
                                **(scratch_overrides or {})) if train_scratch else None
    opts = geometry.values["options"]
    params = {
        "corpus": opts, "encodings": cfg["encodings"], "mds_ranks": cfg["mds_ranks"], "smacof": cfg["smacof"],
        "pretrained": settings.pretrained, "scratch": scratch.key if scratch is not None else None,
        "data": geometry.values["source"],
    }

    def compute():
        D = geometry.arrays["D"]
        positions = geometry.arrays["positions"]
        n_all = int(opts["n_positions"])
        sub = np.ix_(positions, positions)
        ecfg = cfg["encodings"]
        rows: list[dict[str, Any]] = []

        R = geometry.arrays["R"]

        def add(name, options, Dhat):
            rows.append({"encoding": name, "options": options, **_stress_pair(D, Dhat, R)})

        shape = encoding_shape(settings.scale)
        for name, Dhat in enc.encoding_set(positions, names=STRESS_ENCODINGS, **shape).items():
            add(name, enc.describe_encoding(name, **shape), Dhat)
        H = ecfg["n_heads"]
        head_paper = np.array([geo.stress(D, enc.alibi_distances(n_all, H, head=h)[sub], "paper", as_distances=True)
                               for h in range(H)])
        head_sf = np.array([geo.stress(D, enc.alibi_distances(n_all, H, head=h)[sub], "scale_free", as_distances=True)
                            for h in range(H)])
        best, worst = int(np.argmin(head_paper)), int(np.argmax(head_paper))
        slopes = enc.alibi_slopes(H)
        add("alibi (best head)", f"H={H}, head {best}, slope {slopes[best]:.4g}",
            enc.alibi_distances(n_all, H, head=best)[sub])
        add("alibi (worst head)", f"H={H}, head {worst}, slope {slopes[worst]:.4g}",
            enc.alibi_distances(n_all, H, head=worst)[sub])
        P = pretrained_table(settings)
        rows_needed = table_rows(opts["special"], positions)
        if rows_needed.max() >= P.shape[0]:
            raise ValueError(
                f"the pretrained table has {P.shape[0]} rows; positions up to {int(rows_needed.max())} are needed "
                "(the N_max wall): lower n_positions"
            )
        add("learned (pretrained)", f"{settings.pretrained}, rows {int(rows_needed[0])}..{int(rows_needed[-1])}, "
            f"d={P.shape[1]}", geo.euclidean_distances(P[rows_needed]))
        if scratch is not None:
            T = scratch.arrays["table"][table_rows(opts["special"], positions)]
            sc = scratch.values["train"]
            add("learned (from scratch)", f"MLM, {sc['model']['n_layers']} layers, d={sc['model']['d_model']}, "
                f"{sc['max_steps']} steps", geo.euclidean_distances(T))
        rand = np.array([list(_stress_pair(D, geo.euclidean_distances(enc.random_table(
            n_all, ecfg["d_model"], sigma=ecfg["random_sigma"], seed=s)[positions]), R).values())
            for s in ecfg["random_seeds"]])
        keys = list(NORMALIZATIONS) + ["scale_free_resolvable"]
        rows.append({"encoding": "random N(0, sigma^2)",
                     "options": f"d={ecfg['d_model']}, sigma={ecfg['random_sigma']}, {len(ecfg['random_seeds'])} seeds",
                     **{k: float(rand[:, i].mean()) for i, k in enumerate(keys)},
                     **{f"{k}_sd": float(rand[:, i].std(ddof=1)) for i, k in enumerate(keys)}})
        mds = geo.classical_mds(D)
        add("MDS (full rank)", f"rank {mds.k} (numerical rank of B)", geo.euclidean_distances(mds.embedding))
        W = mds.eigenvectors * np.sqrt(np.maximum(mds.eigenvalues, 0.0))
        for k in cfg["mds_ranks"]:
            if k < D.shape[0]:
                add(f"MDS (rank {k})", f"classical MDS, top {k} eigenvectors", geo.euclidean_distances(W[:, :k]))
        sm_cfg = cfg["smacof"]
        iters = []
        for k in sm_cfg["ranks"]:
            res = geo.smacof(D, k, max_iter=sm_cfg["max_iter"], eps=sm_cfg["eps"])
            iters.append(res.n_iter)
            add(f"SMACOF (rank {k})", f"from MDS, {res.n_iter} iterations"
                + ("" if res.converged else " (iteration cap)"), geo.euclidean_distances(res.embedding))
        add("none (NoPE)", "all distances 0", np.zeros_like(D))
        values = {"rows": rows, "corpus": corpus, "model": settings.pretrained, "n_kept": int(D.shape[0]),
                  "best_head": best, "worst_head": worst}
        arrays = {"alibi_head_paper": head_paper, "alibi_head_scale_free": head_sf, "alibi_slopes": slopes,
                  "smacof_k": np.asarray(sm_cfg["ranks"]), "smacof_iters": np.asarray(iters)}
        return values, arrays

    return Registry(settings.results_dir).run(
        f"real_corpora_stress_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=settings.pretrained, force=force,
    )


def stress_dataframe(result: Result):
    """A :func:`run_stress_table` result as a table: one row per encoding, the options used and both stresses.

    Random tables show ``mean ± sd`` over their seeds.

    Returns
    -------
    pandas.DataFrame
        Index ``encoding``; columns ``options``, ``"paper" stress``, ``"scale_free" stress`` and
        ``"scale_free" vs resolvable R``.
    """
    import pandas as pd

    records = []
    for row in result.values["rows"]:
        rec = {"encoding": row["encoding"], "options": row["options"]}
        for z, label in ((z, f'"{z}" stress') for z in (*NORMALIZATIONS, "scale_free_resolvable")):
            if z not in row:
                continue
            v = row[z]
            text = f"{v:.4g}" if abs(v) >= 1e-4 or v == 0 else f"{v:.1e}"
            if f"{z}_sd" in row:
                text += f" ± {row[z + '_sd']:.2g}"
            rec[label.replace('"scale_free_resolvable" stress', '"scale_free" vs resolvable R')] = text
        records.append(rec)
    return pd.DataFrame.from_records(records).set_index("encoding")


def row_of(result: Result, encoding: str) -> dict[str, Any]:
    """The row of ``encoding`` in a :func:`run_stress_table` result (a clear error when absent)."""
    for row in result.values["rows"]:
        if row["encoding"] == encoding:
            return row
    names = [r["encoding"] for r in result.values["rows"]]
    raise KeyError(f"no row {encoding!r}; the table has {names}")


# --------------------------------------------------------------------------------------------
# ALiBi: which choices give which value
# --------------------------------------------------------------------------------------------


def alibi_parabola(D, n_positions: np.ndarray | None = None) -> dict[str, float]:
    r"""The coefficients of ALiBi's ``"paper"`` stress as a function of its slope (module docstring).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Target distances.
    n_positions : array-like of shape (n,), optional
        The positions the rows of ``D`` stand for (default ``0 … n-1``); offsets are $|i - j|$ of these.

    Returns
    -------
    dict
        ``saa`` $= \sum a^2$, ``sad`` $= \sum a d$, ``sdd`` $= \sum d^2$ (sums over $i<j$),
        ``m_star`` $= \sum ad / \sum a^2$ and ``minimum`` (the ``"scale_free"`` stress of the line).
    """
    D = geo.distances_of(D, as_distances=True, name="D")
    n = D.shape[0]
    pos = np.arange(n) if n_positions is None else np.asarray(n_positions, dtype=np.float64)
    iu = np.triu_indices(n, k=1)
    a = np.abs(pos[:, None] - pos[None, :])[iu]
    d = D[iu]
    saa, sad, sdd = float(a @ a), float(a @ d), float(d @ d)
    m_star = sad / saa
    # sigma(m*) = 1 - (sum a d)^2 / (sum a^2 sum d^2)
    return {"saa": saa, "sad": sad, "sdd": sdd, "m_star": m_star, "minimum": 1.0 - sad**2 / (saa * sdd)}


def alibi_paper_stress(slope, parabola: dict[str, float]):
    r"""ALiBi's ``"paper"`` stress $(m^2 \sum a^2 - 2 m \sum ad + \sum d^2) / \sum d^2$ at slopes ``slope``.

    ``slope`` may have any shape; the result has the same shape.
    """
    m = np.asarray(slope, dtype=np.float64)
    p = parabola
    return (m * m * p["saa"] - 2.0 * m * p["sad"] + p["sdd"]) / p["sdd"]


def alibi_slopes_for(target: float, parabola: dict[str, float]) -> tuple[float, float]:
    r"""The two slopes $m_- \le m_+$ at which ALiBi's ``"paper"`` stress equals ``target``.

    Raises ``ValueError`` when ``target`` is below the minimum (the ``"scale_free"`` stress of a line).
    """
    p = parabola
    disc = p["sad"] ** 2 - p["saa"] * p["sdd"] * (1.0 - target)
    if disc < 0:
        raise ValueError(
            f"no ALiBi slope reaches paper stress {target}: the smallest value over all slopes is {p['minimum']:.4g}"
        )
    # m = (sum ad -+ sqrt((sum ad)^2 - sum a^2 sum d^2 (1 - t))) / sum a^2
    root = math.sqrt(disc)
    return (p["sad"] - root) / p["saa"], (p["sad"] + root) / p["saa"]


def run_alibi_choices(settings: Settings | None = None, *, corpus: str = "sst2", target: float = PAPER_ALIBI_SST2,
                      force: bool = False, grid: dict | None = None, corpus_overrides: dict | None = None) -> Result:
    """ALiBi's ``"paper"`` and ``"scale_free"`` stress under every combination of the unstated choices.

    Choices (``CONFIGS[scale]["alibi_choices"]``): number of positions ``n``, special-token policy,
    Hellinger form (chord, normalised, geodesic), head count ``H`` (8, 12, 16) and slope (the mean of the
    ``H`` slopes, or one head's). For each (n, policy, form) it also stores the parabola's coefficients
    and the two slopes that give ``target``.

    Parameters
    ----------
    grid : dict, optional
        Replaces entries of the grid (``n_positions``, ``specials``, ``kinds``, ``head_counts``).
    corpus_overrides : dict, optional
        Other corpus options (:func:`corpus_options`).

    Returns
    -------
    Result
        ``values["rows"]``: ``{"n", "special", "kind", "heads", "slope_choice", "slope", "paper",
        "scale_free"}``; ``values["parabolas"]``: per (n, policy, form) ``{"m_star", "minimum",
        "m_minus", "m_plus", ...}``; ``values["target"]``.
    """
    settings = _settings(settings)
    grid = {**CONFIGS[settings.scale]["alibi_choices"], **(grid or {})}
    base = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    params = {"corpus": base, "grid": grid, "target": target, "data": _source_description(settings, base)}

    def compute():
        rows, parabolas = [], []
        for special in grid["specials"]:
            for n in grid["n_positions"]:
                opts = {**base, "special": special, "n_positions": n}
                marg = corpus_geometry_of(settings, opts).marginals
                for kind in grid["kinds"]:
                    D = geo.hellinger_matrix(marg, kind=kind)
                    par = alibi_parabola(D, marg.positions)
                    try:
                        lo, hi = alibi_slopes_for(target, par)
                    except ValueError:
                        lo, hi = float("nan"), float("nan")
                    parabolas.append({"n": n, "special": special, "kind": kind, "n_kept": int(D.shape[0]),
                                      **par, "m_minus": lo, "m_plus": hi})
                    for H in grid["head_counts"]:
                        slopes = enc.alibi_slopes(H)
                        choices = [("mean", float(slopes.mean()))]
                        choices += [(f"head {h}", float(s)) for h, s in enumerate(slopes)]
                        for label, m in choices:
                            rows.append({"n": n, "special": special, "kind": kind, "heads": H, "slope_choice": label,
                                         "slope": m, "paper": float(alibi_paper_stress(m, par)),
                                         "scale_free": float(par["minimum"])})
        return {"rows": rows, "parabolas": parabolas, "target": target, "corpus": corpus}, None

    return Registry(settings.results_dir).run(
        f"real_corpora_alibi_choices_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


# --------------------------------------------------------------------------------------------
# Paper-scale results in the registry
# --------------------------------------------------------------------------------------------


def paper_results(settings: Settings | None = None, experiment_prefix: str = "real_corpora") -> list[Result]:
    """Every ``paper``-scale result of this chapter's experiments held by the registry (any code version)."""
    settings = _settings(settings)
    reg = Registry(settings.results_dir)
    return [r for r in reg.entries(scale="paper") if r.experiment.startswith(experiment_prefix)]


def run_all(settings: Settings | None = None, *, corpora=CORPUS_NAMES, force: bool = False,
            progress: bool = True) -> dict[str, Result]:
    """Run every experiment of the chapter for ``corpora`` at ``settings.scale``; returns them by name."""
    settings = _settings(settings)
    out: dict[str, Result] = {}
    for corpus in corpora:
        out[f"geometry_{corpus}"] = run_corpus_geometry(settings, corpus=corpus, force=force)
        if corpus in CONFIGS[settings.scale]["scratch_corpora"]:
            out[f"scratch_{corpus}"] = run_scratch_table(settings, corpus=corpus, force=force, progress=progress)
        out[f"stress_{corpus}"] = run_stress_table(settings, corpus=corpus, force=force, progress=progress)
    out["alibi_choices_sst2"] = run_alibi_choices(settings, corpus="sst2", force=force)
    return out


__all__ = [
    "CONFIGS", "CORPUS_NAMES", "PAPER_ALIBI_SST2", "NORMALIZATIONS", "PlainText", "corpus_options",
    "corpus_geometry_of", "rank_one_report", "RANK_OPTIONS", "rank_report",
    "run_noise_aware_rank", "INTERVAL_STATISTICS", "INTERVAL_DIFFERENCES", "run_stress_intervals", "interval_text",
    "run_corpus_geometry",
    "pretrained_table", "run_scratch_table", "STRESS_ENCODINGS", "encoding_shape", "run_stress_table",
    "stress_dataframe", "row_of",
    "alibi_parabola", "alibi_paper_stress", "alibi_slopes_for", "run_alibi_choices", "paper_results", "run_all",
]

