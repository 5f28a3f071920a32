r"""How the fixed encodings fit one corpus's distances: the summaries the chapters tabulate, each from a corpus's
chord Hellinger geometry and plain numbers to what an experiment stores.
"""

from __future__ import annotations

import numpy as np

from .. import geometry as geo
from ..validation import check_positive_int
from ..geometry.stress import REPORTED_NORMALIZATIONS
from .identifiers import Encoding
from .named import encoding_distances, encoding_set

__all__ = ["hellinger_kinds_summary", "sensitivity_row", "shift_summary", "c5_row"]

#: The fixed encodings whose stress the summaries report.
_COMPARED = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI)


def _fixed_encodings(positions, d_model: int, n_heads: int, seed: int) -> dict:
    """The sinusoidal, RoPE and ALiBi distances over ``positions`` (:func:`posgeom.encodings.encoding_set`)."""
    encs = encoding_set(positions, d_model=d_model, n_heads=n_heads, seed=seed)
    return {k: encs[k] for k in _COMPARED}


def hellinger_kinds_summary(mu, positions, *, d_model: int, n_heads: int, seed: int) -> tuple[dict, dict]:
    """Per Hellinger convention: the MDS clipped mass, the full-rank error and the fixed encodings' stress.

    Parameters
    ----------
    mu, positions :
        Marginals (``PositionalMarginals`` or an (n, v) array) and the positions (n,) of their rows.
    d_model, n_heads, seed : int
        The shape of the encodings and the seed of their random table.

    Returns
    -------
    values : dict
        ``{kind: {"clipped_mass", "max_D", "full_rank_max_error", "stress"}}`` for each of
        :data:`posgeom.geometry.HELLINGER_KINDS`, and ``geodesic_over_chord`` (``min``, ``max``).
    arrays : dict of str to ndarray of shape (n, n)
    """
    check_positive_int(d_model, "d_model")
    check_positive_int(n_heads, "n_heads")
    out, arrays = {}, {}
    encs = _fixed_encodings(positions, d_model, n_heads, seed)
    for kind in geo.HELLINGER_KINDS:
        D = geo.hellinger_matrix(mu, kind=kind)
        mds = geo.classical_mds(D, k=1)
        full = geo.classical_mds(D)
        out[kind] = dict(
            clipped_mass=float(mds.clipped_mass), max_D=float(D.max()),
            full_rank_max_error=float(np.max(np.abs(geo.euclidean_distances(full.embedding) - D))),
            stress=geo.encoding_stresses(D, encs),
        )
        arrays[kind] = D
    chord = geo.offdiag(arrays["chord"])
    # g / c with g = 4 arcsin(c / 2): between 2 and pi / sqrt 2 where c > 0
    ratio = geo.offdiag(arrays["geodesic"]) / np.maximum(chord, 1e-300)
    ratio = ratio[chord > 0]
    out["geodesic_over_chord"] = dict(min=float(ratio.min()), max=float(ratio.max()))
    return out, arrays


def sensitivity_row(variant: dict, marg, *, d_model: int, n_heads: int, method: str, n_rep: int,
                    seed: int) -> dict:
    r"""The conclusions about one preprocessing variant of a corpus (the fields of a ``SensitivityRow``).

    Parameters
    ----------
    variant : dict
        ``name``, ``special``, ``n_positions``, ``min_count``, ``alpha``: copied into the row.
    marg : posgeom.geometry.PositionalMarginals
        The variant's marginals (n_kept positions).
    d_model, n_heads, seed : int
        The shape of the encodings and the seed of their random table (and of the noise floor).
    method, n_rep :
        The noise floor (:func:`posgeom.geometry.noise_floor`), computed when ``variant["alpha"] == 0``.
    """
    check_positive_int(n_rep, "n_rep")
    D = geo.hellinger_matrix(marg)
    mds = geo.classical_mds(D, k=1)
    w = np.maximum(mds.eigenvalues, 0.0)
    encs = _fixed_encodings(marg.positions, d_model, n_heads, seed)
    row = dict(
        variant, n_kept=int(marg.n_positions), n_dropped=len(marg.dropped), rms_D=geo.rms_offdiag(D),
        # the share of the first eigenvalue, lambda_1 / sum_k max(lambda_k, 0)
        lambda1_share=float(w[0] / w.sum()),
        rank_tol=geo.effective_rank(mds.eigenvalues, "tol", tol=1e-2),
        rank_mass=geo.effective_rank(mds.eigenvalues, "mass", q=0.9),
        mds1_scale_free=geo.stress(D, mds.embedding, "scale_free"),
        stress=geo.encoding_stresses(D, encs), frac_above_2F=None, rms_F=None,
    )
    if variant["alpha"] == 0:
        F = geo.noise_floor(marg, method, n_rep, seed=seed).matrix
        row["frac_above_2F"] = float(np.mean(geo.offdiag(D) > 2 * geo.offdiag(F)))
        row["rms_F"] = geo.rms_offdiag(F)
    sf = {k: row["stress"][k]["scale_free"] for k in encs}
    row["best_scale_free"] = min(sf, key=sf.get)
    return row


