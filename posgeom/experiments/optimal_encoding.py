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

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..encodings import encoding_set
from ..registry import Registry, Result
from . import corpus_geometry as cg

__all__ = [
    "CONFIGS", "ENCODINGS_COMPARED", "run_algorithm_steps", "run_encoding_comparison", "run_exact_embedding",
    "run_one_hot", "run_smacof_gain", "one_hot_distances",
]

#: Per-scale options (the corpora themselves come from :data:`corpus_geometry.CONFIGS`).
CONFIGS: dict[str, dict] = {
    "quick": dict(
        synthetic_encoder=dict(d_model=50, n_heads=5),
        walkthrough=dict(family="drift", k=3, lift_d=50),
        smacof_ranks=(1, 2, 3, 5, 10),
        smacof=dict(max_iter=3000, eps=1e-9),
        families=("drift", "regimes", "markov"),
    ),
    "paper": dict(
        synthetic_encoder=dict(d_model=50, n_heads=5),
        walkthrough=dict(family="drift", k=3, lift_d=50),
        smacof_ranks=(1, 2, 3, 5, 10, 20),
        smacof=dict(max_iter=20000, eps=1e-12),
        families=("drift", "regimes", "markov"),
    ),
}

#: The encodings of the comparison table, in display order.
ENCODINGS_COMPARED = ("mds", "mds_rank3", "sinusoidal", "rope", "alibi", "random", "learned", "none")


def _registry_run(name, compute, params, settings, force, model=None):
    return Registry(settings.results_dir).run(
        name, compute, params=params, scale=settings.scale, seed=settings.seed, device="cpu", model=model, force=force,
    )


