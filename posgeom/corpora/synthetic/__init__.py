r"""Synthetic corpora with known positional statistics (seeded, documented families).

Each family draws token-id sequences whose *population* positional marginals $\mu_i$ are known in closed
form, so every statistic of a sample can be checked against its exact population value. A
:class:`SyntheticCorpus` holds the sample and the population; :func:`population_marginals` gives the
latter alone. The base law over $v$ tokens is Zipfian,
$\pi(r) = (r + 1)^{-s} / \sum_{q=0}^{v-1} (q + 1)^{-s}$ ($r$ the rank, $s$ the ``exponent``); a family
that needs several laws gives each its own seeded permutation of the ranks.

Families (``FAMILIES``)
-----------------------
``"stationary"``
    $\mu_i = \pi$ at every position: population distances are 0, a sample's are noise only.
``"drift"``
    Smooth drift between $K$ anchors $\pi_k$ with *disjoint supports*, $\mu_i = \sum_k w_k(i)\, \pi_k$.
    Then $\sqrt{\mu_i} = \sum_k \sqrt{w_k(i)}\, \sqrt{\pi_k}$ with orthonormal $\sqrt{\pi_k}$, so the
    Hellinger geometry is that of the points $x(i) = \sqrt{w(i)}$ on the unit sphere of $\mathbb R^K$,
    placed on its intersection with the hyperplane $\sum_k x_k = c$: $B$ has **rank exactly** $K - 1$.

    $$x(t) = \tfrac{c}{K}\mathbf 1 + \rho\, E\, u(t), \qquad
      u(t) = \frac{\sum_k \phi_k(t)\, b_k}{\lVert \sum_k \phi_k(t)\, b_k \rVert}, \qquad
      \phi_k(t) = e^{-(t - t_k)^2 / (2 h^2)},$$

    with $t = i / (n - 1)$, $t_k = (k - 1)/(K - 1)$, $E$ an orthonormal basis of $\mathbf 1^\perp$,
    $b_k = E^\top (e_k - \mathbf 1/K) / \lVert e_k - \mathbf 1/K \rVert$, $h = s_{\text{smooth}}/(K-1)$,
    $\rho = s_{\text{spread}}/\sqrt K$ (``smoothness``, ``spread``; $x \ge 0$),
    $c = \sqrt{K (1 - \rho^2)}$ ($\lVert x \rVert = 1$) and $w_k(i) = x_k(i)^2$. $K \ge 3$, since a
    smooth drift cannot have rank 1; the default $K = 4$ gives rank 3 (claim C5).
``"regimes"``
    The first ``n_begin`` positions each have their own law (openings), the last ``n_end`` of each
    sequence theirs (closings, counted from its end), the rest one middle law; with variable lengths

    $$\mu_i = \frac{\sum_{L > i} p(L)\, \mu_i^{(L)}}{\sum_{L > i} p(L)}, \qquad
      \mu_i^{(L)} = \begin{cases} \beta_i & i < n_{begin} \\ \varepsilon_{L-1-i} & L - 1 - i < n_{end}
      \\ \pi_M & \text{otherwise,} \end{cases}$$

    openings taking precedence.
``"markov"``
    $z_0 \sim \pi$, $z_{i+1} \sim T(z_i, \cdot)$ with $T$ a lazy Metropolis walk on $\mathbb Z_v$ of
    stationary law $\pi(w) \propto (1 + \min(w, v - w))^{-s}$, and $x_i = (z_i + s\, i) \bmod v$
    (``step`` $s$). Hence $\mu_i(w) = \pi((w - s i) \bmod v)$: the distance matrix is Toeplitz, and
    circulant when $n = v$ (the default), with Fourier eigenvectors (claim C4).
``"order"``
    Labelled tasks for Theorems 1 and 4 whose label depends only on token order: Zipfian filler over ids
    $0, \dots, v - 3$, markers $A = v - 2$, $B = v - 1$. ``"marker_order"``: one $A$ and one $B$ at
    distinct uniform positions, label 1 iff $A$ is first. ``"marker_position"``: one $A$ at a uniform
    position $p$ (not an odd length's middle), label 1 iff $p < (L-1)/2$. With ``balanced=True`` row
    $2k+1$ reverses row $2k$ with the opposite label: identical bags of words, so only positions beat chance.

Common parameters: ``n_sequences``, ``n_positions`` ($n$, default 50), ``vocab_size`` ($v$),
``min_length`` (lengths uniform on ``[min_length, n_positions]``, default all $n$), ``exponent`` ($s$),
``seed``. Positions beyond a sequence's length hold :data:`PAD` $= -1$; count with the ``lengths``.
The sampling-noise studies are in ``posgeom.corpora.synthetic.sampling_noise``.
"""

