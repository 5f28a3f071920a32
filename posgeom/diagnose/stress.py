r"""The stress of every encoding against a corpus's Hellinger geometry (``posgeom stress``, and ``diagnose``).

Every encoding is compared on the same kept positions (those reached by ``min_count`` sequences). A value
that is undefined (``kruskal1`` of NoPE, whose distances are all 0) is ``None`` with its reason in ``notes``.
The noise floor is summarised by $\sum_{i<j} F_{ij}^2 / \sum_{i<j} D_{ij}^2$: a stress below it cannot be told
apart from sampling noise. The default widths are not stated by the paper: BERT-base's for real corpora,
claim C5's $d = 50$ for synthetic ones.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from ..corpora.spec import as_statistics
from ..corpora.stats import CorpusStatistics
from ..encodings.identifiers import Encoding
from ..geometry import STRESS_NORMALIZATIONS
from ..progress import tqdm

__all__ = ["ENCODING_NAMES", "parse_encodings", "stress_report"]

ENCODING_NAMES = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI, Encoding.NONE, Encoding.RANDOM, Encoding.LEARNED,
                  Encoding.MDS)
#: Real corpora: BERT-base width and heads; synthetic corpora: claim C5's d = 50 (5 heads of width 10).
_WIDTH = {"real": (768, 12), "synthetic": (50, 5)}


def parse_encodings(text: str) -> list[tuple[str, str | None]]:
    """Parse ``"sinusoidal,rope,learned:MODEL,mds:3"`` into ``[(name, argument or None), ...]``."""
    out = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        name, _, arg = item.partition(":")
        if name not in ENCODING_NAMES:
            raise ValueError(
                f"unknown encoding {name!r}; valid encodings are {', '.join(ENCODING_NAMES)} (learned:MODEL, mds:RANK)"
            )
        if arg and name not in (Encoding.LEARNED, Encoding.MDS):
            raise ValueError(f"encoding {name!r} takes no argument (got {item!r}); only learned:MODEL and mds:RANK do")
        if name == Encoding.MDS and arg:
            try:
                if int(arg) < 1:
                    raise ValueError
            except ValueError:
                raise ValueError(f"mds:RANK needs a positive integer rank; got {arg!r}") from None
        out.append((name, arg or None))
    if not out:
        raise ValueError(f"no encoding given; valid encodings are {', '.join(ENCODING_NAMES)}")
    return out


def _stress_rank(D: np.ndarray, mds, threshold: float) -> int:
    """``effective_rank(D, "stress", threshold=threshold)`` from the MDS already computed, on doubling prefixes of
    ranks (so the cost grows with the rank found, not with n)."""
    from ..geometry import mds_stress_curve
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0; got {threshold}")
    top, width = D.shape[0] - 1, 16
    while True:
        width = min(width, top)
        curve = mds_stress_curve(D, width, "paper", mds=mds)
        hits = np.flatnonzero(curve <= threshold)
        if hits.size:
            return int(hits[0] + 1)
        if width == top:
            raise ValueError(
                f"no MDS rank reaches paper stress <= {threshold} (best {np.nanmin(curve):.4g}); raise the threshold"
            )
        width *= 2


@dataclass(frozen=True)
class _CorpusGeometry:
    """The corpus's distances on the kept positions, their MDS, and the options that shape the encodings."""

    D: np.ndarray
    mds: object
    kept: np.ndarray
    offset: int
    d: int
    n_heads: int
    seed: int
    extra: dict


def _kept_marginals(stats: CorpusStatistics, alpha: float, min_count: int):
    """The positional marginals of the positions reached by at least ``min_count`` sequences (two at least)."""
    from ..geometry import positional_marginals
    marg = positional_marginals(stats.counts, alpha=alpha, min_count=min_count, on_low_count="drop")
    kept = np.asarray(marg.positions)
    if kept.size < 2:
        reached = int(np.count_nonzero(np.asarray(stats.counts.reach) >= 1))
        advice = (
            "lower --min-count" if min_count > 1 and reached >= 2 else
            f"only {reached} position(s) are reached at all, so no --min-count can help: count more positions "
            "(--positions) or use longer texts"
        )
        raise ValueError(f"only {kept.size} position(s) reach min_count = {min_count}; {advice}")
    return marg


