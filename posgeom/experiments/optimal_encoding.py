r"""Experiments of the chapter "The optimal encoding" (Proposition 6, Algorithm 1, the stress and its critique).

Algorithm 1 of the paper is classical (Torgerson) MDS of the Hellinger matrix $D$:

$$B = -\tfrac12 J D^{(2)} J = U \Lambda U^\top, \qquad P_{\mathrm{MDS}} = U_k \Lambda_k^{1/2},$$

lifted to the model width by orthonormal columns. For the chord distance $B = J S S^\top J$ with $S$ the
rows $\sqrt{\mu_i}$, so $B \succeq 0$: the positions embed *exactly* in $\mathbb R^{\operatorname{rank} B}$.
Classical MDS minimises the strain $\lVert B - P P^\top\rVert_F$; it does not
minimise the stress of Eq. 4: SMACOF started from $P_{\mathrm{MDS}}$ lowers it.

This module computes the walk-through of Algorithm 1 on a synthetic corpus, the stress of every fixed
encoding on every corpus, the exact-embedding check (chord vs geodesic), the three one-hot
distributions (1/6 vs 1/9) and the SMACOF gain at several ranks, on synthetic corpora and SST-2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..encodings import encoding_set
from ..corpora.real import data_key
from ..registry import Registry, Result
from . import corpus_geometry as cg
from .settings import as_params, by_scale, params_of

__all__ = [
    "CONFIGS", "OptimalEncodingSettings", "Walkthrough", "SmacofOptions", "IntervalOptions", "ENCODINGS_COMPARED",
    "INTERVAL_DIFFERENCES", "algorithm_steps", "mds_distances", "comparison_set", "comparison_for", "exact_embedding", "one_hot_layouts",
    "smacof_curve", "comparison_intervals", "run_algorithm_steps", "run_encoding_comparison", "run_exact_embedding",
    "run_one_hot", "run_smacof_gain", "run_comparison_intervals", "one_hot_distances",
]


@dataclass(frozen=True)
class Walkthrough:
    """Algorithm 1 step by step: the synthetic family, the rank ``k`` and the width of the lift."""

    family: str = "drift"
    k: int = 3
    lift_d: int = 50


@dataclass(frozen=True)
class SmacofOptions:
    """SMACOF's stopping rule (:func:`posgeom.geometry.smacof`)."""

    max_iter: int = 3000
    eps: float = 1e-9


@dataclass(frozen=True)
class IntervalOptions:
    """Bootstrap over sequences of the stress table (:func:`posgeom.geometry.bootstrap_intervals`)."""

    n_boot: int = 200
    n_folds: int = 100
    level: float = 0.95


@dataclass(frozen=True)
class OptimalEncodingSettings:
    """Options of the chapter "The optimal encoding" (defaults: ``quick``; the corpora come from
    :data:`corpus_geometry.CONFIGS`)."""

    synthetic_encoder: cg.EncoderShape = field(default_factory=lambda: cg.EncoderShape(d_model=50, n_heads=5))
    walkthrough: Walkthrough = field(default_factory=Walkthrough)
    smacof_ranks: tuple[int, ...] = (1, 2, 3, 5, 10)
    smacof: SmacofOptions = field(default_factory=SmacofOptions)
    families: tuple[str, ...] = ("drift", "regimes", "markov")
    intervals: IntervalOptions = field(default_factory=IntervalOptions)


#: Per-scale options: ``paper`` adds rank 20 to the SMACOF curve, runs SMACOF to a tighter tolerance and
#: draws more bootstrap replicates.
CONFIGS = by_scale(
    OptimalEncodingSettings(), smacof_ranks=(1, 2, 3, 5, 10, 20), smacof={"max_iter": 20000, "eps": 1e-12},
    intervals={"n_boot": 1000, "n_folds": 200},
)

#: The encodings of the comparison table, in display order.
ENCODINGS_COMPARED = ("mds", "mds_rank3", "sinusoidal", "rope", "alibi", "random", "learned", "none")
#: Differences of ``"scale_free"`` stress the chapter interprets, (a, b) for stress(a) - stress(b).
INTERVAL_DIFFERENCES = (("mds_rank3", "sinusoidal"), ("sinusoidal", "rope"), ("alibi", "sinusoidal"),
                        ("alibi", "rope"), ("learned", "sinusoidal"))


def _registry_run(name, compute, params, settings, force, model=None):
    return Registry(settings.results_dir).run(
        name, compute, params=params, scale=settings.scale, seed=settings.seed, device="cpu", model=model, force=force,
    )


def _data(settings) -> str:
    return data_key(settings.data_dir)


