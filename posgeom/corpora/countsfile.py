r"""The counts file: a corpus's positional counts and what produced them, in one verified ``.npz``.

``posgeom counts`` writes one (:func:`save_counts`); ``--counts`` options and the Python API read it back
(:func:`load_counts`) as a :class:`~posgeom.corpora.stats.CorpusStatistics`.

Layout (``numpy.savez_compressed``, no pickled objects; :data:`COUNTS_FORMAT` names the version):

=================  ===================  ============================================================
key                dtype, shape         content
=================  ===================  ============================================================
``format``         str, ()              ``"posgeom-counts/1"``
``data``           int64, (nnz,)        the CSR counts $c_i(w)$ of shape ``shape``
``indices``        int64, (nnz,)        their token ids $w$
``indptr``         int64, (n + 1,)      row pointers (row $i$ = position $i$)
``shape``          int64, (2,)          $(n, v)$: positions, vocabulary size
``n_sequences``    int64, ()            sequences counted (including those shorter than $n$)
``ignore_ids``     int64, (k,)          token ids left uncounted (:class:`~posgeom.geometry.PositionalCounts`)
``length_values``  int64, (m,)          distinct sequence lengths before truncation ...
``length_counts``  int64, (m,)          ... and how many sequences have each
``metadata``       str, ()              JSON: provenance (tokenizer and its fingerprint, options,
                                        per-shard content digests and sizes, shards skipped, totals)
``digest``         str, ()              sha256 of every key above (:func:`posgeom.corpora.cache.arrays_digest`)
=================  ===================  ============================================================

Lengths are stored as a histogram (a pretraining corpus has hundreds of millions of sequences);
:func:`load_counts` expands it to ``full_lengths`` in increasing order. Written atomically
(:func:`posgeom.storage.write_durably`); read without trusting the header shapes
(:func:`posgeom.storage.read_npz`) and checked against the digest, so a damaged file is an error naming it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..storage import read_npz, write_durably
from .cache import arrays_digest

__all__ = ["COUNTS_FORMAT", "COUNTS_KEYS", "CountsFileError", "save_counts", "load_counts", "length_histogram"]

COUNTS_FORMAT = "posgeom-counts/1"
#: Every key of a counts file (the ``digest`` covers all the others).
COUNTS_KEYS = (
    "format", "data", "indices", "indptr", "shape", "n_sequences", "ignore_ids", "length_values", "length_counts",
    "metadata", "digest",
)


def length_histogram(full_lengths) -> tuple[np.ndarray, np.ndarray]:
    """``(values, counts)``, both int64 of shape (m,): the distinct sequence lengths and their numbers."""
    lengths = np.asarray(full_lengths, dtype=np.int64).ravel()
    if lengths.size and lengths.min() < 0:
        raise ValueError("sequence lengths must be non-negative")
    values, counts = np.unique(lengths, return_counts=True)
    return values.astype(np.int64), counts.astype(np.int64)


def save_counts(path: str | Path, stats, metadata: dict | None = None) -> Path:
    """Write positional counts and their provenance to ``path`` atomically; return ``path``.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file to write (its folder must exist).
    stats : CorpusStatistics
        ``counts`` (n_positions, vocab_size), ``full_lengths`` (n_sequences,), ``n_truncated``, ``info``.
    metadata : dict, optional
        JSON-ready provenance; default ``stats.info`` (``n_truncated`` is always added).
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist")
    meta = dict(stats.info if metadata is None else metadata)
    meta["n_truncated"] = int(stats.n_truncated)
    try:
        text = json.dumps(meta, sort_keys=True)
    except TypeError as err:
        raise ValueError(f"counts metadata must be JSON-ready: {err}") from None
    mat = stats.counts.counts
    values, counts = length_histogram(stats.full_lengths)
    arrays = {
        "format": np.asarray(COUNTS_FORMAT),
        "data": np.asarray(mat.data, dtype=np.int64),
        "indices": np.asarray(mat.indices, dtype=np.int64),
        "indptr": np.asarray(mat.indptr, dtype=np.int64),
        "shape": np.asarray(mat.shape, dtype=np.int64),
        "n_sequences": np.asarray(stats.counts.n_sequences, dtype=np.int64),
        "ignore_ids": np.asarray(stats.counts.ignore_ids, dtype=np.int64),
        "length_values": values,
        "length_counts": counts,
        "metadata": np.asarray(text),
    }
    arrays["digest"] = np.asarray(arrays_digest(arrays))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    write_durably(path, buffer.getvalue(), fault="counts-save")
    return path