from __future__ import annotations

import inspect

import numpy as np

from ...validation import check_choice
from ..identifiers import SyntheticFamily
from .families import drift, markov, markov_transition, regimes, stationary
from .sampling import PAD, SyntheticCorpus, zipf_distribution
from .tasks import order_task, planted_rank

__all__ = [
    "FAMILIES", "PAD", "SyntheticCorpus", "zipf_distribution", "stationary", "drift", "regimes", "markov",
    "order_task", "make_corpus", "population_marginals", "markov_transition", "family_parameters", "planted_rank",
    "family_corpus", "mixed_marginals",
]


# registry, dispatch and population marginals

#: Family name → generator function.
FAMILIES = {
    SyntheticFamily.STATIONARY: stationary, SyntheticFamily.DRIFT: drift, SyntheticFamily.REGIMES: regimes,
    SyntheticFamily.MARKOV: markov, SyntheticFamily.ORDER: order_task,
}


def family_parameters(family: str) -> dict:
    """The keyword parameters of a family's generator and their defaults, in the generator's order."""
    fn = _family(family)
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()}


def _family(family: str):
    return FAMILIES[check_choice(family, "synthetic family", FAMILIES, plural="families")]


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
        Keyword parameters of that family's generator (:func:`family_parameters`).
    """
    fn = _family(family)
    _check_params(family, params)
    return fn(**params)


def population_marginals(family: str, **params) -> np.ndarray:
    r"""The exact population marginals $\mu_i$ of a family, as its generator builds them.

    They come from the population's own seeded stream; the two sequences the generator draws beside them are
    discarded, so the parameters are checked exactly as :func:`make_corpus` checks them.

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
    _check_params(family, params, drop=("n_sequences",))
    # the population comes from its own seeded stream, so two sequences drawn beside it do not change it
    return make_corpus(family, n_sequences=2, **params).population


# the chapters' conventions


def family_corpus(family: str, *, n_sequences: int, n_positions: int, vocab_size: int, seed: int):
    """A synthetic corpus of one family with the chapters' conventions.

    ``"markov"`` uses ``vocab_size = n_positions`` (a circulant population, claim C4); ``"regimes"`` draws
    lengths on ``[n_positions // 2, n_positions]``.
    """
    _family(family)
    v = n_positions if family == SyntheticFamily.MARKOV else vocab_size
    extra = {"min_length": n_positions // 2} if family == SyntheticFamily.REGIMES else {}
    return make_corpus(family, n_sequences=n_sequences, n_positions=n_positions, vocab_size=v, seed=seed, **extra)


def mixed_marginals(t: float, n_positions: int, seed: int) -> np.ndarray:
    r"""Population marginals $\mu^{(t)}_i = (1 - t)\,\mu^{\mathrm{markov}}_i + t\,\mu^{\mathrm{drift}}_i$ on $v = n$ tokens.

    Shape (n_positions, n_positions).
    """
    mk = population_marginals(SyntheticFamily.MARKOV, n_positions=n_positions, seed=seed)
    dr = population_marginals(SyntheticFamily.DRIFT, n_positions=n_positions, vocab_size=mk.shape[1], seed=seed)
    # mu^(t) = (1 - t) mu^markov + t mu^drift
    return (1.0 - t) * mk + t * dr
