r"""The factorisation step of the proof of Theorem 4, measured on real text (chapter "Theorem 4").

The proof replaces $\mathbb E[c_k\, e(t_k)]$ by $\mathbb E[c_k]\,\mathbb E[e(t_k)]$, with $c_k$ the attention
weight from ``[CLS]`` to position $k$ and $e(t_k)$ the word embedding there; placebos shuffle $c$ across
sentences (independent by construction).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..config import settings_or_default as _settings
from ..corpora.real import data_key
from ..registry import Result
from ..registry.typed import build
from .separation import CONFIGS
from .settings import as_params, store_result

__all__ = ["GapMedians", "FactorisationGap", "run_factorisation_gap"]


@dataclass(frozen=True)
class GapMedians:
    """Medians over the kept positions (and pairs of them) of the factorisation gap."""

    relative: float         # of the relative gap per position
    pair_relative: float    # of the relative gap per pair of positions
    pair_cosine: float


@dataclass(frozen=True)
class FactorisationGap:
    """A stored ``run_factorisation_gap``: the real pairing of attention and embeddings against shuffled placebos.

    Arrays: ``real__*`` per kept position (m,) or pair (m (m - 1) / 2,), ``placebo__*`` (n_placebo, ...),
    ``placebo__band95`` (m,) the placebos' 95th percentile, ``mean_c`` (seq_len,) the mean attention weight.
    """

    pretrained: str
    split: str
    n_texts: int
    n_positions: int
    layer: int
    seq_len: int
    positions: list[int]                # the positions kept
    n_placebo: int
    reach: list[int]                    # sentences reaching each position kept
    real: GapMedians
    placebo: GapMedians
    positions_above_placebo_95: int     # positions whose real gap tops the placebos' 95th percentile
    real__positions: np.ndarray
    real__relative: np.ndarray
    real__pair_relative: np.ndarray
    real__pair_cosine: np.ndarray
    placebo__relative: np.ndarray
    placebo__pair_relative: np.ndarray
    placebo__pair_cosine: np.ndarray
    placebo__band95: np.ndarray
    mean_c: np.ndarray


def run_factorisation_gap(settings=None, *, force: bool = False, split: str | None = None,
                          n_positions: int | None = None, layer: int | None = None,
                          min_reach: int | None = None, n_placebo: int = 20) -> Result:
    r"""The independence the proof of Theorem 4 needs, measured on SST-2 with the pretrained model, stored.

    Options default to ``CONFIGS[scale].gap``. The record: :class:`FactorisationGap`.

    Raises
    ------
    posgeom.corpora.real.DataUnavailableError, posgeom.models.pretrained.ModelUnavailableError
        When SST-2 or the pretrained model cannot be found.
    """
    settings = _settings(settings)
    given = dict(split=split, n_positions=n_positions, layer=layer, min_reach=min_reach)
    g = dataclasses.replace(CONFIGS[settings.scale].gap, **{k: v for k, v in given.items() if v is not None})
    params = dict(pretrained=settings.pretrained, **as_params(g), n_placebo=int(n_placebo),
                  data_dir=data_key(settings.data_dir))

    def compute() -> FactorisationGap:
        from ..corpora import load_texts
        from ..models.factorisation import factorisation_study
        from ..models.pretrained import load_hf
        texts = load_texts("sst2", g.split, data_dir=settings.data_dir)
        pm = load_hf(settings.pretrained)
        values, arrays = factorisation_study(pm, texts.texts, n_positions=int(g.n_positions), layer=int(g.layer),
                                             min_reach=int(g.min_reach), n_placebo=int(n_placebo), seed=settings.seed)
        return build(FactorisationGap, values, arrays, split=g.split)

    return store_result(settings, "separation.factorisation_gap", compute, params, force, model=settings.pretrained)