def _encoding_geometry(name: str, arg: str | None, geo: _CorpusGeometry) -> tuple[str, np.ndarray]:
    """``(label, Dhat)``: one encoding's (k, k) distances on the kept positions."""
    from .. import encodings as enc
    from ..geometry import classical_mds, euclidean_distances
    kept = geo.kept
    n_full = int(kept.max()) + 1
    if name == "mds":
        k = None if arg is None else int(arg)
        if k is not None and k > kept.size:
            raise ValueError(f"mds:{k} exceeds the {kept.size} kept positions")
        emb = geo.mds.embedding if k is None else classical_mds(geo.D, k).embedding
        return (f"mds:{emb.shape[1]}" if arg is None else f"mds:{arg}"), euclidean_distances(emb)
    if name == "extra":
        Dhat = np.asarray(geo.extra[arg](kept), dtype=np.float64)
        if Dhat.shape != geo.D.shape:
            raise ValueError(f"encoding {arg!r} gave distances of shape {Dhat.shape}; expected {geo.D.shape}")
        return arg, Dhat
    if name == "learned":
        from ..models.pretrained import load_hf
        pm = load_hf(arg, device="cpu")
        P = pm.position_table()  # row i is the model's position i
        # the model's position i + offset holds corpus position i (position 0 is [CLS] under the "content" policy)
        if P.shape[0] < n_full + geo.offset:
            raise ValueError(f"model {pm.name!r} has {P.shape[0]} positions but the corpus needs "
                             f"{n_full + geo.offset}; reduce --positions")
        return f"learned:{pm.name}", enc.table_distances(P[kept + geo.offset])
    Dhat = enc.encoding_set(kept, d_model=geo.d, n_heads=geo.n_heads, names=[name], seed=geo.seed)[name]
    return (name if arg is None else f"{name}:{arg}"), Dhat


def _compare(D: np.ndarray, Dhat: np.ndarray, label: str, notes: list) -> tuple[dict, dict]:
    """``(stress under every normalisation, monotonicity)`` of ``Dhat`` against ``D``; undefined ones noted."""
    from ..geometry import monotonicity_of, separation, stress
    row = {}
    for norm in STRESS_NORMALIZATIONS:
        try:
            row[norm] = stress(D, Dhat, norm, as_distances=True)
        except ValueError as err:
            row[norm] = None
            notes.append(f"{label} {norm}: {err}")
    # a constant Dhat (NoPE) leaves the violation rate and Spearman's rho undefined (NaN): noted, not warned
    order = {k: v if np.isfinite(v) else None for k, v in monotonicity_of(D, Dhat).items() if k != "tied_fraction"}
    if order["violation_rate"] is None:
        notes.append(f"{label} violation rate: undefined (its distances are all equal)")
    sep = separation(Dhat, as_distances=True)
    return row, {**order, "separation": sep.raw, "separation_normalized": sep.normalized}


def _effective_ranks(D, mds, chosen, tol: float, q: float, threshold: float, notes: list) -> dict:
    """The effective rank of $B$ under each criterion in ``chosen`` (the others ``None``, noted)."""
    from ..geometry import EFFECTIVE_RANK_CRITERIA, effective_rank
    ranks = {}
    for crit in EFFECTIVE_RANK_CRITERIA:
        if crit not in chosen:
            ranks[crit] = None
            notes.append(f"effective rank {crit}: not computed (rank criteria {', '.join(chosen) or 'none'})")
            continue
        try:
            ranks[crit] = (_stress_rank(D, mds, threshold) if crit == "stress"
                           else effective_rank(mds.eigenvalues, crit, tol=tol, q=q, threshold=threshold))
        except ValueError as err:
            ranks[crit] = None
            notes.append(f"effective rank {crit}: {err}")
    return ranks


def _noise_summary(D, marg, method: str, reps: int, seed: int, hellinger: str, show: bool, notes: list) -> dict:
    """The sampling-noise floor of ``D``: mean floor, mean distance and energy ratio (module docstring)."""
    from ..geometry import noise_floor
    iu = np.triu_indices(D.shape[0], k=1)
    try:
        # the floor of the same positions as D (marg's kept ones); only defined for alpha = 0
        nf = noise_floor(marg, method, reps, seed, kind=hellinger, progress=show).matrix[iu]
    except ValueError as err:
        nf = None
        notes.append(f"noise floor: {err}")
    d2 = float(np.sum(D[iu] ** 2))
    return {
        # both methods resample the counts themselves (multinomial or hypergeometric), never the texts,
        # so a counts file gives the same floor as the corpus
        "method": method, "n_rep": int(reps), "resampled_from": "counts",
        "mean_floor": None if nf is None else float(nf.mean()), "mean_distance": float(D[iu].mean()),
        "energy_ratio": None if nf is None or d2 == 0 else float(np.sum(nf**2)) / d2,
    }