def algorithm_steps(corpus, walk: Walkthrough, seed: int) -> tuple[dict, dict]:
    r"""Algorithm 1 on one synthetic corpus (values and arrays of :func:`run_algorithm_steps`)."""
    marg = geo.positional_marginals(corpus.counts())
    D = geo.hellinger_matrix(marg)
    B = geo.double_centered_gram(D)
    S = geo.sqrt_marginals(marg)
    n = D.shape[0]
    J = np.eye(n) - np.ones((n, n)) / n
    # B = J S S^T J for the chord distance
    BS = J @ S @ S.T @ J
    res = geo.classical_mds(D)
    Pk = geo.classical_mds(D, k=walk.k).embedding
    P_lift = geo.lift(Pk, walk.lift_d, seed=seed)
    pop = geo.classical_mds(geo.hellinger_matrix(corpus.population), k=1).eigenvalues
    values = dict(
        B_vs_SS_max_error=float(np.max(np.abs(B - BS))), min_eigenvalue=float(res.eigenvalues.min()),
        max_eigenvalue=float(res.eigenvalues.max()), numerical_rank=int(res.k),
        full_rank_max_error=float(np.max(np.abs(geo.euclidean_distances(res.embedding) - D))),
        rank_k_stress={norm: geo.stress(D, Pk, norm) for norm in ("paper", "scale_free")},
        lift_max_error=float(np.max(np.abs(geo.euclidean_distances(P_lift) - geo.euclidean_distances(Pk)))),
        k=int(walk.k), n=int(n), d=int(walk.lift_d), family=walk.family,
        population_rank_tol=geo.effective_rank(pop, "tol", tol=1e-9),
    )
    return values, dict(D=D, B=B, eigenvalues=res.eigenvalues, P_k=Pk, population_eigenvalues=pop)


def run_algorithm_steps(settings=None, *, force: bool = False) -> Result:
    r"""Algorithm 1 step by step on a synthetic corpus (the drift family at this scale): :func:`algorithm_steps`.

    1. $D$ from the counts (chord Hellinger); 2. $B = -\frac12 J D^{(2)} J$, checked against
    $J S S^\top J$ ($S$ the rows $\sqrt{\mu_i}$); 3. the eigendecomposition of $B$; 4. $P_{\mathrm{MDS}}$
    at rank $k$ and at full rank; 5. the lift into width $d$ (distances unchanged).

    Values: ``B_vs_SS_max_error``, ``min_eigenvalue``, ``numerical_rank``, ``full_rank_max_error``,
    ``rank_k_stress`` (``paper``, ``scale_free``), ``lift_max_error``, ``k``, ``n``, ``d``.
    Arrays: ``D``, ``B`` (n, n), ``eigenvalues`` (n,), ``P_k`` (n, k), ``population_eigenvalues`` (n,).
    """
    settings = _settings(settings)
    walk = CONFIGS[settings.scale].walkthrough
    syn_cfg = cg.CONFIGS[settings.scale].synthetic
    params = params_of(**as_params(walk), synthetic=as_params(syn_cfg), seed=settings.seed)

    def compute():
        corpus = cg.family_corpus(walk.family, seed=settings.seed, **as_params(syn_cfg))
        return algorithm_steps(corpus, walk, settings.seed)

    return _registry_run("optimal_encoding.algorithm_steps", compute, params, settings, force)


def mds_distances(D, d_model: int) -> dict[str, np.ndarray]:
    """Distances of classical MDS of ``D`` at full rank (capped at the width ``d_model``) and at rank 3."""
    full = geo.classical_mds(D)
    # MDS at full rank is limited by the model width d (rank(B) <= n - 1 may exceed d)
    k_full = min(full.k, d_model)
    return {"mds": geo.euclidean_distances(full.embedding[:, :k_full]),
            "mds_rank3": geo.euclidean_distances(full.embedding[:, :3])}


def comparison_set(D, positions, encoder, seed, *, learned_table=None) -> dict[str, np.ndarray]:
    """The distance matrices of :data:`ENCODINGS_COMPARED` for ``D``: MDS at full rank (capped at the width
    ``encoder.d_model``) and at rank 3, the fixed encodings and, when given, the learned table's rows."""
    encs = encoding_set(positions, d_model=encoder.d_model, n_heads=encoder.n_heads, seed=seed)
    table = {**mds_distances(D, encoder.d_model), **encs}
    if learned_table is not None:
        table["learned"] = geo.euclidean_distances(learned_table[np.asarray(positions)])
    return table


