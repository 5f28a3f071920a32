r"""Inside BERT: the positional geometry each layer's attention sees (claim C10, chapter *Inside BERT*).

The paper's "projected stress" peaks at layer 3, but the projection is not defined; this module defines two.
``"propagated"``: the positional part of layer $\ell$'s input, $m_\ell(i)$, the mean over the sentences
that reach $i$, enters head $h$'s logits as
$G^{h}_{\ell} = (m_\ell W_Q^h + b_Q^h)(m_\ell W_K^h + b_K^h)^\top / \sqrt{d_h}$ ($n \times n$).
``"static"``: the same with $m_\ell$ replaced at every layer by the table as it enters the model,
$\mathrm{LN}(p_i + t_0)$. A logit matrix is a similarity, $S = \tfrac12 (G + G^\top)$, and induces
$\hat d_{ij}^2 = S_{ii} + S_{jj} - 2 S_{ij}$ (negative values clipped, their mass reported:
:func:`posgeom.geometry.kernel_distances`); a layer's pooled distance sums its heads' squares. A third,
table-free reading, ``"residual"``, uses the Euclidean distances of the rows of $m_\ell$. Each is scored
against SST-2's Hellinger geometry, mainly under ``"scale_free"`` (logits have no natural unit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np

from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..geometry.peaks import NORMALIZATIONS, peak_layers, projected_stress
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..registry.typed import build, stored
from .real_corpora_geometry import RecordedOptions
from .settings import as_params, by_scale, store_result

if TYPE_CHECKING:
    from ..models.layers import LayerMeans


class Definition(StrEnum):
    """A definition of a layer's projected stress (module docstring); a member equals its text."""

    PROPAGATED = "propagated"
    STATIC = "static"
    RESIDUAL = "residual"


#: The definitions, in the order the chapter shows them.
DEFINITIONS = tuple(Definition)
#: The layer at which the paper places the peak (claim C10), counted from 1.
PAPER_PEAK_LAYER = 3


@dataclass(frozen=True)
class Sentences:
    """The sentences fed to the model (the target $D$ comes from the chapter "Real corpora")."""

    corpus: str = "sst2"
    split: str = "validation"
    max_sentences: int | None = None
    special: str = "model"
    n_positions: int = 64


@dataclass(frozen=True)
class InsideBertSettings:
    """Options of the chapter *Inside BERT* (defaults: ``quick``).

    ``target``: corpus options of the target geometry (empty: its defaults); ``min_reach``: kept positions are
    reached by at least that many sentences; ``map_positions``: the window of the attention maps.
    """

    sentences: Sentences = field(default_factory=Sentences)
    target: dict = field(default_factory=dict)
    min_reach: int = 50
    map_positions: int = 24
    batch_size: int = 32


CONFIGS = by_scale(InsideBertSettings(), batch_size=128)


# The model and its layers


def sentence_tokens(settings: Settings, sentences: Sentences):
    """``(options, tokens)`` of the sentences fed to the model, through the chapter *Real corpora*'s one route."""
    from .real_corpora import corpus_geometry_of, corpus_options, corpus_params
    s = sentences
    opts = corpus_options(settings.scale, s.corpus, split=s.split, special=s.special,
                          n_positions=s.n_positions, max_sequences=s.max_sentences)
    return corpus_params(opts), corpus_geometry_of(settings, opts).tokens


def layer_stress(model, means: LayerMeans, D_target, target_positions, min_reach: int) -> tuple[dict, dict]:
    """Projected stress of every layer under the three definitions (values and arrays of :func:`run_layer_stress`)."""
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
    inputs = {Definition.PROPAGATED: X[:n_layers], Definition.STATIC: [static_positions(model, pos)] * n_layers}
    for di, (name, Xs) in enumerate(inputs.items()):
        out[f"{name}_head"], out[f"{name}_pooled"], clipped[di] = projected_stress(D, Xs, qk, H)
    residual = np.array([[geo.stress(D, geo.euclidean_distances(X[li]), z, as_distances=True)
                          for z in NORMALIZATIONS] for li in range(n_layers + 1)])
    curves = {**{name: out[f"{name}_pooled"] for name in inputs}, Definition.RESIDUAL: residual}
    values = {"n_layers": n_layers, "n_heads": H, "d_model": model.config.d_model, "n_positions": int(pos.size),
              "positions": [int(pos[0]), int(pos[-1])], "map_count": int(means.map_count), "peaks": peak_layers(curves),
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


@dataclass(frozen=True)
class StoredLayerStress:
    """A stored ``run_layer_stress``: the projected stress of every layer under the three definitions.

    ``peaks[definition][normalisation]`` is the layer (from 1) where that reading's curve peaks. The arrays' last
    axis is the normalisation (:data:`~posgeom.geometry.peaks.NORMALIZATIONS`: ``scale_free``, ``paper``).
    """

    model: str
    n_layers: int
    n_heads: int
    d_model: int
    n_sentences: int
    n_positions: int                # positions kept
    position_range: list[int] = stored("positions")  # the first and last position kept
    map_count: int                  # sentences averaged into the attention maps
    peaks: dict[Definition, dict[StressNormalization, int]]
    paper_peak_layer: int
    clipped_max: float              # the largest clipped mass of the kernel distances
    options: RecordedOptions
    propagated_head: np.ndarray     # (n_layers, H, 2)
    static_head: np.ndarray         # (n_layers, H, 2)
    propagated_pooled: np.ndarray   # (n_layers, 2)
    static_pooled: np.ndarray       # (n_layers, 2)
    residual: np.ndarray            # (n_layers + 1, 2)
    clipped: np.ndarray             # (2, n_layers): propagated, static
    maps: np.ndarray                # (n_layers, K, K)
    positions: np.ndarray           # (n,)
    reach: np.ndarray               # (n,)
    D: np.ndarray                   # (n, n) the target geometry at the positions kept


def run_layer_stress(settings: Settings | None = None, *, force: bool = False, **overrides) -> Result:
    """Per-layer, per-head projected stress of the pretrained model, under the three definitions, stored.

    ``overrides`` are fields of :class:`InsideBertSettings`. The record: :class:`StoredLayerStress`.
    """
    from .real_corpora import run_corpus_geometry
    settings = _settings(settings)
    cfg = _with_overrides(CONFIGS[settings.scale], overrides)
    target = run_corpus_geometry(settings, corpus=cfg.sentences.corpus, **cfg.target)
    params = {"config": as_params(cfg), "pretrained": settings.pretrained, "target": target.key,
              "data": target.values["source"]}

    def compute() -> StoredLayerStress:
        from ..models.layers import collect_layer_means
        from ..models.pretrained import load_eval_encoder
        opts, tokens = sentence_tokens(settings, cfg.sentences)
        model = load_eval_encoder(settings.pretrained, settings.device)
        means = collect_layer_means(model, tokens, batch_size=int(cfg.batch_size), map_positions=cfg.map_positions)
        values, arrays = layer_stress(model, means, target.arrays["D"], target.arrays["positions"], cfg.min_reach)
        return build(StoredLayerStress, values, arrays, model=settings.pretrained,
                     n_sentences=int(tokens.lengths.size), options=RecordedOptions.of(opts))

    return store_result(settings, "inside_bert_layers", compute, params, force, device=resolve_device(settings.device),
                        model=settings.pretrained)


__all__ = [
    "CONFIGS", "InsideBertSettings", "Sentences", "Definition", "DEFINITIONS", "PAPER_PEAK_LAYER", "sentence_tokens",
    "layer_stress", "StoredLayerStress", "run_layer_stress",
]
