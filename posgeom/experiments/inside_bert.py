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
reported (:func:`posgeom.geometry.kernel_distances`). The *pooled* distance of a layer sums the heads' squared distances,
$\hat d_{ij}^2 = \sum_h \hat d^{h\,2}_{ij}$ — the distance of the heads' concatenated query/key features.

**Projected stress** of layer $\ell$ (per head, and pooled): the stress of $\hat D_\ell$ against the corpus's
chord Hellinger matrix $D$ (SST-2 train, :func:`posgeom.experiments.real_corpora.run_corpus_geometry`)
over the positions both cover, under ``"scale_free"`` (logits have no natural unit, so this is the
meaningful one) and ``"paper"``. A second, table-free reading uses the Euclidean distances of the rows of
$m_\ell$ themselves (``"residual"``), for $\ell = 1, \dots, L + 1$ (the last is the model's output).

**Attention maps.** The attention probabilities $\mathrm{softmax}(Q K^\top / \sqrt{d_h} + M)$ of each layer,
averaged over heads and over sentences long enough to cover a window of the first ``map_positions``
positions: the positional pattern of each layer (diagonal, previous/next token, ``[CLS]`` column).

``python -m posgeom.experiments inside-bert`` runs everything at the scale of ``POSGEOM_SCALE``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..geometry import head_logits, kernel_distances
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..registry import Registry, Result
from .settings import as_params, by_scale

DEFINITIONS = ("propagated", "static", "residual")
NORMALIZATIONS = ("scale_free", "paper")
#: The layer at which the paper places the peak (claim C10), counted from 1.
PAPER_PEAK_LAYER = 3


@dataclass(frozen=True)
class Sentences:
    """The sentences fed to the model (the target $D$ comes from the chapter "Real corpora": SST-2 train)."""

    corpus: str = "sst2"
    split: str = "validation"
    max_sentences: int | None = None
    special: str = "model"
    n_positions: int = 64


@dataclass(frozen=True)
class InsideBertSettings:
    """Options of the chapter *Inside BERT* (defaults: ``quick``).

    ``target``: options of the target geometry $D$ (:func:`posgeom.experiments.real_corpora.run_corpus_geometry`;
    empty = its defaults); ``min_reach``: positions kept are reached by at least that many sentences;
    ``map_positions``: the window of the attention maps; ``batch_size``: sentences per forward pass.
    """

    sentences: Sentences = field(default_factory=Sentences)
    target: dict = field(default_factory=dict)
    min_reach: int = 50
    map_positions: int = 24
    batch_size: int = 32


CONFIGS = by_scale(InsideBertSettings(), batch_size=128)


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
    from ..models.pretrained import load_encoder

    model = load_encoder(settings.pretrained, task="encoder")
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


def sentence_tokens(settings: Settings, sentences: Sentences):
    """The token ids of the sentences fed to the model, through the one route of
    :func:`posgeom.experiments.real_corpora.corpus_geometry_of`; returns ``(options, tokens)``."""
    from .real_corpora import corpus_geometry_of, corpus_options

    s = sentences
    opts = corpus_options(settings.scale, s.corpus, split=s.split, special=s.special,
                          n_positions=s.n_positions, max_sequences=s.max_sentences)
    return opts, corpus_geometry_of(settings, opts).tokens


def padded_batch(tokens) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ids (pad 0) and the 1/0 attention mask of a tokenised corpus, each (N, L)."""
    ids = tokens.padded(pad_id=0)
    mask = (np.arange(ids.shape[1])[None, :] < tokens.lengths[:, None]).astype(np.int64)
    return ids, mask


@dataclass
class LayerMeans:
    """Sums of each layer's input over the sentences reaching each position, and the mean attention maps.

    ``sums`` (n_layers + 1, L, d), ``reach`` (L,), ``maps`` (n_layers, K, K) (averaged), ``map_count``.
    """

    sums: np.ndarray
    reach: np.ndarray
    maps: np.ndarray
    map_count: int


def collect_layer_means(model, tokens, *, batch_size: int, map_positions: int) -> LayerMeans:
    """:func:`layer_inputs` over a whole tokenised corpus, in batches of similar lengths (each cut to its
    longest sequence, so padding costs nothing), accumulated into sums."""
    from ..progress import tqdm

    ids, mask = padded_batch(tokens)
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


def projected_stress(D, inputs, qk, n_heads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-head and pooled projected stress of each layer against $D$ (module docstring).

    Parameters
    ----------
    D : ndarray of shape (n, n)
    inputs : sequence of ndarray of shape (n, d)
        The positional input of each layer.
    qk : sequence of tuples ``(W_Q, b_Q, W_K, b_K)``
        Each layer's query/key projection (``SelfAttention.query_key_weights`` of :mod:`posgeom.models.encoder`).
    n_heads : int

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
            per_head[li, h] = [geo.stress(D, Dh, z, as_distances=True) for z in NORMALIZATIONS]
        # pooled: dhat^2 = sum_h dhat_h^2
        pooled[li] = [geo.stress(D, np.sqrt(sq), z, as_distances=True) for z in NORMALIZATIONS]
        _, clipped[li] = kernel_distances(G.sum(0), return_clipped=True)
    return per_head, pooled, clipped


def peak_layers(curves: dict[str, np.ndarray]) -> dict[str, int]:
    """The layer (counted from 1) of the global maximum of each curve, per normalisation:
    ``{"<name>_<norm>": layer}`` for curves of shape (n_layers, 2)."""
    return {f"{name}_{z}": int(np.argmax(c[:, zi]) + 1) for name, c in curves.items()
            for zi, z in enumerate(NORMALIZATIONS)}


def layer_stress(model, means: LayerMeans, D_target, target_positions, min_reach: int) -> tuple[dict, dict]:
    """Projected stress of every layer under the three definitions (the values and arrays of :func:`run_layer_stress`,
    without the options); positions kept are reached by ``min_reach`` sentences and present in the target."""
    H, n_layers = model.config.n_heads, len(model.layers)
    pos = np.intersect1d(np.flatnonzero(means.reach >= min_reach), target_positions)
    if pos.size < 3:
        raise ValueError(f"only {pos.size} positions are reached by min_reach={min_reach} sentences")
    idx = np.searchsorted(target_positions, pos)
    D = np.asarray(D_target)[np.ix_(idx, idx)]
    X = means.sums[:, pos, :] / means.reach[pos][None, :, None]       # (n_layers + 1, n, d)
    qk = [block.attn.query_key_weights() for block in model.layers]
    out, clipped = {}, np.zeros((2, n_layers))
    for di, (name, Xs) in enumerate((("propagated", X[:n_layers]), ("static", [static_positions(model, pos)] * n_layers))):
        out[f"{name}_head"], out[f"{name}_pooled"], clipped[di] = projected_stress(D, Xs, qk, H)
    residual = np.array([[geo.stress(D, geo.euclidean_distances(X[li]), z, as_distances=True)
                          for z in NORMALIZATIONS] for li in range(n_layers + 1)])
    peaks = peak_layers({"propagated": out["propagated_pooled"], "static": out["static_pooled"], "residual": residual})
    values = {"n_layers": n_layers, "n_heads": H, "d_model": model.config.d_model, "n_positions": int(pos.size),
              "positions": [int(pos[0]), int(pos[-1])], "map_count": int(means.map_count), "peaks": peaks,
              "paper_peak_layer": PAPER_PEAK_LAYER, "clipped_max": float(clipped.max())}
    arrays = {**out, "residual": residual, "clipped": clipped, "maps": means.maps, "positions": pos,
              "reach": means.reach[pos], "D": D}
    return values, arrays


def _with_overrides(cfg: InsideBertSettings, overrides: dict) -> InsideBertSettings:
    unknown = set(overrides) - {f.name for f in dataclasses.fields(cfg)}
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)}; valid options are {sorted(as_params(cfg))}")
    if isinstance(overrides.get("sentences"), dict):
        overrides = {**overrides, "sentences": dataclasses.replace(cfg.sentences, **overrides["sentences"])}
    return dataclasses.replace(cfg, **overrides)


def run_layer_stress(settings: Settings | None = None, *, force: bool = False, **overrides) -> Result:
    """Per-layer, per-head projected stress of the pretrained model, under the three definitions.

    The sentences (:func:`sentence_tokens`) go through the model (:func:`load_model`,
    :func:`collect_layer_means`) and :func:`layer_stress` reads the layers against the target geometry.

    Parameters
    ----------
    settings : Settings, optional
    force : bool
    **overrides
        Fields of :class:`InsideBertSettings` (``min_reach``, ``map_positions``, ``batch_size``,
        ``sentences``, ``target``: corpus options of the target geometry).

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
    from .real_corpora import run_corpus_geometry

    settings = _settings(settings)
    cfg = _with_overrides(CONFIGS[settings.scale], overrides)
    target = run_corpus_geometry(settings, corpus=cfg.sentences.corpus, **cfg.target)
    params = {"config": as_params(cfg), "pretrained": settings.pretrained, "target": target.key,
              "data": target.values["source"]}

    def compute():
        opts, tokens = sentence_tokens(settings, cfg.sentences)
        model = load_model(settings)
        means = collect_layer_means(model, tokens, batch_size=int(cfg.batch_size), map_positions=cfg.map_positions)
        values, arrays = layer_stress(model, means, target.arrays["D"], target.arrays["positions"], cfg.min_reach)
        return {"model": settings.pretrained, **values, "n_sentences": int(tokens.lengths.size), "options": opts}, arrays

    return Registry(settings.results_dir).run(
        "inside_bert_layers", compute, params=params, scale=settings.scale, seed=settings.seed,
        device=resolve_device(settings.device), model=settings.pretrained, force=force,
    )


def paper_results(settings: Settings | None = None) -> list[Result]:
    """Every ``paper``-scale result of this chapter held by the registry (any code version)."""
    from .real_corpora import paper_results as results_with_prefix

    return results_with_prefix(settings, "inside_bert")


__all__ = [
    "CONFIGS", "InsideBertSettings", "Sentences", "LayerMeans", "DEFINITIONS", "NORMALIZATIONS", "PAPER_PEAK_LAYER",
    "load_model", "layer_inputs", "sentence_tokens", "padded_batch",
    "collect_layer_means", "static_positions", "projected_stress", "peak_layers", "layer_stress", "run_layer_stress",
    "paper_results",
]

