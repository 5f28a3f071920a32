r"""What the chapter "Inside BERT" reports, from its stored runs.

:mod:`posgeom.experiments.inside_bert` stores the attention maps of a pretrained encoder and the stress of each
layer's positional geometry against SST-2's (three definitions, two normalisations);
:mod:`posgeom.experiments.layer_peaks` the resampling test of a local peak. This module reads them typed
(:func:`layer_stress`), builds the chapter's tables, the numbers it glues (:func:`posgeom.notebooks.glue_fields`)
and its "Paper vs this book" row for C10, decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result, code_changed, stored_at_scale
from ..registry.typed import as_record, stored
from ..experiments.inside_bert import CONFIGS, DEFINITIONS, PAPER_PEAK_LAYER, run_layer_stress
from ..experiments.layer_peaks import LOCAL_PEAK, run_local_peak_test
from ..geometry.peaks import NORMALIZATIONS, local_maxima
from ..wording import special_words
from ..report import ComparisonRow
from .real_corpora import CORPUS_LABELS, corpus_caption, PlainText

__all__ = [
    "LayerStress", "layer_stress", "describe", "curve", "c10_curves", "c10_ours", "peak_table", "layer_summary",
    "attention_summary", "peak_test_table", "PeakTestSummary", "peak_test_summary", "comparison_rows",
    "paper_scale_lines", "Captions", "captions",
]


@dataclass(frozen=True)
class LayerStress:
    """A stored ``run_layer_stress``, typed (:func:`posgeom.registry.typed.as_record`): the model, the sentences
    and positions, the global peak layer of each reading (``peaks["<definition>_<normalisation>"]``), the mean
    attention maps (layers, n, n), the projected stress per layer (``propagated_head``: layers × heads ×
    normalisations; ``*_pooled``: layers × normalisations; ``residual``: layer inputs and output ×
    normalisations) and the mass each kernel clipped."""

    model: str
    n_layers: int
    n_heads: int
    d_model: int
    n_sentences: int
    n_positions: int
    split: str = stored("options.split")
    special: str = stored("options.special")
    positions: tuple
    map_count: int
    clipped_max: float
    peaks: dict
    maps: np.ndarray
    propagated_head: np.ndarray
    propagated_pooled: np.ndarray
    static_pooled: np.ndarray
    residual: np.ndarray
    clipped: np.ndarray


def layer_stress(result: Result) -> LayerStress:
    """The typed view of a ``run_layer_stress`` result."""
    return as_record(result, LayerStress)


def describe(layers: LayerStress, settings=None) -> str:
    """One line: the model, the sentences and the positions kept."""
    min_reach = CONFIGS[_settings(settings).scale].min_reach
    return (f"model: {layers.model} ({layers.n_layers} layers, {layers.n_heads} heads, width {layers.d_model}); "
            f"{layers.n_sentences} SST-2 {layers.split} sentences, {special_words(layers.special)}; positions "
            f"{layers.positions[0]}..{layers.positions[1]} ({layers.n_positions} reached by at least {min_reach} sentences)")


def curve(layers: LayerStress, definition: str, normalisation: str) -> np.ndarray:
    """The stress per layer of one reading (the residual stream has one more point: the output)."""
    z = NORMALIZATIONS.index(normalisation)
    return (layers.residual if definition == "residual" else getattr(layers, f"{definition}_pooled"))[:, z]


def peak_table(layers: LayerStress) -> pd.DataFrame:
    """Per definition and normalisation: the global peak layer and the stress of every layer."""
    return pd.DataFrame([{"definition": d, "normalisation": z, "peak layer": layers.peaks[f"{d}_{z}"],
                          "stress per layer": np.round(curve(layers, d, z), 3).tolist()}
                         for d in DEFINITIONS for z in NORMALIZATIONS]).set_index(["definition", "normalisation"])


def layer_summary(layers: LayerStress) -> dict:
    """The model and its readings as the chapter quotes them (glued as ``ib_<name>``): the global peak of each
    reading (``peak_<definition>_<normalisation>``, counted from 1), how many readings peak at the paper's layer 3
    counted from 1 (``n_peak3``, the third layer) and from 0 (``n_peak3_from0``, the fourth, encoder.layer.3), the
    clipping of the kernels, and how much the "scale_free" stress varies across heads and across layers."""
    p = layers.peaks
    return {
        "model_name": PlainText(layers.model), "n_layers": layers.n_layers, "n_heads": layers.n_heads,
        "n_sentences": layers.n_sentences, "n_positions": layers.n_positions, "map_count": layers.map_count,
        **{f"peak_{d}_{z}": p[f"{d}_{z}"] for d in DEFINITIONS for z in NORMALIZATIONS},
        "n_peak3": sum(layer == PAPER_PEAK_LAYER for layer in p.values()),
        "n_peak3_from0": sum(layer == PAPER_PEAK_LAYER + 1 for layer in p.values()), "n_readings": len(p),
        "clipped_max": layers.clipped_max, "n_clipped_layers": int(np.sum(layers.clipped > 1e-6)),
        "n_kept_kernels": int(layers.clipped.size),
        # the mean range over the heads of a layer, against the range of the pooled curve over the layers
        "head_spread": float(np.mean(np.ptp(layers.propagated_head[:, :, 0], axis=1))),
        "layer_spread": float(np.ptp(layers.propagated_pooled[:, 0])),
    }


def attention_summary(layers: LayerStress) -> dict:
    """Where attention goes, from the mean maps (glued as ``ibatt_<name>``): its mass within one position of the
    query in the first and last layer ([CLS], position 0, left out), and the mean attention to [CLS] in the first
    layer and at its largest."""
    maps = layers.maps
    # mass within one position of the query, per layer: sum over |offset| <= 1 of the mean attention
    near = np.array([sum(np.diagonal(m[1:, 1:], offset=o).sum() for o in (-1, 0, 1)) / (m.shape[0] - 1) for m in maps])
    cls_col = maps[:, 1:, 0].mean(axis=1)
    return {"local_first": float(near[0]), "local_last": float(near[-1]), "cls_first": float(cls_col[0]),
            "cls_max": float(cls_col.max()), "cls_max_layer": int(np.argmax(cls_col) + 1)}


def peak_test_table(peak_test: Result) -> pd.DataFrame:
    """The resampling test of a local peak, for the propagated and the residual readings."""
    pt = peak_test.values
    return pd.DataFrame({name: {
        "local maxima (from 1)": ", ".join(map(str, pt[name]["local_maxima"])) or "none",
        f"share of redraws with a local maximum at layer {LOCAL_PEAK}": pt[name]["share_local_peak"],
        f"… at layer {LOCAL_PEAK - 1}": pt[name]["share_local_peak_3"],
        "margin of layer 4 over its neighbours, 5–95%": f"{pt[name]['margin']['p05']:.4f} to {pt[name]['margin']['p95']:.4f}"}
        for name in ("propagated", "residual")}).T


@dataclass(frozen=True)
class PeakTestSummary:
    """The local peak of the propagated reading over redraws of the sentences, read from a
    ``run_local_peak_test`` result (:func:`posgeom.registry.typed.as_record`): how often it sits at layer 4 and
    at layer 3, the redraws used, and the 5–95 % range of layer 4's margin over its neighbours."""

    peak4_share: float = stored("propagated.share_local_peak")
    peak3_share: float = stored("propagated.share_local_peak_3")
    peak_n: int = stored("n_used")
    peak_margin_lo: float = stored("propagated.margin.p05")
    peak_margin_hi: float = stored("propagated.margin.p95")


