r"""Two studies on synthetic corpora, whose population geometry is known.

* :func:`algorithm_steps`: the paper's Algorithm 1 step by step on one corpus (chapter "The optimal encoding");
* :func:`c5_rows`: claim C5 at every generator, at the population and at several corpus sizes (chapter
  "How many numbers does position need?").
"""

from __future__ import annotations

import numpy as np

from ... import geometry as geo
from ...encodings import c5_row
from ...geometry.stress import REPORTED_NORMALIZATIONS
from ...validation import check_positive_int
from ..identifiers import SyntheticFamily
from . import family_corpus, make_corpus, population_marginals

__all__ = ["algorithm_steps", "c5_rows"]


def algorithm_steps(corpus, *, family: str, k: int, lift_d: int, seed: int) -> tuple[dict, dict]:
    r"""Algorithm 1 on one synthetic corpus: $D$, $B = -\frac12 J D^{(2)} J$ against $J S S^\top J$, MDS, lift.

    Parameters
    ----------
    corpus : posgeom.corpora.synthetic.SyntheticCorpus
    family : str
        The corpus's family (recorded in the values).
    k : int
        The rank of $P_{\mathrm{MDS}}$.
    lift_d : int
        The width of the lift.
    seed : int
        Seed of the lift's orthonormal columns.

    Returns
    -------
    values : dict
        ``B_vs_SS_max_error``, ``min_eigenvalue``, ``max_eigenvalue``, ``numerical_rank``, ``full_rank_max_error``,
        ``rank_k_stress`` (``paper``, ``scale_free``), ``lift_max_error``, ``k``, ``n``, ``d``, ``family``,
        ``population_rank_tol``.
    arrays : dict
        ``D``, ``B`` (n, n), ``eigenvalues`` (n,), ``P_k`` (n, k), ``population_eigenvalues`` (n,).
    """
    check_positive_int(k, "k")
    check_positive_int(lift_d, "lift_d")
    marg = geo.positional_marginals(corpus.counts())
    D = geo.hellinger_matrix(marg)
    B = geo.double_centered_gram(D)
    S = geo.sqrt_marginals(marg)
    n = D.shape[0]
    J = np.eye(n) - np.ones((n, n)) / n
    # B = J S S^T J for the chord distance
    BS = J @ S @ S.T @ J
    res = geo.classical_mds(D)
    Pk = geo.classical_mds(D, k=k).embedding
    P_lift = geo.lift(Pk, lift_d, seed=seed)
    pop = geo.classical_mds(geo.hellinger_matrix(corpus.population), k=1).eigenvalues
    values = dict(
        B_vs_SS_max_error=float(np.max(np.abs(B - BS))), min_eigenvalue=float(res.eigenvalues.min()),
        max_eigenvalue=float(res.eigenvalues.max()), numerical_rank=int(res.k),
        full_rank_max_error=float(np.max(np.abs(geo.euclidean_distances(res.embedding) - D))),
        rank_k_stress={norm: geo.stress(D, Pk, norm) for norm in REPORTED_NORMALIZATIONS},
        lift_max_error=float(np.max(np.abs(geo.euclidean_distances(P_lift) - geo.euclidean_distances(Pk)))),
        k=int(k), n=int(n), d=int(lift_d), family=family,
        population_rank_tol=geo.effective_rank(pop, "tol", tol=1e-9),
    )
    return values, dict(D=D, B=B, eigenvalues=res.eigenvalues, P_k=Pk, population_eigenvalues=pop)


def c5_rows(*, n: int, d: int, r: int, sizes, anchors, vocab_size: int, seed: int) -> list[dict]:
    """:func:`posgeom.encodings.c5_row` for every generator of C5, at the population and at each corpus size.

    Parameters
    ----------
    n, d, r : int
        Positions, width of the sinusoidal table, rank of MDS.
    sizes : sequence of int
        Corpus sizes (sequences drawn).
    anchors : sequence of int
        Anchor counts $K$ of the drift family.
    vocab_size : int
        The vocabulary (the Markov population uses $v = n$).
    seed : int

    Returns
    -------
    list of dict
        The rows: ``"drift K=<K>"`` for each $K$, then ``stationary``, ``regimes``, ``markov``.
    """
    check_positive_int(n, "n")
    check_positive_int(vocab_size, "vocab_size")
    rows = []
    for K in anchors:
        gen = f"drift K={K}"
        pop = population_marginals(SyntheticFamily.DRIFT, n_positions=n, vocab_size=vocab_size, anchors=K, seed=seed)
        rows.append(c5_row(gen, None, geo.hellinger_matrix(pop), n, d, r))
        for N in sizes:
            c = make_corpus(SyntheticFamily.DRIFT, n_sequences=N, n_positions=n, vocab_size=vocab_size, anchors=K,
                            seed=seed)
            rows.append(c5_row(gen, int(N), geo.hellinger_matrix(c.counts()), n, d, r))
    for fam in (SyntheticFamily.STATIONARY, SyntheticFamily.REGIMES, SyntheticFamily.MARKOV):
        if fam != SyntheticFamily.STATIONARY:
            extra = {"min_length": n // 2} if fam == SyntheticFamily.REGIMES else {}  # as family_corpus
            v = None if fam == SyntheticFamily.MARKOV else vocab_size
            pop = population_marginals(fam, n_positions=n, vocab_size=v, seed=seed, **extra)
            rows.append(c5_row(fam, None, geo.hellinger_matrix(pop), n, d, r))
        for N in sizes:
            c = family_corpus(fam, n_sequences=N, n_positions=n, vocab_size=vocab_size, seed=seed)
            rows.append(c5_row(fam, int(N), geo.hellinger_matrix(c.counts()), n, d, r))
    return rows
