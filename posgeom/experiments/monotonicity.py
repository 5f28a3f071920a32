r"""Does the geometry of the corpus order the encoding? The monotonicity conjecture (C9) and the NTK regime (C11).

**Monotonicity.** An encoding $\hat D$ is *monotone* in the corpus geometry $D$ when $d_{ij} < d_{kl}$ implies
$\hat d_{ij} < \hat d_{kl}$. Its *violation rate* is the fraction of discordant pairs of position pairs,
ties excluded ($= (1 - \tau_a)/2$ on untied data; :func:`posgeom.geometry.violation_rate`), reported with
Spearman's $\rho$. :func:`run_monotonicity_table` computes both for every encoding of the chapter *Real
corpora*, for random tables over several seeds (the 50 % baseline), for classical MDS at every rank (the
paper reports 22 % for $P_{\mathrm{MDS}}$ without a rank) and for two linear images of the marginals that
the NTK argument predicts (below).

**The NTK regime** (Appendix A; Jacot et al. 2018). With learning rate $\eta$ small and width large, the
network stays close to its linearisation around the initial parameters $\theta_0$: the empirical tangent
kernel

$$K_t(x, x') = \nabla_\theta f_{\theta_t}(x)^\top \nabla_\theta f_{\theta_t}(x')$$

barely moves, $\|K_t - K_0\|_F / \|K_0\|_F \ll 1$. Under gradient descent the positional table then moves
by a sum of gradients taken at (nearly) the initial network. If the gradient with respect to the input
embedding at position $i$ depends on the sequence only through the token there, $g(w)$, then
$\Delta p_i \propto \sum_w c_i(w)\, g(w) = G\, c_i$: the displacements are a fixed linear image of the
positional *count* vectors $c_i$ (or of the marginals $\mu_i$, if every position's update is normalised
by its reach). Their distances then follow $\|G(c_i - c_j)\|$ — monotone in the Euclidean distance of
counts only if $G$ is close to a scaled isometry, and in the Hellinger distance not at all in general.
The table reports the violation rate of those two linear predictions against $D$.

:func:`run_ntk` trains a small classifier ([CLS] pooling, a learned table $\mathcal N(0, 0.02^2)$) by
plain SGD — the setting of the NTK theory; posgeom's training loop uses AdamW — in three configurations:
*lazy* (wide, small $\eta$), *lazy_small_init* (the same with the table initialised near a point) and
*rich* (narrow, large $\eta$). It records the relative kernel change (the kernel
of the logit difference on fixed probe sentences, with respect to every parameter except the word
embeddings, and separately with respect to the positional table alone, computed with ``torch.func``), and
the violation rate and Spearman's $\rho$ against $D$ of the table $P_t$ and of its displacement
$\Delta P_t = P_t - P_0$.

``python -m posgeom.experiments.monotonicity`` runs everything at the scale of ``POSGEOM_SCALE``.
"""

from __future__ import annotations

import copy
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..corpora.real import resolve_source
from ..corpora.tokenize import table_rows
from ..registry import Registry, Result

if TYPE_CHECKING:
    import torch

#: The paper's violation rate of P_MDS (claim C9).
PAPER_MDS_VIOLATION = 0.22
#: Training regimes of :func:`run_ntk`: wide and slow (the NTK regime), the same with the table started
#: near a point, and narrow and fast.
REGIMES = ("lazy", "lazy_small_init", "rich")