def shift_summary(D, *, n_vectors: int, n_pairs: int, grid: int, d_model: int, n_heads: int, positions=None,
                  seed: int = 0) -> tuple[dict, dict]:
    r"""How close one distance matrix comes to the circulant picture in which MDS is a sinusoidal encoding.

    Parameters
    ----------
    D : ndarray of shape (n, n)
    n_vectors, n_pairs, grid : int
        The top MDS eigenvectors fitted with a sinusoid on ``grid`` frequencies; the top ``2 n_pairs`` are
        matched with the lowest Fourier pairs (and give MDS's rank).
    d_model, n_heads, seed : int
        The shape of the sinusoidal table; the seed of the encodings' random table.
    positions : array-like of int, shape (n,), optional
        The positions of the rows of ``D`` (default $0 \dots n-1$).

    Returns
    -------
    values : dict
        ``n``, ``toeplitz_deviation``, ``circulant_deviation``, ``sinusoid_r2``, ``sinusoid_omega`` (per
        eigenvector), ``mean_sinusoid_r2``, ``fourier_match``, ``sinusoidal_scale_free``, ``mds_scale_free``,
        ``eigenvalue_share``.
    arrays : dict
        ``U`` (n, k), ``omega`` (k,), ``eigenvalues`` (n,), ``D`` (n, n).
    """
    check_positive_int(n_vectors, "n_vectors")
    check_positive_int(n_pairs, "n_pairs")
    check_positive_int(grid, "grid")
    n = D.shape[0]
    res = geo.classical_mds(D, k=1)
    k = min(n_vectors, n - 1)
    U = res.eigenvectors[:, :k]
    fit = geo.fit_sinusoid(U, grid)
    r2, omega = fit.r2, fit.omega
    positions = np.arange(n) if positions is None else np.asarray(positions)
    encs = encoding_set(positions, d_model=d_model, n_heads=n_heads, seed=seed)
    m = min(n_pairs, (n - 1) // 2)
    values = dict(
        n=int(n), toeplitz_deviation=geo.toeplitz_deviation(D), circulant_deviation=geo.circulant_deviation(D),
        sinusoid_r2=[float(x) for x in r2], sinusoid_omega=[float(x) for x in omega],
        mean_sinusoid_r2=float(r2.mean()), fourier_match=geo.fourier_match(U, m),
        sinusoidal_scale_free=geo.stress(D, encs["sinusoidal"], "scale_free", as_distances=True),
        mds_scale_free=geo.stress(D, geo.classical_mds(D, k=2 * m).embedding, "scale_free"),
        # the share of the top k eigenvalues, sum_{j<k} max(lambda_j, 0) / sum_j max(lambda_j, 0)
        eigenvalue_share=float(np.maximum(res.eigenvalues[:k], 0).sum() / np.maximum(res.eigenvalues, 0).sum()),
    )
    arrays = dict(U=U, omega=omega, eigenvalues=res.eigenvalues, D=D)
    return values, arrays


def c5_row(generator: str, size: int | None, D, n: int, d: int, r: int) -> dict:
    r"""One row of C5: rank-$r$ MDS of ``D`` against the sinusoidal table of width $d$, both normalisations.

    Parameters
    ----------
    generator, size :
        The generator's name; the corpus size (None for the population).
    D : ndarray of shape (n, n)
    n, d, r : int
        Positions, width of the sinusoidal table, rank of MDS.

    Returns
    -------
    dict
        ``generator``, ``size``, and for each normalisation ``mds_<norm>``, ``sin_<norm>`` and
        ``reduction_<norm>`` $= 1 - \sigma(P^{(r)}_{\mathrm{MDS}}) / \sigma(P_{\sin})$.
    """
    check_positive_int(r, "r")
    P = geo.classical_mds(D, k=r).embedding
    Ds = encoding_distances("sinusoidal", n, d=d)
    out = dict(generator=generator, size=size)
    for norm in REPORTED_NORMALIZATIONS:
        m, s = geo.stress(D, P, norm), geo.stress(D, Ds, norm, as_distances=True)
        # reduction = 1 - sigma_MDS / sigma_sin
        out.update({f"mds_{norm}": m, f"sin_{norm}": s, f"reduction_{norm}": 1.0 - m / s})
    return out
