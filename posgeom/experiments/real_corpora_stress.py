r"""Real corpora, the encoding side: the stress table, its bootstrap intervals, and the learned tables.

:func:`stress_rows` computes the stress of every encoding against a corpus's $D$ (and the
``"scale_free"`` stress against its resolvable geometry $R$); :func:`run_stress_table` stores them. The
rows are read back as typed records (:class:`StressRow`, ``settings.records``) and looked up by field
with ``settings.find(rows, encoding="alibi")``. :func:`run_stress_intervals` applies the bootstrap
over sequences (:func:`posgeom.geometry.bootstrap_intervals`) to the headline stresses and to the differences the chapter
interprets (read a stored one with :func:`posgeom.geometry.interval_text`). The maths is in the docstring of
:mod:`posgeom.experiments.real_corpora`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..corpora.distances import resampling_groups
from ..corpora.groups import resampling_unit
from ..corpora.tokenize import table_rows
from ..models.batches import SCALE_PADDING
from ..registry import Result
from .real_corpora_geometry import (
    NORMALIZATIONS, chapter_settings, check_corpus, corpus_geometry_of, corpus_options, corpus_params, corpus_source,
    encoding_shape, run_corpus_geometry,
)
from .settings import as_params, records, store_result

#: The fixed encodings of the stress table (:func:`posgeom.encodings.encoding_set`), in its row order.
STRESS_ENCODINGS = ("sinusoidal", "rope", "alibi", "alibi (kernel rule)", "equidistant")
#: The row of the random tables (mean and sd over seeds).
RANDOM_ROW = "random N(0, sigma^2)"


@dataclass(frozen=True)
class StressRow:
    """One row of :func:`run_stress_table`: an encoding, how it was built, its stresses (``*_sd``: random tables)."""

    encoding: str
    options: str
    paper: float
    scale_free: float
    scale_free_resolvable: float | None = None
    paper_sd: float | None = None
    scale_free_sd: float | None = None
    scale_free_resolvable_sd: float | None = None


def mds_row(k: int) -> str:
    """The ``encoding`` of the rank-``k`` classical MDS row."""
    return f"MDS (rank {int(k)})"


def smacof_row(k: int) -> str:
    """The ``encoding`` of the rank-``k`` SMACOF row."""
    return f"SMACOF (rank {int(k)})"


def stress_records(result: Result) -> list[StressRow]:
    """The rows of a :func:`run_stress_table` result as :class:`StressRow` records."""
    return records(StressRow, result.values["rows"])


# --------------------------------------------------------------------------------------------
# Learned tables: pretrained, and trained from scratch
# --------------------------------------------------------------------------------------------


def pretrained_table(settings: Settings | None = None) -> np.ndarray:
    """The learned position table of ``settings.pretrained``, as :func:`posgeom.models.pretrained.position_table`.

    Returns
    -------
    P : ndarray of shape (N_max, d), float64
    """
    from ..models.pretrained import position_table

    return position_table(_settings(settings).pretrained)


def train_scratch_table(tokens, D, rows, n: int, cfg: dict[str, Any], seed: int, device: str,
                        progress: bool, padding: str = "full") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Train an MLM encoder from scratch on ``tokens`` and record its table's geometry against ``D``.

    Parameters
    ----------
    tokens : posgeom.corpora.tokenize.TokenizedCorpus
    D : ndarray of shape (k, k)
        The corpus geometry on the rows ``rows`` (k,) of the table.
    n : int
        Positions of the model (``max_len``).
    cfg : dict
        :class:`posgeom.experiments.real_corpora.ScratchTraining` as a dict.
    """
    import torch

    from ..models import PositionGeometry, TokenData, TrainConfig, build_model, get_config, train
    from ..models.threads import torch_threads

    ids, mask = tokens.model_inputs()
    model = build_model(get_config("quick", **{**cfg["model"], "max_len": n}), "mlm", seed=seed)
    table0 = model.positional.table().detach().double().cpu().numpy().copy()

    class _Rows(PositionGeometry):
        # the corpus's D covers the kept positions only: measure the same rows of the table
        def measure(self, m):
            P = m.positional.table().detach().double().cpu().numpy()[rows]
            sep = geo.separation(P)
            out = {"separation": sep.raw, "separation_normalized": sep.normalized, "median_distance": sep.median}
            for z in self.normalizations:
                out[f"stress_{z}"] = geo.stress(D, P, z)
            out["violation_rate"] = geo.violation_rate(D, P)
            out["spearman"] = geo.spearman(D, P)
            return out

    cb = _Rows(every=cfg["every"], target=D)
    with torch_threads(cfg.get("threads"), device):
        result = train(model, TokenData(ids, mask),
                       TrainConfig(task="mlm", batch_size=cfg["batch_size"], max_steps=cfg["max_steps"], lr=cfg["lr"],
                                   warmup_steps=cfg["warmup_steps"], seed=seed, device=device, progress=progress,
                                   padding=padding),
                       callbacks=[cb])
    with torch.no_grad():
        table = model.positional.table().detach().double().cpu().numpy()
    series = cb.as_arrays()
    values = {"final_loss": result.final_loss, "tokens_per_s": result.tokens_per_s, "runtime_s": result.runtime_s,
              "steps": result.steps, "device": result.device, "final": {k: float(v[-1]) for k, v in series.items()}}
    return values, {"table": table, "table_init": table0, "losses": np.asarray(result.losses), **series}


