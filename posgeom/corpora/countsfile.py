r"""The counts file: a corpus's positional counts and what produced them, in one verified ``.npz``.

``posgeom counts`` writes one (:func:`save_counts`); ``posgeom stress --counts``, ``posgeom corpus-report
--counts`` and the Python API read it back (:func:`load_counts`) as a
:class:`~posgeom.corpora.stats.CorpusStatistics`, so the geometry of a corpus counted once, however large,
is computed from a file of a few megabytes.

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

Sequence lengths are stored as a histogram, not one entry per sequence (a pretraining corpus has
hundreds of millions); :func:`load_counts` expands it to ``full_lengths`` in increasing order, which is
all the reports need (their histograms and quantiles do not depend on the order).

Written atomically: to a temporary file beside the target, flushed and ``fsync``-ed, then renamed over
it (``os.replace``), so a reader sees the old file, the new one or none — never half a file. Read with
verification: a file whose digest does not match its content, or that is not a counts file, is an
error naming the file; nothing is returned from a damaged file.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .cache import arrays_digest

__all__ = ["COUNTS_FORMAT", "COUNTS_KEYS", "save_counts", "load_counts"]

COUNTS_FORMAT = "posgeom-counts/1"
#: Every key of a counts file (the ``digest`` covers all the others).
COUNTS_KEYS = (
    "format", "data", "indices", "indptr", "shape", "n_sequences", "ignore_ids", "length_values", "length_counts",
    "metadata", "digest",
)


def _length_histogram(full_lengths) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.asarray(full_lengths, dtype=np.int64).ravel()
    if lengths.size and lengths.min() < 0:
        raise ValueError("sequence lengths must be non-negative")
    values, counts = np.unique(lengths, return_counts=True)
    return values.astype(np.int64), counts.astype(np.int64)


def _arrays(stats) -> dict:
    mat = stats.counts.counts
    values, counts = _length_histogram(stats.full_lengths)
    return {
        "format": np.asarray(COUNTS_FORMAT),
        "data": np.asarray(mat.data, dtype=np.int64),
        "indices": np.asarray(mat.indices, dtype=np.int64),
        "indptr": np.asarray(mat.indptr, dtype=np.int64),
        "shape": np.asarray(mat.shape, dtype=np.int64),
        "n_sequences": np.asarray(stats.counts.n_sequences, dtype=np.int64),
        "ignore_ids": np.asarray(stats.counts.ignore_ids, dtype=np.int64),
        "length_values": values,
        "length_counts": counts,
    }


def save_counts(path: str | Path, stats, metadata: dict | None = None) -> Path:
    """Write positional counts and their provenance to ``path`` atomically (module docstring).

    Parameters
    ----------
    path : str or Path
        The file to write (``.npz`` is the convention; the folder must exist). An existing file is
        replaced only once the new one is complete on disk.
    stats : CorpusStatistics
        ``counts`` (n_positions, vocab_size), ``full_lengths`` (n_sequences,), ``n_truncated``, ``info``.
    metadata : dict, optional
        JSON-ready provenance stored with the counts; default ``stats.info``. ``n_truncated`` is
        always added.

    Returns
    -------
    Path
        ``path``.
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
    arrays = _arrays(stats)
    arrays["metadata"] = np.asarray(text)
    arrays["digest"] = np.asarray(arrays_digest(arrays))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable (POSIX; not possible on every platform)
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return path


def _read_verified(path: Path) -> dict:
    where = f"counts file {str(path)!r}"
    if not path.is_file():
        raise ValueError(f"{where} does not exist; write one with: posgeom counts --corpus ... --out {path.name}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        reason = f"{type(err).__name__}: {err}"
        raise ValueError(f"{where} cannot be read ({reason}); recompute it with posgeom counts") from None
    missing = [k for k in COUNTS_KEYS if k not in arrays]
    if missing or str(arrays.get("format")) != COUNTS_FORMAT:
        raise ValueError(
            f"{where} is not a posgeom counts file ({COUNTS_FORMAT}; missing {', '.join(missing) or 'nothing'}, "
            f"format {str(arrays.get('format'))!r}); write one with posgeom counts"
        )
    stored = str(arrays.pop("digest"))
    if arrays_digest(arrays) != stored:
        raise ValueError(f"{where} is damaged (its content does not match its digest); recompute it (posgeom counts)")
    return arrays


def load_counts(path: str | Path):
    """Read and verify a counts file (module docstring) as corpus statistics.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    CorpusStatistics
        ``counts`` (n_positions, vocab_size) CSR int64, ``full_lengths`` (n_sequences,) in increasing
        order, ``n_truncated``, ``info`` (the stored metadata, plus ``counts_file`` and
        ``cache_hit = False``), accepted wherever corpus statistics are
        (:func:`posgeom.diagnose.stress.stress_report`, :func:`posgeom.corpora.spec.corpus_report`).
    """
    from ..geometry import PositionalCounts
    from .stats import CorpusStatistics

    path = Path(path).expanduser()
    arrays = _read_verified(path)
    shape = tuple(int(s) for s in arrays["shape"])
    mat = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
    counts = PositionalCounts(mat, int(arrays["n_sequences"]), tuple(arrays["ignore_ids"].tolist()))
    values, numbers = arrays["length_values"], arrays["length_counts"]
    if int(numbers.sum()) != counts.n_sequences:
        raise ValueError(
            f"counts file {str(path)!r} is inconsistent: its length histogram holds {int(numbers.sum())} sequences, "
            f"its counts {counts.n_sequences}; recompute it with posgeom counts"
        )
    full_lengths = np.repeat(values, numbers)
    info = json.loads(str(arrays["metadata"]))
    n_truncated = int(info.pop("n_truncated", np.count_nonzero(full_lengths > counts.n_positions)))
    info.update(counts_file=str(path), cache_hit=False)
    return CorpusStatistics(counts, full_lengths, n_truncated, info)
