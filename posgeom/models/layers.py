r"""What a model's layers see: the positional means of each layer's input and its attention maps.

The positional mean of layer $\ell$'s input over the right-padded sentences that reach each position is

$$m_\ell(i) = \operatorname{mean}_{x : L(x) > i} X_\ell(x)_i \qquad (n \times d).$$
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["layer_inputs", "LayerMeans", "collect_layer_means", "static_positions", "group_means"]


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
        ``means`` (n_layers + 1, L, d) of each layer's input and of the output, ``reach`` (L,), ``maps``
        (n_layers, K, K) mean attention probabilities and ``map_count``, the sequences in the maps.
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


@dataclass
class LayerMeans:
    """Per-position sums (n_layers + 1, L, d) of each layer's input, ``reach`` (L,) and ``maps`` (n_layers, K, K)."""

    sums: np.ndarray
    reach: np.ndarray
    maps: np.ndarray
    map_count: int


def collect_layer_means(model, tokens, *, batch_size: int, map_positions: int) -> LayerMeans:
    """:func:`layer_inputs` over a tokenised corpus, in batches of similar lengths, accumulated into sums."""
    from ..progress import tqdm
    ids, mask = tokens.model_inputs()
    L, d, n_layers = ids.shape[1], model.config.d_model, len(model.layers)
    if L > model.config.max_len:
        raise ValueError(f"sentences of {L} positions exceed the model's {model.config.max_len} (N_max)")
    sums, reach = np.zeros((n_layers + 1, L, d)), np.zeros(L)
    maps, map_count = np.zeros((n_layers, map_positions, map_positions)), 0
    order = np.argsort(tokens.lengths, kind="stable")
    for s in tqdm(range(0, ids.shape[0], batch_size), desc="layers", unit="batch"):
        b = order[s:s + batch_size]
        Lb = int(tokens.lengths[b].max())
        part = layer_inputs(model, ids[b, :Lb], mask[b, :Lb], map_positions=map_positions)
        r = part["reach"]
        sums[:, :Lb] += np.nan_to_num(part["means"]) * r[None, :, None]
        reach[:Lb] += r
        if part["map_count"]:
            maps += part["maps"] * part["map_count"]
            map_count += part["map_count"]
    if map_count == 0:
        raise ValueError(f"no sentence is longer than map_positions={map_positions}; lower it")
    return LayerMeans(sums, reach, maps / map_count, map_count)


def static_positions(model, pos) -> np.ndarray:
    """$\\mathrm{LN}(p_i + t_0)$ at the positions ``pos``: the table as it enters layer 1, shape (n, d)."""
    import torch
    emb = model.embeddings
    with torch.no_grad():
        P = emb.position.table()[torch.as_tensor(pos)]
        if emb.token_type is not None:
            P = P + emb.token_type.weight[0]
        return emb.norm(P).double().cpu().numpy()


def group_means(model, tokens, n_groups: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Deal the sentences once into ``n_groups`` random groups and sum each layer's input per group.

    Returns
    -------
    sums : ndarray of shape (n_groups, n_layers + 1, L, d)
    reach : ndarray of shape (n_groups, L)
    """
    import torch
    ids, mask = tokens.model_inputs()
    L, d, n_layers = ids.shape[1], model.config.d_model, len(model.layers)
    groups = np.array_split(np.random.default_rng(seed).permutation(ids.shape[0]), int(n_groups))
    sums, reach = np.zeros((len(groups), n_layers + 1, L, d)), np.zeros((len(groups), L))
    with torch.no_grad():
        for g, rows in enumerate(groups):
            Lg = int(tokens.lengths[rows].max())
            part = layer_inputs(model, ids[rows, :Lg], mask[rows, :Lg])
            sums[g, :, :Lg] = np.nan_to_num(part["means"]) * part["reach"][None, :, None]
            reach[g, :Lg] = part["reach"]
    return sums, reach