def peak_test_summary(peak_test: Result) -> PeakTestSummary:
    """The :class:`PeakTestSummary` of a ``run_local_peak_test`` result (glued as ``ibpk_<field>``)."""
    return as_record(peak_test, PeakTestSummary)


def c10_curves(layers: LayerStress) -> dict[str, np.ndarray]:
    """The per-layer curve of every reading, ``{"<definition>_<normalisation>": stress per layer}``: what
    :func:`posgeom.verdicts.c10_layer_peak` reads (``posgeom decide C10`` passes the same)."""
    return {f"{d}_{z}": curve(layers, d, z) for d in DEFINITIONS for z in NORMALIZATIONS}


def c10_ours(layers: LayerStress) -> str:
    """C10's value as the "Paper vs this book" row words it: the global peak layer of each definition and its
    local maxima (the scale-free stress, layers counted from 1, and from 0 one less); ``posgeom decide C10`` prints
    the same."""
    local = {d: local_maxima(curve(layers, d, "scale_free")) for d in DEFINITIONS}
    return ("global peak at layer " + ", ".join(f"{layers.peaks[f'{d}_scale_free']} ({d})" for d in DEFINITIONS)
            + " (scale-free stress, layers counted from 1; counted from 0, each is one less); local maxima at layers "
            + "; ".join(f"{d} {', '.join(map(str, p)) or 'none'}" for d, p in local.items()))


