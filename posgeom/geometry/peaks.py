r"""The projected stress of a model's layers, and the peaks of a curve over layers.

Each layer's positional input, through its query/key maps, induces per-head distances, pooled as
$\hat d_{ij}^2 = \sum_h \hat d^{h\,2}_{ij}$; the stress over layers is a curve whose peaks count from 1, and
:func:`local_peak_test` asks whether a local peak is more than a draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_int
from .hellinger import euclidean_distances
from .similarity import head_logits, kernel_distances
from .stress import StressNormalization, stress

__all__ = ["NORMALIZATIONS", "projected_stress", "peak_layers", "local_maxima", "layer_curves", "local_peak_test"]

#: The stress normalisations of a projected stress, in the order of the last axis of its arrays.
NORMALIZATIONS = (StressNormalization.SCALE_FREE, StressNormalization.PAPER)


def projected_stress(D, inputs, qk, n_heads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-head and pooled projected stress of each layer against $D$ (module docstring).

    Parameters
    ----------
    D : ndarray of shape (n, n)
    inputs : sequence of ndarray of shape (n, d)
        The positional input of each layer.
    qk, n_heads :
        Each layer's query/key projection ``(W_Q, b_Q, W_K, b_K)`` (``SelfAttention.query_key_weights``); heads.

    Returns
    -------
    per_head : ndarray of shape (n_layers, n_heads, 2)
        Last axis :data:`NORMALIZATIONS`.
    pooled : ndarray of shape (n_layers, 2)
        Against $\hat d^2 = \sum_h \hat d_h^2$.
    clipped : ndarray of shape (n_layers,)
        Clipped mass of the kernel of the summed logits.
    """
    n_layers = len(qk)
    per_head, pooled, clipped = np.zeros((n_layers, n_heads, 2)), np.zeros((n_layers, 2)), np.zeros(n_layers)
    for li, weights in enumerate(qk):
        G = head_logits(inputs[li], *weights, n_heads=n_heads)
        sq = np.zeros_like(D)
        for h in range(n_heads):
            Dh = kernel_distances(G[h])
            sq += Dh**2
            per_head[li, h] = [stress(D, Dh, z, as_distances=True) for z in NORMALIZATIONS]
        # pooled: dhat^2 = sum_h dhat_h^2
        pooled[li] = [stress(D, np.sqrt(sq), z, as_distances=True) for z in NORMALIZATIONS]
        _, clipped[li] = kernel_distances(G.sum(0), return_clipped=True)
    return per_head, pooled, clipped


def peak_layers(curves: dict[str, np.ndarray]) -> dict[str, dict[StressNormalization, int]]:
    """``{name: {norm: layer}}``: the layer (from 1) of the global maximum of each (n_layers, 2) curve, its last axis
    :data:`NORMALIZATIONS`."""
    return {name: {z: int(np.argmax(c[:, zi]) + 1) for zi, z in enumerate(NORMALIZATIONS)}
            for name, c in curves.items()}


def local_maxima(curve) -> list[int]:
    """Layers (counted from 1) where ``curve`` is above both neighbours (the ends never count)."""
    c = np.asarray(curve, dtype=np.float64)
    return [i + 1 for i in range(1, c.size - 1) if c[i] > c[i - 1] and c[i] > c[i + 1]]


