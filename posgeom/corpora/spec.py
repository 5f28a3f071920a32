r"""Corpus specifications (``--corpus`` values) → corpus statistics, and the corpus report.

A specification (:func:`parse_corpus_spec`) is ``"sst2"``, ``"imdb"``, ``"synthetic:FAMILY"`` optionally
followed by ``:key=value,...`` (e.g. ``"synthetic:drift:anchors=3,n_sequences=5000"``), a file or folder of
texts, or a counts file (``posgeom counts``); :func:`load_statistics` turns one into corpus statistics.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .options import CorpusOptions
from .real import CORPORA
from .stats import CorpusStatistics, corpus_counts
from .synthetic import FAMILIES, family_parameters, make_corpus

__all__ = ["CorpusSpec", "parse_corpus_spec", "load_statistics", "as_statistics", "corpus_report"]

#: Options that apply to any corpus (how it is shown or cached, not what is counted).
_HARMLESS = ("progress", "cache", "cache_dir")


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
    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    for cast in (int, float):
        with contextlib.suppress(ValueError):
            return cast(text)
    return text


def parse_corpus_spec(spec: str) -> CorpusSpec:
    """Parse ``"sst2"``, ``"imdb"``, ``"synthetic:FAMILY[:k=v,...]"`` or a path into a :class:`CorpusSpec`
    (``params``: the synthetic family's)."""
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
                    raise ValueError(f"synthetic parameter {item!r} is not key=value; valid keys for {family}: "
                                     f"{', '.join(allowed)}")
                key, value = (s.strip() for s in item.split("=", 1))
                if key not in allowed:
                    raise ValueError(f"unknown parameter {key!r} for synthetic:{family}; valid keys are "
                                     f"{', '.join(allowed)}")
                params[key] = _parse_value(value)
        return CorpusSpec("synthetic", family, params)
    if Path(spec).expanduser().exists():
        return CorpusSpec("path", str(Path(spec).expanduser()), {})
    raise ValueError(f"unknown corpus {spec!r}; {valid}")


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

    A counts file is read as it is and a synthetic corpus generated (options that do not apply to them
    are a ``ValueError``); a real corpus goes through :func:`posgeom.corpora.stats.corpus_counts`.

    Parameters
    ----------
    spec : str or CorpusSpec
        As :func:`parse_corpus_spec`.
    split : str, optional
        A real corpus's split.
    n_positions : int, optional
        $n$, the positions counted (default: the corpus's, :func:`posgeom.corpora.stats.default_positions`).
    special : {"model", "content"}, optional
        The special-token policy of a real corpus (default ``"model"``).
    seed : int, optional
        A synthetic corpus's seed, unless the spec sets it (default ``get_settings().seed``).
    **options
        Passed to :func:`posgeom.corpora.stats.corpus_counts`.
    """
    from ..config import get_settings
    spec = spec if isinstance(spec, CorpusSpec) else parse_corpus_spec(spec)
    if spec.kind == "path" and Path(spec.name).suffix == ".npz":  # a counts file (posgeom counts)
        from .countsfile import load_counts
        given = _set_options({"split": split, "n_positions": n_positions, "special": special, **options})
        if given:
            raise ValueError(f"{', '.join(given)} do(es) not apply to a counts file: it fixed how the corpus was "
                             "counted")
        return load_counts(spec.name)
    if spec.kind == "synthetic":
        if split is not None:
            raise ValueError("--split does not apply to synthetic corpora (set n_sequences/seed in the spec instead)")
        if special is not None:
            raise ValueError("--special does not apply to synthetic corpora (they have no special tokens)")
        bad = _set_options(options)
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
    # what defines the counts travels as one CorpusOptions; the rest says how to read and cache the texts
    corpus = CorpusOptions(spec.name, split=split, n_positions=n_positions, special=special or "model",
                           br_tags=options.pop("br_tags", None), tokenizer=options.pop("tokenizer", None))
    return corpus_counts(corpus, **options)


def _set_options(options: dict) -> list[str]:
    """The options given (not None), sorted, other than the harmless ones."""
    return sorted(k for k, v in options.items() if v is not None and k not in _HARMLESS)


def as_statistics(stats) -> CorpusStatistics:
    """``stats`` if it is :class:`CorpusStatistics`, else read from the counts file at that path
    (:func:`posgeom.corpora.countsfile.load_counts`)."""
    if isinstance(stats, (str, Path)):
        from .countsfile import load_counts
        return load_counts(stats)
    if not isinstance(stats, CorpusStatistics):
        raise ValueError(f"expected CorpusStatistics or the path of a counts file; got {type(stats).__name__} "
                         "(use load_statistics, corpus_counts or load_counts)")
    return stats


def _histogram(lengths: np.ndarray, bins: int) -> dict:
    """At most ``bins`` integer-width bins ``[edges[k], edges[k+1])`` from 0 past the longest length."""
    if lengths.size == 0:
        return {"edges": [], "counts": []}
    hi = int(lengths.max())
    width = max(1, -(-(hi + 1) // bins))  # ceil((hi + 1) / bins)
    edges = np.arange(0, hi + width + 1, width)
    counts, _ = np.histogram(lengths, bins=edges)
    return {"edges": edges.astype(int).tolist(), "counts": counts.astype(int).tolist()}


def corpus_report(stats: CorpusStatistics, bins: int = 20) -> dict:
    r"""Lengths histogram (before truncation), reach $N_i$ and vocabulary coverage per position.

    With counts $c_i(w)$: reach $N_i = \sum_w c_i(w)$, types $t_i = \#\{w : c_i(w) > 0\}$ and coverage
    $t_i / \#\{w : \sum_j c_j(w) > 0\}$ (the share of every type seen anywhere).

    Parameters
    ----------
    stats : CorpusStatistics, str or Path
        As :func:`as_statistics`.
    bins : int
        At most this many integer-width bins in the lengths histogram.

    Returns
    -------
    dict
        ``lengths`` (summary and histogram; ``edges`` are left-closed bins), ``reach`` (n_positions,),
        ``types`` (n_positions,) distinct tokens per position, ``coverage`` (n_positions,) as a fraction
        of ``types_total``, and the provenance ``info``.
    """
    stats = as_statistics(stats)
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