class CountsFileError(ValueError):
    """A counts file that is absent, not a counts file, damaged or inconsistent; ``reason`` says which."""

    def __init__(self, path, reason: str, fix: str = "recompute it with posgeom counts"):
        super().__init__(f"counts file {str(path)!r} {reason}; {fix}")
        self.path, self.reason, self.fix = str(path), reason, fix

    def __reduce__(self):
        return (type(self), (self.path, self.reason, self.fix))


def _read_verified(path: Path) -> dict:
    if path.is_dir():
        raise CountsFileError(path, "is a folder", "give the .npz file that posgeom counts --out wrote")
    if not path.is_file():
        raise CountsFileError(path, "does not exist", f"write one with: posgeom counts --corpus ... --out {path.name}")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise CountsFileError(path, f"cannot be read ({type(err).__name__}: {err})", "check its permissions") from None
    if not raw.startswith(b"PK"):
        raise CountsFileError(path, "is not a counts file (not an .npz archive)",
                              "give a file written by posgeom counts")
    try:
        arrays = read_npz(raw)  # nothing allocated beyond what the file holds
    except ValueError as err:
        raise CountsFileError(path, f"cannot be read ({err})") from None
    missing = [k for k in COUNTS_KEYS if k not in arrays]
    if missing or str(arrays.get("format")) != COUNTS_FORMAT:
        raise CountsFileError(path, f"is not a posgeom counts file ({COUNTS_FORMAT}; missing "
                              f"{', '.join(missing) or 'nothing'}, format {str(arrays.get('format'))!r})",
                              "write one with posgeom counts")
    stored = str(arrays.pop("digest"))
    if arrays_digest(arrays) != stored:
        raise CountsFileError(path, "is damaged (its content does not match its digest)")
    return arrays


def load_counts(path: str | Path):
    """Read and verify the counts file at ``path`` as corpus statistics.

    Returns
    -------
    CorpusStatistics
        ``counts`` (n_positions, vocab_size) CSR int64, ``full_lengths`` (n_sequences,) in increasing
        order, ``n_truncated``, ``info`` (the stored metadata, plus ``counts_file`` and ``cache_hit = False``).
    """
    from ..geometry import PositionalCounts
    from .stats import CorpusStatistics
    path = Path(path).expanduser()
    arrays = _read_verified(path)
    try:  # the digest proves the file unchanged, not well made: a hand-made one may still not add up
        shape = tuple(int(s) for s in arrays["shape"])
        mat = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
        counts = PositionalCounts(mat, int(arrays["n_sequences"]), tuple(arrays["ignore_ids"].tolist()))
        info = json.loads(str(arrays["metadata"]))
        if not isinstance(info, dict):
            raise TypeError("its metadata is not a JSON object")
    except (ValueError, TypeError) as err:
        raise CountsFileError(path, f"is inconsistent ({type(err).__name__}: {err})") from None
    values, numbers = arrays["length_values"], arrays["length_counts"]
    if int(numbers.sum()) != counts.n_sequences:
        raise CountsFileError(path, f"is inconsistent: its length histogram holds {int(numbers.sum())} sequences, "
                              f"its counts {counts.n_sequences}")
    full_lengths = np.repeat(values, numbers)
    n_truncated = int(info.pop("n_truncated", np.count_nonzero(full_lengths > counts.n_positions)))
    info.update(counts_file=str(path), cache_hit=False)
    return CorpusStatistics(counts, full_lengths, n_truncated, info)
