r"""Encodings by name: :data:`ENCODINGS` and :func:`encoding_distances` (one encoding, any options),
:func:`encoding_set` (the fixed encodings the chapters compare, at one model shape), and the comparison of
every encoding with a corpus's distances (:func:`comparison_set`, :func:`comparison_for`,
:func:`comparison_intervals`, in the order of :data:`ENCODINGS_COMPARED`)."""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from ..geometry import (
    STRESS_BOUNDS, classical_mds, encoding_stresses, euclidean_distances, hellinger_matrix, nested_intervals,
    positional_counts, positional_marginals, sequence_intervals,
)
from ..geometry.stress import REPORTED_NORMALIZATIONS, StressNormalization
from ..validation import check_choice, check_choices, check_positive_int
from .fixed import (
    alibi_distances, alibi_slopes, mds_distances, none_distances, random_distances, rope_distances,
    sinusoidal_distances, table_distances,
)
from .identifiers import Encoding
from .references import alibi_kernel_distances, equidistant_distances

# The fixed encodings at one model shape

#: What :func:`encoding_set` can compute, in the order the chapters show them.
ENCODING_SET_NAMES = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI, Encoding.ALIBI_KERNEL_RULE,
                      Encoding.EQUIDISTANT, Encoding.RANDOM, Encoding.NONE)
#: The default set: the fixed encodings the paper compares (sinusoidal, RoPE, ALiBi, none) and a learned table at initialisation.
DEFAULT_ENCODING_SET = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI, Encoding.RANDOM, Encoding.NONE)


def encoding_set(positions, *, d_model: int, n_heads: int, names=DEFAULT_ENCODING_SET, base: float = 10000.0,
                 layout: str = "interleaved", sigma: float = 0.02, seed: int | None = 0) -> dict[str, np.ndarray]:
    r"""The distance matrices $\hat D$ of the fixed encodings at one model shape, over given positions.

    A gapped ``positions`` is computed over $0 \dots \max(\text{positions})$, then restricted (true offsets).

    Parameters
    ----------
    positions : int or array-like of int, shape (m,)
        ``n`` for positions $0 \dots n-1$, or increasing position indices.
    d_model, n_heads : int
        The width of ``sinusoidal`` (even) and ``random``; ``rope`` uses $d_{head} = $ ``d_model / n_heads``;
        ``alibi`` the mean slope $\bar m$ over the heads.
    names : sequence of str
        From :data:`ENCODING_SET_NAMES` (default :data:`DEFAULT_ENCODING_SET`).
    base, layout, sigma, seed :
        The frequency base of ``sinusoidal`` and ``rope``; ``sinusoidal``'s layout; ``random``'s
        $\mathcal N(0, \sigma^2)$ table drawn with ``seed``.

    Returns
    -------
    dict of str to ndarray of shape (m, m)
        In the order of ``names``.
    """
    names = check_choices(names, "encoding", ENCODING_SET_NAMES, plural="encodings")
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        n, keep = check_positive_int(positions, "positions"), None
    else:
        keep = np.asarray(positions)
        if keep.ndim != 1 or keep.size == 0 or not np.issubdtype(keep.dtype, np.integer) or keep.min() < 0 \
                or np.any(np.diff(keep) <= 0):
            raise ValueError("positions must be an int n or a non-empty increasing 1-D array of position indices")
        n = int(keep.max()) + 1
    members = {
        Encoding.SINUSOIDAL: lambda: sinusoidal_distances(n, d_model, base=base, layout=layout),
        Encoding.ROPE: lambda: _rope(n, d=d_model, n_heads=n_heads, base=base),
        Encoding.ALIBI: lambda: alibi_distances(n, n_heads),
        Encoding.ALIBI_KERNEL_RULE: lambda: alibi_kernel_distances(n, n_heads),
        Encoding.EQUIDISTANT: lambda: equidistant_distances(n),
        Encoding.RANDOM: lambda: random_distances(n, d_model, sigma=sigma, seed=seed),
        Encoding.NONE: lambda: none_distances(n),
    }
    out = {}
    for name in names:
        D = members[name]()
        out[name] = D if keep is None else D[np.ix_(keep, keep)]
    return out