def run_scratch_table(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                      progress: bool = True, corpus_overrides: dict | None = None, **overrides) -> Result:
    """Train a BERT-style MLM encoder with a learned table from scratch on the corpus; keep its table.

    The model (``CONFIGS[scale].scratch(corpus).model``, ``max_len`` = the corpus's ``n``) starts
    from BERT's initialisation (table rows $\\mathcal N(0, 0.02^2)$) and is trained by MLM (80/10/10
    masking) on the corpus's token ids under the same special-token policy; the position geometry
    (stress, violation rate against the corpus's $D$) is recorded during training (:func:`train_scratch_table`).

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
    settings = _settings(settings)
    cfg = as_params(chapter_settings(settings.scale).scratch(check_corpus(corpus)))
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown training option(s) {sorted(unknown)}; valid options are {sorted(cfg)}")
    cfg.update(overrides)
    opts = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    device = resolve_device(settings.device)
    n = int(opts.n_positions)
    params = {"corpus": corpus_params(opts), "train": cfg, "data": geometry.values["source"], "seed": settings.seed}

    def compute():
        rows = table_rows(opts.special, geometry.arrays["positions"])
        if rows.max() >= n:
            raise ValueError("the content policy needs one more table row than positions; lower n_positions")
        values, arrays = train_scratch_table(corpus_geometry_of(settings, opts).tokens, geometry.arrays["D"], rows, n,
                                             cfg, settings.seed, device, progress,
                                             padding=SCALE_PADDING[settings.scale])
        return {"corpus": corpus, "options": corpus_params(opts), "train": cfg, **values}, arrays

    model_name = f"posgeom MLM encoder from scratch ({cfg['model']['n_layers']} layers, d={cfg['model']['d_model']})"
    return store_result(settings, f"real_corpora_scratch_{corpus}", compute, params, force, device=device,
                        model=model_name)


# --------------------------------------------------------------------------------------------
# The stress table
# --------------------------------------------------------------------------------------------


def alibi_head_stresses(D, n_all: int, n_heads: int, positions) -> tuple[np.ndarray, np.ndarray]:
    """ALiBi's ``"paper"`` and ``"scale_free"`` stress for each single head (each (H,))."""
    sub = np.ix_(positions, positions)
    heads = [enc.alibi_distances(n_all, n_heads, head=h)[sub] for h in range(n_heads)]
    return (np.array([geo.stress(D, A, "paper", as_distances=True) for A in heads]),
            np.array([geo.stress(D, A, "scale_free", as_distances=True) for A in heads]))


