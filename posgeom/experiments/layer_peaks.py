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

__all__ = ["LOCAL_PEAK", "run_local_peak_test", "local_maxima"]

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


def run_local_peak_test(settings: Settings | None = None, *, n_groups: int = 24, n_boot: int = 200,
                        force: bool = False) -> Result:
    """Resample the sentences and test the local peak of the layer curves at :data:`LOCAL_PEAK`.

    Returns
    -------
    Result
        ``values``: ``model``, ``n_layers``, ``n_used`` replicates, and per curve (``propagated``,
        ``residual``): ``point`` (the curve), ``local_maxima`` of the point curve, ``share_local_peak``
        (replicates with a local maximum at :data:`LOCAL_PEAK`), ``share_local_peak_3`` (at layer 3),
        ``share_global_3`` and ``share_global_4`` (global maximum there), ``margin`` (point estimate and
        5 %/95 % percentiles of curve[4] - max(curve[3], curve[5])). ``arrays``: ``<curve>_replicates``.
    """
    import torch

    settings = _settings(settings)
    cfg = ib.CONFIGS[settings.scale]
    s = cfg["sentences"]
    params = {"sentences": s, "target": cfg["target"], "min_reach": cfg["min_reach"], "n_groups": int(n_groups),
              "n_boot": int(n_boot), "layer": LOCAL_PEAK, "pretrained": settings.pretrained, "seed": settings.seed}

    def compute():
        opts = rc.corpus_options(settings.scale, s["corpus"], split=s["split"], special=s["special"],
                                 n_positions=s["n_positions"], max_sequences=s["max_sentences"])
        tokens = rc.corpus_geometry_of(settings, opts).tokens
        ids = tokens.padded(pad_id=0)
        L = ids.shape[1]
        mask = (np.arange(L)[None, :] < tokens.lengths[:, None]).astype(np.int64)
        model = ib.load_model(settings)
        H, d, n_layers = model.config.n_heads, model.config.d_model, len(model.layers)
        groups = np.array_split(np.random.default_rng(settings.seed).permutation(ids.shape[0]), int(n_groups))
        sums = np.zeros((len(groups), n_layers + 1, L, d))
        reach = np.zeros((len(groups), L))
        with torch.no_grad():
            for g, rows in enumerate(groups):
                Lg = int(tokens.lengths[rows].max())
                part = ib.layer_inputs(model, ids[rows, :Lg], mask[rows, :Lg])
                sums[g, :, :Lg] = np.nan_to_num(part["means"]) * part["reach"][None, :, None]
                reach[g, :Lg] = part["reach"]
        target = rc.run_corpus_geometry(settings, corpus=s["corpus"], **cfg["target"])
        tpos = target.arrays["positions"]
        pos = np.intersect1d(np.flatnonzero(reach.sum(0) >= cfg["min_reach"]), tpos)
        idx = np.searchsorted(tpos, pos)
        D = target.arrays["D"][np.ix_(idx, idx)]
        qk = [block.attn.query_key_weights() for block in model.layers]

        def curves(weights):
            r = weights @ reach[:, pos]
            if np.any(r == 0):
                return None
            means = np.tensordot(weights, sums[:, :, pos, :], axes=1) / r[None, :, None]
            return _curves(means, D, qk, H)

        point = curves(np.ones(len(groups)))
        rng = np.random.default_rng(settings.seed)
        reps = {"propagated": [], "residual": []}
        from ..progress import tqdm

        for _ in tqdm(range(int(n_boot)), desc="resampling sentences", leave=False):
            c = curves(np.bincount(rng.integers(0, len(groups), len(groups)), minlength=len(groups)).astype(float))
            if c is None:
                continue
            reps["propagated"].append(c[0])
            reps["residual"].append(c[1])
        k = LOCAL_PEAK - 1
        values: dict[str, Any] = {"model": settings.pretrained, "n_layers": n_layers, "n_positions": int(pos.size),
                                  "n_used": len(reps["propagated"]), "layer": LOCAL_PEAK}
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

    return Registry(settings.results_dir).run(
        "inside_bert_local_peak", compute, params=params, scale=settings.scale, seed=settings.seed,
        device=resolve_device(settings.device), model=settings.pretrained, force=force,
    )
