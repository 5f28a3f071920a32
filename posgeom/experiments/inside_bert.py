r"""Inside BERT: the positional geometry each layer's attention sees (claim C10, chapter *Inside BERT*).

The paper reports that "the projected stress" of BERT peaks at layer 3, which "reorganises the positional
signal", without defining the projection (Cirrincione 2026). This module defines two,
names them, and computes both per layer and per head.

**Corpus-averaged positional logits** (``"propagated"``, the main definition). Run the pretrained model on
real sentences $x$ (the special-token policy ``"model"``: ``[CLS]`` at 0). Let $X_\ell(x) \in \mathbb R^{L \times d}$
be the input of layer $\ell$ ($X_1$ is the embeddings' output, LayerNorm included). Its *positional part*
is the mean over the sentences that reach position $i$,

$$m_\ell(i) = \operatorname{mean}_{x : L(x) > i} X_\ell(x)_i \qquad (n \times d),$$

so that $X_\ell(x)_i = m_\ell(i) + c_\ell(x, i)$ with a content part of mean zero at each position. The
position–position term of head $h$'s attention logits is

$$G^{h}_{\ell} = \frac{(m_\ell W_Q^h + b_Q^h)(m_\ell W_K^h + b_K^h)^\top}{\sqrt{d_h}} \qquad (n \times n).$$

**Static positional logits** (``"static"``). The same with $m_\ell$ replaced, at every layer, by the
pretrained table as it enters the model, $\mathrm{LN}(p_i + t_0)$ (the embedding LayerNorm of the
position vector plus the token-type-0 vector, no word): what each layer's query/key maps make of the
raw position signal.

**From logits to distances.** A logit matrix is a similarity; as the book does for RoPE's kernel, it induces
the distance

$$\hat d_{ij}^2 = S_{ii} + S_{jj} - 2 S_{ij}, \qquad S = \tfrac12 (G + G^\top),$$

Euclidean exactly when $S \succeq 0$ (Schoenberg); negative values are clipped to 0 and their mass is
reported (:func:`kernel_distances`). The *pooled* distance of a layer sums the heads' squared distances,
$\hat d_{ij}^2 = \sum_h \hat d^{h\,2}_{ij}$ — the distance of the heads' concatenated query/key features.

**Projected stress** of layer $\ell$ (per head, and pooled): the stress of $\hat D_\ell$ against the corpus's
chord Hellinger matrix $D$ (SST-2 train, :func:`posgeom.experiments.real_corpora.run_corpus_geometry`)
over the positions both cover, under ``"scale_free"`` (logits have no natural unit, so this is the
meaningful one) and ``"paper"``. A second, table-free reading uses the Euclidean distances of the rows of
$m_\ell$ themselves (``"residual"``), for $\ell = 1, \dots, L + 1$ (the last is the model's output).

**Attention maps.** The attention probabilities $\mathrm{softmax}(Q K^\top / \sqrt{d_h} + M)$ of each layer,
averaged over heads and over sentences long enough to cover a window of the first ``map_positions``
positions: the positional pattern of each layer (diagonal, previous/next token, ``[CLS]`` column).

``python -m posgeom.experiments.inside_bert`` runs everything at the scale of ``POSGEOM_SCALE``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import geometry as geo
from ..geometry import head_logits, kernel_distances
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..registry import Registry, Result

DEFINITIONS = ("propagated", "static", "residual")
NORMALIZATIONS = ("scale_free", "paper")
#: The layer at which the paper places the peak (claim C10), counted from 1.
PAPER_PEAK_LAYER = 3

CONFIGS: dict[str, dict[str, Any]] = {
    "quick": {
        # sentences fed to the model; the target D comes from the chapter "Real corpora" (SST-2 train, n = 64)
        "sentences": {"corpus": "sst2", "split": "validation", "max_sentences": None, "special": "model",
                      "n_positions": 64},
        # options of the target geometry D (chapter "Real corpora"; {} = its defaults)
        "target": {},
        "min_reach": 50,
        "map_positions": 24,
        "batch_size": 32,
    },
    "paper": {
        "sentences": {"corpus": "sst2", "split": "validation", "max_sentences": None, "special": "model",
                      "n_positions": 64},
        "target": {},
        "min_reach": 50,
        "map_positions": 24,
        "batch_size": 128,
    },
}


# --------------------------------------------------------------------------------------------
# The model and its layers
# --------------------------------------------------------------------------------------------


def load_model(settings: Settings):
    """The pretrained BERT-family model of ``settings.pretrained`` as a posgeom :class:`~posgeom.models.encoder.Encoder`.

    Returns
    -------
    Encoder
        In eval mode, on the CPU or ``settings.device``.
    """
    from ..models.hf import load_pretrained
    from ..models.resolve import model_folder

    model = load_pretrained(model_folder(settings.pretrained), task="encoder")
    return model.to(resolve_device(settings.device)).eval()


def layer_inputs(model, input_ids, attention_mask, *, map_positions: int | None = None):
    """Run ``model`` and collect, per layer, the positional means of its input and its attention maps.

    Parameters
    ----------
    model : Encoder
    input_ids, attention_mask : array-like of shape (N, L)
        Right-padded token ids and 1/0 mask.
    map_positions : int, optional
        Window ``K`` of the attention maps; only sequences of length > ``K`` contribute to them.

    Returns
    -------
    dict
        ``means`` (n_layers + 1, L, d): positional means of each layer's input and of the output;
        ``reach`` (L,): sequences reaching each position; ``maps`` (n_layers, K, K) mean attention
        probabilities (heads and sequences averaged); ``map_count``: sequences in the maps.
    """
    import torch

    device = next(model.parameters()).device
    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long, device=device)
    mask = torch.as_tensor(np.asarray(attention_mask), dtype=torch.long, device=device)
    n_layers, H = len(model.layers), model.config.n_heads
    captured: list[torch.Tensor] = []
    hooks = [layer.register_forward_pre_hook(lambda mod, args: captured.append(args[0].detach()))
             for layer in model.layers]
    try:
        with torch.no_grad():
            out = model(ids, mask)
    finally:
        for h in hooks:
            h.remove()
    states = captured + [out.detach()]
    m = mask.to(states[0].dtype)[..., None]                      # (N, L, 1)
    reach = mask.sum(0).double().cpu().numpy()                    # (L,)
    # m_l(i) = mean over sequences reaching i of X_l(x)_i
    sums = torch.stack([(s * m).sum(0) for s in states]).double().cpu().numpy()   # (n_layers + 1, L, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / reach[None, :, None]
    maps, count = None, 0
    if map_positions:
        K = int(map_positions)
        lengths = mask.sum(1)
        keep = lengths > K
        count = int(keep.sum())
        maps = np.zeros((n_layers, K, K))
        if count:
            with torch.no_grad():
                for li, (layer, X) in enumerate(zip(model.layers, captured)):
                    Xk = X[keep]
                    B, L, d = Xk.shape
                    dh = d // H
                    q, k, _ = layer.attn.qkv(Xk).view(B, L, 3, H, dh).permute(2, 0, 3, 1, 4).unbind(0)
                    if getattr(layer.attn, "_rotary", None):
                        q, k = layer.attn._rotary[0](q, k)
                    # A = softmax(Q K^T / sqrt(d_h) + M), M = -inf at padding keys
                    logits = q @ k.transpose(-1, -2) / dh**0.5
                    logits = logits.masked_fill(~mask[keep].bool()[:, None, None, :], float("-inf"))
                    A = torch.softmax(logits, dim=-1)
                    maps[li] = A[:, :, :K, :K].mean(dim=(0, 1)).double().cpu().numpy()
    return {"means": means, "reach": reach, "maps": maps, "map_count": count}


def _sentence_tokens(settings: Settings, cfg: dict[str, Any]):
    from .real_corpora import corpus_geometry_of, corpus_options

    s = cfg["sentences"]
    opts = corpus_options(settings.scale, s["corpus"], split=s["split"], special=s["special"],
                          n_positions=s["n_positions"], max_sequences=s["max_sentences"])
    return opts, corpus_geometry_of(settings, opts).tokens


def run_layer_stress(settings: Settings | None = None, *, force: bool = False, **overrides) -> Result:
    """Per-layer, per-head projected stress of the pretrained model, under the three definitions.

    Parameters
    ----------
    settings : Settings, optional
    force : bool
    **overrides
        Keys of ``CONFIGS[scale]`` (``min_reach``, ``map_positions``, ``batch_size``, ``sentences``,
        ``target``: corpus options of the target geometry).

    Returns
    -------
    Result
        ``arrays``: ``propagated_head`` and ``static_head`` (n_layers, H, 2) stress per layer and head
        (last axis ``scale_free``, ``paper``); ``propagated_pooled``, ``static_pooled`` (n_layers, 2);
        ``residual`` (n_layers + 1, 2); ``clipped`` (2, n_layers) clipped mass of the pooled kernels;
        ``maps`` (n_layers, K, K); ``positions`` (n,); ``reach`` (n,).
        ``values``: the model, its shape, the peak layer per definition and normalisation (1-based),
        the options.
    """
    import torch

    from .real_corpora import run_corpus_geometry

    settings = _settings(settings)
    cfg = {**CONFIGS[settings.scale], **overrides}
    unknown = set(overrides) - set(CONFIGS[settings.scale])
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; valid options are {sorted(CONFIGS[settings.scale])}")
    target = run_corpus_geometry(settings, corpus=cfg["sentences"]["corpus"], **cfg["target"])
    params = {"config": cfg, "pretrained": settings.pretrained, "target": target.key,
              "data": target.values["source"]}
    device = resolve_device(settings.device)

    def compute():
        opts, tokens = _sentence_tokens(settings, cfg)
        ids = tokens.padded(pad_id=0)
        L = ids.shape[1]
        mask = (np.arange(L)[None, :] < tokens.lengths[:, None]).astype(np.int64)
        model = load_model(settings)
        H, d = model.config.n_heads, model.config.d_model
        n_layers = len(model.layers)
        if L > model.config.max_len:
            raise ValueError(f"sentences of {L} positions exceed the model's {model.config.max_len} (N_max)")
        # run in batches, accumulating sums of the positional means and of the maps
        bs = int(cfg["batch_size"])
        sums = np.zeros((n_layers + 1, L, d))
        reach = np.zeros(L)
        maps = np.zeros((n_layers, cfg["map_positions"], cfg["map_positions"]))
        map_count = 0
        from ..progress import tqdm

        # batches of similar lengths, each cut to its longest sequence (padding costs nothing then)
        order = np.argsort(tokens.lengths, kind="stable")
        for s in tqdm(range(0, ids.shape[0], bs), desc="layers", unit="batch"):
            b = order[s:s + bs]
            Lb = int(tokens.lengths[b].max())
            part = layer_inputs(model, ids[b, :Lb], mask[b, :Lb], map_positions=cfg["map_positions"])
            r = part["reach"]
            sums[:, :Lb] += np.nan_to_num(part["means"]) * r[None, :, None]
            reach[:Lb] += r
            if part["map_count"]:
                maps += part["maps"] * part["map_count"]
                map_count += part["map_count"]
        if map_count == 0:
            raise ValueError(f"no sentence is longer than map_positions={cfg['map_positions']}; lower it")
        maps /= map_count
        # positions kept: reached by at least min_reach sentences AND present in the target D
        tpos = target.arrays["positions"]
        ok = np.flatnonzero(reach >= cfg["min_reach"])
        pos = np.intersect1d(ok, tpos)
        if pos.size < 3:
            raise ValueError(f"only {pos.size} positions are reached by min_reach={cfg['min_reach']} sentences")
        D = target.arrays["D"][np.ix_(np.searchsorted(tpos, pos), np.searchsorted(tpos, pos))]
        means = sums[:, pos, :] / reach[pos][None, :, None]       # (n_layers + 1, n, d)
        # static: LN(p_i + t_0) as the table enters layer 1
        emb = model.embeddings
        with torch.no_grad():
            P = emb.position.table()[torch.as_tensor(pos)]
            if emb.token_type is not None:
                P = P + emb.token_type.weight[0]
            static = emb.norm(P).double().cpu().numpy()
        out = {}
        clipped = np.zeros((2, n_layers))
        for di, (name, Xs) in enumerate((("propagated", means[:n_layers]), ("static", [static] * n_layers))):
            per_head = np.zeros((n_layers, H, 2))
            pooled = np.zeros((n_layers, 2))
            for li, block in enumerate(model.layers):
                G = head_logits(Xs[li], *block.attn.query_key_weights(), n_heads=H)
                sq = np.zeros_like(D)
                for h in range(H):
                    Dh = kernel_distances(G[h])
                    sq += Dh**2
                    per_head[li, h] = [geo.stress(D, Dh, z, as_distances=True) for z in NORMALIZATIONS]
                # pooled: dhat^2 = sum_h dhat_h^2
                pooled[li] = [geo.stress(D, np.sqrt(sq), z, as_distances=True) for z in NORMALIZATIONS]
                _, clipped[di, li] = kernel_distances(G.sum(0), return_clipped=True)
            out[f"{name}_head"], out[f"{name}_pooled"] = per_head, pooled
        residual = np.array([[geo.stress(D, geo.euclidean_distances(means[li]), z, as_distances=True)
                              for z in NORMALIZATIONS] for li in range(n_layers + 1)])
        peaks = {}
        for name in ("propagated", "static"):
            for zi, z in enumerate(NORMALIZATIONS):
                peaks[f"{name}_{z}"] = int(np.argmax(out[f"{name}_pooled"][:, zi]) + 1)
        for zi, z in enumerate(NORMALIZATIONS):
            peaks[f"residual_{z}"] = int(np.argmax(residual[:, zi]) + 1)
        values = {
            "model": settings.pretrained, "n_layers": n_layers, "n_heads": H, "d_model": d,
            "n_sentences": int(ids.shape[0]), "n_positions": int(pos.size), "positions": [int(pos[0]), int(pos[-1])],
            "map_count": int(map_count), "peaks": peaks, "options": opts, "paper_peak_layer": PAPER_PEAK_LAYER,
            "clipped_max": float(clipped.max()),
        }
        arrays = {**out, "residual": residual, "clipped": clipped, "maps": maps, "positions": pos,
                  "reach": reach[pos], "D": D}
        return values, arrays

    return Registry(settings.results_dir).run(
        "inside_bert_layers", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model=settings.pretrained, force=force,
    )


def offset_profiles(maps) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean attention at each offset $\delta = j - i$ of averaged attention maps.

    Parameters
    ----------
    maps : array-like of shape (n_layers, K, K)

    Returns
    -------
    offsets : ndarray of shape (2K - 1,)
        $-(K-1), \dots, K-1$.
    profile : ndarray of shape (n_layers, 2K - 1)
        Mean of ``maps[l, i, i + δ]`` over the valid ``i``.
    """
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 3 or maps.shape[1] != maps.shape[2]:
        raise ValueError(f"maps must have shape (n_layers, K, K), got {maps.shape}")
    K = maps.shape[1]
    offsets = np.arange(-(K - 1), K)
    profile = np.stack([[np.diagonal(m, offset=int(o)).mean() for o in offsets] for m in maps])
    return offsets, profile


def paper_results(settings: Settings | None = None) -> list[Result]:
    """Every ``paper``-scale result of this chapter held by the registry (any code version)."""
    from .real_corpora import paper_results as results_with_prefix

    return results_with_prefix(settings, "inside_bert")


__all__ = [
    "CONFIGS", "DEFINITIONS", "NORMALIZATIONS", "PAPER_PEAK_LAYER", "kernel_distances", "head_logits",
    "load_model", "layer_inputs", "run_layer_stress", "offset_profiles", "paper_results",
]

