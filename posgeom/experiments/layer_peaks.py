r"""Is the local peak of the projected stress at the fourth layer more than a draw of sentences? (claim C10)

The paper puts a peak at "layer 3" without saying whether layers count from 1 or from 0
(``encoder.layer.3``, the fourth block). The sentences behind the positional means are dealt into groups and
resampled; each replicate records whether layer 4 (and layer 3) is still a local maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import Settings, resolve_device, settings_or_default as _settings
from ..geometry.peaks import local_peak_test
from ..registry import Result
from ..registry.typed import build
from . import inside_bert as ib
from . import real_corpora as rc
from .settings import as_params, store_result

__all__ = ["LOCAL_PEAK", "PeakMargin", "PeakCurve", "StoredPeakTest", "run_local_peak_test"]

#: The layer (counted from 1) whose local peak is tested: ``encoder.layer.3`` counted from 0.
LOCAL_PEAK = 4


@dataclass(frozen=True)
class PeakMargin:
    """curve[4] - max(curve[3], curve[5]) of the whole sample, and its 5 % and 95 % percentiles over the redraws."""

    estimate: float
    p05: float
    p95: float


@dataclass(frozen=True)
class PeakCurve:
    """One curve (``propagated`` or ``residual``) of ``run_local_peak_test``; layers from 1.

    The ``_3`` and ``_4`` names are those of ``LOCAL_PEAK`` = 4 and the layer below it.
    """

    point: list[float]              # the curve of the whole sample, per layer
    local_maxima: list[int]
    share_local_peak: float         # of the redraws where LOCAL_PEAK is a local maximum
    share_local_peak_3: float
    share_global_3: float           # of the redraws where layer 3 is the maximum
    share_global_4: float
    margin: PeakMargin


@dataclass(frozen=True)
class StoredPeakTest:
    """A stored ``run_local_peak_test``: both curves and their redraws ``<curve>_replicates`` (n_used, n_layers)."""

    model: str
    n_layers: int
    n_positions: int
    n_used: int                     # redraws reaching every position
    layer: int                      # the layer tested
    propagated: PeakCurve
    residual: PeakCurve
    propagated_replicates: np.ndarray
    residual_replicates: np.ndarray


def run_local_peak_test(settings: Settings | None = None, *, n_groups: int = 24, n_boot: int = 200,
                        force: bool = False) -> Result:
    """Resample the sentences and test the local peak of the layer curves at :data:`LOCAL_PEAK`, stored.

    The record: :class:`StoredPeakTest`.
    """
    settings = _settings(settings)
    cfg = ib.CONFIGS[settings.scale]
    params = {"sentences": as_params(cfg.sentences), "target": cfg.target, "min_reach": cfg.min_reach, "n_groups": int(n_groups),
              "n_boot": int(n_boot), "layer": LOCAL_PEAK, "pretrained": settings.pretrained, "seed": settings.seed}

    def compute() -> StoredPeakTest:
        from ..models.layers import group_means
        from ..models.pretrained import load_eval_encoder
        _, tokens = ib.sentence_tokens(settings, cfg.sentences)
        model = load_eval_encoder(settings.pretrained, settings.device)
        sums, reach = group_means(model, tokens, n_groups, settings.seed)
        target = rc.run_corpus_geometry(settings, corpus=cfg.sentences.corpus, **cfg.target)
        qk = [block.attn.query_key_weights() for block in model.layers]
        values, arrays = local_peak_test(sums, reach, target.arrays["D"], target.arrays["positions"], qk,
                                         model.config.n_heads, layer=LOCAL_PEAK, min_reach=cfg.min_reach,
                                         n_boot=n_boot, seed=settings.seed)
        return build(StoredPeakTest, values, arrays, model=settings.pretrained)

    return store_result(settings, "inside_bert_local_peak", compute, params, force,
                        device=resolve_device(settings.device), model=settings.pretrained)
