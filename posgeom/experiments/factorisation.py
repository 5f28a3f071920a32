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
from ..geometry.factorisation import factorisation_gap
from ..registry import Result
from ..validation import check_int
from .separation import CONFIGS
from .settings import as_params, store_result

__all__ = ["factorisation_study", "run_factorisation_gap"]


def factorisation_study(pm, texts, *, n_positions: int, layer: int, min_reach: int, n_placebo: int,
                        seed: int = 0) -> tuple[dict, dict]:
    r"""The factorisation gap of the proof of Theorem 4 for a pretrained model on a list of texts.

    $c_k$ = the attention weight from ``[CLS]`` (query 0) to position $k$ in layer ``layer`` (from 0),
    averaged over heads; $e_k$ = the model's word embedding of the token at $k$; expectations over the
    *content* tokens at each position (:func:`posgeom.geometry.factorisation.factorisation_gap`), and the
    same with $c$ shuffled across texts ``n_placebo`` times (seeds ``seed``, ``seed + 1``, ...).

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
    check_int(layer, "layer", 0, pm.n_layers - 1)
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

    return store_result(settings, "separation.factorisation_gap", compute, params, force, model=settings.pretrained)
