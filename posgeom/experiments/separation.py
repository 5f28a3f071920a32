r"""Experiments of the chapter "Theorem 4: training separates positions".

**Theorem 4** (the paper's numbering). For a learned table $P \in \mathbb R^{n \times d}$ added to
the token embeddings, every global minimiser of the training loss gives distinct positions distinct
vectors, $\operatorname{sep}(P^\*) = \min_{i \ne j} \|p^\*_i - p^\*_j\| > 0$, provided the corpus is
non-stationary ($\mu_i \ne \mu_j$ for $i \ne j$), the loss is order-sensitive and attention is
non-degenerate.

This module trains learned tables from scratch and records $\operatorname{sep}(P)$, raw and divided
by the median pairwise distance (:func:`posgeom.geometry.separation`), along training
(:class:`posgeom.models.callbacks.PositionGeometry`), over several seeds (:func:`run_separation`):

* when the conditions hold: masked language modelling (MLM) on a non-stationary synthetic corpus
  (the ``"drift"`` family of :mod:`posgeom.corpora.synthetic`, whose tokens are drawn independently
  at each position from $\mu_i$, so that predicting a masked token *is* knowing its position) and
  on SST-2;
* when one condition is broken on purpose: a **stationary** corpus ($\mu_i = \pi$ for all $i$), an
  **order-insensitive** loss (a label that depends only on the bag of tokens, read out by mean pooling);
  with and without **weight decay**, and from a random or a **tied** start (every row equal, $P = 0$).

The pretrained model's table (:func:`run_pretrained_separation`) and the factorisation step of the
paper's proof (:func:`run_factorisation_gap`) complete the chapter. The
factorisation replaces $\mathbb E[c_k\, e(t_k)]$ by $\mathbb E[c_k]\,\mathbb E[e(t_k)]$; we instantiate
$c_k$ as the attention weight from ``[CLS]`` to position $k$ (mean over the heads of one layer) and
$e(t_k)$ as the word embedding of the token at $k$, and measure on real text how far the two are.

Every ``run_*`` function computes through :meth:`posgeom.registry.Registry.run`.
"""

from __future__ import annotations

import numpy as np
import torch
from ..progress import tqdm

from .. import geometry as geo
from ..config import resolve_device, settings_or_default as _settings
from ..corpora import synthetic as syn
from ..registry import Registry, Result
from ..models.threads import torch_threads

__all__ = [
    "CONFIGS", "CORPORA", "TASKS", "INITS", "random_separation", "bag_labels", "synthetic_mlm_data",
    "real_mlm_data", "masked_position_loss", "entropy_references", "run_separation", "run_pretrained_separation",
    "run_factorisation_gap", "factorisation_gap",
]

CORPORA = ("drift", "stationary", "sst2", "imdb")
TASKS = ("mlm", "bag")
INITS = ("normal", "tied")
#: Ids of the synthetic MLM vocabulary: 0 padding, 1 ``[MASK]``, the corpus token ``t`` becomes ``t + 2``.
PAD_ID, MASK_ID, OFFSET = 0, 1, 2