def describe_encoding(name: str, *, d_model: int, n_heads: int, base: float = 10000.0, layout: str = "interleaved",
                      sigma: float = 0.02, seed: int | None = 0) -> str:
    """One line saying which options :func:`encoding_set` used for ``name`` (shown beside its stress).

    Parameters
    ----------
    name : str
        One of :data:`ENCODING_SET_NAMES`.

    Returns
    -------
    str
        E.g. ``"d=64, base=10000, interleaved"`` for ``"sinusoidal"``.
    """
    d, H = d_model, n_heads
    lines = {
        Encoding.SINUSOIDAL: f"d={d}, base={base:g}, {layout}",
        Encoding.ROPE: f"d_head={d // H}, base={base:g}, per unit vector",
        Encoding.ALIBI: f"H={H}, mean slope {alibi_slopes(H).mean():.4g}",
        Encoding.ALIBI_KERNEL_RULE: f"H={H}, sqrt(2 mbar |i-j|)",
        Encoding.EQUIDISTANT: "one-hot rows: every distance sqrt(2)",
        Encoding.RANDOM: f"N(0, {sigma:g}^2), d={d}, seed={seed}",
        Encoding.NONE: "all distances 0",
    }
    return lines[check_choice(name, "encoding", ENCODING_SET_NAMES, plural="names")]


# Registry and dispatcher


def _sinusoidal(n, *, d, n_heads=None, base=10000.0, layout="interleaved"):
    return sinusoidal_distances(n, d, base=base, layout=layout)


def _rope(n, *, d, n_heads, base=10000.0, d_head=None):
    if d_head is None:
        if n_heads is None:
            raise ValueError("rope needs d_head, or d and n_heads (d_head = d / n_heads)")
        if d % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d={d}; rope needs d_head = d / n_heads")
        d_head = d // n_heads
    return rope_distances(n, d_head, base=base)


def _alibi(n, *, d=None, n_heads, head=None):
    if n_heads is None:
        raise ValueError("alibi needs n_heads")
    return alibi_distances(n, n_heads, head=head)


def _none(n, *, d=None, n_heads=None):
    return none_distances(n)


def _random(n, *, d, n_heads=None, sigma=0.02, seed=0):
    return random_distances(n, d, sigma=sigma, seed=seed)


def _table(n, *, d=None, n_heads=None, table):
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] < n:
        raise ValueError(
            f"the table has shape {table.shape}; it needs at least n={n} rows (N_max wall: "
            "a table has no vector for positions at or beyond its size)"
        )
    return table_distances(table[:n])


def _mds(n, *, d=None, n_heads=None, target, k=None):
    target = np.asarray(target)
    if target.shape != (n, n):
        raise ValueError(f"mds needs target=, the (n, n) = ({n}, {n}) distances to embed; got shape {target.shape}")
    return mds_distances(target, k)


#: name → ``f(n, *, d, n_heads, **options) -> (n, n)``. Add a new encoding here.
ENCODINGS: dict[str, Callable[..., np.ndarray]] = {
    Encoding.SINUSOIDAL: _sinusoidal,
    Encoding.ROPE: _rope,
    Encoding.ALIBI: _alibi,
    Encoding.NONE: _none,
    Encoding.RANDOM: _random,
    Encoding.TABLE: _table,
    Encoding.MDS: _mds,
}


def encoding_distances(name: str, n: int, d: int | None = None, n_heads: int | None = None, **options) -> np.ndarray:
    """The ``n × n`` distance matrix of the encoding called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`ENCODINGS`: ``"sinusoidal"`` (options ``base``, ``layout``), ``"rope"``
        (``base``, ``d_head``; default ``d // n_heads``), ``"alibi"`` (``head``), ``"none"``,
        ``"random"`` (``sigma``, ``seed``), ``"table"`` (``table``, an ``(N, k)`` array, ``N ≥ n``),
        ``"mds"`` (``target``, the ``(n, n)`` distances to embed; ``k``, the rank).
    n, d, n_heads : int
        Positions; model width and number of heads, where the encoding needs them.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    check_choice(name, "encoding", ENCODINGS)
    if name in (Encoding.SINUSOIDAL, Encoding.RANDOM, Encoding.ROPE) and d is None and options.get("d_head") is None:
        raise ValueError(f"encoding {name!r} needs the width d")
    fn = ENCODINGS[name]
    try:  # check the options against the signature only: a TypeError raised inside fn is not rewritten
        inspect.signature(fn).bind(n, d=d, n_heads=n_heads, **options)
    except TypeError as err:
        raise ValueError(f"bad options {sorted(options)} for encoding {name!r}: {err}") from None
    return fn(n, d=d, n_heads=n_heads, **options)


# Every encoding compared with a corpus's distances

#: The encodings of the comparison table (:func:`comparison_set`), in display order.
ENCODINGS_COMPARED = (Encoding.MDS, Encoding.MDS_RANK3, Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI,
                      Encoding.RANDOM, Encoding.LEARNED, Encoding.NONE)


def mds_width_distances(D, d_model: int) -> dict[str, np.ndarray]:
    """Distances of classical MDS of ``D`` at full rank (capped at the width ``d_model``) and at rank 3.

    Returns
    -------
    dict
        ``"mds"`` and ``"mds_rank3"``, each an ndarray of shape (n, n).
    """
    full = classical_mds(D)
    # MDS at full rank is limited by the model width d (rank(B) <= n - 1 may exceed d)
    k_full = min(full.k, check_positive_int(d_model, "d_model"))
    return {Encoding.MDS: euclidean_distances(full.embedding[:, :k_full]),
            Encoding.MDS_RANK3: euclidean_distances(full.embedding[:, :3])}


def comparison_set(D, positions, *, d_model: int, n_heads: int, seed, learned_table=None) -> dict[str, np.ndarray]:
    """The distance matrices of :data:`ENCODINGS_COMPARED` for ``D`` (``"learned"`` only with a learned table).

    Parameters
    ----------
    D, positions :
        The corpus's distances (m, m) between its kept ``positions`` (m,) (as :func:`encoding_set`).
    d_model, n_heads, seed :
        The model shape of the fixed encodings and the seed of the random table (:func:`encoding_set`).
    learned_table : ndarray of shape (N, d), optional
        A learned position table; its rows at ``positions`` give ``"learned"``.

    Returns
    -------
    dict of str to ndarray of shape (m, m)
    """
    encs = encoding_set(positions, d_model=d_model, n_heads=n_heads, seed=seed)
    table = {**mds_width_distances(D, d_model), **encs}
    if learned_table is not None:
        table[Encoding.LEARNED] = euclidean_distances(learned_table[np.asarray(positions)])
    return table


def comparison_for(D, positions, *, d_model: int, n_heads: int, seed, learned_table=None) -> dict:
    """``{encoding: {"paper": s, "scale_free": s}}`` of :func:`comparison_set`'s encodings (same arguments) vs D."""
    return encoding_stresses(D, comparison_set(D, positions, d_model=d_model, n_heads=n_heads, seed=seed,
                                               learned_table=learned_table))


