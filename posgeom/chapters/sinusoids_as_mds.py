r"""What the chapter "Sinusoids as MDS" reports, from its stored runs.

The runs of :mod:`posgeom.experiments.sinusoids_as_mds` (how sinusoidal the MDS eigenvectors of each corpus are,
bootstrap intervals of the shift statistics, the sweep from a stationary to a drifting corpus) are read typed;
this module builds the chapter's tables, the numbers it glues per section (:func:`posgeom.notebooks.glue_fields`)
and its "Paper vs this book" rows for C4, each decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..geometry import SHIFT_STATISTICS, Interval
from ..registry import Result, stored_text
from ..registry.typed import as_record
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS
from ..experiments.sinusoids_as_mds import CONFIGS, run_shift_intervals
from ..report import ComparisonRow
from ..wording import describe_scales, describe_sequences
from .corpus_geometry import sst2_caption

__all__ = [
    "CIRCULANT", "fourier_table", "fourier_summary", "shift_interval", "shift_table", "frequency_summary",
    "sweep_summary", "premise_text", "NearStationary", "near_stationary", "comparison_rows", "Eigenvectors",
    "eigenvectors", "sinusoidal_frequencies", "sweep_frame", "Captions", "captions", "FourierCorpus", "StoredFourier",
    "ShiftIntervals", "StoredSweep",
]

#: The circulant corpus of the chapter: the Markov family's population marginals (n = v = 50).
CIRCULANT = "markov (population)"


@dataclass(frozen=True)
class FourierCorpus:
    """One corpus of ``run_fourier_match`` (``as_record(result, FourierCorpus, at=corpus)``): how far its D is from
    Toeplitz and circulant, how sinusoidal its top MDS eigenvectors are (the mean R² of their sinusoid fits, the
    Fourier match), the scale-free stresses of the sinusoidal table and of MDS at the same rank, and the
    eigenvalue share of the top vectors."""

    toeplitz_deviation: float
    circulant_deviation: float
    mean_sinusoid_r2: float
    fourier_match: float
    sinusoidal_scale_free: float
    mds_scale_free: float
    eigenvalue_share: float


@dataclass(frozen=True)
class StoredFourier:
    """A stored ``run_fourier_match``, typed: the corpora it measured (each a :class:`FourierCorpus`), and the
    frequencies of the width-50 sinusoidal table."""

    corpora: tuple[str, ...]
    vaswani_frequencies: tuple[float, ...]


@dataclass(frozen=True)
class ShiftIntervals:
    """One corpus of ``run_shift_intervals`` (``at=corpus``): the bootstrap interval of each shift statistic
    (:data:`posgeom.geometry.SHIFT_STATISTICS`; None where not stored)."""

    toeplitz_deviation: Interval | None = None
    circulant_deviation: Interval | None = None
    fourier_match: Interval | None = None


@dataclass(frozen=True)
class StoredSweep:
    """A stored ``run_stationarity_sweep``, typed: at each mixing weight t (0: the Markov corpus, 1: the drift
    one), the Toeplitz and circulant deviations, the Fourier match, the mean sinusoid R², and the scale-free
    stress of the sinusoidal table and of rank-6 MDS (in the order of the chapter's table); C4's rule reads the
    circulant deviation and the Fourier match along it."""

    t: tuple[float, ...]
    toeplitz_deviation: tuple[float, ...]
    circulant_deviation: tuple[float, ...]
    fourier_match: tuple[float, ...]
    mean_sinusoid_r2: tuple[float, ...]
    sinusoidal_scale_free: tuple[float, ...]
    mds_scale_free: tuple[float, ...]


def fourier_table(fourier: Result) -> pd.DataFrame:
    """Per corpus: how far D is from Toeplitz and circulant, how sinusoidal its top MDS eigenvectors are (mean
    R², Fourier match), the stresses of the sinusoidal table and of MDS at the same rank, and the eigenvalue
    share of the top vectors."""
    return pd.DataFrame([
        {"corpus": name, "Toeplitz deviation": v.toeplitz_deviation, "circulant deviation": v.circulant_deviation,
         "mean R² (top eigenvectors)": v.mean_sinusoid_r2, "Fourier match": v.fourier_match,
         "sinusoidal (scale_free)": v.sinusoidal_scale_free, "MDS same rank (scale_free)": v.mds_scale_free,
         "eigenvalue share of top vectors": v.eigenvalue_share}
        for name, v in _corpora(fourier).items()]).set_index("corpus")


def _corpora(fourier: Result) -> dict[str, FourierCorpus]:
    """Every corpus of a ``run_fourier_match`` result, by name, in the order it measured them."""
    return {name: as_record(fourier, FourierCorpus, at=name) for name in as_record(fourier, StoredFourier).corpora}


def fourier_summary(fourier: Result, settings=None) -> dict:
    """How sinusoidal the MDS eigenvectors are (glued as ``sm_<name>``): the Fourier match (``*_fm``) of the
    circulant Markov corpus (``mk``: population; ``mks``: a sample of ``n_sample`` sequences; ``mkv``: a
    vocabulary larger than n), the drift, regimes and stationary families and SST-2; the mean R² of the sinusoid
    fits (the drift's over its three top eigenvectors); the drift's Toeplitz deviation; and the circulant corpus's
    stresses."""
    c = _corpora(fourier)
    mk, mkv, drift = c[CIRCULANT], c["markov v>n (population)"], c["drift"]
    return {"mk_fm": mk.fourier_match, "mk_sin": mk.sinusoidal_scale_free, "mk_mds": mk.mds_scale_free,
            "mks_fm": c["markov"].fourier_match, "mkv_fm": mkv.fourier_match, "mkv_r2": mkv.mean_sinusoid_r2,
            "dr_fm": drift.fourier_match, "dr_toep": drift.toeplitz_deviation,
            "dr_r2_top3": float(np.mean(eigenvectors(fourier, "drift").sinusoid_r2[:3])),
            "rg_fm": c["regimes"].fourier_match, "st_fm": c["stationary"].fourier_match,
            "sst_fm": c["sst2"].fourier_match,
            "n_sample": f"{CORPUS_CONFIGS[_settings(settings).scale].synthetic.n_sequences:,}"}


def shift_interval(shift: Result, corpus: str, statistic: str) -> Interval:
    """One stored bootstrap interval of ``run_shift_intervals`` (a statistic of :data:`SHIFT_STATISTICS`)."""
    if statistic not in SHIFT_STATISTICS:
        raise ValueError(f"no shift statistic {statistic!r}: run_shift_intervals stores {', '.join(SHIFT_STATISTICS)}")
    interval = getattr(as_record(shift, ShiftIntervals, at=corpus), statistic)
    if interval is None:
        raise KeyError(f"{shift.experiment} stores no {statistic} interval of {corpus}")
    return interval


def shift_table(shift: Result, settings=None) -> pd.DataFrame:
    """The shift statistics of SST-2, the Markov and the drift corpora with their 95 % bootstrap intervals, and
    the Toeplitz deviation at paper scale where stored."""
    settings = _settings(settings)
    corpora = ("sst2", "markov", "drift")
    table = pd.DataFrame({c: {stat: shift_interval(shift, c, stat).text() for stat in SHIFT_STATISTICS}
                          for c in corpora}).T
    table["Toeplitz deviation, paper scale"] = [
        stored_text(run_shift_intervals, settings, lambda r, c=c: shift_interval(r, c, "toeplitz_deviation").text())
        for c in table.index]
    return table


def frequency_summary(fourier: Result, n_positions: int = 50) -> dict:
    """The frequencies of the width-50 sinusoidal table against the lowest frequency 2π/n of a circulant geometry
    on n = 50 positions (glued as ``smf_<name>``): how many (``slow``) of them (``nfreq``) fall below it."""
    vas, lowest = sinusoidal_frequencies(fourier), 2 * np.pi / n_positions
    return {"slow": int(np.sum(vas < lowest)), "nfreq": int(vas.size), "lowest": float(lowest)}


def sweep_summary(sweep: Result) -> dict:
    """The sweep from the Markov corpus (t = 0) to the drift corpus (t = 1), glued as ``smsw_<name>``: the
    sinusoidal table's stress at both ends, and the Fourier match half-way (at ``t_mid``) and at the end."""
    v = as_record(sweep, StoredSweep)
    mid = len(v.t) // 2
    return {"sin0": v.sinusoidal_scale_free[0], "sin1": v.sinusoidal_scale_free[-1], "fm_mid": v.fourier_match[mid],
            "t_mid": float(v.t[mid]), "fm1": v.fourier_match[-1]}


def premise_text(shift: Result, settings=None) -> str:
    """C7's premise (SST-2's statistics approximately shift-equivariant), decided in the chapter on real
    corpora: this chapter's numbers on it, as one line."""
    settings = _settings(settings)
    toep = {c: shift_interval(shift, c, "toeplitz_deviation").text() for c in ("sst2", "drift", "markov")}
    paper = stored_text(run_shift_intervals, settings,
                        lambda r: shift_interval(r, "sst2", "toeplitz_deviation").text())
    return (f"Toeplitz deviation, 95% intervals over sequences: SST-2 {toep['sst2']} (paper scale: {paper}), drift "
            f"corpus {toep['drift']}, Markov sample {toep['markov']}; SST-2 Fourier match "
            f"{shift_interval(shift, 'sst2', 'fourier_match').text()}")


@dataclass(frozen=True)
class NearStationary:
    """The population geometries (statistics without sampling noise) whose sinusoidal form C4's second row tests:
    every point of the sweep from the circulant Markov corpus to the drift (``"<weight> drift"``) and the
    population corpora of ``run_fourier_match``; per geometry, its circulant deviation and the Fourier match of
    its top MDS eigenvectors."""

    circulant_deviation: dict
    fourier_match: dict


def near_stationary(fourier: Result, sweep: Result) -> NearStationary:
    """The :class:`NearStationary` of ``run_fourier_match`` and ``run_stationarity_sweep``."""
    sw = as_record(sweep, StoredSweep)
    points = {**{f"{t:.0%} drift": (dev, fm) for t, dev, fm in zip(sw.t, sw.circulant_deviation, sw.fourier_match)},
              **{name: (v.circulant_deviation, v.fourier_match) for name, v in _corpora(fourier).items()
                 if name.endswith("(population)")}}
    return NearStationary({k: dev for k, (dev, _) in points.items()}, {k: fm for k, (_, fm) in points.items()})


def comparison_rows(fourier: Result, shift: Result, sweep: Result, eigenvalue_error: float, settings=None) -> list:
    """The chapter's "Paper vs this book" rows for C4 (``ComparisonRow``), each decided by its rule in
    :mod:`posgeom.verdicts`, from ``run_fourier_match``, ``run_shift_intervals`` and ``run_stationarity_sweep``;
    ``eigenvalue_error`` is the largest difference between the circulant corpus's MDS eigenvalues and the closed
    form the chapter derives."""
    settings = _settings(settings)
    v = as_record(fourier, FourierCorpus, at=CIRCULANT)
    f = frequency_summary(fourier)
    n_sample = CORPUS_CONFIGS[settings.scale].synthetic.n_sequences
    near = near_stationary(fourier, sweep)
    # the geometries the rule tests the form on: approximately, not exactly, circulant
    tested = {k: fm for k, fm in near.fourier_match.items()
              if rules.ROUNDING_TOL < near.circulant_deviation[k] <= rules.NEAR_STATIONARY}
    form = (f"Fourier match {min(tested.values()):.3f} to {max(tested.values()):.3f} on the {len(tested)} population "
            f"geometries within {rules.NEAR_STATIONARY} of circulant ({', '.join(tested)})" if tested else
            f"no population geometry within {rules.NEAR_STATIONARY} of circulant but not circulant")
    return [
        ComparisonRow("C4", paper="MDS is sinusoidal for stationary statistics",
                      ours=(f"circulant corpus: Fourier match {v.fourier_match:.3f} (population: exact, no sampling "
                            f"interval; sample of {n_sample:,}: {shift_interval(shift, 'markov', 'fourier_match').text()}, "
                            f"95% interval over sequences); eigenvalues = formula to {eigenvalue_error:.0e}"),
                      scale=settings.scale, model="none", corpus="synthetic markov family, n = v = 50",
                      options="chord Hellinger", decision=rules.c4_circulant(v.fourier_match, float(eigenvalue_error))),
        ComparisonRow("C4", paper="sinusoids are an approximately optimal encoding",
                      ours=(f"near stationarity: {form}. Circulant corpus: optimal frequencies are 2πf/n; the "
                            f"width-50 table has {f['slow']} of {f['nfreq']} frequencies below 2π/n; scale-free stress "
                            f"{v.sinusoidal_scale_free:.4f} (table, 50 columns) vs {v.mds_scale_free:.4f} (MDS, "
                            "6 columns); population marginals, exact (no sampling interval)"),
                      scale=settings.scale, model="none",
                      corpus="synthetic markov family, n = v = 50; its mixtures with the drift family",
                      options="sinusoidal base 10000, interleaved",
                      decision=rules.c4_sinusoidal_table(v.sinusoidal_scale_free, v.mds_scale_free, f['slow'], f['nfreq'],
                                                         near.circulant_deviation, near.fourier_match)),
    ]


@dataclass(frozen=True)
class Eigenvectors:
    """One corpus of ``run_fourier_match`` (``as_record(result, Eigenvectors, at=corpus, arrays_at=corpus)``): its
    top MDS eigenvectors (positions × vectors), the R² of the sinusoid fitted to each, and the frequencies of
    those fits (radians per position)."""

    U: np.ndarray
    sinusoid_r2: tuple
    omega: np.ndarray


def eigenvectors(fourier: Result, corpus: str) -> Eigenvectors:
    """The :class:`Eigenvectors` of ``corpus`` (one of the corpora the result measured)."""
    return as_record(fourier, Eigenvectors, at=corpus, arrays_at=corpus)


def sinusoidal_frequencies(fourier: Result) -> np.ndarray:
    """The frequencies of the width-50 sinusoidal table the chapter compares with."""
    return np.asarray(as_record(fourier, StoredFourier).vaswani_frequencies)


def sweep_frame(sweep: Result) -> pd.DataFrame:
    """The stationarity sweep as a table indexed by the mixing weight t (0 = Markov, 1 = drift): Toeplitz and
    circulant deviations, Fourier match, mean sinusoid R², and the "scale_free" stress of the sinusoidal table
    and of rank-6 MDS."""
    sw = as_record(sweep, StoredSweep)
    # every stored statistic but t, in the record's order
    return pd.DataFrame({k: v for k, v in asdict(sw).items() if k != "t"}, index=pd.Index(sw.t, name="t"))


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state, from the settings in force (glued as ``smcap_<field>``),
    so that a caption is right at both scales."""

    scale: str
    sst2: str             # SST-2's positions and special tokens
    redraws: str          # the shift intervals' bootstrap redraws at both scales, for the "What this chapter needs" box
    samples: str          # the synthetic families' samples at both scales, for the box


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (its SST-2 corpus is the one of
    :data:`posgeom.experiments.corpus_geometry.CONFIGS`)."""

    settings = _settings(settings)
    scales = ("quick", "paper")
    return Captions(scale=settings.scale, sst2=sst2_caption(settings.scale),
                    redraws=describe_scales(*(f"{CONFIGS[s].intervals.n_boot:,}" for s in scales)),
                    samples=describe_scales(*(describe_sequences(CORPUS_CONFIGS[s].synthetic.n_sequences)
                                              for s in scales)))
