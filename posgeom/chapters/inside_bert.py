r"""What the chapter "Inside BERT" reports, from its stored runs.

:mod:`posgeom.experiments.inside_bert` stores the attention maps of a pretrained encoder and the stress of
each layer's positional geometry against SST-2's under three definitions and two normalisations;
:mod:`posgeom.experiments.layer_peaks` the resampling test of a local peak. This module reads them back as a
typed record (:func:`layer_stress`), builds the chapter's tables, gives the numbers the chapter quotes as one
summary per section (glued by :func:`posgeom.notebooks.glue_fields`), and its "Paper vs this book" row for
C10, decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

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
    "LayerStress", "layer_stress", "describe", "curve", "c10_curves", "peak_table", "LayerSummary", "layer_summary",
    "AttentionSummary", "attention_summary", "peak_test_table", "PeakTestSummary", "peak_test_summary",
    "comparison_rows", "paper_scale_lines", "Captions", "captions",
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


@dataclass(frozen=True)
class LayerSummary:
    """The model and its readings: the global peak of each (``peak_<definition>_<normalisation>``, counted from
    1), how many readings peak at the paper's layer 3 counted from 1 and counted from 0, the clipping of the kernels, and how much the stress varies across
    heads and across layers ("scale_free")."""

    model_name: PlainText
    n_layers: int
    n_heads: int
    n_sentences: int
    n_positions: int
    map_count: int
    peak_propagated_scale_free: int
    peak_propagated_paper: int
    peak_static_scale_free: int
    peak_static_paper: int
    peak_residual_scale_free: int
    peak_residual_paper: int
    n_peak3: int               # readings whose global peak is the paper's layer 3 counted from 1 (the third layer)
    n_peak3_from0: int         # ... counted from 0 (the fourth layer, encoder.layer.3)
    n_readings: int
    clipped_max: float
    n_clipped_layers: int
    n_kept_kernels: int
    head_spread: float
    layer_spread: float


def layer_summary(layers: LayerStress) -> LayerSummary:
    """The :class:`LayerSummary` of a :class:`LayerStress`."""
    p = layers.peaks
    return LayerSummary(
        model_name=PlainText(layers.model), n_layers=layers.n_layers, n_heads=layers.n_heads,
        n_sentences=layers.n_sentences, n_positions=layers.n_positions, map_count=layers.map_count,
        **{f"peak_{d}_{z}": p[f"{d}_{z}"] for d in DEFINITIONS for z in NORMALIZATIONS},
        n_peak3=sum(layer == PAPER_PEAK_LAYER for layer in p.values()),
        n_peak3_from0=sum(layer == PAPER_PEAK_LAYER + 1 for layer in p.values()), n_readings=len(p),
        clipped_max=layers.clipped_max, n_clipped_layers=int(np.sum(layers.clipped > 1e-6)),
        n_kept_kernels=int(layers.clipped.size),
        head_spread=float(np.mean(np.ptp(layers.propagated_head[:, :, 0], axis=1))),
        layer_spread=float(np.ptp(layers.propagated_pooled[:, 0])),
    )


@dataclass(frozen=True)
class AttentionSummary:
    """Where attention goes: its mass within one position of the query in the first and last layer, and the
    mean attention to [CLS] in the first layer and at its largest."""

    local_first: float
    local_last: float
    cls_first: float
    cls_max: float
    cls_max_layer: int


def attention_summary(layers: LayerStress) -> AttentionSummary:
    """The :class:`AttentionSummary` of the mean attention maps ([CLS], position 0, left out of the local mass)."""
    maps = layers.maps
    # mass within one position of the query, per layer: sum over |offset| <= 1 of the mean attention
    near = np.array([sum(np.diagonal(m[1:, 1:], offset=o).sum() for o in (-1, 0, 1)) / (m.shape[0] - 1) for m in maps])
    cls_col = maps[:, 1:, 0].mean(axis=1)
    return AttentionSummary(local_first=float(near[0]), local_last=float(near[-1]), cls_first=float(cls_col[0]),
                            cls_max=float(cls_col.max()), cls_max_layer=int(np.argmax(cls_col) + 1))


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
    """The :class:`PeakTestSummary` of a ``run_local_peak_test`` result."""
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
    """The chapter's "Paper vs this book" row for C10, decided by :func:`posgeom.verdicts.c10_layer_peak` from
    every reading's per-layer curve (:func:`c10_curves`), read under both counts of the layers: the paper's
    model is BERT-base, so any other model (the 6-layer stand-in) cannot decide the claim; the stand-in's
    stable local peak matches the paper only if the paper counts layers from 0.

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """

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
    the target is SST-2 train as the chapter "Real corpora" counts it)."""

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    sent = conf.sentences
    return Captions(
        scale=settings.scale, model=str(settings.pretrained), map_positions=int(conf.map_positions),
        last_map_position=int(conf.map_positions) - 1, sentences=f"{CORPUS_LABELS[sent.corpus]} {sent.split}",
        target=(f"{corpus_caption(settings.scale, sent.corpus)} restricted to the positions reached by "
                f"{conf.min_reach} {sent.split} sentences"),
        special=special_words(sent.special), peak_groups=_peak_default("n_groups"), peak_redraws=_peak_default("n_boot"),
        quick_batch=int(CONFIGS["quick"].batch_size), paper_batch=int(CONFIGS["paper"].batch_size))


def _peak_default(name: str) -> int:
    """A default of :func:`posgeom.experiments.layer_peaks.run_local_peak_test` (the chapter calls it with
    its defaults at both scales: its groups and redraws are not in ``CONFIGS``)."""
    import inspect

    return int(inspect.signature(run_local_peak_test).parameters[name].default)
