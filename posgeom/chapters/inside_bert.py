r"""The chapter "Inside BERT" (:mod:`posgeom.experiments.inside_bert`, :mod:`posgeom.experiments.layer_peaks`):
typed reads, the C10 row and the captions."""

from __future__ import annotations

import inspect

import numpy as np

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..experiments.inside_bert import CONFIGS, DEFINITIONS, Definition, StoredLayerStress
from ..experiments.layer_peaks import LOCAL_PEAK, StoredPeakTest, run_local_peak_test
from ..geometry.peaks import NORMALIZATIONS, local_maxima
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..report import ComparisonRow
from ..wording import special_words
from .real_corpora import CORPUS_LABELS, corpus_caption

__all__ = ["layer_facts", "curve", "c10_curves", "c10_ours", "comparison_rows", "captions"]

#: The facts of a stored layer stress that the page glues as ``ib_<name>`` (:func:`layer_facts`).
GLUED_FACTS = ("model", "n_layers", "n_heads", "d_model", "n_sentences", "n_positions", "map_count", "clipped_max")


def layer_facts(layers: StoredLayerStress) -> dict:
    """What the page glues of a layer stress: the model's shape, the sentences, the first and last position kept."""
    return {**{name: getattr(layers, name) for name in GLUED_FACTS}, "split": layers.options.split,
            "special": layers.options.special, "positions": tuple(layers.position_range)}


def curve(layers: StoredLayerStress, definition: str, normalisation: str) -> np.ndarray:
    """The stress per layer of one reading (the residual stream has one more point: the output)."""
    z = NORMALIZATIONS.index(normalisation)
    return (layers.residual if definition == Definition.RESIDUAL else getattr(layers, f"{definition}_pooled"))[:, z]


def c10_curves(layers: StoredLayerStress) -> dict[str, np.ndarray]:
    """Each reading's stress per layer, by the label :func:`posgeom.verdicts.c10_layer_peak` words it with."""
    return {f"{d}_{z}": curve(layers, d, z) for d in DEFINITIONS for z in NORMALIZATIONS}


def c10_ours(layers: StoredLayerStress) -> str:
    """C10's value as its row words it (``posgeom decide C10`` prints the same): each definition's peaks."""
    scale_free = StressNormalization.SCALE_FREE
    local = {d: local_maxima(curve(layers, d, scale_free)) for d in DEFINITIONS}
    return ("global peak at layer " + ", ".join(f"{layers.peaks[d][scale_free]} ({d})" for d in DEFINITIONS)
            + " (scale-free stress, layers counted from 1; counted from 0, each is one less); local maxima at layers "
            + "; ".join(f"{d} {', '.join(map(str, p)) or 'none'}" for d, p in local.items()))


def comparison_rows(layers: StoredLayerStress, peak: Result, settings=None) -> list:
    """C10's row (a list of one), decided by :func:`posgeom.verdicts.c10_layer_peak` from every reading's curve."""
    t = peak.as_(StoredPeakTest)
    p = t.propagated
    test = (f" (propagated: local maximum at layer {LOCAL_PEAK}, encoder.layer.{LOCAL_PEAK - 1} counted from 0, in "
            f"{p.share_local_peak:.0%} of {t.n_used} redraws of the sentences; its margin over layers "
            f"{LOCAL_PEAK - 1} and {LOCAL_PEAK + 1}, 5–95% of the redraws: {p.margin.p05:.4f} to {p.margin.p95:.4f}; "
            "the global peaks are the point estimates of the same resampling)")
    return [ComparisonRow("C10", c10_ours(layers) + test, _settings(settings).scale, layers.model,
                          "SST-2 validation sentences; SST-2 train geometry",
                          rules.c10_layer_peak(layers.model, c10_curves(layers), "propagated_scale_free"),
                          options=f"projected stress of the definition above, pooled over heads, n = "
                                  f"{layers.n_positions} positions ({layers.n_layers} layers)")]


def captions(settings=None) -> dict:
    """The captions' facts at the scale in force (glued as ``ibcap_<key>``), and the box's at both scales."""
    scale = _settings(settings).scale
    conf, peak_options = CONFIGS[scale], inspect.signature(run_local_peak_test).parameters
    sent = conf.sentences
    return {"scale": scale, "model": str(_settings(settings).pretrained), "map_positions": int(conf.map_positions),
            "last_map_position": int(conf.map_positions) - 1, "sentences": f"{CORPUS_LABELS[sent.corpus]} {sent.split}",
            "target": (f"{corpus_caption(scale, sent.corpus)} restricted to the positions reached by "
                       f"{conf.min_reach} {sent.split} sentences"),
            "special": special_words(sent.special), "peak_groups": int(peak_options["n_groups"].default),
            "peak_redraws": int(peak_options["n_boot"].default),
            "quick_batch": int(CONFIGS["quick"].batch_size), "paper_batch": int(CONFIGS["paper"].batch_size)}