def comparison_for(D, positions, encoder, seed, *, learned_table=None) -> dict:
    """Stress (``"paper"``, ``"scale_free"``) of MDS (full rank and rank 3) and of every fixed encoding against ``D``."""
    return geo.encoding_stresses(D, comparison_set(D, positions, encoder, seed, learned_table=learned_table))


def run_encoding_comparison(settings=None, *, force: bool = False) -> Result:
    r"""The stress of every encoding on every corpus, under ``"paper"`` and ``"scale_free"`` (claim C3).

    Corpora: the synthetic families (samples at this scale; encodings of width $d = 50$, 5 heads) and
    SST-2 (width 768, 12 heads, as BERT-base; plus the learned table of the pretrained model
    ``settings.pretrained``, its first rows at the kept positions). Encodings: MDS at full rank (capped
    at $d$), MDS at rank 3, sinusoidal, RoPE, ALiBi, a random table $\mathcal N(0, 0.02^2)$ (a learned
    table at initialisation), the pretrained learned table (SST-2 only) and none.

    Values: ``{corpus: {encoding: {"paper": s, "scale_free": s}}}`` and ``pretrained`` (the model name).
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(families=list(cg.SYNTHETIC_FAMILIES), synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  synthetic_encoder=cfg.synthetic_encoder, encoder=ccfg.encoder, seed=settings.seed,
                  pretrained=settings.pretrained, data=_data(settings))

    def compute():
        from ..models.pretrained import position_table

        values: dict = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = cg.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            marg = geo.positional_marginals(corpus.counts())
            values[fam] = comparison_for(geo.hellinger_matrix(marg), marg.positions, cfg.synthetic_encoder, settings.seed)
        marg, _ = cg.sst2_marginals(settings)
        table = position_table(settings.pretrained)
        values["sst2"] = comparison_for(geo.hellinger_matrix(marg), marg.positions, ccfg.encoder, settings.seed,
                                        learned_table=table)
        values["pretrained"] = settings.pretrained
        return values, {}

    return _registry_run("optimal_encoding.comparison", compute, params, settings, force, model=settings.pretrained)


def comparison_intervals(sequences, n_positions: int, vocab_size: int, encoder, opts: IntervalOptions, seed: int, *,
                         learned_table=None, progress=None, groups=None) -> tuple[dict, np.ndarray]:
    r"""Bootstrap intervals over sequences of the comparison table of one corpus (:func:`comparison_for`).

    The sequences are dealt into ``opts.n_folds`` folds (:func:`posgeom.geometry.fold_counts`) and
    resampled ``opts.n_boot`` times (:func:`posgeom.geometry.bootstrap_intervals`); each replicate
    refits MDS to its own $D^*$ (MDS is a function of $D$), the fixed encodings stay fixed. ``groups`` (one label
    per sequence, :func:`posgeom.geometry.fold_members`) keeps the sequences of one label in one fold.

    Returns
    -------
    values : dict
        ``statistics`` {"<encoding>|<norm>": interval}, ``differences`` {"<a>-<b>|scale_free": interval}
        for :data:`INTERVAL_DIFFERENCES`, ``n_used``, ``n_kept``.
    replicates : ndarray of shape (n_used, n_statistics)
    """
    counts = geo.positional_counts(sequences, n_positions, vocab_size)
    marg = geo.positional_marginals(counts)
    D0 = geo.hellinger_matrix(marg)
    positions = marg.positions
    fixed = comparison_set(D0, positions, encoder, seed, learned_table=learned_table)
    names = [(e, z) for e in ENCODINGS_COMPARED if e in fixed for z in ("paper", "scale_free")]

    def statistics(D):
        # MDS is refitted to each replicate's D; the fixed encodings stay fixed
        table = geo.encoding_stresses(D, {**fixed, **mds_distances(D, encoder.d_model)})
        return np.array([table[e][z] for e, z in names])

    folds = geo.fold_counts(sequences, n_positions, vocab_size, n_folds=opts.n_folds, seed=seed, groups=groups)
    intervals, reps = geo.bootstrap_intervals(D0, folds, positions, statistics, n_boot=opts.n_boot, level=opts.level,
                                              seed=seed, progress=progress,
                                              bounds=[geo.STRESS_BOUNDS[z] for _, z in names])
    stats = {f"{e}|{z}": iv.as_dict() for (e, z), iv in zip(names, intervals)}
    diffs = {f"{a}-{b}|scale_free": geo.difference_interval(intervals, reps, names.index((a, "scale_free")),
                                                            names.index((b, "scale_free")), opts.level,
                                                            bounds=(-1.0, 1.0)).as_dict()
             for a, b in INTERVAL_DIFFERENCES if (a, "scale_free") in names and (b, "scale_free") in names}
    return dict(statistics=stats, differences=diffs, n_used=int(reps.shape[0]), n_kept=int(positions.size)), reps


def run_comparison_intervals(settings=None, *, force: bool = False) -> Result:
    r"""Bootstrap intervals over sequences for the stress table of :func:`run_encoding_comparison`.

    For SST-2 (whole training split; the learned table of ``settings.pretrained``) and each synthetic
    family: :func:`comparison_intervals`, bootstrap intervals (:func:`posgeom.geometry.percentile_interval`) at
    ``CONFIGS[scale].intervals.level``; SST-2's training phrases are resampled with the sentence containing them.

    Values: ``{corpus: {"statistics", "differences", "n_used", "n_kept"}}``. Arrays: ``<corpus>__replicates``.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(families=list(cg.SYNTHETIC_FAMILIES), synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  synthetic_encoder=cfg.synthetic_encoder, encoder=ccfg.encoder, intervals=cfg.intervals,
                  seed=settings.seed, pretrained=settings.pretrained, data=_data(settings))

    def compute():
        from ..models.pretrained import position_table
        from ..progress import tqdm

        values, arrays = {}, {}
        seqs, tokens, _ = cg.sst2_sequences(settings)
        for name in ("sst2", *cg.SYNTHETIC_FAMILIES):
            if name == "sst2":
                args = (seqs, ccfg.sst2.n_positions, tokens.vocab_size, ccfg.encoder)
                # SST-2's training phrases resampled with their sentence (the independent unit)
                extra = dict(learned_table=position_table(settings.pretrained), groups=cg.sst2_groups(settings))
            else:
                corpus = cg.family_corpus(name, seed=settings.seed, **as_params(ccfg.synthetic))
                args = (corpus.sequences(), corpus.n_positions, corpus.vocab_size, cfg.synthetic_encoder)
                extra = {}
            values[name], arrays[f"{name}__replicates"] = comparison_intervals(
                *args, cfg.intervals, settings.seed, progress=lambda it, n=name: tqdm(it, desc=f"bootstrap {n}",
                                                                                       leave=False), **extra)
        return values, arrays

    return _registry_run("optimal_encoding.comparison_intervals", compute, params, settings, force,
                         model=settings.pretrained)