def run_algorithm_steps(settings=None, *, force: bool = False) -> Result:
    r"""Algorithm 1 step by step on a synthetic corpus (the drift family at this scale).

    1. $D$ from the counts (chord Hellinger); 2. $B = -\frac12 J D^{(2)} J$, checked against
    $J S S^\top J$ ($S$ the rows $\sqrt{\mu_i}$); 3. the eigendecomposition of $B$; 4. $P_{\mathrm{MDS}}$
    at rank $k$ and at full rank; 5. the lift into width $d$ (distances unchanged).

    Values: ``B_vs_SS_max_error``, ``min_eigenvalue``, ``numerical_rank``, ``full_rank_max_error``,
    ``rank_k_stress`` (``paper``, ``scale_free``), ``lift_max_error``, ``k``, ``n``, ``d``.
    Arrays: ``D``, ``B`` (n, n), ``eigenvalues`` (n,), ``P_k`` (n, k), ``population_eigenvalues`` (n,).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]["walkthrough"]
    syn_cfg = cg.CONFIGS[settings.scale]["synthetic"]
    params = dict(**cfg, synthetic=syn_cfg, seed=settings.seed)

    def compute():
        corpus = cg.family_corpus(cfg["family"], seed=settings.seed, **syn_cfg)
        marg = geo.positional_marginals(corpus.counts())
        D = geo.hellinger_matrix(marg)
        B = geo.double_centered_gram(D)
        S = geo.sqrt_marginals(marg)
        n = D.shape[0]
        J = np.eye(n) - np.ones((n, n)) / n
        # B = J S S^T J for the chord distance
        BS = J @ S @ S.T @ J
        res = geo.classical_mds(D)
        Pk = geo.classical_mds(D, k=cfg["k"]).embedding
        P_lift = geo.lift(Pk, cfg["lift_d"], seed=settings.seed)
        pop = geo.classical_mds(geo.hellinger_matrix(corpus.population), k=1).eigenvalues
        values = dict(
            B_vs_SS_max_error=float(np.max(np.abs(B - BS))), min_eigenvalue=float(res.eigenvalues.min()),
            max_eigenvalue=float(res.eigenvalues.max()), numerical_rank=int(res.k),
            full_rank_max_error=float(np.max(np.abs(geo.euclidean_distances(res.embedding) - D))),
            rank_k_stress={norm: geo.stress(D, Pk, norm) for norm in ("paper", "scale_free")},
            lift_max_error=float(np.max(np.abs(geo.euclidean_distances(P_lift) - geo.euclidean_distances(Pk)))),
            k=int(cfg["k"]), n=int(n), d=int(cfg["lift_d"]), family=cfg["family"],
            population_rank_tol=geo.effective_rank(pop, "tol", tol=1e-9),
        )
        return values, dict(D=D, B=B, eigenvalues=res.eigenvalues, P_k=Pk, population_eigenvalues=pop)

    return _registry_run("optimal_encoding.algorithm_steps", compute, params, settings, force)


def _comparison_for(D, positions, enc_cfg, seed, *, learned_table=None) -> dict:
    """Stress of MDS (full rank and rank 3) and of every fixed encoding against ``D``."""
    encs = encoding_set(positions, d_model=enc_cfg["d_model"], n_heads=enc_cfg["n_heads"], seed=seed)
    full = geo.classical_mds(D)
    # MDS at full rank is limited by the model width d (rank(B) <= n - 1 may exceed d)
    k_full = min(full.k, enc_cfg["d_model"])
    table = {
        "mds": geo.euclidean_distances(full.embedding[:, :k_full]),
        "mds_rank3": geo.euclidean_distances(full.embedding[:, :3]),
        **encs,
    }
    if learned_table is not None:
        table["learned"] = geo.euclidean_distances(learned_table[np.asarray(positions)])
    return cg.encoding_stresses(D, table)


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
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    params = dict(families=list(cg.SYNTHETIC_FAMILIES), synthetic=ccfg["synthetic"], sst2=ccfg["sst2"],
                  synthetic_encoder=cfg["synthetic_encoder"], encoder=ccfg["encoder"], seed=settings.seed,
                  pretrained=settings.pretrained, data=str(settings.data_dir) if settings.data_dir else "hub")

    def compute():
        from ..models.resolve import position_table

        values: dict = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = cg.family_corpus(fam, seed=settings.seed, **ccfg["synthetic"])
            marg = geo.positional_marginals(corpus.counts())
            D = geo.hellinger_matrix(marg)
            values[fam] = _comparison_for(D, marg.positions, cfg["synthetic_encoder"], settings.seed)
        marg, _ = cg.sst2_marginals(settings)
        D = geo.hellinger_matrix(marg)
        table = position_table(settings.pretrained)
        values["sst2"] = _comparison_for(D, marg.positions, ccfg["encoder"], settings.seed, learned_table=table)
        values["pretrained"] = settings.pretrained
        return values, {}

    return _registry_run("optimal_encoding.comparison", compute, params, settings, force, model=settings.pretrained)


def run_exact_embedding(settings=None, *, force: bool = False) -> Result:
    r"""Curvature is not the obstacle: the chord Hellinger embeds exactly.

    For every corpus (synthetic families and SST-2) and for the chord and geodesic conventions: the
    largest $|D_{ij} - \hat d_{ij}|$ of full-rank classical MDS, the clipped (negative-eigenvalue) mass
    of $B$, the numerical rank of $B$ and the smallest eigenvalue relative to the largest.

    Values: ``{corpus: {"chord": {...}, "geodesic": {...}, "n": n}}``.
    """
    settings = _settings(settings)
    ccfg = cg.CONFIGS[settings.scale]
    params = dict(synthetic=ccfg["synthetic"], sst2=ccfg["sst2"], seed=settings.seed,
                  data=str(settings.data_dir) if settings.data_dir else "hub")

    def one(marg):
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

    def compute():
        values = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = cg.family_corpus(fam, seed=settings.seed, **ccfg["synthetic"])
            values[fam] = one(geo.positional_marginals(corpus.counts()))
        values["sst2"] = one(cg.sst2_marginals(settings)[0])
        return values, {}

    return _registry_run("optimal_encoding.exact_embedding", compute, params, settings, force)


def one_hot_distances(m: int = 3) -> np.ndarray:
    r"""Chord Hellinger distances between ``m`` one-hot distributions: $\sqrt 2$ off the diagonal.

    Returns
    -------
    ndarray of shape (m, m)
    """
    return geo.hellinger_matrix(np.eye(m))


def run_one_hot(settings=None, *, force: bool = False) -> Result:
    r"""Classical MDS is not the stress optimum: three one-hot distributions.

    Every pair is at $\sqrt 2$. One-dimensional classical MDS places them at $(-1, 0, 1)/\sqrt2 \cdot$
    (up to sign), whose ``"paper"`` stress is $1/6$; the rescaled layout
    $(-2\sqrt2/3, 0, 2\sqrt2/3)$ has $1/9$; SMACOF started from MDS reaches the latter.

    Values: ``mds_stress``, ``rescaled_stress``, ``smacof_stress``, ``smacof_n_iter``, and the
    ``scale_free`` stress of the MDS layout. Arrays: ``mds`` (3, 1), ``rescaled`` (3, 1), ``smacof`` (3, 1).
    """
    settings = _settings(settings)
    params = dict(m=3, seed=settings.seed)

    def compute():
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

    return _registry_run("optimal_encoding.one_hot", compute, params, settings, force)


def run_smacof_gain(settings=None, *, force: bool = False) -> Result:
    r"""How much SMACOF started from classical MDS lowers the ``"paper"`` stress, rank by rank.

    For SST-2 and the synthetic families of ``CONFIGS[scale]["families"]``, at each rank $k$ of
    ``CONFIGS[scale]["smacof_ranks"]``: the ``"paper"`` stress of rank-$k$ MDS, of the same layout at its
    best global scale (= its ``"scale_free"`` stress), and of SMACOF started from it (``"paper"`` and
    ``"scale_free"``), with the number of Guttman iterations. The relative gain
    $1 - \sigma_{\mathrm{SMACOF}} / \sigma_{\mathrm{MDS}}$ splits into what a rescaling alone gives and
    what changing the shape adds.

    Values: ``{corpus: {"ranks": [...], "mds_paper": [...], "mds_scale_free": [...],
    "smacof_paper": [...], "smacof_scale_free": [...], "n_iter": [...], "gain": [...]}}``.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    params = dict(ranks=list(cfg["smacof_ranks"]), smacof=cfg["smacof"], families=list(cfg["families"]),
                  synthetic=ccfg["synthetic"], sst2=ccfg["sst2"], seed=settings.seed,
                  data=str(settings.data_dir) if settings.data_dir else "hub")

    def curve(D):
        out = {k: [] for k in ("ranks", "mds_paper", "mds_scale_free", "smacof_paper", "smacof_scale_free", "n_iter", "gain")}
        for k in cfg["smacof_ranks"]:
            if k >= D.shape[0]:
                continue
            P = geo.classical_mds(D, k=k).embedding
            sm = geo.smacof(D, k, init="mds", **cfg["smacof"])
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

    def compute():
        values = {}
        values["sst2"] = curve(geo.hellinger_matrix(cg.sst2_marginals(settings)[0]))
        for fam in cfg["families"]:
            corpus = cg.family_corpus(fam, seed=settings.seed, **ccfg["synthetic"])
            values[fam] = curve(geo.hellinger_matrix(corpus.counts()))
        return values, {}

    return _registry_run("optimal_encoding.smacof_gain", compute, params, settings, force)