#: Per-scale options. ``quick``: a 1-layer width-32 encoder, 24 positions, 300 steps, 3 seeds, about
#: 3 s of one CPU core per run (SST-2: 6 s). ``paper``: BERT-base's shape, the synthetic corpora and
#: SST-2 at 128 positions, IMDB at 512, all sequences of the training splits, for a GPU.
#: ``weight_decay`` is the value of the chapter's "with weight decay" runs: exaggerated on purpose, so
#: that the decay factor of an unused weight, about exp(-lr * weight_decay * steps / 2) under the linear
#: schedule, is about 1 % within the run (exp(-4.5)) — practice uses 0.01 over far more steps.
CONFIGS: dict[str, dict] = {
    "quick": dict(
        model=dict(d_model=32, n_layers=1, n_heads=4, d_ff=64),
        synthetic=dict(n_positions=24, vocab_size=48, n_sequences=4096, n_eval=1024),
        real=dict(sst2=dict(n_positions=24, n_sequences=8192, n_eval=1024),
                  imdb=dict(n_positions=64, n_sequences=2048, n_eval=512)),
        train=dict(steps=300, batch_size=64, lr=3e-3, every=15),
        weight_decay=10.0,
        seeds=(0, 1, 2),
        threads=1,
        pretrained_positions=(32, 64, 128, 512),
        gap=dict(split="validation", n_positions=32, layer=0, min_reach=50),
    ),
    "paper": dict(
        model=dict(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
        synthetic=dict(n_positions=128, vocab_size=1000, n_sequences=100_000, n_eval=10_000),
        real=dict(sst2=dict(n_positions=128, n_sequences=None, n_eval=5000),
                  imdb=dict(n_positions=512, n_sequences=None, n_eval=2000)),
        train=dict(steps=10_000, batch_size=64, lr=1e-4, every=250),
        weight_decay=10.0,
        seeds=(0, 1, 2),
        threads=None,
        pretrained_positions=(64, 128, 512),
        gap=dict(split="validation", n_positions=64, layer=0, min_reach=50),
    ),
}


# ---------------------------------------------------------------------------------------------
# references and data


def random_separation(n: int, d: int, *, n_draws: int = 20, seed: int = 0) -> tuple[float, float]:
    r"""Mean and standard deviation of the *normalised* separation of Gaussian $n \times d$ tables.

    The reference against which a trained table's normalised separation is read: a table at
    initialisation, $P_{ij} \sim \mathcal N(0, \sigma^2)$, has this value whatever $\sigma$.

    Returns
    -------
    mean, std : float
    """
    rng = np.random.default_rng(seed)
    vals = [geo.separation(rng.standard_normal((n, d))).normalized for _ in range(n_draws)]
    return float(np.mean(vals)), float(np.std(vals, ddof=1))


def bag_labels(tokens, vocab_size: int) -> np.ndarray:
    r"""An order-insensitive label: 1 iff the sequence holds at least as many tokens from the lower half of
    the vocabulary (ids below $v/2$) as the median sequence.

    The label is a function of the bag of tokens, so a model that ignores order can reach the optimum.

    Parameters
    ----------
    tokens : array of shape (N, L)
        Token ids (padding negative, not counted).

    Returns
    -------
    ndarray of shape (N,), int64
    """
    tokens = np.asarray(tokens)
    low = np.sum((tokens >= 0) & (tokens < vocab_size // 2), axis=1)
    return (low >= np.median(low)).astype(np.int64)


def synthetic_mlm_data(family: str, *, n_sequences: int, n_positions: int, vocab_size: int, seed: int,
                       task: str = "mlm") -> dict:
    """A synthetic corpus as model inputs (ids shifted by 2: 0 padding, 1 ``[MASK]``), with its population.

    Returns
    -------
    dict
        ``input_ids`` LongTensor (N, L); ``labels`` LongTensor (N,) for ``task="bag"``; ``population``
        (L, v) the exact marginals; ``vocab_size`` of the model (v + 2).
    """
    if family not in ("drift", "stationary"):
        raise ValueError(f"the synthetic corpora of this chapter are 'drift' and 'stationary', got {family!r}")
    corpus = syn.make_corpus(family, n_sequences=n_sequences, n_positions=n_positions, vocab_size=vocab_size,
                             seed=seed)
    out = dict(input_ids=torch.as_tensor(corpus.tokens + OFFSET, dtype=torch.long), population=corpus.population,
               vocab_size=vocab_size + OFFSET, attention_mask=None)
    if task == "bag":
        out["labels"] = torch.as_tensor(bag_labels(corpus.tokens, vocab_size))
    return out


def real_mlm_data(corpus: str, *, n_positions: int, n_sequences: int | None, seed: int, data_dir=None,
                  split: str = "train") -> dict:
    """SST-2 or IMDB sequences (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept) for MLM from scratch.

    A seeded random subset of ``n_sequences`` rows (all rows for ``None``), then a compact vocabulary:
    ``[PAD]`` → 0, ``[MASK]`` → 1, ``[CLS]`` → 2, ``[SEP]`` → 3, every other id present → 4, 5, … in
    increasing order of the original id (a smaller MLM head, same statistics).

    Returns
    -------
    dict
        ``input_ids`` LongTensor (N, n_positions), ``attention_mask`` LongTensor (N, n_positions),
        ``vocab_size`` (compact), ``reach`` (n_positions,) sequences reaching each position,
        ``special_ids`` (0, 1, 2, 3), ``info`` (provenance of the tokens).
    """
    from ..corpora import corpus_tokens

    tc = corpus_tokens(corpus, split, n_positions, special="model", data_dir=data_dir, progress=False)
    ids = tc.padded(pad_id=-1)
    if n_sequences is not None and n_sequences < ids.shape[0]:
        rows = np.sort(np.random.default_rng(seed).choice(ids.shape[0], size=n_sequences, replace=False))
        ids = ids[rows]
    mask = ids >= 0
    # [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103 in bert-base-uncased
    special = {0: 0, 103: 1, 101: 2, 102: 3}
    present = np.unique(ids[mask])
    others = np.array([t for t in present if t not in special], dtype=np.int64)
    lookup = np.zeros(max(int(present.max()) + 1, 104), dtype=np.int64)
    for old, new in special.items():
        lookup[old] = new
    lookup[others] = np.arange(4, 4 + others.size)
    compact = np.where(mask, lookup[np.where(mask, ids, 0)], PAD_ID)
    return dict(
        input_ids=torch.as_tensor(compact, dtype=torch.long), attention_mask=torch.as_tensor(mask.astype(np.int64)),
        vocab_size=int(4 + others.size), reach=mask.sum(axis=0), special_ids=(0, 1, 2, 3),
        info={k: v for k, v in tc.info.items() if isinstance(v, (str, int, float, bool))},
    )


@torch.no_grad()
def masked_position_loss(model, input_ids, attention_mask=None, *, mask_id: int = MASK_ID,
                         special_ids=(PAD_ID, MASK_ID), seed: int = 0) -> float:
    r"""Cross-entropy (nats) of predicting one ``[MASK]``-ed token per sequence, the position drawn uniformly.

    Unlike the training loss (BERT's 80/10/10 corruption), every scored token is hidden, so the value
    compares directly with :func:`entropy_references`.

    Parameters
    ----------
    model : an MLM model of :func:`posgeom.models.encoder.build_model`
    input_ids : LongTensor of shape (N, L)
    attention_mask : LongTensor of shape (N, L), optional

    Returns
    -------
    float
    """
    x = torch.as_tensor(input_ids).clone()
    N, L = x.shape
    ok = ~torch.isin(x, torch.as_tensor(list(special_ids), dtype=x.dtype))
    if attention_mask is not None:
        ok &= torch.as_tensor(attention_mask).bool()
    g = torch.Generator().manual_seed(seed)
    # one maskable position per sequence, uniform among the maskable ones
    score = torch.rand(N, L, generator=g).masked_fill(~ok, -1.0)
    pos = score.argmax(dim=1)
    rows = torch.arange(N)[ok.any(dim=1)]
    pos = pos[rows]
    labels = torch.full_like(x, -100)
    labels[rows, pos] = x[rows, pos]
    x[rows, pos] = mask_id
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    mask = None if attention_mask is None else torch.as_tensor(attention_mask).to(dev)
    out = model(x.to(dev), mask, None, labels=labels.to(dev))
    model.train(was)
    return float(out.loss)


def entropy_references(population) -> tuple[float, float]:
    r"""Two MLM loss references (nats) for a corpus drawn independently position by position.

    ``with_position``: $\frac1n\sum_i H(\mu_i)$, the best loss of a model that knows each token's
    position; ``without_position``: $H(\bar\mu)$, $\bar\mu = \frac1n \sum_i \mu_i$, the best loss of one
    that does not (the context carries nothing else, tokens being independent).

    Returns
    -------
    with_position, without_position : float
    """
    mu = np.asarray(population, dtype=np.float64)

    def H(p):
        p = p[p > 0]
        # H(p) = -sum_w p(w) log p(w)
        return float(-(p * np.log(p)).sum())

    return float(np.mean([H(m) for m in mu])), H(mu.mean(axis=0))


# ---------------------------------------------------------------------------------------------
# separation along training


def _model_config(position_options: dict, *, vocab_size: int, max_len: int, d_model: int, n_layers: int,
                  n_heads: int, d_ff: int, pooling: str = "mean"):
    from ..models import EncoderConfig

    return EncoderConfig(
        vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_len=max_len,
        position="learned", position_options=position_options, causal=False, dropout=0.0, attention_dropout=0.0,
        type_vocab_size=0, pad_token_id=PAD_ID, n_labels=2, pooling=pooling,
    )


def run_separation(settings=None, *, force: bool = False, corpus: str = "drift", task: str = "mlm",
                   init: str = "normal", weight_decay: float = 0.0, seeds=None, steps: int | None = None,
                   progress: bool = True) -> Result:
    r"""Train a learned table from scratch and record its separation along training, over seeds.

    Parameters
    ----------
    corpus : {"drift", "stationary", "sst2", "imdb"}
        Non-stationary synthetic, stationary synthetic, or a real corpus (``settings.data_dir``).
    task : {"mlm", "bag"}
        Masked language modelling (order-sensitive), or the order-insensitive bag-of-tokens label
        :func:`bag_labels` with mean pooling (synthetic corpora only).
    init : {"normal", "tied"}
        $\mathcal N(0, 0.02^2)$ rows (BERT), or every row 0 (all positions tied at the start).
    weight_decay : float
        AdamW's decoupled weight decay, on every weight (the table included) but biases and LayerNorm.

    Returns
    -------
    Result
        Values: ``final`` / ``initial`` separation (raw and normalised) and median pairwise distance,
        mean and std over seeds, and at the end ``order_spearman`` (Spearman's $\rho$ between the table's
        distances and $|i - j|$: how much its geometry follows the order); ``random_reference`` (normalised
        separation of a Gaussian table of the same shape); the eval loss and accuracy
        (:func:`posgeom.models.training.evaluate`); for MLM ``masked_loss`` (:func:`masked_position_loss`) and, on
        synthetic corpora, the entropy references (:func:`entropy_references`). Arrays: ``step`` (T,),
        ``separation``, ``separation_normalized``, ``median_distance``, ``order_spearman`` (n_seeds, T),
        ``loss`` (n_seeds, steps).
    """
    settings = _settings(settings)
    if corpus not in CORPORA:
        raise ValueError(f"unknown corpus {corpus!r}; valid corpora are {', '.join(CORPORA)}")
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid tasks are {', '.join(TASKS)}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; valid inits are {', '.join(INITS)}")
    if task == "bag" and corpus not in ("drift", "stationary"):
        raise ValueError("the bag-of-tokens task is defined on the synthetic corpora ('drift', 'stationary') only")
    weight_decay = float(weight_decay)
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    conf = CONFIGS[settings.scale]
    cfg, tr = dict(conf["model"]), dict(conf["train"])
    if steps is not None:
        tr["steps"] = int(steps)
    seeds = tuple(conf["seeds"] if seeds is None else seeds)
    data_conf = dict(conf["synthetic"] if corpus in ("drift", "stationary") else conf["real"][corpus])
    device = resolve_device(settings.device)
    params = dict(corpus=corpus, task=task, init=init, weight_decay=weight_decay, seeds=list(seeds), model=cfg,
                  train=tr, data=data_conf, base_seed=settings.seed,
                  data_dir=str(settings.data_dir) if corpus in ("sst2", "imdb") else None)

    def compute():
        from ..models import PositionGeometry, TrainConfig, build_model, train

        n = data_conf["n_positions"]
        values: dict = {}
        if corpus in ("drift", "stationary"):
            # one corpus (one population), split into training and held-out sequences
            n_tr = data_conf["n_sequences"]
            both = synthetic_mlm_data(corpus, n_sequences=n_tr + data_conf["n_eval"], n_positions=n,
                                      vocab_size=data_conf["vocab_size"], seed=settings.seed, task=task)
            data = dict(input_ids=both["input_ids"][:n_tr], population=both["population"],
                        vocab_size=both["vocab_size"])
            held = dict(input_ids=both["input_ids"][n_tr:])
            if task == "bag":
                data["labels"], held["labels"] = both["labels"][:n_tr], both["labels"][n_tr:]
            special, mask_id = (PAD_ID, MASK_ID), MASK_ID
            if task == "mlm":
                h_pos, h_nopos = entropy_references(data["population"])
                values.update(entropy_with_position=h_pos, entropy_without_position=h_nopos)
            pop = data["population"]
            values["max_marginal_hellinger"] = float(geo.hellinger_matrix(pop).max())
        else:
            full = real_mlm_data(corpus, n_positions=n, n_sequences=None, seed=settings.seed,
                                 data_dir=settings.data_dir)
            N = full["input_ids"].shape[0]
            rng = np.random.default_rng(settings.seed)
            order = rng.permutation(N)
            n_train = N - data_conf["n_eval"] if data_conf["n_sequences"] is None else data_conf["n_sequences"]
            tr_rows, ev_rows = order[:n_train], order[n_train:n_train + data_conf["n_eval"]]
            data = dict(input_ids=full["input_ids"][tr_rows], attention_mask=full["attention_mask"][tr_rows],
                        vocab_size=full["vocab_size"])
            held = dict(input_ids=full["input_ids"][ev_rows], attention_mask=full["attention_mask"][ev_rows])
            special, mask_id = full["special_ids"], MASK_ID
            reach = full["attention_mask"][tr_rows].sum(dim=0).numpy()
            values.update(reach=reach.tolist(), n_train=int(len(tr_rows)), vocab_size=int(full["vocab_size"]),
                          tokens_info=full["info"])
        V = data["vocab_size"]
        pos_opts = {"init": "table", "table": np.zeros((n, cfg["d_model"]))} if init == "tied" else {"sigma": 0.02}
        line = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.float64)
        seps, sepns, meds, rhos, losses, evals, probes, step_axis = [], [], [], [], [], [], [], None
        runs = tqdm(seeds, desc=f"separation {corpus}/{task}/{init}/wd={weight_decay:g}", disable=not progress)
        for seed in runs:
            config = _model_config(pos_opts, vocab_size=V, max_len=n, **cfg)
            kind = "mlm" if task == "mlm" else "classification"
            model = build_model(config, kind, seed=seed)
            tc = TrainConfig(task=kind, batch_size=tr["batch_size"], max_steps=tr["steps"], lr=tr["lr"],
                             weight_decay=weight_decay, seed=seed, device=device, progress=False,
                             mask_token_id=mask_id, special_token_ids=tuple(special))
            # target |i - j|: the callback's Spearman says how much the table's geometry follows the order
            geom = PositionGeometry(every=tr["every"], target=line, normalizations=("scale_free",))
            train_data = (data["input_ids"], data.get("attention_mask"), data.get("labels"))
            eval_data = (held["input_ids"], held.get("attention_mask"), held.get("labels"))
            with torch_threads(conf["threads"], device):
                result = train(model, train_data, tc, callbacks=[geom], eval_data=eval_data)
            rec = geom.as_arrays()
            step_axis = rec["step"]
            seps.append(rec["separation"])
            sepns.append(rec["separation_normalized"])
            meds.append(rec["median_distance"])
            rhos.append(rec["spearman"])
            losses.append(np.asarray(result.losses))
            evals.append(result.eval)
            if task == "mlm":
                probes.append(masked_position_loss(model, held["input_ids"], held.get("attention_mask"),
                                                   special_ids=tuple(special), seed=seed))
        S, SN, MED, RHO = np.asarray(seps), np.asarray(sepns), np.asarray(meds), np.asarray(rhos)
        ref_mean, ref_std = random_separation(n, cfg["d_model"], seed=settings.seed)

        def ms(x):
            return dict(mean=float(np.mean(x)), std=float(np.std(x, ddof=1)) if len(x) > 1 else 0.0,
                        min=float(np.min(x)), max=float(np.max(x)))

        values.update(
            corpus=corpus, task=task, init=init, weight_decay=weight_decay, n_positions=n, seeds=list(seeds),
            final=dict(raw=ms(S[:, -1]), normalized=ms(SN[:, -1]), median=ms(MED[:, -1]),
                       order_spearman=ms(RHO[:, -1]) if np.all(np.isfinite(RHO[:, -1])) else None),
            initial=dict(raw=ms(S[:, 0]), normalized=ms(SN[:, 0]), median=ms(MED[:, 0])),
            peak_raw=ms(S.max(axis=1)),
            random_reference=dict(mean=ref_mean, std=ref_std),
            eval_loss=ms([e["loss"] for e in evals]), eval_accuracy=ms([e["accuracy"] for e in evals]),
            masked_loss=ms(probes) if probes else None,
        )
        arrays = dict(step=step_axis, separation=S, separation_normalized=SN, median_distance=MED,
                      order_spearman=RHO, loss=np.asarray(losses))
        return values, arrays

    name = f"separation.{corpus}.{task}.{init}.wd{weight_decay:g}"
    return Registry(settings.results_dir).run(
        name, compute, params=params, scale=settings.scale, seed=settings.seed, device=device, model=None, force=force,
    )


# ---------------------------------------------------------------------------------------------
# the pretrained table


def run_pretrained_separation(settings=None, *, force: bool = False, positions=None) -> Result:
    r"""Separation of the pretrained model's position table (``settings.pretrained``) over its first ``n`` rows.

    Values per ``n`` (``values["by_n"][str(n)]``): raw and normalised separation, the closest pair, and
    the normalised separation of a Gaussian table of the same shape (:func:`random_separation`).
    Arrays: ``nearest`` (max_positions,) each position's distance to its nearest other position, and
    ``nearest_index`` (max_positions,) which one.

    Raises
    ------
    posgeom.corpora.pretrained.ModelUnavailableError
        When the pretrained model cannot be loaded.
    """
    settings = _settings(settings)
    positions = tuple(CONFIGS[settings.scale]["pretrained_positions"] if positions is None else positions)
    params = dict(pretrained=settings.pretrained, positions=list(positions))

    def compute():
        from ..corpora import load_pretrained

        pm = load_pretrained(settings.pretrained, device="cpu")
        P = pm.position_table()
        by_n = {}
        for n in positions:
            if n > P.shape[0]:
                raise ValueError(f"n={n} exceeds the table's {P.shape[0]} positions")
            s = geo.separation(P[:n])
            ref = random_separation(n, P.shape[1], seed=settings.seed)
            by_n[str(n)] = dict(raw=s.raw, normalized=s.normalized, median=s.median, pair=list(s.pair),
                                random_normalized_mean=ref[0], random_normalized_std=ref[1])
        D = geo.euclidean_distances(P)
        np.fill_diagonal(D, np.inf)
        values = dict(pretrained=pm.name, max_positions=int(P.shape[0]), width=int(P.shape[1]), by_n=by_n)
        return values, dict(nearest=D.min(axis=1), nearest_index=D.argmin(axis=1))

    return Registry(settings.results_dir).run(
        "separation.pretrained", compute, params=params, scale=settings.scale, seed=settings.seed, device="cpu",
        model=settings.pretrained, force=force,
    )


# ---------------------------------------------------------------------------------------------
# the factorisation step of the proof


def factorisation_gap(c, e, reach_mask, *, min_reach: int = 1, shuffle_seed: int | None = None) -> dict:
    r"""Compare $\mathbb E[c_k\, e_k]$ with $\mathbb E[c_k]\,\mathbb E[e_k]$ position by position.

    Parameters
    ----------
    c : array of shape (N, n)
        The coefficient $c_k$ of each sequence at each position.
    e : array of shape (N, n, d)
        The vector $e_k$ (e.g. the word embedding of the token at $k$).
    reach_mask : bool array of shape (N, n)
        Which sequences reach position $k$ (expectations are over those).
    min_reach : int
        Positions reached by fewer sequences are left out.
    shuffle_seed : int, optional
        Pair each $c_k$ with the $e_k$ of another sequence (a random permutation among those reaching
        $k$): the placebo in which $c_k$ and $e_k$ *are* independent, so that the gap is sampling noise only.

    Returns
    -------
    dict
        ``positions`` (m,) kept; ``relative`` (m,) $\|\mathbb E[c e] - \mathbb E[c]\mathbb E[e]\| /
        \|\mathbb E[c e]\|$; ``pair_relative`` (m (m-1)/2,) the same for the differences between two
        positions, $\Delta_{ij} = \mathbb E[c_i e_i] - \mathbb E[c_j e_j]$ against its factorised version;
        ``pair_cosine`` (m (m-1)/2,) the cosine between the two differences.
    """
    c = np.asarray(c, dtype=np.float64)
    e = np.asarray(e, dtype=np.float64)
    M = np.asarray(reach_mask, dtype=bool)
    if c.shape != M.shape or e.shape[:2] != M.shape or e.ndim != 3:
        raise ValueError(
            f"shapes must be c (N, n), e (N, n, d), reach_mask (N, n); got {c.shape}, {e.shape}, {M.shape}"
        )
    rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None
    keep, true, fact = [], [], []
    for k in range(M.shape[1]):
        rows = np.flatnonzero(M[:, k])
        if rows.size < max(1, min_reach):
            continue
        ck, ek = c[rows, k], e[rows, k]
        if rng is not None:
            ck = ck[rng.permutation(ck.size)]
        keep.append(k)
        # E[c_k e_k] and E[c_k] E[e_k]
        true.append((ck[:, None] * ek).mean(axis=0))
        fact.append(ck.mean() * ek.mean(axis=0))
    if len(keep) < 2:
        raise ValueError(f"fewer than 2 positions are reached by at least min_reach={min_reach} sequences")
    T, F = np.asarray(true), np.asarray(fact)
    rel = np.linalg.norm(T - F, axis=1) / np.linalg.norm(T, axis=1)
    i, j = np.triu_indices(len(keep), k=1)
    dT, dF = T[i] - T[j], F[i] - F[j]
    nT, nF = np.linalg.norm(dT, axis=1), np.linalg.norm(dF, axis=1)
    pair_rel = np.linalg.norm(dT - dF, axis=1) / nT
    cos = np.sum(dT * dF, axis=1) / (nT * nF)
    return dict(positions=np.asarray(keep), relative=rel, pair_relative=pair_rel, pair_cosine=cos)


def run_factorisation_gap(settings=None, *, force: bool = False, split: str | None = None,
                          n_positions: int | None = None, layer: int | None = None,
                          min_reach: int | None = None, n_placebo: int = 20) -> Result:
    r"""The independence the proof of Theorem 4 needs, measured on SST-2 with the pretrained model.

    $c_k$ = the attention weight from ``[CLS]`` (query 0) to position $k$ in layer ``layer``, averaged
    over heads; $e_k$ = the pretrained word embedding of the token at $k$. Over the sentences of the
    split (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept as the model sees them, cut to
    ``n_positions``; expectations over the *content* tokens at each position) it compares
    $\mathbb E[c_k e_k]$ with $\mathbb E[c_k]\mathbb E[e_k]$ (:func:`factorisation_gap`), and the same with
    $c$ shuffled across sentences ``n_placebo`` times (independent by construction: what sampling noise
    alone gives).

    Values: medians of ``relative``, ``pair_relative`` and ``pair_cosine`` for the real pairing and the
    placebos; ``positions_above_placebo_95``, the number of positions whose real gap exceeds the 95th
    percentile of its placebos; ``reach`` (content tokens per position). Arrays: ``real__*`` (per
    position / pair), ``placebo__*`` (n_placebo, ...), ``placebo__band95`` (per position), ``mean_c``.

    Raises
    ------
    posgeom.corpora.real.DataUnavailableError, posgeom.corpora.pretrained.ModelUnavailableError
        When SST-2 or the pretrained model cannot be found (the message says how to provide them).
    """
    settings = _settings(settings)
    g = dict(CONFIGS[settings.scale]["gap"])
    split = g["split"] if split is None else split
    n_positions = g["n_positions"] if n_positions is None else int(n_positions)
    layer = g["layer"] if layer is None else int(layer)
    min_reach = g["min_reach"] if min_reach is None else int(min_reach)
    params = dict(pretrained=settings.pretrained, split=split, n_positions=n_positions, layer=layer,
                  min_reach=min_reach, n_placebo=int(n_placebo), data_dir=str(settings.data_dir))

    def compute():
        from ..corpora import load_pretrained, load_texts

        texts = load_texts("sst2", split, data_dir=settings.data_dir)
        pm = load_pretrained(settings.pretrained, device="cpu")
        if not 0 <= layer < pm.n_layers:
            raise ValueError(f"layer must be in 0..{pm.n_layers - 1} for {pm.name}, got {layer}")
        # the attention of layer `layer` depends on the layers below it only: run those (a BERT-family
        # encoder keeps its blocks in model.encoder.layer); the result is the same, the time a fraction
        blocks = getattr(getattr(pm.model, "encoder", None), "layer", None)
        if blocks is not None and layer + 1 < len(blocks):
            pm.model.encoder.layer = blocks[: layer + 1]
            pm.model.config.num_hidden_layers = layer + 1
        att = pm.attentions(texts.texts, max_length=n_positions, batch_size=64)
        A = att.weights[layer]  # (N, H, L, L)
        L = A.shape[-1]
        c = A[:, :, 0, :].mean(axis=1)  # (N, L): attention from [CLS] to each key, mean over heads
        W = pm.model.embeddings.word_embeddings.weight.detach().double().numpy()
        e = W[att.input_ids]  # (N, L, d)
        # content tokens only: [CLS] (always at 0), [SEP] and padding carry no positional statistics to compare
        special = np.asarray(sorted(set(pm.tokenizer.all_special_ids)))
        M = att.attention_mask.astype(bool) & ~np.isin(att.input_ids, special)
        real = factorisation_gap(c, e, M, min_reach=min_reach)
        placebos = [factorisation_gap(c, e, M, min_reach=min_reach, shuffle_seed=settings.seed + r)
                    for r in range(n_placebo)]
        P_rel = np.stack([p["relative"] for p in placebos])  # (n_placebo, m)
        P_pair = np.stack([p["pair_relative"] for p in placebos])
        P_cos = np.stack([p["pair_cosine"] for p in placebos])
        band = np.quantile(P_rel, 0.95, axis=0)
        values = dict(
            pretrained=pm.name, split=split, n_texts=len(texts.texts), n_positions=n_positions, layer=layer,
            seq_len=int(L), positions=real["positions"].tolist(), n_placebo=n_placebo,
            reach=[int(M[:, k].sum()) for k in real["positions"]],
            real={k: float(np.median(real[k])) for k in ("relative", "pair_relative", "pair_cosine")},
            placebo=dict(relative=float(np.median(P_rel)), pair_relative=float(np.median(P_pair)),
                         pair_cosine=float(np.median(P_cos))),
            positions_above_placebo_95=int(np.sum(real["relative"] > band)),
        )
        arrays = {f"real__{k}": v for k, v in real.items()}
        arrays.update(placebo__relative=P_rel, placebo__pair_relative=P_pair, placebo__pair_cosine=P_cos,
                      placebo__band95=band)
        arrays["mean_c"] = np.asarray([c[M[:, k], k].mean() if M[:, k].any() else np.nan for k in range(L)])
        return values, arrays

    return Registry(settings.results_dir).run(
        "separation.factorisation_gap", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=settings.pretrained, force=force,
    )