def exact_embedding(marg) -> dict:
    """Full-rank MDS of the chord and geodesic Hellinger matrices of one corpus: largest error, clipped mass,
    numerical rank, smallest over largest eigenvalue and the negative eigenvalues beyond rounding."""
    out = {"n": int(marg.n_positions)}
    for kind in ("chord", "geodesic"):
        D = geo.hellinger_matrix(marg, kind=kind)
        res = geo.classical_mds(D)
        w = res.eigenvalues
        out[kind] = dict(
            full_rank_max_error=float(np.max(np.abs(geo.euclidean_distances(res.embedding) - D))),
            clipped_mass=float(res.clipped_mass), numerical_rank=int(res.k),
            min_over_max_eigenvalue=float(w.min() / w.max()), n_negative_beyond_rounding=int(
                np.sum(w < -w.size * np.finfo(float).eps * w.max() * 100)),
        )
    return out


def run_exact_embedding(settings=None, *, force: bool = False) -> Result:
    r"""Curvature is not the obstacle: the chord Hellinger embeds exactly (:func:`exact_embedding` of every corpus).

    Values: ``{corpus: {"chord": {...}, "geodesic": {...}, "n": n}}``.
    """
    settings = _settings(settings)
    ccfg = cg.CONFIGS[settings.scale]
    params = params_of(synthetic=ccfg.synthetic, sst2=ccfg.sst2, seed=settings.seed, data=_data(settings))

    def compute():
        values = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = cg.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            values[fam] = exact_embedding(geo.positional_marginals(corpus.counts()))
        values["sst2"] = exact_embedding(cg.sst2_marginals(settings)[0])
        return values, {}

    return _registry_run("optimal_encoding.exact_embedding", compute, params, settings, force)


def one_hot_distances(m: int = 3) -> np.ndarray:
    r"""Chord Hellinger distances between ``m`` one-hot distributions: $\sqrt 2$ off the diagonal.

    Returns
    -------
    ndarray of shape (m, m)
    """
    return geo.hellinger_matrix(np.eye(m))


