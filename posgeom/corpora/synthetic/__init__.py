r"""Synthetic corpora with known positional statistics (seeded, documented families).

Each family draws token-id sequences whose *population* positional marginals $\mu_i$
are known in closed form, so that every statistic computed from samples (counts, Hellinger distances,
MDS, effective rank) can be checked against the exact population value. Every family returns a
:class:`SyntheticCorpus` holding the sampled tokens *and* the population marginals; the same marginals
come without sampling from :func:`population_marginals`.

Vocabularies are Zipfian: the base distribution over $v$ tokens is

$$\pi(r) = \frac{(r + 1)^{-s}}{\sum_{q=0}^{v-1} (q + 1)^{-s}}, \qquad r = 0, \dots, v - 1,$$

$r$ the frequency rank of a token and $s$ the ``exponent`` (default 1, Zipf's law). Families that need
several distributions over the same vocabulary give each one its own seeded permutation of the ranks.

Families (``FAMILIES``)
-----------------------
``"stationary"``
    Every position draws from the same $\pi$: $\mu_i = \pi$. All population distances are 0; the
    distances of a sample are sampling noise only (the noise floor).
``"drift"``
    Smooth drift between $K$ anchor distributions $\pi_1, \dots, \pi_K$ with *disjoint supports* (the
    vocabulary is split into $K$ blocks), $\mu_i = \sum_k w_k(i)\, \pi_k$. Because the supports are
    disjoint, $\sqrt{\mu_i} = \sum_k \sqrt{w_k(i)}\, \sqrt{\pi_k}$ with orthonormal $\sqrt{\pi_k}$, so
    the Hellinger geometry of the positions is the Euclidean geometry of the points
    $x(i) = \sqrt{w(i)} \in \mathbb R^K$ on the unit sphere. They are placed on the sphere's
    intersection with the hyperplane $\sum_k x_k = c$ (a $(K-2)$-sphere), so their affine hull has
    dimension $K - 1$ and the double-centred Gram matrix $B$ has **rank exactly** $K - 1$:

    $$x(t) = \tfrac{c}{K}\mathbf 1 + \rho\, E\, u(t), \qquad
      u(t) = \frac{\sum_k \phi_k(t)\, b_k}{\lVert \sum_k \phi_k(t)\, b_k \rVert}, \qquad
      \phi_k(t) = e^{-(t - t_k)^2 / (2 h^2)},$$

    with $t = i / (n - 1)$, $t_k = (k - 1)/(K - 1)$, $E$ ($K \times (K-1)$) an orthonormal basis of
    $\mathbf 1^\perp$, $b_k = E^\top (e_k - \mathbf 1/K) / \lVert e_k - \mathbf 1/K \rVert$ (the
    direction of anchor $k$), $h = s_{\text{smooth}}/(K-1)$ with $s_{\text{smooth}}$ = ``smoothness``, radius $\rho = s_{\text{spread}}/\sqrt K$ with $s_{\text{spread}}$ = ``spread``
    ($\rho \le 1/\sqrt K$ keeps $x \ge 0$) and $c = \sqrt{K (1 - \rho^2)}$ (so $\lVert x \rVert = 1$).
    The weights are $w_k(i) = x_k(i)^2$; position $i$ leans towards anchor $k$ near $t_k$. $K \ge 3$:
    a rank-1 Hellinger geometry has only two distinct distributions (a line meets the sphere of the
    $\sqrt\mu$ in two points), so no *smooth* drift has rank 1. The default $K = 4$ gives rank 3, the
    paper's synthetic claim C5.
``"regimes"``
    The three kinds of positional distributions of text: the first ``n_begin`` positions each have
    their own distribution (openings), the last ``n_end`` positions *of each sequence* (counted from
    its end) have their own (closings), and every position in between draws from one middle
    distribution. Lengths vary, so the closing regime is smeared over absolute positions:

    $$\mu_i = \frac{\sum_{L > i} p(L)\, \mu_i^{(L)}}{\sum_{L > i} p(L)}, \qquad
      \mu_i^{(L)} = \begin{cases} \beta_i & i < n_{begin} \\ \varepsilon_{L-1-i} & L - 1 - i < n_{end}
      \\ \pi_M & \text{otherwise,} \end{cases}$$

    the opening regime taking precedence where the two overlap.
``"markov"``
    A shift-invariant Markov chain: $z_0 \sim \pi$, $z_{i+1} \sim T(z_i, \cdot)$ with $T$ a lazy
    Metropolis walk on the cycle $\mathbb Z_v$ whose stationary law is $\pi$ (so $z_i \sim \pi$ at every
    $i$: the chain starts at stationarity), and token $x_i = (z_i + s\, i) \bmod v$ (``step`` $s$).
    Hence $\mu_i(w) = \pi((w - s i) \bmod v)$ and the Hellinger distance between positions $i$ and $j$
    depends on $(i - j) \bmod v$ only: the distance matrix is Toeplitz, and circulant when $n = v$ (the
    default), whose eigenvectors are exactly Fourier modes (claim C4). Here $\pi$ is Zipfian in the
    cyclic distance to token 0, $\pi(w) \propto (1 + \min(w, v - w))^{-s}$, so it varies smoothly
    around the cycle.
``"order"``
    Order-sensitive labelled tasks for Theorems 1 and 4; the label depends only on the order of the
    tokens. Filler tokens are Zipfian over ids $0, \dots, v - 3$; ids $A = v - 2$ and $B = v - 1$ are
    markers. ``kind="marker_order"``: each sequence holds one $A$ and one $B$ at distinct uniform
    positions, label $= 1$ iff $A$ comes first. ``kind="marker_position"``: one $A$ at a uniform
    position $p$ (not the middle one of an odd-length sequence), label $= 1$ iff $p < (L-1)/2$ (first
    half). With ``balanced=True`` (default) row $2k+1$ is the reversal of row $2k$, whose label is the
    opposite, so the two classes have *identical* bags of words: content alone gives exactly chance,
    and any model that beats chance uses positions.

Common parameters: ``n_sequences``, ``n_positions`` ($n$, default 50, with the model width $d = 50$ the
setting of claim C5), ``vocab_size`` ($v$), ``min_length`` (lengths are uniform on
``[min_length, n_positions]``; default ``n_positions``: every sequence has length $n$), ``exponent``
($s$) and ``seed``. Positions at or beyond a sequence's length hold :data:`PAD` $= -1$; count with the
``lengths`` (as :meth:`SyntheticCorpus.counts` does), never on the padded array alone.

Modules: ``sampling.py`` (the corpus type, Zipf laws, the samplers every family shares), ``families.py``
(``stationary``, ``drift``, ``regimes``, ``markov``), ``tasks.py`` (the ``order`` task and the
planted-rank validation corpus); every public name is imported from here, ``posgeom.corpora.synthetic``,
except those of ``sampling_noise.py`` (how much of a family's sampled geometry is sampling noise, and how
that shrinks with the corpus size), imported from ``posgeom.corpora.synthetic.sampling_noise``.
"""