CONFIGS: dict[str, dict[str, Any]] = {
    "quick": {
        "random_seeds": [0, 1, 2, 3, 4, 5, 6, 7],
        "random_sigma": 0.02,
        "smacof_ranks": [1],
        # MDS ranks scored (None: every rank 1 … n - 1)
        "mds_ranks": {"sst2": None, "imdb": [1, 2, 3, 5, 8, 10, 14, 16, 18, 20, 25, 30, 50, 100, 200, 511]},
        "ntk": {
            "corpus": "sst2", "n_positions": 16, "train_sequences": 4096, "probe_sequences": 6,
            "steps": 100, "batch_size": 16, "record_every": 25, "seeds": [0, 1], "threads": 1,
            "lazy": {"d_model": 128, "n_layers": 1, "n_heads": 4, "d_ff": 256, "lr": 3e-3},
            "lazy_small_init": {"d_model": 128, "n_layers": 1, "n_heads": 4, "d_ff": 256, "lr": 3e-3,
                                "table_sigma": 1e-6},
            "rich": {"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "lr": 0.2},
        },
    },
    "paper": {
        "random_seeds": list(range(20)),
        "random_sigma": 0.02,
        "smacof_ranks": [1, 2, 3],
        "mds_ranks": {"sst2": None, "imdb": None},
        "ntk": {
            "corpus": "sst2", "n_positions": 64, "train_sequences": None, "probe_sequences": 32,
            "steps": 5000, "batch_size": 64, "record_every": 250, "seeds": [0, 1, 2, 3, 4], "threads": None,
            "lazy": {"d_model": 2048, "n_layers": 2, "n_heads": 16, "d_ff": 4096, "lr": 1e-3},
            "lazy_small_init": {"d_model": 2048, "n_layers": 2, "n_heads": 16, "d_ff": 4096, "lr": 1e-3,
                                "table_sigma": 1e-6},
            "rich": {"d_model": 64, "n_layers": 2, "n_heads": 2, "d_ff": 128, "lr": 0.2},
        },
    },
}


def monotonicity_of(D, Dhat) -> dict[str, float]:
    """Violation rate (ties excluded), Spearman's rho and the tie counts of ``Dhat`` against ``D``.

    Parameters
    ----------
    D, Dhat : array-like of shape (n, n)
        Distance matrices.

    Returns
    -------
    dict
        ``violation_rate``, ``spearman``, ``tied_fraction`` (pairs of pairs tied in ``Dhat``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant Dhat: NaN, reported as such
        rate, counts = geo.violation_rate(D, Dhat, as_distances=True, return_counts=True)
        rho = geo.spearman(D, Dhat, as_distances=True)
    return {"violation_rate": float(rate), "spearman": float(rho),
            "tied_fraction": counts.tied_Dhat / counts.total if counts.total else float("nan")}


def mds_monotonicity_curve(D, ranks=None) -> dict[str, np.ndarray]:
    """Violation rate and Spearman's rho of the rank-k classical MDS encoding, for each k of ``ranks``.

    Parameters
    ----------
    D : array-like of shape (n, n)
    ranks : sequence of int, optional
        Default every rank 1 … n - 1 (ranks above n - 1 are dropped).

    Returns
    -------
    dict
        ``ranks`` (r,), ``violation_rate`` (r,), ``spearman`` (r,).
    """
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    mds = geo.classical_mds(D, k=1)
    ranks = np.arange(1, n) if ranks is None else np.asarray([k for k in ranks if 1 <= k <= n - 1], dtype=int)
    coords = mds.eigenvectors * np.sqrt(np.maximum(mds.eigenvalues, 0.0))
    viol, rho = [], []
    for k in ranks:
        m = monotonicity_of(D, geo.euclidean_distances(coords[:, :k]))
        viol.append(m["violation_rate"])
        rho.append(m["spearman"])
    return {"ranks": ranks, "violation_rate": np.asarray(viol), "spearman": np.asarray(rho)}


def linear_predictions(counts_or_marginals) -> dict[str, np.ndarray]:
    r"""Distances of the two linear images of the positional statistics the NTK argument predicts (with $G = I$).

    Parameters
    ----------
    counts_or_marginals : PositionalMarginals
        With ``probs`` (n, v) and ``reach`` (n,).

    Returns
    -------
    dict
        ``marginals_l2`` (n, n): $\|\mu_i - \mu_j\|_2$; ``counts_l2`` (n, n): $\|c_i - c_j\|_2 / N_0$.
    """
    m = counts_or_marginals
    mu = np.asarray(m.probs, dtype=np.float64)
    reach = np.asarray(m.reach, dtype=np.float64)
    return {"marginals_l2": geo.euclidean_distances(mu),
            # c_i / N_0 = mu_i N_i / N_0
            "counts_l2": geo.euclidean_distances(mu * (reach / reach.max())[:, None])}


def run_monotonicity_table(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                           progress: bool = True, corpus_overrides: dict | None = None,
                           scratch_overrides: dict | None = None) -> Result:
    """Violation rate and Spearman's rho of every encoding against the corpus's Hellinger geometry.

    Rows: sinusoidal, RoPE, ALiBi (line), the pretrained table, the table trained from scratch (chapter
    *Real corpora*, for the corpora that have one), random tables (mean and sd over seeds), SMACOF at the
    ranks of ``CONFIGS[scale]["smacof_ranks"]``, the NTK
    predictions (Euclidean distances of marginals and of counts). Plus the MDS curve over ranks.

    Parameters
    ----------
    corpus_overrides, scratch_overrides : dict, optional
        Corpus options (:func:`posgeom.experiments.real_corpora.corpus_options`) and training options of
        the from-scratch table (:func:`posgeom.experiments.real_corpora.run_scratch_table`).

    Returns
    -------
    Result
        ``values["rows"]``: ``{"encoding", "options", "violation_rate", "spearman", "tied_fraction",
        "violation_rate_resolvable"}`` (the last against the resolvable geometry of *Real corpora*)
        (``*_sd`` for random tables); ``values["closest_rank"]`` to the paper's 22 %.
        ``arrays``: ``mds_ranks``, ``mds_violation``, ``mds_spearman`` (r,), ``random_violation`` (seeds,).
    """
    from . import real_corpora as rc

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    geometry = rc.run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    # the table trained from scratch exists for the corpora of rc.CONFIGS[scale]["scratch_corpora"] (SST-2 at quick)
    scratch = None
    if corpus in rc.CONFIGS[settings.scale]["scratch_corpora"] or scratch_overrides is not None:
        scratch = rc.run_scratch_table(settings, corpus=corpus, progress=progress, corpus_overrides=corpus_overrides,
                                       **(scratch_overrides or {}))
    opts = geometry.values["options"]
    params = {"corpus": opts, "random_seeds": cfg["random_seeds"], "random_sigma": cfg["random_sigma"],
              "mds_ranks": cfg["mds_ranks"][corpus], "encodings": rc.CONFIGS[settings.scale]["encodings"],
              "pretrained": settings.pretrained, "scratch": scratch.key if scratch is not None else None,
              "data": geometry.values["source"]}

    def compute():
        D = geometry.arrays["D"]
        pos = geometry.arrays["positions"]
        n_all = int(opts["n_positions"])
        R = geometry.arrays["R"]
        rows = []

        def add(name, options, Dhat):
            rows.append({"encoding": name, "options": options, **monotonicity_of(D, Dhat),
                         "violation_rate_resolvable": monotonicity_of(R, Dhat)["violation_rate"]})

        shape = rc.encoding_shape(settings.scale)
        # not "none" or "equidistant" (every distance equal: every pair of pairs is tied, no rate exists),
        # nor "alibi (kernel rule)" (an increasing function of ALiBi's line: the same order, the same rate)
        for name, Dhat in enc.encoding_set(pos, names=("sinusoidal", "rope", "alibi"), **shape).items():
            add(name, enc.describe_encoding(name, **shape), Dhat)
        P = rc.pretrained_table(settings)
        prow = table_rows(opts["special"], pos)
        add("learned (pretrained)", f"{settings.pretrained}, d={P.shape[1]}", geo.euclidean_distances(P[prow]))
        if scratch is not None:
            T = scratch.arrays["table"][prow]
            add("learned (from scratch)", f"MLM, {scratch.values['train']['max_steps']} steps (chapter Real corpora)",
                geo.euclidean_distances(T))
            T0 = scratch.arrays["table_init"][prow]
            add("learned (same model at step 0)", "N(0, 0.02^2) initialisation", geo.euclidean_distances(T0))
        d_rand = rc.CONFIGS[settings.scale]["encodings"]["d_model"]
        rand_m = [monotonicity_of(D, geo.euclidean_distances(
            enc.random_table(n_all, d_rand, sigma=cfg["random_sigma"], seed=s)[pos])) for s in cfg["random_seeds"]]
        rand = np.array([m["violation_rate"] for m in rand_m])
        rand_rho = np.array([m["spearman"] for m in rand_m])
        rand_res = np.array([monotonicity_of(R, geo.euclidean_distances(
            enc.random_table(n_all, d_rand, sigma=cfg["random_sigma"], seed=s)[pos]))["violation_rate"]
            for s in cfg["random_seeds"]])
        rows.append({"encoding": "random N(0, sigma^2)",
                     "options": f"d={d_rand}, sigma={cfg['random_sigma']}, {len(cfg['random_seeds'])} seeds",
                     "violation_rate": float(rand.mean()), "violation_rate_sd": float(rand.std(ddof=1)),
                     "spearman": float(rand_rho.mean()), "spearman_sd": float(rand_rho.std(ddof=1)),
                     "violation_rate_resolvable": float(rand_res.mean()),
                     "violation_rate_resolvable_sd": float(rand_res.std(ddof=1)), "tied_fraction": 0.0})
        for k in cfg["smacof_ranks"]:
            sm = geo.smacof(D, k, max_iter=rc.CONFIGS[settings.scale]["smacof"]["max_iter"],
                            eps=rc.CONFIGS[settings.scale]["smacof"]["eps"])
            add(f"SMACOF (rank {k})", f"from MDS, {sm.n_iter} iterations", geo.euclidean_distances(sm.embedding))
        marg = rc.corpus_geometry_of(settings, opts).marginals
        lin = linear_predictions(marg)
        add("NTK prediction: marginals", "||mu_i - mu_j||_2 (G = I)", lin["marginals_l2"])
        add("NTK prediction: counts", "||c_i - c_j||_2 / N_0 (G = I)", lin["counts_l2"])
        curve = mds_monotonicity_curve(D, cfg["mds_ranks"][corpus])
        k_best = int(curve["ranks"][np.argmin(np.abs(curve["violation_rate"] - PAPER_MDS_VIOLATION))])
        values = {"rows": rows, "corpus": corpus, "model": settings.pretrained, "closest_rank": k_best,
                  "closest_violation": float(curve["violation_rate"][list(curve["ranks"]).index(k_best)]),
                  "n_kept": int(D.shape[0])}
        arrays = {"mds_ranks": curve["ranks"], "mds_violation": curve["violation_rate"],
                  "mds_spearman": curve["spearman"], "random_violation": rand}
        return values, arrays

    return Registry(settings.results_dir).run(
        f"monotonicity_table_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=settings.pretrained, force=force,
    )


def monotonicity_dataframe(result: Result):
    """A :func:`run_monotonicity_table` result as a table (index ``encoding``), random rows as ``mean ± sd``."""
    import pandas as pd

    recs = []
    for row in result.values["rows"]:
        rec = {"encoding": row["encoding"], "options": row["options"]}
        for key, label in (("violation_rate", "violation rate"), ("spearman", "Spearman ρ"),
                           ("violation_rate_resolvable", "violation rate vs resolvable R")):
            text = f"{row[key]:.3f}"
            if f"{key}_sd" in row:
                text += f" ± {row[key + '_sd']:.3f}"
            rec[label] = text
        rec["ties in D̂"] = f"{row['tied_fraction']:.0%}"
        recs.append(rec)
    return pd.DataFrame.from_records(recs).set_index("encoding")


# --------------------------------------------------------------------------------------------
# The NTK regime
# --------------------------------------------------------------------------------------------


def logit_margin_ntk(model, input_ids, attention_mask, names) -> torch.Tensor:
    r"""Empirical tangent kernel of the logit margin $f(x) = z_1(x) - z_0(x)$ on probe sequences.

    $K = J J^\top$ with $J_{a,:} = \nabla_\theta f(x_a)$ over the parameters ``names``; the gradients come
    from ``torch.func.grad`` of a ``torch.func.functional_call`` per probe (the model in eval mode).

    Parameters
    ----------
    model : EncoderForSequenceClassification
    input_ids, attention_mask : Tensor of shape (m, L)
    names : sequence of str
        Parameter names to differentiate (e.g. every parameter except the word embeddings).

    Returns
    -------
    K : Tensor of shape (m, m), float64
    """
    import torch
    from torch.func import functional_call, grad

    params = {k: v.detach() for k, v in model.named_parameters()}
    wrt = {k: params[k] for k in names}
    fixed = {k: v for k, v in params.items() if k not in wrt}

    def margin(p, ids, mask):
        out = functional_call(model, {**fixed, **p}, (ids[None], mask[None]))
        return out.logits[0, 1] - out.logits[0, 0]

    g = grad(margin)
    rows = []
    for a in range(input_ids.shape[0]):
        ga = g(wrt, input_ids[a], attention_mask[a])
        rows.append(torch.cat([ga[k].reshape(-1) for k in names]))
    J = torch.stack(rows)
    # float64 on the CPU (exact enough for tiny kernel changes); float32 on a GPU, where J can be large
    if J.device.type == "cpu":
        J = J.double()
    return (J @ J.T).double().cpu()


def _relative_change(K, K0) -> float:
    import torch

    return float(torch.linalg.norm(K - K0) / torch.linalg.norm(K0))


def run_ntk(settings: Settings | None = None, *, regime: str = "lazy", seed: int | None = None,
            force: bool = False, progress: bool = True, **overrides) -> Result:
    """Train a [CLS] classifier with a learned table by SGD and record its kernel and table geometry.

    Parameters
    ----------
    regime : {"lazy", "lazy_small_init", "rich"}
        ``"lazy"``: wide model, small learning rate (the NTK regime); ``"lazy_small_init"``: the same with
        the table initialised near a point (``table_sigma``); ``"rich"``: narrow, large rate. Each regime's
        dict holds model fields (``d_model``, ``n_layers``, ``n_heads``, ``d_ff``), ``lr`` and optionally
        ``init_std`` (BERT's 0.02) and ``table_sigma`` (the table's initial standard deviation, 0.02).
    seed : int, optional
        Initialisation and data-order seed (default ``settings.seed``).
    **overrides
        Keys of ``CONFIGS[scale]["ntk"]`` (``steps``, ``batch_size``, ``n_positions``, ...), or a regime's
        dict (``lazy=``, ``rich=``, ...).

    Returns
    -------
    Result
        ``arrays``: ``step`` (r,), ``kernel_change`` (r,) and ``kernel_change_table`` (r,) relative
        Frobenius changes, ``violation``/``spearman`` of $P_t$ and ``violation_delta``/``spearman_delta`` of
        $\\Delta P_t$ (r,), ``table_motion`` $\\|\\Delta P_t\\|_F / \\|P_0\\|_F$ (r,), ``loss`` (steps,),
        ``D`` (n, n). ``values``: options, final numbers, accuracy on the probes.
    """
    import torch

    from ..models import EncoderConfig, build_model
    from ..models.threads import torch_threads
    from . import real_corpora as rc

    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; valid regimes are {', '.join(REGIMES)}")
    settings = _settings(settings)
    cfg = copy.deepcopy(CONFIGS[settings.scale]["ntk"])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown NTK option(s) {sorted(unknown)}; valid options are {sorted(cfg)}")
    cfg.update(overrides)
    seed = settings.seed if seed is None else int(seed)
    reg = cfg[regime]
    device = resolve_device(settings.device)
    opts = rc.corpus_options(settings.scale, cfg["corpus"], n_positions=cfg["n_positions"], max_sequences=None)
    params = {"regime": regime, "model": reg, "ntk": {k: v for k, v in cfg.items() if k not in REGIMES},
              "corpus": opts, "seed": seed, "data": resolve_source(opts["corpus"], opts["split"], data_dir=settings.data_dir).describe()}

    def compute():
        # a model this small runs faster on one CPU thread than on two (posgeom.models.threads)
        with torch_threads(cfg.get("threads"), device):
            return _compute()

    def _compute():
        corpus_geo = rc.corpus_geometry_of(settings, opts)
        D, pos, tokens = corpus_geo.D, corpus_geo.positions, corpus_geo.tokens
        ids, mask = tokens.model_inputs()
        labels = tokens.labels
        if labels is None:
            raise ValueError(f"{opts['corpus']}/{opts['split']} has no labels: the [CLS] classifier needs them")
        rng = np.random.default_rng(seed)
        order = rng.permutation(ids.shape[0])
        m_probe = int(cfg["probe_sequences"])
        probe, pool = order[:m_probe], order[m_probe:]
        if cfg["train_sequences"] is not None:
            pool = pool[: int(cfg["train_sequences"])]
        config = EncoderConfig(vocab_size=tokens.vocab_size, d_model=reg["d_model"], n_layers=reg["n_layers"],
                               n_heads=reg["n_heads"], d_ff=reg["d_ff"], max_len=opts["n_positions"],
                               dropout=0.0, attention_dropout=0.0, pooling="cls",
                               init_std=reg.get("init_std", 0.02),
                               position_options={"sigma": reg.get("table_sigma", 0.02)})
        model = build_model(config, "classification", seed=seed)
        names = [k for k, _ in model.named_parameters() if "embeddings.word" not in k]
        table_name = next(k for k in names if k.endswith("embeddings.position.weight"))
        model.to(device)
        t_ids, t_mask = torch.as_tensor(ids[probe], device=device), torch.as_tensor(mask[probe], device=device)
        P0 = model.encoder.positional.table().detach().double().cpu().numpy()[pos].copy()
        model.eval()
        K0 = logit_margin_ntk(model, t_ids, t_mask, names)
        K0p = logit_margin_ntk(model, t_ids, t_mask, [table_name])
        opt = torch.optim.SGD(model.parameters(), lr=reg["lr"])
        X, M, Y = (torch.as_tensor(t, device=device) for t in (ids[pool], mask[pool], labels[pool]))
        gen = torch.Generator().manual_seed(seed)
        rec = {k: [] for k in ("step", "kernel_change", "kernel_change_table", "violation", "spearman",
                               "violation_delta", "spearman_delta", "table_motion")}
        losses = []

        def record(step):
            model.eval()
            P = model.encoder.positional.table().detach().double().cpu().numpy()[pos]
            dP = P - P0
            rec["step"].append(step)
            rec["kernel_change"].append(_relative_change(logit_margin_ntk(model, t_ids, t_mask, names), K0))
            K_table = logit_margin_ntk(model, t_ids, t_mask, [table_name])
            rec["kernel_change_table"].append(_relative_change(K_table, K0p))
            a = monotonicity_of(D, geo.euclidean_distances(P))
            rec["violation"].append(a["violation_rate"])
            rec["spearman"].append(a["spearman"])
            if np.any(dP):
                b = monotonicity_of(D, geo.euclidean_distances(dP))
            else:
                b = {"violation_rate": float("nan"), "spearman": float("nan")}
            rec["violation_delta"].append(b["violation_rate"])
            rec["spearman_delta"].append(b["spearman"])
            rec["table_motion"].append(float(np.linalg.norm(dP) / np.linalg.norm(P0)))
            model.train()

        from ..progress import tqdm

        record(0)
        model.train()
        bs = int(cfg["batch_size"])
        for step in tqdm(range(1, int(cfg["steps"]) + 1), desc=f"SGD ({regime})", unit="step", disable=not progress):
            idx = torch.randint(0, X.shape[0], (bs,), generator=gen).to(device)
            out = model(X[idx], M[idx], labels=Y[idx])
            opt.zero_grad(set_to_none=True)
            out.loss.backward()
            opt.step()
            losses.append(float(out.loss.detach()))
            if step % int(cfg["record_every"]) == 0 or step == int(cfg["steps"]):
                record(step)
        model.eval()
        with torch.no_grad():
            acc = float((model(t_ids, t_mask).logits.argmax(-1).cpu().numpy() == labels[probe]).mean())
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}
        arrays.update(loss=np.asarray(losses), D=D, positions=pos)
        values = {"regime": regime, "model": reg, "seed": seed, "options": opts,
                  "n_params_kernel": int(sum(p.numel() for k, p in model.named_parameters() if k in names)),
                  "final": {k: float(v[-1]) for k, v in rec.items()}, "probe_accuracy": acc,
                  "final_loss": float(np.mean(losses[-20:]))}
        return values, arrays

    name = (f"[CLS] classifier d={reg['d_model']}, {reg['n_layers']} layer(s), SGD lr={reg['lr']}, "
            f"table sigma={reg.get('table_sigma', 0.02)}")
    return Registry(settings.results_dir).run(
        f"monotonicity_ntk_{regime}", compute, params=params, scale=settings.scale, seed=seed, device=device,
        model=name, force=force,
    )


def paper_results(settings: Settings | None = None) -> list[Result]:
    """Every ``paper``-scale result of this chapter held by the registry (any code version)."""
    from .real_corpora import paper_results as results_with_prefix

    return results_with_prefix(settings, "monotonicity")


__all__ = [
    "CONFIGS", "PAPER_MDS_VIOLATION", "REGIMES", "monotonicity_of", "mds_monotonicity_curve", "linear_predictions",
    "run_monotonicity_table", "monotonicity_dataframe", "logit_margin_ntk", "run_ntk", "paper_results",
]