def comparison_rows(layers: LayerStress, peak_test: Result, settings=None) -> list:
    """The chapter's "Paper vs this book" row for C10 (a list of one ``ComparisonRow``), decided by
    :func:`posgeom.verdicts.c10_layer_peak` from every reading's curve (:func:`c10_curves`) under both counts of
    the layers: only the paper's BERT-base can decide it, and the stand-in's stable local peak matches the paper
    only if the paper counts layers from 0."""
    settings = _settings(settings)
    pt = peak_test_summary(peak_test)
    test = (f" (propagated: local maximum at layer {LOCAL_PEAK}, encoder.layer.{LOCAL_PEAK - 1} counted "
            f"from 0, in {pt.peak4_share:.0%} of {pt.peak_n} redraws of the sentences; "
            f"its margin over layers {LOCAL_PEAK - 1} and {LOCAL_PEAK + 1}, 5–95% of the redraws: "
            f"{pt.peak_margin_lo:.4f} to {pt.peak_margin_hi:.4f}; the global "
            "peaks are the point estimates of the same resampling)")
    return [
        ComparisonRow("C10", c10_ours(layers) + test,
                      settings.scale, layers.model, "SST-2 validation sentences; SST-2 train geometry",
                      rules.c10_layer_peak(layers.model, c10_curves(layers), "propagated_scale_free"),
                      options=f"projected stress of the definition above, pooled over heads, n = {layers.n_positions} "
                              f"positions ({layers.n_layers} layers)"),
    ]


def paper_scale_lines(layers: LayerStress, settings=None) -> tuple[list[str], pd.DataFrame | None]:
    """What is stored at paper scale for this chapter: lines to print (the model, whether it is BERT-base,
    whether the code changed since, the local-peak test) and the global peaks beside this scale's (None
    when nothing is stored)."""
    settings = _settings(settings)
    stored = stored_at_scale(run_layer_stress, settings)
    peak = stored_at_scale(run_local_peak_test, settings)
    lines, table = [], None
    if stored is None:
        lines.append(f"{settings.pretrained}: not yet run at paper scale (results/paper/inside_bert_layers)")
    else:
        paper = layer_stress(stored)
        stale = " — STALE: made by code that has changed since" if code_changed(stored.manifest) else ""
        stand_in = "" if paper.n_layers == 12 else (
            f" — NOT BERT-base: paper scale here used {paper.model} ({paper.n_layers} layers), the packaged model, "
            "because this machine has no hub access; its curve cannot decide C10")
        lines.append(f"paper scale, {paper.model}{stand_in}{stale}\n  {stored.provenance()}")
        table = pd.DataFrame({"global peak (from 1)": {k: paper.peaks[k] for k in sorted(paper.peaks)},
                              settings.scale: {k: layers.peaks[k] for k in sorted(paper.peaks)}})
    if peak is not None:
        p = peak_test_summary(peak)
        lines.append(f"paper scale: local maximum at layer {LOCAL_PEAK} in {p.peak4_share:.0%} of {p.peak_n} redraws "
                     f"(margin 5–95%: {p.peak_margin_lo:.4f} to {p.peak_margin_hi:.4f})"
                     + (" — STALE" if code_changed(peak.manifest) else ""))
    return lines, table


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the model, the sentences and the target, from the
    settings in force (glued as ``ibcap_<field>``), so that a caption is right at both scales."""

    scale: str
    model: str            # the pretrained model configured (the printed name is the one loaded)
    map_positions: int    # the window of the attention maps
    last_map_position: int
    sentences: str        # the sentences fed to the model
    target: str           # the target geometry and the positions kept
    special: str          # how the special tokens were counted, in words ("the model's special tokens")
    peak_groups: int      # the test of the local peak (run_local_peak_test's groups and redraws, at both
    peak_redraws: int     # scales), for the "What this chapter needs" box
    quick_batch: int      # sentences per forward pass at each scale, for the box
    paper_batch: int


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.inside_bert.CONFIGS`;
    the target is SST-2 train as the chapter "Real corpora" counts it; the chapter runs the local-peak test with
    :func:`~posgeom.experiments.layer_peaks.run_local_peak_test`'s defaults at both scales)."""
    settings = _settings(settings)
    conf, peak_test = CONFIGS[settings.scale], inspect.signature(run_local_peak_test).parameters
    sent = conf.sentences
    return Captions(
        scale=settings.scale, model=str(settings.pretrained), map_positions=int(conf.map_positions),
        last_map_position=int(conf.map_positions) - 1, sentences=f"{CORPUS_LABELS[sent.corpus]} {sent.split}",
        target=(f"{corpus_caption(settings.scale, sent.corpus)} restricted to the positions reached by "
                f"{conf.min_reach} {sent.split} sentences"),
        special=special_words(sent.special), peak_groups=int(peak_test["n_groups"].default),
        peak_redraws=int(peak_test["n_boot"].default),
        quick_batch=int(CONFIGS["quick"].batch_size), paper_batch=int(CONFIGS["paper"].batch_size))

