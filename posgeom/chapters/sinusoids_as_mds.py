r"""The chapter "Sinusoids as MDS" (:mod:`posgeom.experiments.sinusoids_as_mds`): typed reads of the Fourier
matches, shift statistics and the stationarity sweep, and the rows for C4."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..geometry import SHIFT_STATISTICS, Interval
from ..registry import Result
from ..registry.typed import as_record
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS
from ..experiments.records.sinusoids_as_mds import FourierCorpus, ShiftIntervals, StoredFourier
from ..experiments.sinusoids_as_mds import CONFIGS, StoredSweep
from ..report import ComparisonRow
from ..wording import describe_scales, describe_sequences
from .corpus_geometry import sst2_caption

__all__ = ["CIRCULANT", "corpora", "shift_interval", "frequency_summary", "NearStationary",
           "near_stationary", "circulant_row", "sinusoidal_table_row", "comparison_rows", "captions"]

#: The circulant corpus of the chapter: the Markov family's population marginals (n = v = 50).
CIRCULANT = "markov (population)"


def corpora(fourier: Result) -> dict[str, FourierCorpus]:
    """Every corpus of a ``run_fourier_match`` result, by name, in the order it measured them."""
    return {name: as_record(fourier, FourierCorpus, at=name) for name in as_record(fourier, StoredFourier).corpora}


def shift_interval(shift: Result, corpus: str, statistic: str) -> Interval:
    """One stored bootstrap interval of ``run_shift_intervals`` (a statistic of :data:`SHIFT_STATISTICS`)."""
    if statistic not in SHIFT_STATISTICS:
        raise ValueError(f"no shift statistic {statistic!r}: run_shift_intervals stores {', '.join(SHIFT_STATISTICS)}")
    interval = getattr(as_record(shift, ShiftIntervals, at=corpus), statistic)
    if interval is None:
        raise KeyError(f"{shift.experiment} stores no {statistic} interval of {corpus}")
    return interval


def frequency_summary(fourier: Result, n_positions: int = 50) -> dict:
    """How many (``slow``) of the sinusoidal table's ``nfreq`` frequencies fall below 2π/n at n = 50."""
    vas, lowest = np.asarray(as_record(fourier, StoredFourier).vaswani_frequencies), 2 * np.pi / n_positions
    return {"slow": int(np.sum(vas < lowest)), "nfreq": int(vas.size), "lowest": float(lowest)}


@dataclass(frozen=True)
class NearStationary:
    """The circulant deviation and Fourier match of each population geometry C4's second row tests."""

    circulant_deviation: dict
    fourier_match: dict


def near_stationary(fourier: Result, sweep: Result) -> NearStationary:
    """The :class:`NearStationary` of ``run_fourier_match`` and ``run_stationarity_sweep``."""
    sw = sweep.as_(StoredSweep)
    points = {**{f"{t:.0%} drift": (dev, fm) for t, dev, fm in zip(sw.t, sw.circulant_deviation, sw.fourier_match)},
              **{name: (v.circulant_deviation, v.fourier_match) for name, v in corpora(fourier).items()
                 if name.endswith("(population)")}}
    return NearStationary({k: dev for k, (dev, _) in points.items()}, {k: fm for k, (_, fm) in points.items()})


def circulant_row(circulant: FourierCorpus, sample_match: Interval, eigenvalue_error: float,
                  settings=None) -> ComparisonRow:
    """C4 on the circulant corpus (:func:`posgeom.verdicts.c4_circulant`)."""
    settings = _settings(settings)
    fm = circulant.fourier_match
    return ComparisonRow(
        "C4", paper="MDS is sinusoidal for stationary statistics",
        ours=(f"circulant corpus: Fourier match {fm:.3f} (population: exact, no sampling interval; sample of "
              f"{CORPUS_CONFIGS[settings.scale].synthetic.n_sequences:,}: {sample_match.text()}, 95% interval over "
              f"sequences); eigenvalues = formula to {eigenvalue_error:.0e}"),
        scale=settings.scale, model="none", corpus="synthetic markov family, n = v = 50", options="chord Hellinger",
        decision=rules.c4_circulant(fm, float(eigenvalue_error)))


def sinusoidal_table_row(circulant: FourierCorpus, f: dict, near: NearStationary, settings=None) -> ComparisonRow:
    """C4 on the sinusoidal table (:func:`posgeom.verdicts.c4_sinusoidal_table`)."""
    # the geometries the rule tests the form on: approximately, not exactly, circulant
    tested = {k: fm for k, fm in near.fourier_match.items()
              if rules.ROUNDING_TOL < near.circulant_deviation[k] <= rules.NEAR_STATIONARY}
    form = (f"Fourier match {min(tested.values()):.3f} to {max(tested.values()):.3f} on the {len(tested)} population "
            f"geometries within {rules.NEAR_STATIONARY} of circulant ({', '.join(tested)})" if tested else
            f"no population geometry within {rules.NEAR_STATIONARY} of circulant but not circulant")
    return ComparisonRow(
        "C4", paper="sinusoids are an approximately optimal encoding",
        ours=(f"near stationarity: {form}. Circulant corpus: optimal frequencies are 2πf/n; the width-50 table has "
              f"{f['slow']} of {f['nfreq']} frequencies below 2π/n; scale-free stress "
              f"{circulant.sinusoidal_scale_free:.4f} (table, 50 columns) vs {circulant.mds_scale_free:.4f} (MDS, 6 "
              "columns); population marginals, exact (no sampling interval)"),
        scale=_settings(settings).scale, model="none",
        corpus="synthetic markov family, n = v = 50; its mixtures with the drift family",
        options="sinusoidal base 10000, interleaved",
        decision=rules.c4_sinusoidal_table(circulant.sinusoidal_scale_free, circulant.mds_scale_free, f["slow"],
                                           f["nfreq"], near.circulant_deviation, near.fourier_match))


def comparison_rows(fourier: Result, shift: Result, sweep: Result, eigenvalue_error: float, settings=None) -> list:
    """The chapter's rows for C4 (:func:`circulant_row`, :func:`sinusoidal_table_row`)."""
    circulant = as_record(fourier, FourierCorpus, at=CIRCULANT)
    return [circulant_row(circulant, shift_interval(shift, "markov", "fourier_match"), eigenvalue_error, settings),
            sinusoidal_table_row(circulant, frequency_summary(fourier), near_stationary(fourier, sweep), settings)]


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``smcap_<key>``), and the box's at both scales."""
    settings = _settings(settings)
    scales = ("quick", "paper")
    return {"scale": settings.scale, "sst2": sst2_caption(settings.scale),
            "redraws": describe_scales(*(f"{CONFIGS[s].intervals.n_boot:,}" for s in scales)),
            "samples": describe_scales(*(describe_sequences(CORPUS_CONFIGS[s].synthetic.n_sequences) for s in scales))}
