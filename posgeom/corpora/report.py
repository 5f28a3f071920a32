r"""Corpus reports and the stress of every encoding against a corpus's Hellinger geometry.

What the ``posgeom corpus-report`` and ``posgeom stress`` commands compute, as functions that return
JSON-ready dicts (the chapters call them too).

Corpus specifications (:func:`parse_corpus_spec`): ``"sst2"``, ``"imdb"``, ``"synthetic:FAMILY"``
optionally followed by ``:key=value,key=value`` (the family's parameters, e.g.
``"synthetic:drift:anchors=3,n_sequences=5000"``), or a path to a file or folder of texts.

Corpus report (:func:`corpus_report`): the histogram of sequence lengths (under the special-token
policy, before truncation), the number of sequences reaching each position $N_i$, and the vocabulary
coverage of each position: the number of distinct tokens seen there, $\#\{w : c_i(w) > 0\}$, also as a
fraction of the tokens seen anywhere in the first $n$ positions.

Stress report (:func:`stress_report`). From the counts: marginals $\mu_i$ of the positions reached by at
least ``min_count`` sequences (the others are dropped and listed), the Hellinger matrix $D$ (chord by
default), classical MDS of $D$, and for every encoding its distance matrix $\hat D$ on the *same kept
positions* and its stress under every normalisation of the stress (``paper``, ``scale_free``,
``kruskal1``, ``smacof_r``; a value that is undefined, e.g. ``kruskal1`` of NoPE whose distances are all
0, is ``None`` with the reason in ``notes``). Also the effective rank of $B$ under each criterion and the
sampling-noise floor (:func:`posgeom.geometry.noise_floor`), summarised by
$\sum_{i<j} F_{ij}^2 / \sum_{i<j} D_{ij}^2$, the part of the distance energy that sampling noise alone
produces (a stress below it cannot be told apart from noise).

Encodings (:data:`ENCODING_NAMES`): ``sinusoidal``, ``rope``, ``alibi`` and ``none`` as
:func:`posgeom.encodings.encoding_distances` with width ``d`` and ``n_heads``; ``random`` (a table at
initialisation, $\sigma = 0.02$); ``learned[:MODEL]``, the position table of a pretrained model (default
``get_settings().pretrained``), rows $i + o$ for corpus position $i$ with offset $o = 1$ under the
``"content"`` policy (the model's position 0 holds ``[CLS]``) and $o = 0$ otherwise; ``mds[:RANK]``,
classical MDS of $D$ at the given rank (default: the numerical rank of $B$, which reproduces $D$ exactly).

Paper-like defaults (the paper does not state them): width $d = 768$ and 12 heads
(BERT-base) for real corpora, $d = 50$ and 5 heads for synthetic ones (claim C5's $n = d = 50$).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .real import CORPORA
from .stats import CorpusStatistics, corpus_counts
from .synthetic import FAMILIES, family_parameters, make_corpus

__all__ = [
    "CorpusSpec", "ENCODING_NAMES", "parse_corpus_spec", "parse_encodings", "load_statistics", "corpus_report",
    "stress_report",
]

ENCODING_NAMES = ("sinusoidal", "rope", "alibi", "none", "random", "learned", "mds")
#: Real corpora: BERT-base width and heads; synthetic corpora: claim C5's d = 50 (5 heads of width 10).
_WIDTH = {"real": (768, 12), "synthetic": (50, 5)}


@dataclass(frozen=True)
class CorpusSpec:
    """A parsed ``--corpus`` value: ``kind`` is ``"named"``, ``"synthetic"`` or ``"path"``."""

    kind: str
    name: str
    params: dict

    def __str__(self) -> str:
        if self.kind == "synthetic":
            extra = ",".join(f"{k}={v}" for k, v in self.params.items())
            return f"synthetic:{self.name}" + (f":{extra}" if extra else "")
        return self.name


def _parse_value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_corpus_spec(spec: str) -> CorpusSpec:
    """Parse ``"sst2"``, ``"imdb"``, ``"synthetic:FAMILY[:k=v,...]"`` or a path (module docstring)."""
    spec = str(spec).strip()
    valid = f"valid corpora are {', '.join(CORPORA)}, " + ", ".join(f"synthetic:{f}" for f in FAMILIES) + ", or a path"
    if spec in CORPORA:
        return CorpusSpec("named", spec, {})
    if spec == "synthetic" or spec.startswith("synthetic:"):
        parts = spec.split(":", 2)
        if len(parts) < 2 or parts[1] not in FAMILIES:
            raise ValueError(f"unknown corpus {spec!r}; {valid}")
        family = parts[1]
        params = {}
        if len(parts) == 3 and parts[2]:
            allowed = list(family_parameters(family))
            for item in parts[2].split(","):
                if "=" not in item:
                    raise ValueError(
                        f"synthetic parameter {item!r} is not key=value; valid keys for {family}: {', '.join(allowed)}"
                    )
                key, value = (s.strip() for s in item.split("=", 1))
                if key not in allowed:
                    raise ValueError(
                        f"unknown parameter {key!r} for synthetic:{family}; valid keys are {', '.join(allowed)}"
                    )
                params[key] = _parse_value(value)
        return CorpusSpec("synthetic", family, params)
    if Path(spec).expanduser().exists():
        return CorpusSpec("path", str(Path(spec).expanduser()), {})
    raise ValueError(f"unknown corpus {spec!r}; {valid}")


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
        if arg and name not in ("learned", "mds"):
            raise ValueError(f"encoding {name!r} takes no argument (got {item!r}); only learned:MODEL and mds:RANK do")
        if name == "mds" and arg:
            try:
                if int(arg) < 1:
                    raise ValueError
            except ValueError:
                raise ValueError(f"mds:RANK needs a positive integer rank; got {arg!r}") from None
        out.append((name, arg or None))
    if not out:
        raise ValueError(f"no encoding given; valid encodings are {', '.join(ENCODING_NAMES)}")
    return out


def load_statistics(
    spec: str | CorpusSpec,
    split: str | None = None,
    n_positions: int | None = None,
    special: str | None = None,
    *,
    seed: int | None = None,
    **options,
) -> CorpusStatistics:
    """Counts of any corpus specification.

    A counts file (``.npz`` written by ``posgeom counts``, :func:`posgeom.corpora.countsfile.load_counts`) is
    read as it is (no other option applies). Synthetic corpora are generated (``n_positions`` is the family's;
    ``split`` and ``special`` do not apply and must be None; ``seed`` defaults to ``get_settings().seed``
    unless the spec sets it); real corpora go through :func:`posgeom.corpora.stats.corpus_counts` (``options``: tokenizer, data_dir, verify,
    on_empty, text_column, br_tags, cache, cache_dir, progress). ``special`` defaults to ``"model"``.

    Returns
    -------
    CorpusStatistics
    """
    from ..config import get_settings

    spec = spec if isinstance(spec, CorpusSpec) else parse_corpus_spec(spec)
    if spec.kind == "path" and Path(spec.name).suffix == ".npz":  # a counts file (posgeom counts)
        from .countsfile import load_counts

        given = sorted(k for k, v in {"split": split, "n_positions": n_positions, "special": special, **options}.items()
                       if v is not None and k not in ("progress", "cache", "cache_dir"))
        if given:
            raise ValueError(
                f"{', '.join(given)} do(es) not apply to a counts file: it fixed how the corpus was counted"
            )
        return load_counts(spec.name)
    if spec.kind == "synthetic":
        if split is not None:
            raise ValueError("--split does not apply to synthetic corpora (set n_sequences/seed in the spec instead)")
        if special is not None:
            raise ValueError("--special does not apply to synthetic corpora (they have no special tokens)")
        # options left at None are unset; progress and the cache settings are harmless for any corpus
        bad = sorted(k for k, v in options.items() if v is not None and k not in ("progress", "cache", "cache_dir"))
        if bad:
            flags = ", ".join(f"--{k.replace('_', '-')}" for k in bad)
            raise ValueError(f"{flags} do(es) not apply to synthetic corpora (options {', '.join(bad)})")
        params = dict(spec.params)
        if n_positions is not None:
            if "n_positions" in params and params["n_positions"] != n_positions:
                raise ValueError("n_positions is given twice (in the spec and as --positions) with different values")
            params["n_positions"] = n_positions
        if "seed" not in params:
            params["seed"] = get_settings().seed if seed is None else seed
        corpus = make_corpus(spec.name, **params)
        counts = corpus.counts()
        n = corpus.n_positions
        info = {
            "corpus": str(spec), "split": None, "family": spec.name,
            "params": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in corpus.params.items()
                       if k not in ("weights", "anchors_pi", "pi", "transition")},
            "options": {"n_positions": n, "special": None}, "cache_hit": False,
        }
        return CorpusStatistics(counts, corpus.lengths.copy(), int(np.count_nonzero(corpus.lengths > n)), info)
    options = {k: v for k, v in options.items() if v is not None}
    return corpus_counts(spec.name, split, n_positions, special=special or "model", **options)


def _as_statistics(stats) -> CorpusStatistics:
    """Corpus statistics as given, or read from a counts file path."""
    if isinstance(stats, (str, Path)):
        from .countsfile import load_counts

        return load_counts(stats)
    if not isinstance(stats, CorpusStatistics):
        raise ValueError(
            f"expected CorpusStatistics or the path of a counts file; got {type(stats).__name__} "
            "(use load_statistics, corpus_counts or load_counts)"
        )
    return stats


def _histogram(lengths: np.ndarray, bins: int) -> dict:
    """Integer-width bins ``[edges[k], edges[k+1])`` from 0 past the longest length, at most ``bins`` of them."""
    if lengths.size == 0:
        return {"edges": [], "counts": []}
    hi = int(lengths.max())
    width = max(1, -(-(hi + 1) // bins))  # ceil((hi + 1) / bins)
    edges = np.arange(0, hi + width + 1, width)
    counts, _ = np.histogram(lengths, bins=edges)
    return {"edges": edges.astype(int).tolist(), "counts": counts.astype(int).tolist()}


def corpus_report(stats: CorpusStatistics, bins: int = 20) -> dict:
    """Lengths histogram, reach $N_i$ and vocabulary coverage per position (module docstring).

    Returns
    -------
    dict
        ``lengths`` (summary and histogram; ``edges`` are left-closed bins), ``reach`` (n_positions,),
        ``types`` (n_positions,) distinct tokens per position, ``coverage`` (n_positions,) as a fraction
        of ``types_total``, and the provenance ``info``.
    """
    stats = _as_statistics(stats)
    c = stats.counts
    L = np.asarray(stats.full_lengths)
    types = np.diff(c.counts.indptr).astype(int)
    seen = np.unique(c.counts.indices).size
    return {
        "corpus": stats.info.get("corpus"), "split": stats.info.get("split"),
        "n_sequences": int(c.n_sequences), "n_positions": int(c.n_positions), "vocab_size": int(c.vocab_size),
        "n_truncated": int(stats.n_truncated),
        "lengths": {
            "min": int(L.min()) if L.size else 0, "median": float(np.median(L)) if L.size else 0.0,
            "mean": float(L.mean()) if L.size else 0.0, "max": int(L.max()) if L.size else 0,
            "histogram": _histogram(L, bins),
        },
        "reach": c.reach.astype(int).tolist(),
        "types": types.tolist(),
        "types_total": int(seen),
        "coverage": (types / seen if seen else np.zeros_like(types, dtype=float)).round(6).tolist(),
        "info": stats.info,
    }


def _stress_rank(D: np.ndarray, mds, threshold: float) -> int:
    """``effective_rank(D, "stress", threshold=threshold)`` from the MDS already computed.

    The stress-versus-rank curve is computed on doubling prefixes (ranks 1..16, 1..32, ...) and stops at
    the first prefix that reaches ``threshold``: the same first rank, at a cost that grows with that rank
    (at most twice the work up to it) instead of with n, which matters at n in the thousands.
    """
    from ..geometry import mds_stress_curve

    if threshold < 0:
        raise ValueError(f"threshold must be >= 0; got {threshold}")
    top = D.shape[0] - 1
    width = 16
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


def _learned_table(model: str | None, n_needed: int):
    from .pretrained import load_pretrained

    pm = load_pretrained(model, device="cpu")
    P = pm.position_table()
    if P.shape[0] < n_needed:
        raise ValueError(
            f"model {pm.name!r} has {P.shape[0]} positions but the corpus needs {n_needed}; reduce --positions"
        )
    return pm.name, P


def stress_report(
    stats: CorpusStatistics,
    encodings="sinusoidal,rope,alibi,mds,none",
    *,
    min_count: int = 1,
    alpha: float = 0.0,
    hellinger: str = "chord",
    d: int | None = None,
    n_heads: int | None = None,
    synthetic: bool | None = None,
    noise_method: str = "bootstrap",
    noise_reps: int = 20,
    seed: int = 0,
    tol: float = 1e-3,
    q: float = 0.99,
    threshold: float = 0.01,
    rank_criteria=None,
    progress: bool | None = None,
    extra=None,
    keep_distances: bool = False,
) -> dict:
    """Stress of each encoding against the corpus's Hellinger geometry, effective ranks, noise floor.

    Parameters
    ----------
    stats : CorpusStatistics or path
        From :func:`load_statistics`, :func:`posgeom.corpora.stats.corpus_counts` or
        :func:`posgeom.corpora.countsfile.load_counts`, or the path of a counts file (read by the latter).
    encodings : str or list of (name, arg)
        See :func:`parse_encodings`.
    min_count, alpha
        As :func:`posgeom.geometry.positional_marginals` (low-count positions dropped and listed).
    hellinger : {"chord", "normalized", "geodesic"}
    d, n_heads : int, optional
        Width and heads; default (768, 12) for real corpora, (50, 5) for synthetic ones (which one is
        read from ``stats.info``).
    noise_method, noise_reps, seed
        As :func:`posgeom.geometry.noise_floor`.
    tol, q, threshold
        Parameters of the effective-rank criteria ``tol``, ``mass``, ``stress``.
    extra : mapping of str to callable, optional
        More encodings given by their geometry: label → function of the kept positions (int array of
        shape (k,)) returning their (k, k) distances (e.g. a model's own table, read by
        :mod:`posgeom.diagnose`). Compared exactly like the named encodings.
    keep_distances : bool
        Also return ``distances``: ``positions`` (k,), ``D`` (k, k) and ``encodings[label]`` (k, k) arrays
        (not JSON-ready).
    rank_criteria : sequence of str, optional
        The effective-rank criteria computed (default all three); the others are ``None``. The
        ``"stress"`` criterion costs one pass over the n (n - 1) / 2 pairs per MDS rank tried, which
        dominates at n in the thousands.

    Returns
    -------
    dict
        ``stress[encoding][normalization]``, ``monotonicity[encoding]`` (violation rate, Spearman's rho,
        separation raw and over the median distance), ``effective_rank[criterion]``, ``noise_floor``,
        ``positions_kept``/``positions_dropped``, ``options`` (every option used) and ``info``.
    """
    import warnings

    from ..progress import tqdm

    from .. import encodings as enc
    from ..geometry import (
        EFFECTIVE_RANK_CRITERIA, STRESS_NORMALIZATIONS, classical_mds, effective_rank, euclidean_distances,
        hellinger_matrix, noise_floor, positional_marginals, separation, spearman, stress, violation_rate,
    )

    stats = _as_statistics(stats)
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
    D = hellinger_matrix(marg, kind=hellinger)
    mds = classical_mds(D)
    n_full = int(kept.max()) + 1
    special = stats.info.get("options", {}).get("special")
    offset = 1 if special == "content" else 0
    results, notes, labels, order, kept_distances = {}, [], [], {}, {}
    bar = tqdm(items, desc="encodings", unit="encoding", disable=(None if progress is None else not progress))
    for name, arg in bar:
        label = name if arg is None else f"{name}:{arg}"
        if name == "mds":
            k = None if arg is None else int(arg)
            if k is not None and k > kept.size:
                raise ValueError(f"mds:{k} exceeds the {kept.size} kept positions")
            emb = mds.embedding if k is None else classical_mds(D, k).embedding
            Dhat = euclidean_distances(emb)
            label = f"mds:{emb.shape[1]}" if arg is None else label
        elif name == "extra":
            label = arg
            Dhat = np.asarray(extra[arg](kept), dtype=np.float64)
            if Dhat.shape != D.shape:
                raise ValueError(f"encoding {label!r} gave distances of shape {Dhat.shape}; expected {D.shape}")
        elif name == "learned":
            model_name, P = _learned_table(arg, n_full + offset)
            Dhat = enc.table_distances(P[kept + offset])
            label = f"learned:{model_name}"
        else:
            opts = {"seed": seed} if name == "random" else {}
            Dfull = enc.encoding_distances(name, n_full, d=d, n_heads=n_heads, **opts)
            Dhat = Dfull[np.ix_(kept, kept)]
        row = {}
        for norm in STRESS_NORMALIZATIONS:
            try:
                row[norm] = stress(D, Dhat, norm, as_distances=True)
            except ValueError as err:
                row[norm] = None
                notes.append(f"{label} {norm}: {err}")
        results[label] = row
        labels.append(label)
        with warnings.catch_warnings():
            # a constant Dhat (NoPE) leaves the violation rate and Spearman's rho undefined: noted, not warned
            warnings.simplefilter("ignore", RuntimeWarning)
            rate, rho = violation_rate(D, Dhat, as_distances=True), spearman(D, Dhat, as_distances=True)
        sep = separation(Dhat, as_distances=True)
        if not np.isfinite(rate):
            notes.append(f"{label} violation rate: undefined (its distances are all equal)")
        order[label] = {
            "violation_rate": float(rate) if np.isfinite(rate) else None,
            "spearman": float(rho) if np.isfinite(rho) else None,
            "separation": sep.raw, "separation_normalized": sep.normalized,
        }
        if keep_distances:
            kept_distances[label] = Dhat
    ranks = {}
    for crit in EFFECTIVE_RANK_CRITERIA:
        if crit not in chosen:
            ranks[crit] = None
            notes.append(f"effective rank {crit}: not computed (rank criteria {', '.join(chosen) or 'none'})")
            continue
        try:
            if crit == "stress":
                ranks[crit] = _stress_rank(D, mds, threshold)
            else:
                ranks[crit] = effective_rank(mds.eigenvalues, crit, tol=tol, q=q, threshold=threshold)
        except ValueError as err:
            ranks[crit] = None
            notes.append(f"effective rank {crit}: {err}")
    show = sys.stderr.isatty() if progress is None else bool(progress)
    iu = np.triu_indices(kept.size, k=1)
    try:
        # the floor of the same positions as D (marg's kept ones); only defined for alpha = 0
        nf = noise_floor(marg, noise_method, noise_reps, seed, kind=hellinger, progress=show).matrix[iu]
    except ValueError as err:
        nf = None
        notes.append(f"noise floor: {err}")
    d2 = float(np.sum(D[iu] ** 2))
    out = {
        "corpus": stats.info.get("corpus"), "split": stats.info.get("split"),
        "n_sequences": int(stats.counts.n_sequences), "n_truncated": int(stats.n_truncated),
        "n_positions": int(stats.counts.n_positions),
        "positions_kept": int(kept.size), "positions_dropped": [int(i) for i in marg.dropped],
        "stress": results,
        "monotonicity": order,
        "effective_rank": ranks,
        "mds": {"clipped_mass": float(mds.clipped_mass), "rank": int(mds.embedding.shape[1]),
                "eigenvalues": [float(x) for x in mds.eigenvalues[: min(10, kept.size)]]},
        "noise_floor": {
            # both methods resample the counts themselves (multinomial or hypergeometric), never the texts,
            # so a counts file gives the same floor as the corpus
            "method": noise_method, "n_rep": int(noise_reps), "resampled_from": "counts",
            "mean_floor": None if nf is None else float(nf.mean()), "mean_distance": float(D[iu].mean()),
            "energy_ratio": None if nf is None or d2 == 0 else float(np.sum(nf**2)) / d2,
        },
        "options": {
            "encodings": labels, "min_count": int(min_count), "alpha": float(alpha), "hellinger": hellinger,
            "d": d, "n_heads": n_heads, "learned_offset": offset, "noise_method": noise_method,
            "noise_reps": int(noise_reps), "seed": int(seed), "rank_tol": tol, "rank_mass_q": q,
            "rank_stress_threshold": threshold, "rank_criteria": list(chosen),
            "normalizations": list(STRESS_NORMALIZATIONS),
            **{k: v for k, v in stats.info.get("options", {}).items()},
        },
        "notes": notes,
        "info": stats.info,
    }
    if keep_distances:
        out["distances"] = {"positions": kept, "D": D, "encodings": kept_distances}
    return out