def stress_rows(D, R, positions, n_all: int, cfg, *, pretrained: tuple[str, np.ndarray, np.ndarray],
                scratch: tuple[str, np.ndarray] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of the stress table (dicts of :class:`StressRow` fields) and the ALiBi head/SMACOF details.

    Parameters
    ----------
    D, R : ndarray of shape (k, k)
        The corpus geometry and its resolvable geometry on the kept ``positions`` (k,) of ``n_all``.
    cfg : RealCorporaOptions
        Encodings, MDS ranks and SMACOF options.
    pretrained : (options text, table (N_max, d), table rows (k,))
    scratch : (options text, table rows (k, d)), optional
    """
    rows: list[dict[str, Any]] = []

    def add(name, options, Dhat):
        rows.append({"encoding": name, "options": options, **geo.stress_pair(D, Dhat, R, NORMALIZATIONS)})

    shape = {k: getattr(cfg.encodings, k) for k in ("d_model", "n_heads", "base", "layout")}
    for name, Dhat in enc.encoding_set(positions, names=STRESS_ENCODINGS, **shape).items():
        add(name, enc.describe_encoding(name, **shape), Dhat)
    H = cfg.encodings.n_heads
    sub = np.ix_(positions, positions)
    head_paper, head_sf = alibi_head_stresses(D, n_all, H, positions)
    best, worst = int(np.argmin(head_paper)), int(np.argmax(head_paper))
    slopes = enc.alibi_slopes(H)
    for label, h in (("alibi (best head)", best), ("alibi (worst head)", worst)):
        add(label, f"H={H}, head {h}, slope {slopes[h]:.4g}", enc.alibi_distances(n_all, H, head=h)[sub])
    text, P, prow = pretrained
    add("learned (pretrained)", text, geo.euclidean_distances(P[prow]))
    if scratch is not None:
        add("learned (from scratch)", scratch[0], geo.euclidean_distances(scratch[1]))
    e = cfg.encodings
    rand = np.array([list(geo.stress_pair(D, geo.euclidean_distances(enc.random_table(
        n_all, e.d_model, sigma=e.random_sigma, seed=s)[positions]), R, NORMALIZATIONS).values()) for s in e.random_seeds])
    keys = list(NORMALIZATIONS) + ["scale_free_resolvable"]
    rows.append({"encoding": RANDOM_ROW, "options": f"d={e.d_model}, sigma={e.random_sigma}, {len(e.random_seeds)} seeds",
                 **{k: float(rand[:, i].mean()) for i, k in enumerate(keys)},
                 **{f"{k}_sd": float(rand[:, i].std(ddof=1)) for i, k in enumerate(keys)}})
    mds = geo.classical_mds(D)
    add("MDS (full rank)", f"rank {mds.k} (numerical rank of B)", geo.euclidean_distances(mds.embedding))
    W = mds.eigenvectors * np.sqrt(np.maximum(mds.eigenvalues, 0.0))
    for k in cfg.mds_ranks:
        if k < D.shape[0]:
            add(mds_row(k), f"classical MDS, top {k} eigenvectors", geo.euclidean_distances(W[:, :k]))
    iters = []
    for k in cfg.smacof.ranks:
        res = geo.smacof(D, k, max_iter=cfg.smacof.max_iter, eps=cfg.smacof.eps)
        iters.append(res.n_iter)
        add(smacof_row(k), f"from MDS, {res.n_iter} iterations" + ("" if res.converged else " (iteration cap)"),
            geo.euclidean_distances(res.embedding))
    add("none (NoPE)", "all distances 0", np.zeros_like(D))
    details = {"best_head": best, "worst_head": worst, "alibi_head_paper": head_paper, "alibi_head_scale_free": head_sf,
               "alibi_slopes": slopes, "smacof_k": np.asarray(cfg.smacof.ranks), "smacof_iters": np.asarray(iters)}
    return rows, details


def run_stress_table(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                     train_scratch: bool | None = None, progress: bool = True, corpus_overrides: dict | None = None,
                     scratch_overrides: dict | None = None) -> Result:
    """The stress of every encoding against the corpus's Hellinger geometry, both normalisations.

    Rows (:func:`stress_rows`): sinusoidal, RoPE, ALiBi (mean slope; best and worst single head), ALiBi
    read as a kernel, the pretrained model's learned table, a table trained from scratch
    (:func:`run_scratch_table`, by default for the corpora of ``CONFIGS[scale].scratch_corpora``), random
    tables (mean and sd over seeds), the equidistant encoding, classical MDS at full rank and at the
    ranks of ``CONFIGS[scale].mds_ranks``, SMACOF from MDS, and no encoding.

    Parameters
    ----------
    corpus_overrides, scratch_overrides : dict, optional
        Corpus options (:func:`corpus_options`) and training options (:func:`run_scratch_table`).

    Returns
    -------
    Result
        ``values["rows"]``: :class:`StressRow` fields (read them with :func:`stress_records`);
        ``values["model"]``: the pretrained model used. ``arrays``: ``alibi_head_paper`` (H,),
        ``alibi_head_scale_free`` (H,), ``smacof_k`` (k,) and ``smacof_iters`` (k,).
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    if train_scratch is None:
        train_scratch = corpus in cfg.scratch_corpora
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    scratch = run_scratch_table(settings, corpus=corpus, progress=progress, corpus_overrides=corpus_overrides,
                                **(scratch_overrides or {})) if train_scratch else None
    opts = geometry.values["options"]
    params = {
        "corpus": opts, "encodings": as_params(cfg.encodings), "mds_ranks": cfg.mds_ranks,
        "smacof": as_params(cfg.smacof), "pretrained": settings.pretrained,
        "scratch": scratch.key if scratch is not None else None, "data": geometry.values["source"],
    }

    def compute():
        positions = geometry.arrays["positions"]
        P = pretrained_table(settings)
        prow = table_rows(opts["special"], positions)
        if prow.max() >= P.shape[0]:
            raise ValueError(
                f"the pretrained table has {P.shape[0]} rows; positions up to {int(prow.max())} are needed "
                "(the N_max wall): lower n_positions"
            )
        pre = (f"{settings.pretrained}, rows {int(prow[0])}..{int(prow[-1])}, d={P.shape[1]}", P, prow)
        scr = None
        if scratch is not None:
            sc = scratch.values["train"]
            scr = (f"MLM, {sc['model']['n_layers']} layers, d={sc['model']['d_model']}, {sc['max_steps']} steps",
                   scratch.arrays["table"][prow])
        rows, det = stress_rows(geometry.arrays["D"], geometry.arrays["R"], positions, int(opts["n_positions"]), cfg,
                                pretrained=pre, scratch=scr)
        values = {"rows": rows, "corpus": corpus, "model": settings.pretrained,
                  "n_kept": int(geometry.arrays["D"].shape[0]), "best_head": det["best_head"],
                  "worst_head": det["worst_head"]}
        return values, {k: det[k] for k in ("alibi_head_paper", "alibi_head_scale_free", "alibi_slopes", "smacof_k",
                                             "smacof_iters")}

    return store_result(settings, f"real_corpora_stress_{corpus}", compute, params, force, model=settings.pretrained)


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

    labels = {"paper": '"paper" stress', "scale_free": '"scale_free" stress',
              "scale_free_resolvable": '"scale_free" vs resolvable R'}
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


# --------------------------------------------------------------------------------------------
# Bootstrap intervals over sequences
# --------------------------------------------------------------------------------------------

#: The headline stresses that get a bootstrap interval: (encoding of :func:`posgeom.encodings.encoding_set`
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

    ``n_boot`` replicates of ``n_folds`` folds (:func:`posgeom.geometry.fold_bootstrap`), the stress of each
    encoding of :data:`INTERVAL_STATISTICS` and each difference of :data:`INTERVAL_DIFFERENCES`, and their
    :func:`posgeom.geometry.percentile_interval` at ``level`` (re-centred on the estimate, within the stress's bounds
    :data:`posgeom.geometry.STRESS_BOUNDS`, the bootstrap's bias beside it). ALiBi's best head is the one of the point
    estimate.

    Returns
    -------
    Result
        ``values``: ``options``, ``interval`` (the bootstrap options), ``best_head``, ``n_used``,
        ``statistics`` {"<encoding>|<norm>": {"estimate", "low", "high", "bias", "bias_se"}}, ``differences``
        {"<a>-<b>|<norm>": the same}. ``arrays``: ``replicates`` (n_used, n_statistics).
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    icfg = {k: v for k, v in as_params(cfg.intervals).items() if k != "corpora"}
    opts = corpus_options(settings.scale, corpus, **overrides)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "intervals": icfg, "encodings": as_params(cfg.encodings), "data": data}

    def compute():
        geometry = corpus_geometry_of(settings, opts, source)
        tokens, positions = geometry.tokens, geometry.marginals.positions
        n_all = int(opts.n_positions)
        D0 = geo.hellinger_matrix(geometry.marginals, kind=opts.kind)
        H = cfg.encodings.n_heads
        best = int(np.argmin(alibi_head_stresses(D0, n_all, H, positions)[0]))
        encs = enc.encoding_set(positions, names=STRESS_ENCODINGS, **encoding_shape(settings.scale))
        encs["alibi (best head)"] = enc.alibi_distances(n_all, H, head=best)[np.ix_(positions, positions)]
        names = [f"{e}|{z}" for e, z in INTERVAL_STATISTICS]

        def statistics(D):
            return np.array([geo.stress(D, encs[e], z, as_distances=True) for e, z in INTERVAL_STATISTICS])

        # SST-2's training phrases are resampled with their sentence (the independent unit)
        folds = geo.fold_counts(tokens.sequences(), n_all, tokens.vocab_size, n_folds=cfg.intervals.n_folds,
                                seed=settings.seed,
                                groups=resampling_groups(opts, data_dir=settings.data_dir, source=source))
        intervals, reps = geo.bootstrap_intervals(D0, folds, positions, statistics, n_boot=cfg.intervals.n_boot,
                                                  level=cfg.intervals.level, kind=opts.kind, seed=settings.seed,
                                                  progress=_progress(f"bootstrap {corpus}", cfg.intervals.n_boot),
                                                  bounds=[geo.STRESS_BOUNDS[z] for _, z in INTERVAL_STATISTICS])
        stats = {name: iv.as_dict() for name, iv in zip(names, intervals)}
        # a difference of two stresses of one normalisation lies within (lo - hi, hi - lo) of its bounds
        diffs = {f"{a}-{b}|{z}": geo.difference_interval(intervals, reps, names.index(f"{a}|{z}"),
                                                     names.index(f"{b}|{z}"), cfg.intervals.level,
                                                     bounds=geo.difference_bounds(geo.STRESS_BOUNDS[z])).as_dict()
                 for a, b, z in INTERVAL_DIFFERENCES}
        values = {"options": corpus_params(opts), "interval": icfg, "best_head": best, "n_used": int(len(reps)),
                  "resampled": resampling_unit(opts.corpus, opts.split),
                  "statistics": stats, "differences": diffs}
        return values, {"replicates": reps}

    return store_result(settings, f"real_corpora_stress_intervals_{corpus}", compute, params, force)


def _progress(desc: str, total: int):
    """A tqdm wrapper for the replicates of :func:`posgeom.geometry.bootstrap_intervals`."""
    from ..progress import tqdm

    return lambda it: tqdm(it, desc=desc, total=total, leave=False)


__all__ = [
    "STRESS_ENCODINGS", "RANDOM_ROW", "StressRow", "mds_row", "smacof_row", "stress_records", "pretrained_table",
    "train_scratch_table", "run_scratch_table", "alibi_head_stresses", "stress_rows", "run_stress_table",
    "stress_dataframe", "INTERVAL_STATISTICS", "INTERVAL_DIFFERENCES", "run_stress_intervals",
]