from __future__ import annotations

import inspect

import numpy as np

from ...validation import check_int
from .families import (
    _drift_options, _drift_population, _markov_population, _regime_laws, _regime_options, _regimes_population,
    _stationary_population, drift, markov, markov_transition, regimes, stationary,
)
from .sampling import PAD, SyntheticCorpus, check_common, seeded_streams, zipf_distribution
from .tasks import _check_kind, _check_order_lengths, _order_population, order_task, planted_rank

__all__ = [
    "FAMILIES", "PAD", "SyntheticCorpus", "zipf_distribution", "stationary", "drift", "regimes", "markov",
    "order_task", "make_corpus", "population_marginals", "markov_transition", "family_parameters", "planted_rank",
    "family_corpus", "mixed_marginals",
]


# ---------------------------------------------------------------------------------------------
# registry, dispatch and population marginals

#: Family name → generator function.
FAMILIES = {"stationary": stationary, "drift": drift, "regimes": regimes, "markov": markov, "order": order_task}


def family_parameters(family: str) -> dict:
    """The keyword parameters of a family's generator and their defaults.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.

    Returns
    -------
    dict of str to default value
        E.g. ``{"n_sequences": 10000, "n_positions": 50, ...}``, in the generator's order.
    """
    fn = _family(family)
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()}


def _family(family: str):
    if family not in FAMILIES:
        raise ValueError(f"unknown synthetic family {family!r}; valid families are {', '.join(FAMILIES)}")
    return FAMILIES[family]