def stress_report(stats: CorpusStatistics, encodings="sinusoidal,rope,alibi,mds,none", *, min_count: int = 1,
                  alpha: float = 0.0, hellinger: str = "chord", d: int | None = None, n_heads: int | None = None,
                  synthetic: bool | None = None, noise_method: str = "bootstrap", noise_reps: int = 20, seed: int = 0,
                  tol: float = 1e-3, q: float = 0.99, threshold: float = 0.01, rank_criteria=None,
                  progress: bool | None = None, extra=None, keep_distances: bool = False) -> dict:
    """Stress of each encoding against the corpus's Hellinger geometry, effective ranks, noise floor.

    ``stats`` is the corpus's counts or a counts file's path; ``encodings`` a :func:`parse_encodings` string or
    its list of (name, arg); ``min_count`` and ``alpha`` as :func:`posgeom.geometry.positional_marginals`
    (low-count positions dropped and listed); ``hellinger`` ``"chord"``, ``"normalized"`` or ``"geodesic"``;
    ``d``, ``n_heads`` the width and heads (default (768, 12) for real corpora, (50, 5) for synthetic ones);
    ``noise_method``, ``noise_reps``, ``seed`` as :func:`posgeom.geometry.noise_floor`; ``tol``, ``q``,
    ``threshold`` the parameters of the effective-rank criteria ``tol``, ``mass``, ``stress``, and
    ``rank_criteria`` those computed (default all three; the others are ``None``).

    Parameters
    ----------
    extra : mapping of str to callable, optional
        More encodings: label → function of the kept positions (int array of shape (k,)) returning their
        (k, k) distances.
    keep_distances : bool
        Also return ``distances``: ``positions`` (k,), ``D`` (k, k) and ``encodings[label]`` (k, k) arrays.

    Returns
    -------
    dict
        ``stress[encoding][normalization]``, ``monotonicity[encoding]`` (violation rate, Spearman's rho,
        separation raw and over the median distance), ``effective_rank[criterion]``, ``noise_floor``,
        ``positions_kept``/``positions_dropped``, ``options`` (every option used) and ``info``.
    """
    from ..geometry import EFFECTIVE_RANK_CRITERIA, classical_mds, hellinger_matrix
    stats = as_statistics(stats)
    items = parse_encodings(encodings) if isinstance(encodings, str) else list(encodings)
    extra = dict(extra or {})
    items += [("extra", label) for label in extra]
    chosen = EFFECTIVE_RANK_CRITERIA if rank_criteria is None else tuple(rank_criteria)
    unknown = [c for c in chosen if c not in EFFECTIVE_RANK_CRITERIA]
    if unknown:
        valid = ", ".join(EFFECTIVE_RANK_CRITERIA)
        raise ValueError(f"unknown rank criteria {', '.join(map(repr, unknown))}; valid criteria are {valid}")
    if synthetic is None:
        synthetic = "family" in stats.info
    d0, h0 = _WIDTH["synthetic" if synthetic else "real"]
    d = d0 if d is None else int(d)
    n_heads = h0 if n_heads is None else int(n_heads)
    marg = _kept_marginals(stats, alpha, min_count)
    kept = np.asarray(marg.positions)
    D = hellinger_matrix(marg, kind=hellinger)
    mds = classical_mds(D)
    offset = 1 if stats.info.get("options", {}).get("special") == "content" else 0
    geometry = _CorpusGeometry(D, mds, kept, offset, d, n_heads, seed, extra)
    results, notes, labels, order, kept_distances = {}, [], [], {}, {}
    bar = tqdm(items, desc="encodings", unit="encoding", disable=(None if progress is None else not progress))
    for name, arg in bar:
        label, Dhat = _encoding_geometry(name, arg, geometry)
        results[label], order[label] = _compare(D, Dhat, label, notes)
        labels.append(label)
        if keep_distances:
            kept_distances[label] = Dhat
    ranks = _effective_ranks(D, mds, chosen, tol, q, threshold, notes)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    floor = _noise_summary(D, marg, noise_method, noise_reps, seed, hellinger, show, notes)
    out = {
        "corpus": stats.info.get("corpus"), "split": stats.info.get("split"),
        "n_sequences": int(stats.counts.n_sequences), "n_truncated": int(stats.n_truncated),
        "n_positions": int(stats.counts.n_positions),
        "positions_kept": int(kept.size), "positions_dropped": [int(i) for i in marg.dropped],
        "stress": results, "monotonicity": order, "effective_rank": ranks,
        "mds": {"clipped_mass": float(mds.clipped_mass), "rank": int(mds.embedding.shape[1]),
                "eigenvalues": [float(x) for x in mds.eigenvalues[: min(10, kept.size)]]},
        "noise_floor": floor,
        "options": {
            "encodings": labels, "min_count": int(min_count), "alpha": float(alpha), "hellinger": hellinger,
            "d": d, "n_heads": n_heads, "learned_offset": offset, "noise_method": noise_method,
            "noise_reps": int(noise_reps), "seed": int(seed), "rank_tol": tol, "rank_mass_q": q,
            "rank_stress_threshold": threshold, "rank_criteria": list(chosen),
            "normalizations": list(STRESS_NORMALIZATIONS),
            **stats.info.get("options", {}),
        },
        "notes": notes, "info": stats.info,
    }
    if keep_distances:
        out["distances"] = {"positions": kept, "D": D, "encodings": kept_distances}
    return out