def one_hot_layouts() -> tuple[dict, dict]:
    r"""Three one-hot distributions: 1-D classical MDS ($\sigma = 1/6$), the rescaled layout ($1/9$) and SMACOF."""
    D = one_hot_distances(3)
    mds = geo.classical_mds(D, k=1).embedding
    rescaled = np.array([[-2 * np.sqrt(2) / 3], [0.0], [2 * np.sqrt(2) / 3]])
    sm = geo.smacof(D, 1, init="mds")
    values = dict(
        mds_stress=geo.stress(D, mds, "paper"), rescaled_stress=geo.stress(D, rescaled, "paper"),
        smacof_stress=float(sm.stress), smacof_n_iter=int(sm.n_iter),
        mds_scale_free=geo.stress(D, mds, "scale_free"),
        mds_sorted=sorted(float(x) for x in mds.ravel()), smacof_sorted=sorted(float(x) for x in sm.embedding.ravel()),
    )
    return values, dict(mds=mds, rescaled=rescaled, smacof=sm.embedding)


def run_one_hot(settings=None, *, force: bool = False) -> Result:
    r"""Classical MDS is not the stress optimum: three one-hot distributions (:func:`one_hot_layouts`).

    Every pair is at $\sqrt 2$. One-dimensional classical MDS places them at $(-1, 0, 1)/\sqrt2 \cdot$
    (up to sign), whose ``"paper"`` stress is $1/6$; the rescaled layout
    $(-2\sqrt2/3, 0, 2\sqrt2/3)$ has $1/9$; SMACOF started from MDS reaches the latter.

    Values: ``mds_stress``, ``rescaled_stress``, ``smacof_stress``, ``smacof_n_iter``, and the
    ``scale_free`` stress of the MDS layout. Arrays: ``mds`` (3, 1), ``rescaled`` (3, 1), ``smacof`` (3, 1).
    """
    settings = _settings(settings)
    return _registry_run("optimal_encoding.one_hot", one_hot_layouts, dict(m=3, seed=settings.seed), settings, force)


def smacof_curve(D, ranks, smacof: SmacofOptions) -> dict:
    r"""``"paper"`` stress of rank-$k$ MDS, of the same layout at its best scale, and of SMACOF from it, per rank.

    The relative gain $1 - \sigma_{\mathrm{SMACOF}} / \sigma_{\mathrm{MDS}}$ splits into what a rescaling
    alone gives and what changing the shape adds. Ranks $\ge n$ are skipped.
    """
    out = {k: [] for k in ("ranks", "mds_paper", "mds_scale_free", "smacof_paper", "smacof_scale_free", "n_iter", "gain")}
    for k in ranks:
        if k >= D.shape[0]:
            continue
        P = geo.classical_mds(D, k=k).embedding
        sm = geo.smacof(D, k, init="mds", max_iter=smacof.max_iter, eps=smacof.eps)
        mp, sp_ = geo.stress(D, P, "paper"), float(sm.stress)
        out["ranks"].append(int(k))
        out["mds_paper"].append(mp)
        out["mds_scale_free"].append(geo.stress(D, P, "scale_free"))
        out["smacof_paper"].append(sp_)
        out["smacof_scale_free"].append(geo.stress(D, sm.embedding, "scale_free"))
        out["n_iter"].append(int(sm.n_iter))
        # 1 - sigma_SMACOF / sigma_MDS
        out["gain"].append(1.0 - sp_ / mp if mp > 0 else 0.0)
    return out


def run_smacof_gain(settings=None, *, force: bool = False) -> Result:
    r"""How much SMACOF started from classical MDS lowers the ``"paper"`` stress, rank by rank (:func:`smacof_curve`).

    For SST-2 and the synthetic families of ``CONFIGS[scale].families``, at each rank of
    ``CONFIGS[scale].smacof_ranks``.

    Values: ``{corpus: {"ranks": [...], "mds_paper": [...], "mds_scale_free": [...],
    "smacof_paper": [...], "smacof_scale_free": [...], "n_iter": [...], "gain": [...]}}``.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(ranks=list(cfg.smacof_ranks), smacof=cfg.smacof, families=list(cfg.families),
                  synthetic=ccfg.synthetic, sst2=ccfg.sst2, seed=settings.seed, data=_data(settings))

    def compute():
        values = {"sst2": smacof_curve(geo.hellinger_matrix(cg.sst2_marginals(settings)[0]), cfg.smacof_ranks,
                                       cfg.smacof)}
        for fam in cfg.families:
            corpus = cg.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            values[fam] = smacof_curve(geo.hellinger_matrix(corpus.counts()), cfg.smacof_ranks, cfg.smacof)
        return values, {}

    return _registry_run("optimal_encoding.smacof_gain", compute, params, settings, force)
