r"""The factorisation step of the proof of Theorem 4, measured on real text (chapter "Theorem 4").

The proof replaces $\mathbb E[c_k\, e(t_k)]$ by $\mathbb E[c_k]\,\mathbb E[e(t_k)]$; we instantiate
$c_k$ as the attention weight from ``[CLS]`` to position $k$ (mean over the heads of one layer) and
$e(t_k)$ as the word embedding of the token at $k$, and measure on SST-2 how far the two are, against
placebos in which $c$ is shuffled across sentences (independent by construction).

The options are ``CONFIGS[scale].gap`` of :mod:`posgeom.experiments.separation`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..config import settings_or_default as _settings
from ..corpora.real import data_key
from ..registry import Registry, Result
from .separation import CONFIGS
from .settings import as_params

__all__ = ["factorisation_gap", "factorisation_study", "run_factorisation_gap"]


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


def factorisation_study(pm, texts, *, n_positions: int, layer: int, min_reach: int, n_placebo: int,
                        seed: int = 0) -> tuple[dict, dict]:
    r"""The factorisation gap of the proof of Theorem 4 for a pretrained model on a list of texts.

    $c_k$ = the attention weight from ``[CLS]`` (query 0) to position $k$ in layer ``layer`` (from 0),
    averaged over heads; $e_k$ = the model's word embedding of the token at $k$; expectations over the
    *content* tokens at each position (:func:`factorisation_gap`), and the same with $c$ shuffled across
    texts ``n_placebo`` times (seeds ``seed``, ``seed + 1``, ...).

    Parameters
    ----------
    pm : posgeom.models.pretrained.PretrainedModel
        Its blocks above ``layer`` are dropped (they do not change the attention of ``layer``).
    texts : list of str

    Returns
    -------
    values, arrays : dict
        As :func:`run_factorisation_gap` stores them.
    """
    if not 0 <= layer < pm.n_layers:
        raise ValueError(f"layer must be in 0..{pm.n_layers - 1} for {pm.name}, got {layer}")
    # the attention of layer `layer` depends on the layers below it only: run those (a BERT-family
    # encoder keeps its blocks in model.encoder.layer); the result is the same, the time a fraction
    blocks = getattr(getattr(pm.model, "encoder", None), "layer", None)
    if blocks is not None and layer + 1 < len(blocks):
        pm.model.encoder.layer = blocks[: layer + 1]
        pm.model.config.num_hidden_layers = layer + 1
    att = pm.attentions(texts, max_length=n_positions, batch_size=64)
    A = att.weights[layer]  # (N, H, L, L)
    L = A.shape[-1]
    c = A[:, :, 0, :].mean(axis=1)  # (N, L): attention from [CLS] to each key, mean over heads
    W = pm.model.embeddings.word_embeddings.weight.detach().double().numpy()
    e = W[att.input_ids]  # (N, L, d)
    # content tokens only: [CLS] (always at 0), [SEP] and padding carry no positional statistics to compare
    special = np.asarray(sorted(set(pm.tokenizer.all_special_ids)))
    M = att.attention_mask.astype(bool) & ~np.isin(att.input_ids, special)
    real = factorisation_gap(c, e, M, min_reach=min_reach)
    placebos = [factorisation_gap(c, e, M, min_reach=min_reach, shuffle_seed=seed + r) for r in range(n_placebo)]
    P_rel = np.stack([p["relative"] for p in placebos])  # (n_placebo, m)
    P_pair = np.stack([p["pair_relative"] for p in placebos])
    P_cos = np.stack([p["pair_cosine"] for p in placebos])
    band = np.quantile(P_rel, 0.95, axis=0)
    values = dict(
        pretrained=pm.name, n_texts=len(texts), n_positions=n_positions, layer=layer,
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


def run_factorisation_gap(settings=None, *, force: bool = False, split: str | None = None,
                          n_positions: int | None = None, layer: int | None = None,
                          min_reach: int | None = None, n_placebo: int = 20) -> Result:
    r"""The independence the proof of Theorem 4 needs, measured on SST-2 with the pretrained model
    (:func:`factorisation_study`; the model from :func:`posgeom.models.pretrained.load_hf`), stored.

    Over the sentences of the split (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept as the model
    sees them, cut to ``n_positions``). Options default to ``CONFIGS[scale].gap``.

    Values: medians of ``relative``, ``pair_relative`` and ``pair_cosine`` for the real pairing and the
    placebos; ``positions_above_placebo_95``, the number of positions whose real gap exceeds the 95th
    percentile of its placebos; ``reach`` (content tokens per position). Arrays: ``real__*`` (per
    position / pair), ``placebo__*`` (n_placebo, ...), ``placebo__band95`` (per position), ``mean_c``.

    Raises
    ------
    posgeom.corpora.real.DataUnavailableError, posgeom.models.pretrained.ModelUnavailableError
        When SST-2 or the pretrained model cannot be found (the message says how to provide them).
    """
    settings = _settings(settings)
    given = dict(split=split, n_positions=n_positions, layer=layer, min_reach=min_reach)
    g = dataclasses.replace(CONFIGS[settings.scale].gap, **{k: v for k, v in given.items() if v is not None})
    params = dict(pretrained=settings.pretrained, **as_params(g), n_placebo=int(n_placebo),
                  data_dir=data_key(settings.data_dir))

    def compute():
        from ..corpora import load_texts
        from ..models.pretrained import load_hf

        texts = load_texts("sst2", g.split, data_dir=settings.data_dir)
        pm = load_hf(settings.pretrained)
        values, arrays = factorisation_study(pm, texts.texts, n_positions=int(g.n_positions), layer=int(g.layer),
                                             min_reach=int(g.min_reach), n_placebo=int(n_placebo), seed=settings.seed)
        return dict(values, split=g.split), arrays

    return Registry(settings.results_dir).run(
        "separation.factorisation_gap", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=settings.pretrained, force=force,
    )
