r"""Is the local peak of the projected stress at the fourth layer more than a draw of sentences? (claim C10)

The chapter *Inside BERT* computes, per layer, the ``"scale_free"`` projected stress of the positional
means of the pretrained model (:func:`posgeom.experiments.inside_bert.run_layer_stress`). The paper
puts a peak at "layer 3" without saying whether layers are counted from 1 (the third block) or from 0
(``encoder.layer.3``, the fourth block). This module resamples the sentences that define the
positional means: they are dealt once into ``n_groups`` random groups, each replicate draws the groups
with replacement, recomputes the propagated (pooled over heads) and residual curves, and records
whether the fourth layer (counted from 1; ``encoder.layer.3`` counted from 0) is still a local maximum,
whether the third is, and the margin of the fourth over its neighbours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..registry import Registry, Result
from . import inside_bert as ib
from . import real_corpora as rc
from .settings import as_params

__all__ = ["LOCAL_PEAK", "run_local_peak_test", "local_maxima", "group_means", "local_peak_test"]

#: The layer (counted from 1) whose local peak is tested: ``encoder.layer.3`` counted from 0.
LOCAL_PEAK = 4


def local_maxima(curve) -> list[int]:
    """Layers (counted from 1) where ``curve`` is above both neighbours (the ends never count)."""
    c = np.asarray(curve, dtype=np.float64)
    return [i + 1 for i in range(1, c.size - 1) if c[i] > c[i - 1] and c[i] > c[i + 1]]


def _curves(means, D, qk, n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """Propagated (pooled over heads) and residual ``"scale_free"`` curves of positional means (n_layers + 1, n, d)."""
    prop = []
    for li, (wq, bq, wk, bk) in enumerate(qk):
        G = geo.head_logits(means[li], wq, bq, wk, bk, n_heads=n_heads)
        # pooled: dhat^2 = sum_h dhat_h^2
        sq = sum(geo.kernel_distances(G[h]) ** 2 for h in range(n_heads))
        prop.append(geo.stress(D, np.sqrt(sq), "scale_free", as_distances=True))
    resid = [geo.stress(D, geo.euclidean_distances(m), "scale_free", as_distances=True) for m in means]
    return np.array(prop), np.array(resid)


def group_means(model, tokens, n_groups: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deal the sentences once into ``n_groups`` random groups and sum each layer's input per group.

    Returns
    -------
    sums : ndarray of shape (n_groups, n_layers + 1, L, d)
    reach : ndarray of shape (n_groups, L)
    """
    import torch

    ids, mask = ib.padded_batch(tokens)
    L, d, n_layers = ids.shape[1], model.config.d_model, len(model.layers)
    groups = np.array_split(np.random.default_rng(seed).permutation(ids.shape[0]), int(n_groups))
    sums, reach = np.zeros((len(groups), n_layers + 1, L, d)), np.zeros((len(groups), L))
    with torch.no_grad():
        for g, rows in enumerate(groups):
            Lg = int(tokens.lengths[rows].max())
            part = ib.layer_inputs(model, ids[rows, :Lg], mask[rows, :Lg])
            sums[g, :, :Lg] = np.nan_to_num(part["means"]) * part["reach"][None, :, None]
            reach[g, :Lg] = part["reach"]
    return sums, reach