def layer_curves(means, D, qk, n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """Propagated (pooled over heads) and residual ``"scale_free"`` curves of positional means (n_layers + 1, n, d)."""
    prop = []
    for li, (wq, bq, wk, bk) in enumerate(qk):
        G = head_logits(means[li], wq, bq, wk, bk, n_heads=n_heads)
        # pooled: dhat^2 = sum_h dhat_h^2
        sq = sum(kernel_distances(G[h]) ** 2 for h in range(n_heads))
        prop.append(stress(D, np.sqrt(sq), "scale_free", as_distances=True))
    resid = [stress(D, euclidean_distances(m), "scale_free", as_distances=True) for m in means]
    return np.array(prop), np.array(resid)


def local_peak_test(sums, reach, D_target, target_positions, qk, n_heads: int, *, layer: int, min_reach: int,
                    n_boot: int, seed: int) -> tuple[dict, dict]:
    """Test the local peak at ``layer`` (from 1) of the propagated and residual curves by redrawing groups of sentences.

    Parameters
    ----------
    sums, reach : ndarray of shape (n_groups, n_layers + 1, L, d) and (n_groups, L)
        Each group's sums of each layer's input (``posgeom.models.layers.group_means``); its sentences reaching
        each position.
    D_target : ndarray of shape (m, m)
        The corpus's geometry at ``target_positions`` (m,), sorted.
    qk : sequence of tuples ``(W_Q, b_Q, W_K, b_K)``
        Each layer's query/key projection.
    n_heads, layer : int
        The layer tested, ``2 <= layer <= n_layers - 1``; ``layer - 1`` is read too (a layer counted from 0 or 1).
    min_reach, n_boot, seed : int
        Positions kept are reached by ``min_reach`` sentences and in the target; ``n_boot`` redraws of the groups.

    Returns
    -------
    values : dict
        ``n_layers``, ``n_positions``, ``n_used`` (redraws reaching every position), ``layer``, and per curve
        (``propagated``, ``residual``): ``point``, ``local_maxima``, ``share_local_peak`` (at ``layer``),
        ``share_local_peak_<layer - 1>``, ``share_global_<layer - 1>``, ``share_global_<layer>``, ``margin``.
    arrays : dict
        ``<curve>_replicates`` of shape (n_used, n_layers).
    """
    from ..progress import tqdm
    n_heads, n_boot = check_int(n_heads, "n_heads", 1), check_int(n_boot, "n_boot", 1)
    layer = check_int(layer, "layer", 2, np.shape(sums)[1] - 2)
    below = layer - 1
    n_groups, n_layers = sums.shape[0], sums.shape[1] - 1
    pos = np.intersect1d(np.flatnonzero(reach.sum(0) >= min_reach), target_positions)
    idx = np.searchsorted(target_positions, pos)
    D = np.asarray(D_target)[np.ix_(idx, idx)]

    def curves(weights):
        r = weights @ reach[:, pos]
        if np.any(r == 0):
            return None
        means = np.tensordot(weights, sums[:, :, pos, :], axes=1) / r[None, :, None]
        return layer_curves(means, D, qk, n_heads)

    point = curves(np.ones(n_groups))
    rng = np.random.default_rng(seed)
    reps = {"propagated": [], "residual": []}
    for _ in tqdm(range(int(n_boot)), desc="resampling sentences", leave=False):
        c = curves(np.bincount(rng.integers(0, n_groups, n_groups), minlength=n_groups).astype(float))
        if c is None:
            continue
        reps["propagated"].append(c[0])
        reps["residual"].append(c[1])
    k = layer - 1
    values: dict[str, Any] = {"n_layers": n_layers, "n_positions": int(pos.size), "n_used": len(reps["propagated"]),
                              "layer": layer}
    arrays = {}
    for name, p in zip(("propagated", "residual"), point):
        R = np.array(reps[name])
        arrays[f"{name}_replicates"] = R

        def share(fn, R=R):
            return float(np.mean([fn(r) for r in R]))

        margin = R[:, k] - np.maximum(R[:, k - 1], R[:, k + 1])
        values[name] = {
            "point": [float(x) for x in p], "local_maxima": local_maxima(p),
            "share_local_peak": share(lambda r: layer in local_maxima(r)),
            f"share_local_peak_{below}": share(lambda r: below in local_maxima(r)),
            f"share_global_{below}": share(lambda r: int(np.argmax(r)) == below - 1),
            f"share_global_{layer}": share(lambda r: int(np.argmax(r)) == layer - 1),
            "margin": {"estimate": float(p[k] - max(p[k - 1], p[k + 1])),
                       "p05": float(np.quantile(margin, 0.05)), "p95": float(np.quantile(margin, 0.95))},
        }
    return values, arrays
