r"""The factorisation step of the proof of Theorem 4 measured with a pretrained model.

The proof replaces $\mathbb E[c_k\, e(t_k)]$ by $\mathbb E[c_k]\,\mathbb E[e(t_k)]$; placebos shuffle $c$ across texts.
"""

from __future__ import annotations

import numpy as np

from ..geometry.factorisation import factorisation_gap
from ..validation import check_int, check_positive_int

__all__ = ["factorisation_study"]


def factorisation_study(pm, texts, *, n_positions: int, layer: int, min_reach: int, n_placebo: int,
                        seed: int = 0) -> tuple[dict, dict]:
    r"""The factorisation gap of the proof of Theorem 4 for a pretrained model on a list of texts.

    $c_k$ is the head-averaged attention from ``[CLS]`` to position $k$ in ``layer``, $e_k$ the word
    embedding of the token at $k$; expectations run over the content tokens at each position.

    Parameters
    ----------
    pm : posgeom.models.pretrained.PretrainedModel
        Its blocks above ``layer`` are dropped.
    n_positions : int
        Texts cut to that many tokens.
    layer : int
        From 0.
    min_reach : int
        Positions kept are reached by that many content tokens.
    n_placebo : int
        Shuffles of $c$ across texts (seeds ``seed``, ``seed + 1``, ...).

    Returns
    -------
    values, arrays : dict
        As :func:`posgeom.experiments.factorisation.run_factorisation_gap` stores them.
    """
    check_int(layer, "layer", 0, pm.n_layers - 1)
    check_positive_int(n_positions, "n_positions")
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
    measures = ("relative", "pair_relative", "pair_cosine")
    placebo = {k: np.stack([p[k] for p in placebos]) for k in measures}  # each (n_placebo, m)
    band = np.quantile(placebo["relative"], 0.95, axis=0)
    values = dict(
        pretrained=pm.name, n_texts=len(texts), n_positions=n_positions, layer=layer,
        seq_len=int(L), positions=real["positions"].tolist(), n_placebo=n_placebo,
        reach=[int(M[:, k].sum()) for k in real["positions"]],
        real={k: float(np.median(real[k])) for k in measures},
        placebo={k: float(np.median(P)) for k, P in placebo.items()},
        positions_above_placebo_95=int(np.sum(real["relative"] > band)),
    )
    arrays = {**{f"real__{k}": v for k, v in real.items()}, **{f"placebo__{k}": P for k, P in placebo.items()},
              "placebo__band95": band}
    arrays["mean_c"] = np.asarray([c[M[:, k], k].mean() if M[:, k].any() else np.nan for k in range(L)])
    return values, arrays