def local_peak_test(sums, reach, D_target, target_positions, qk, n_heads: int, *, min_reach: int, n_boot: int,
                    seed: int) -> tuple[dict, dict]:
    """Redraw the groups of sentences with replacement ``n_boot`` times and test the local peak at
    :data:`LOCAL_PEAK` on the propagated and residual curves (values and arrays of :func:`run_local_peak_test`,
    without the model's name)."""
    from ..progress import tqdm

    n_groups, n_layers = sums.shape[0], sums.shape[1] - 1
    pos = np.intersect1d(np.flatnonzero(reach.sum(0) >= min_reach), target_positions)
    idx = np.searchsorted(target_positions, pos)
    D = np.asarray(D_target)[np.ix_(idx, idx)]

    def curves(weights):
        r = weights @ reach[:, pos]
        if np.any(r == 0):
            return None
        means = np.tensordot(weights, sums[:, :, pos, :], axes=1) / r[None, :, None]
        return _curves(means, D, qk, n_heads)

    point = curves(np.ones(n_groups))
    rng = np.random.default_rng(seed)
    reps = {"propagated": [], "residual": []}
    for _ in tqdm(range(int(n_boot)), desc="resampling sentences", leave=False):
        c = curves(np.bincount(rng.integers(0, n_groups, n_groups), minlength=n_groups).astype(float))
        if c is None:
            continue
        reps["propagated"].append(c[0])
        reps["residual"].append(c[1])
    k = LOCAL_PEAK - 1
    values: dict[str, Any] = {"n_layers": n_layers, "n_positions": int(pos.size), "n_used": len(reps["propagated"]),
                              "layer": LOCAL_PEAK}
    arrays = {}
    for name, p in zip(("propagated", "residual"), point):
        R = np.array(reps[name])
        arrays[f"{name}_replicates"] = R

        def share(fn, R=R):
            return float(np.mean([fn(r) for r in R]))

        margin = R[:, k] - np.maximum(R[:, k - 1], R[:, k + 1])
        values[name] = {
            "point": [float(x) for x in p], "local_maxima": local_maxima(p),
            "share_local_peak": share(lambda r: LOCAL_PEAK in local_maxima(r)),
            "share_local_peak_3": share(lambda r: 3 in local_maxima(r)),
            "share_global_3": share(lambda r: int(np.argmax(r)) == 2),
            "share_global_4": share(lambda r: int(np.argmax(r)) == 3),
            "margin": {"estimate": float(p[k] - max(p[k - 1], p[k + 1])),
                       "p05": float(np.quantile(margin, 0.05)), "p95": float(np.quantile(margin, 0.95))},
        }
    return values, arrays


def run_local_peak_test(settings: Settings | None = None, *, n_groups: int = 24, n_boot: int = 200,
                        force: bool = False) -> Result:
    """Resample the sentences and test the local peak of the layer curves at :data:`LOCAL_PEAK`
    (:func:`group_means`, then :func:`local_peak_test`).

    Returns
    -------
    Result
        ``values``: ``model``, ``n_layers``, ``n_used`` replicates, and per curve (``propagated``,
        ``residual``): ``point`` (the curve), ``local_maxima`` of the point curve, ``share_local_peak``
        (replicates with a local maximum at :data:`LOCAL_PEAK`), ``share_local_peak_3`` (at layer 3),
        ``share_global_3`` and ``share_global_4`` (global maximum there), ``margin`` (point estimate and
        5 %/95 % percentiles of curve[4] - max(curve[3], curve[5])). ``arrays``: ``<curve>_replicates``.
    """
    settings = _settings(settings)
    cfg = ib.CONFIGS[settings.scale]
    params = {"sentences": as_params(cfg.sentences), "target": cfg.target, "min_reach": cfg.min_reach, "n_groups": int(n_groups),
              "n_boot": int(n_boot), "layer": LOCAL_PEAK, "pretrained": settings.pretrained, "seed": settings.seed}

    def compute():
        _, tokens = ib.sentence_tokens(settings, cfg.sentences)
        model = ib.load_model(settings)
        sums, reach = group_means(model, tokens, n_groups, settings.seed)
        target = rc.run_corpus_geometry(settings, corpus=cfg.sentences.corpus, **cfg.target)
        qk = [block.attn.query_key_weights() for block in model.layers]
        values, arrays = local_peak_test(sums, reach, target.arrays["D"], target.arrays["positions"], qk,
                                         model.config.n_heads, min_reach=cfg.min_reach, n_boot=n_boot,
                                         seed=settings.seed)
        return {"model": settings.pretrained, **values}, arrays

    return Registry(settings.results_dir).run(
        "inside_bert_local_peak", compute, params=params, scale=settings.scale, seed=settings.seed,
        device=resolve_device(settings.device), model=settings.pretrained, force=force,
    )
