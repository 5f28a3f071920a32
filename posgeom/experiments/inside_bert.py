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
from typing import TYPE_CHECKING

import numpy as np

from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..geometry.peaks import NORMALIZATIONS, peak_layers, projected_stress
from ..registry import Result
from .settings import as_params, by_scale, store_result

if TYPE_CHECKING:
    from ..models.layers import LayerMeans

DEFINITIONS = ("propagated", "static", "residual")
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


def sentence_tokens(settings: Settings, sentences: Sentences):
    """The token ids of the sentences fed to the model, through the one route of
    :func:`posgeom.experiments.real_corpora.corpus_geometry_of`; returns ``(options, tokens)``."""
    from .real_corpora import corpus_geometry_of, corpus_options, corpus_params

    s = sentences
    opts = corpus_options(settings.scale, s.corpus, split=s.split, special=s.special,
                          n_positions=s.n_positions, max_sequences=s.max_sentences)
    return corpus_params(opts), corpus_geometry_of(settings, opts).tokens


def layer_stress(model, means: LayerMeans, D_target, target_positions, min_reach: int) -> tuple[dict, dict]:
    """Projected stress of every layer under the three definitions (the values and arrays of :func:`run_layer_stress`,
    without the options); positions kept are reached by ``min_reach`` sentences and present in the target."""
    from ..models.layers import static_positions

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

    The sentences (:func:`sentence_tokens`) go through the model (:func:`posgeom.models.pretrained.load_eval_encoder`,
    :func:`posgeom.models.layers.collect_layer_means`) and :func:`layer_stress` reads the layers against the target geometry.

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
        from ..models.layers import collect_layer_means
        from ..models.pretrained import load_eval_encoder

        opts, tokens = sentence_tokens(settings, cfg.sentences)
        model = load_eval_encoder(settings.pretrained, settings.device)
        means = collect_layer_means(model, tokens, batch_size=int(cfg.batch_size), map_positions=cfg.map_positions)
        values, arrays = layer_stress(model, means, target.arrays["D"], target.arrays["positions"], cfg.min_reach)
        return {"model": settings.pretrained, **values, "n_sentences": int(tokens.lengths.size), "options": opts}, arrays

    return store_result(settings, "inside_bert_layers", compute, params, force, device=resolve_device(settings.device),
                        model=settings.pretrained)


__all__ = [
    "CONFIGS", "InsideBertSettings", "Sentences", "DEFINITIONS", "PAPER_PEAK_LAYER", "sentence_tokens",
    "layer_stress", "run_layer_stress",
]

