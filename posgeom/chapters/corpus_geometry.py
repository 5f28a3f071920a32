r"""The chapter "The geometry of a corpus" (runs of :mod:`posgeom.experiments.corpus_geometry` and
:mod:`posgeom.experiments.real_corpora`): a synthetic family's excess over its noise floor, the sinusoidal–RoPE
comparison over the preprocessing variants, the C8 row and the captions."""

from __future__ import annotations

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..encodings.identifiers import Encoding
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..experiments.corpus_geometry import CONFIGS, FamilySummary, SensitivityRow, StoredSensitivity
from ..experiments.real_corpora_stress import StressIntervalsRecord
from ..report import ComparisonRow, decided_rows
from ..wording import describe_scales, describe_sequences, special_words

__all__ = ["excess_ratio", "sin_vs_rope", "c8_row", "comparison_rows", "sst2_caption", "captions"]


def excess_ratio(family: FamilySummary) -> float:
    """What sampling adds to a synthetic family's squared distances, over the squared noise floor."""
    return family.excess_sq / family.mean_F_sq


def sin_vs_rope(variants: tuple[SensitivityRow, ...]) -> tuple[float, float]:
    """The largest ``|sinusoidal − RoPE| / RoPE`` (scale-free) and smallest sinusoidal / RoPE ("paper") stress."""
    sin, rope = ([v.stress[e] for v in variants] for e in (Encoding.SINUSOIDAL, Encoding.ROPE))
    sf, paper = StressNormalization.SCALE_FREE, StressNormalization.PAPER
    return (max(abs(s[sf] - r[sf]) / r[sf] for s, r in zip(sin, rope)),
            min(s[paper] / r[paper] for s, r in zip(sin, rope)))


def c8_row(variants: tuple[SensitivityRow, ...], intervals: StressIntervalsRecord, scale: str) -> ComparisonRow:
    """C8 (:func:`posgeom.verdicts.c8_sinusoidal_rope`) from the bootstrap interval and the smallest "paper" ratio."""
    paper = StressNormalization.PAPER
    sin, rope = (intervals.statistics[e][paper] for e in (Encoding.SINUSOIDAL, Encoding.ROPE))
    sin_rope = intervals.differences[Encoding.SINUSOIDAL][Encoding.ROPE][StressNormalization.SCALE_FREE]
    gap, ratio = sin_vs_rope(variants)
    return ComparisonRow(
        "C8", ours=(f"scale-free stress: sinusoidal − RoPE = {sin_rope.text('{:.4f}')} (95% interval over phrases), "
                    f"within {gap:.1%} in every variant; paper: sinusoidal {sin.text('{:.0f}')} vs "
                    f"RoPE {rope.text()}, ≥ {ratio:.0f}× in every variant"),
        scale=scale, model="none (fixed encodings, d = 768, 12 heads)", corpus="SST-2 train",
        options="variants of the sensitivity table", decision=rules.c8_sinusoidal_rope(sin_rope, ratio))


def comparison_rows(sensitivity: Result, intervals: Result, settings=None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" rows (C8) from a ``run_sensitivity`` and a ``run_stress_intervals``."""
    settings = _settings(settings)
    return decided_rows([("C8", lambda: c8_row(sensitivity.as_(StoredSensitivity).variants,
                                                intervals.as_(StressIntervalsRecord), settings.scale))], settings)


def sst2_caption(scale: str) -> str:
    """SST-2's counting at ``scale`` for a caption: ``"n = 64, the model's special tokens"``."""
    return f"n = {CONFIGS[scale].sst2.n_positions}, {special_words(CONFIGS[scale].sst2.special)}"


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``cgcap_<name>``), and the box's at both scales."""
    scale = _settings(settings).scale
    syn, sst2 = CONFIGS[scale].synthetic, CONFIGS[scale].sst2
    return dict(
        scale=scale, n_positions=int(syn.n_positions), vocab_size=int(syn.vocab_size),
        synthetic=f"{syn.n_positions} positions, {syn.vocab_size:,} tokens, {describe_sequences(syn.n_sequences)}",
        # the options in words (docs/STYLE.md, rule 4), not "min_count 1, alpha 0"
        sst2=(f"{sst2_caption(scale)}, positions reached "
              f"{'at least once' if sst2.min_count == 1 else f'{sst2.min_count:,} times or more'}, "
              f"{'no smoothing' if sst2.alpha == 0 else f'smoothing α = {sst2.alpha:g}'}"),
        sst2_texts=describe_sequences(sst2.max_texts, "phrases", random=True), n_rep=int(CONFIGS[scale].noise.n_rep),
        **{f"{s}_sequences": describe_sequences(CONFIGS[s].synthetic.n_sequences) for s in ("quick", "paper")},
        sst2_scales=describe_scales(*(describe_sequences(CONFIGS[s].sst2.max_texts, "phrases", random=True)
                                      for s in ("quick", "paper"))))
