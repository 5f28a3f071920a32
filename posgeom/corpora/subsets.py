r"""A real corpus's Hellinger geometry and noise floor, on seeded random subsets of its sequences too
(:func:`subset_geometry`; chapter "The geometry of a corpus")."""

from __future__ import annotations

import numpy as np

from .. import geometry as geo
from ..validation import check_positive_int
from .distances import corpus_distances
from .options import CorpusOptions

__all__ = ["subset_geometry"]


def _token_strings(ids) -> np.ndarray:
    from .tokenize import load_tokenizer
    tok = load_tokenizer()
    return np.asarray(tok.convert_ids_to_tokens([int(i) for i in ids]), dtype=str)


def subset_geometry(options: CorpusOptions, *, data_dir, sizes, method: str, n_rep: int, seed: int,
                    top_tokens: int) -> tuple[dict, dict]:
    r"""The Hellinger geometry of a corpus, its noise floor, and both on seeded random subsets of the sequences.

    Parameters
    ----------
    options : CorpusOptions
        The corpus (its ``n_positions`` set).
    data_dir : path or None
    sizes : sequence of int
        Subset sizes (capped at the number of sequences), drawn in turn from one generator seeded with ``seed``.
    method, n_rep :
        The noise floor (:func:`posgeom.geometry.noise_floor`, seeded with ``seed``).
    seed : int
    top_tokens : int
        How many of the most frequent tokens to report.

    Returns
    -------
    values : dict
        ``n_sequences``, ``n_truncated``, ``n_kept``, ``dropped``, ``rms_D``, ``rms_F``, ``frac_above_2F``,
        ``mean_D_from_0``, and lists aligned with ``sizes``: ``size_rms_D``, ``size_rms_F``,
        ``size_frac_above_2F``, ``size_n_kept``.
    arrays : dict
        ``D``, ``F`` (n_kept, n_kept), ``positions``, ``reach`` (n_kept,), ``top_ids``, ``top_strings``
        (top_tokens,), ``top_probs`` (n_kept, top_tokens).
    """
    check_positive_int(n_rep, "n_rep")
    check_positive_int(top_tokens, "top_tokens")
    n_positions, min_count = options.n_positions, options.min_count
    geometry = corpus_distances(options, data_dir=data_dir, with_tokens=True)
    tc = geometry.tokens
    seqs = tc.sequences()
    rng = np.random.default_rng(seed)
    counts, marg, D = geometry.counts, geometry.marginals, geometry.D
    F = geo.noise_floor(marg, method, n_rep, seed=seed).matrix
    total = np.asarray(counts.counts.sum(axis=0)).ravel()
    top = np.argsort(-total, kind="stable")[:top_tokens]
    d, f = geo.offdiag(D), geo.offdiag(F)
    values = dict(
        n_sequences=len(seqs), n_truncated=int(np.count_nonzero(tc.full_lengths > n_positions)),
        n_kept=int(marg.n_positions), dropped=list(marg.dropped), rms_D=geo.rms_offdiag(D), rms_F=geo.rms_offdiag(F),
        frac_above_2F=float(np.mean(d > 2 * f)), mean_D_from_0=float(D[0, 1:].mean()),
        sizes=[], size_rms_D=[], size_rms_F=[], size_frac_above_2F=[], size_n_kept=[],
    )
    for size in sizes:
        size = min(int(size), len(seqs))
        pick = rng.choice(len(seqs), size, replace=False)
        sub = geo.positional_counts([seqs[i] for i in pick], n_positions, tc.vocab_size)
        # the same positions as the full corpus where they are reached twice (split-half needs 2)
        m = geo.positional_marginals(sub, min_count=max(2, min_count))
        Ds = geo.hellinger_matrix(m)
        Fs = geo.noise_floor(m, method, n_rep, seed=seed).matrix
        values["sizes"].append(size)
        values["size_rms_D"].append(geo.rms_offdiag(Ds))
        values["size_rms_F"].append(geo.rms_offdiag(Fs))
        values["size_frac_above_2F"].append(float(np.mean(geo.offdiag(Ds) > 2 * geo.offdiag(Fs))))
        values["size_n_kept"].append(int(m.n_positions))
    arrays = dict(D=D, F=F, positions=marg.positions, reach=marg.reach, top_ids=top,
                  top_strings=_token_strings(top), top_probs=marg.probs[:, top])
    return values, arrays