def comparison_intervals(sequences, n_positions: int, vocab_size: int, *, d_model: int, n_heads: int,
                         n_boot: int = 200, n_folds: int = 100, level: float = 0.95, seed: int = 0, differences=(),
                         learned_table=None, progress=None, groups=None) -> tuple[dict, np.ndarray]:
    r"""Bootstrap intervals over sequences of :func:`comparison_for` (each replicate refits MDS to its $D^*$).

    Parameters
    ----------
    sequences, n_positions, vocab_size :
        The corpus's token ids, one 1-D int array per sequence, counted as by ``positional_counts``.
    d_model, n_heads :
        The model shape of the fixed encodings (:func:`comparison_set`).
    n_boot, n_folds, level, seed :
        Redraws, folds, confidence level and seed of the bootstrap.
    differences : sequence of (str, str)
        Pairs ``(a, b)`` of encodings whose ``"scale_free"`` difference stress(a) - stress(b) gets an interval.
    learned_table : array-like of shape (n, d), optional
        As :func:`comparison_set`.
    progress, groups :
        As :func:`posgeom.geometry.sequence_intervals` (``groups``: one label per sequence).

    Returns
    -------
    values : dict
        ``statistics`` {encoding: {norm: Interval}}, ``differences`` {a: {b: {"scale_free": Interval}}} for
        ``differences`` (:func:`posgeom.geometry.nested_intervals`), ``n_used``, ``n_kept``.
    replicates : ndarray of shape (n_used, n_statistics)
    """
    marg = positional_marginals(positional_counts(sequences, n_positions, vocab_size))
    D0 = hellinger_matrix(marg)
    positions = marg.positions
    fixed = comparison_set(D0, positions, d_model=d_model, n_heads=n_heads, seed=seed, learned_table=learned_table)
    pairs = [(e, z) for e in ENCODINGS_COMPARED if e in fixed for z in REPORTED_NORMALIZATIONS]

    def statistics(D):
        # MDS is refitted to each replicate's D; the fixed encodings stay fixed
        table = encoding_stresses(D, {**fixed, **mds_width_distances(D, d_model)})
        return np.array([table[e][z] for e, z in pairs])

    sf = StressNormalization.SCALE_FREE
    diffs = {(a, b, sf): ((a, sf), (b, sf)) for a, b in differences if (a, sf) in pairs and (b, sf) in pairs}
    values, reps = sequence_intervals(D0, sequences, n_positions, vocab_size, positions, statistics, pairs,
                                      differences=diffs, n_boot=n_boot, n_folds=n_folds, level=level, seed=seed,
                                      groups=groups, bounds=[STRESS_BOUNDS[z] for _, z in pairs], progress=progress)
    return dict(statistics=nested_intervals(values["statistics"]),
                differences=nested_intervals(values["differences"]), n_used=values["n_used"],
                n_kept=int(positions.size)), reps