def _check_params(family: str, params: dict, *, drop: tuple[str, ...] = ()) -> None:
    valid = [k for k in family_parameters(family) if k not in drop]
    bad = sorted(set(params) - set(valid))
    if bad:
        raise ValueError(
            f"unknown parameter(s) {', '.join(bad)} for synthetic family {family!r}; valid: {', '.join(valid)}"
        )


def make_corpus(family: str, **params) -> SyntheticCorpus:
    """Generate a corpus of the named family (``FAMILIES``) with the given parameters.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.
    **params
        Keyword parameters of that family's generator (:func:`family_parameters`); an unknown one is an error.

    Returns
    -------
    SyntheticCorpus
    """
    fn = _family(family)
    _check_params(family, params)
    return fn(**params)


def population_marginals(family: str, **params) -> np.ndarray:
    r"""The exact population marginals $\mu_i$ of a family, without sampling.

    Takes the same parameters as the family's generator (``n_sequences`` is not needed) and returns what
    its ``population`` attribute holds.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.
    **params
        The generator's keyword parameters other than ``n_sequences``.

    Returns
    -------
    mu : ndarray of shape (n_positions, vocab_size), rows summing to 1.
    """
    _family(family)
    _check_params(family, params, drop=("n_sequences",))
    defaults = family_parameters(family)
    p = {**{k: v for k, v in defaults.items() if k != "n_sequences"}, **params}
    if family == "markov" and p["vocab_size"] is None:
        p["vocab_size"] = p["n_positions"]
    # Validate like the generator, building the distributions from the same seeded stream.
    min_vocab = 3 if family in ("markov", "order") else 1
    _, n, v, lo, p_len = check_common(1, p["n_positions"], p["vocab_size"], p["min_length"], min_vocab=min_vocab)
    rng_dist, _ = seeded_streams(p["seed"])
    if family == "stationary":
        return _stationary_population(n, v, p["exponent"], rng_dist)
    if family == "drift":
        K, spread, smoothness = _drift_options(v, p["anchors"], p["spread"], p["smoothness"])
        return _drift_population(n, v, K, spread, smoothness, p["exponent"], rng_dist)[0]
    if family == "regimes":
        nb, ne = _regime_options(n, lo, p["n_begin"], p["n_end"])
        begin, middle, end = _regime_laws(v, nb, ne, p["exponent"], rng_dist)
        return _regimes_population(n, p_len, begin, middle, end)
    if family == "markov":
        return _markov_population(n, v, p["exponent"], check_int(p["step"], "step", 0))[0]
    _check_kind(p["kind"])
    _check_order_lengths(lo)
    return _order_population(n, v, p_len, p["kind"], p["exponent"])


# ---------------------------------------------------------------------------------------------
# the chapters' conventions


def family_corpus(family: str, *, n_sequences: int, n_positions: int, vocab_size: int, seed: int):
    """A synthetic corpus of one family with the chapters' conventions.

    The ``"markov"`` family uses ``vocab_size = n_positions`` so that its population distance matrix is
    circulant (claim C4); the other families use ``vocab_size``. The ``"regimes"`` family draws lengths
    uniformly on ``[n_positions // 2, n_positions]`` (its default, 25 to 50, at any ``n_positions``).

    Returns
    -------
    SyntheticCorpus
        ``tokens`` (n_sequences, n_positions) and ``population`` (n_positions, v).
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown synthetic family {family!r}; valid families are {', '.join(FAMILIES)}")
    v = n_positions if family == "markov" else vocab_size
    extra = {"min_length": n_positions // 2} if family == "regimes" else {}
    return make_corpus(family, n_sequences=n_sequences, n_positions=n_positions, vocab_size=v, seed=seed, **extra)


def mixed_marginals(t: float, n_positions: int, seed: int) -> np.ndarray:
    r"""Population marginals $\mu^{(t)}_i = (1 - t)\,\mu^{\mathrm{markov}}_i + t\,\mu^{\mathrm{drift}}_i$ on $v = n$ tokens.

    Returns
    -------
    ndarray of shape (n_positions, n_positions)
    """
    mk = population_marginals("markov", n_positions=n_positions, seed=seed)
    dr = population_marginals("drift", n_positions=n_positions, vocab_size=mk.shape[1], seed=seed)
    # mu^(t) = (1 - t) mu^markov + t mu^drift
    return (1.0 - t) * mk + t * dr
