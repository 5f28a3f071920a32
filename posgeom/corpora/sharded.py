r"""Positional counts of a corpus of any size: shard by shard, in one process or on a Dask cluster.

Counts are additive ($c_i(w) = \sum_k c_i^{(S_k)}(w)$, $N_i = \sum_k N_i^{(S_k)}$), so :func:`count_corpus`
is a map-reduce. Map: each shard is read (:mod:`posgeom.corpora.shards`), hashed, tokenised and counted
by the same functions as the single-corpus path, so the counts agree integer for integer. Reduce: partial
counts and length histograms are added, on Dask as a tree of pairs on the workers.

Engines: this process (default; Dask is not imported), a ``LocalCluster`` of ``workers`` processes, or an
existing cluster (``scheduler``/``client``) whose workers have posgeom and can read the shards and the cache.
A task is a pure function of (shard, options), so a dead worker costs a retry.

Cache: each shard's partial counts are a counts file (:mod:`posgeom.corpora.countsfile`) named by the hash
of its key (content digest, tokenizer fingerprint, options); the key stored inside is compared on every
hit, so a renamed or damaged file is reported, recounted and replaced. An interrupted run resumes.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..validation import check_choice, check_int
from .cache import cache_key
from .real import EMPTY_POLICIES
from .shards import ShardError, read_shard, resolve_shards
from .tokenize import (
    DEFAULT_TOKENIZER, check_positions, load_tokenizer, tokenize_texts, tokenizer_fingerprint, tokenizer_name,
    validate_br, validate_special,
)

__all__ = ["BAD_SHARD_POLICIES", "count_corpus"]

#: What to do with a shard that cannot be counted: stop the run, or leave it out and list it.
BAD_SHARD_POLICIES = ("stop", "skip")


@dataclass
class _Partial:
    """Counts of some shards: the sum, the histogram of full lengths, and one record per shard."""

    counts: object = None
    length_values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    length_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    shards: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    #: Warnings met on the worker (a cache file that did not hold): the caller's process shows them.
    problems: list = field(default_factory=list)


def _merge(a: _Partial, b: _Partial) -> _Partial:
    """The partial of the union of two disjoint sets of shards."""
    counts = b.counts if a.counts is None else (a.counts if b.counts is None else a.counts + b.counts)
    values, inverse = np.unique(np.concatenate([a.length_values, b.length_values]), return_inverse=True)
    numbers = np.bincount(inverse, weights=np.concatenate([a.length_counts, b.length_counts]), minlength=values.size)
    return _Partial(counts, values, numbers.astype(np.int64), a.shards + b.shards, a.skipped + b.skipped,
                    a.problems + b.problems)


def _shard_cache_key(sha256: str, options: dict, fingerprint: str) -> dict:
    """What a shard's cached counts depend on: stored in the cache file and compared on every hit."""
    return {"what": "shard", "layout": 2, "sha256": sha256, "tokenizer_sha256": fingerprint,
            "options": {k: options[k] for k in sorted(options)}}


def _cached_shard(entry: Path, key: dict):
    """(counts or None, problem or None): the cached counts if ``entry`` holds them intact under ``key``."""
    from .countsfile import CountsFileError, load_counts
    try:
        hit = load_counts(entry)
        stored = hit.info.get("cache_key")
        record = hit.info["record"]
    except Exception as err:  # noqa: BLE001 - whatever the damage, the answer is "recount and replace"
        reason = err.reason if isinstance(err, CountsFileError) else f"is damaged ({type(err).__name__}: {err})"
        return None, f"shard cache file {entry} {' '.join(reason.split())[:300]}; recounting the shard"
    if stored != key or record.get("sha256") != key["sha256"]:
        return None, (f"shard cache file {entry} holds the counts of another shard or other options (its recorded "
                      "key does not match the shard being counted); recounting the shard")
    return hit, None


def _count_shard_task(shard: str, options: dict, fingerprint: str, tokenizer: str, cache_dir, on_bad_shard: str):
    """Map step (runs on a worker): the partial counts of one shard, from the cache when possible."""
    from .countsfile import length_histogram, save_counts
    from .stats import CorpusStatistics
    try:
        texts, record = read_shard(shard, options["text_column"], options["on_empty"])
    except ShardError as err:
        if on_bad_shard == "stop":
            raise
        return _Partial(skipped=[{"shard": shard, "error": err.reason}])
    entry, problems = None, []
    key = _shard_cache_key(record["sha256"], options, fingerprint)
    if cache_dir is not None:
        # named by its key, but a name proves nothing (a file copied over another's): the key inside is checked
        entry = Path(cache_dir) / f"shard-{cache_key(**key)}.npz"
        if entry.is_symlink():  # never read or replaced through a link (git and shared storage hold links)
            problems.append(f"shard cache file {entry} is a symbolic link: never followed; the shard is counted "
                            "without the cache (delete the link)")
            entry = None
        elif entry.is_file():
            hit, problem = _cached_shard(entry, key)
            if hit is not None:
                rec = {**hit.info["record"], "shard": shard, "cached": True}
                return _Partial(hit.counts, *length_histogram(hit.full_lengths), [rec])
            problems.append(problem)
    tc = tokenize_texts(texts, load_tokenizer(tokenizer), options["n_positions"], special=options["special"],
                        br_tags=options["br_tags"], progress=False)
    del texts
    counts = tc.counts()
    record.update(n_sequences=int(tc.n_sequences), n_tokens=int(counts.reach.sum()), n_truncated=int(tc.n_truncated),
                  n_special_dropped=int(tc.n_special_dropped), cached=False)
    if entry is not None:  # written durably over whatever was there (os.replace)
        entry.parent.mkdir(parents=True, exist_ok=True)
        stats = CorpusStatistics(counts, tc.full_lengths, tc.n_truncated)
        save_counts(entry, stats, {"record": record, "cache_key": key})
    return _Partial(counts, *length_histogram(tc.full_lengths), [record], problems=problems)


def _count_shard_on_worker(*args) -> _Partial:
    """:func:`_count_shard_task` on a Dask worker, without tqdm's cross-process lock."""
    # tqdm's multiprocessing lock is a named semaphore; a SIGKILLed worker leaks it ("leaked semaphore" warning)
    from tqdm.std import TqdmDefaultWriteLock
    if not hasattr(TqdmDefaultWriteLock, "mp_lock"):
        TqdmDefaultWriteLock.mp_lock = None
    return _count_shard_task(*args)


def _reduce_on_dask(client, shards, task_args, bar) -> _Partial:
    """Map on the workers, then add pairs as soon as both are ready (a tree), on the workers too."""
    from distributed import as_completed
    run = _short(json.dumps([repr(a[0]) for a in task_args]))
    keys = [f"posgeom-count-{run}-{_short(s)}" for s in shards]
    leaves = client.map(_count_shard_on_worker, shards, *task_args, key=keys)
    level = list(leaves)
    while len(level) > 1:
        nxt = [client.submit(_merge, a, b, pure=True) for a, b in zip(level[::2], level[1::2])]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    for done in as_completed(leaves):
        if done.status == "error":
            err = done.exception()
            # stop: drop the shards still queued (the merges above them are dropped with them)
            client.cancel([f for f in leaves if f.status == "pending"])
            raise err
        bar.update(1)
    return level[0].result()


def _short(shard: str) -> str:
    return hashlib.sha256(shard.encode()).hexdigest()[:16]


def _client(workers, scheduler):
    """(client, cluster or None): a LocalCluster of ``workers`` processes, or a client of ``scheduler``."""
    import logging
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("counting on Dask (--workers/--scheduler) needs dask.distributed: "
                         "pip install 'posgeom[cluster]'") from None
    if scheduler is not None:
        try:
            return Client(scheduler, timeout="30s"), None
        except (OSError, TimeoutError) as err:
            raise ValueError(f"cannot reach the Dask scheduler {scheduler!r} ({type(err).__name__}: {err})") from None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    return Client(cluster), cluster


def count_corpus(
    corpus,
    n_positions: int = 512,
    *,
    split: str | None = None,
    text_column: str | None = None,
    tokenizer: str | None = None,
    special: str = "model",
    br_tags: str = "keep",
    on_empty: str = "raise",
    workers: int | None = None,
    scheduler: str | None = None,
    client=None,
    on_bad_shard: str = "stop",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
):
    """Positional counts of a sharded corpus, in this process or on Dask.

    Parameters
    ----------
    corpus : str, Path or list of str
        Files, folder, glob, ``fsspec`` URL or Hugging Face dataset id (:func:`resolve_shards`).
    n_positions : int
        $n$.
    split : str, optional
        For a dataset id: the split (default ``"train"``).
    text_column : str, optional
        Default ``"text"``, else ``"sentence"``.
    tokenizer : str, optional
        A name every worker can load (:func:`posgeom.corpora.tokenize.load_tokenizer`).
    special, br_tags
        As :func:`posgeom.corpora.tokenize.tokenize_texts`.
    on_empty : {"raise", "drop", "keep"}
        As :func:`read_shard`.
    workers, scheduler, client : int, str or distributed.Client, optional
        At most one: a ``LocalCluster`` of ``workers`` processes for the run, the address of a running
        Dask scheduler, or a client used as it is (not closed here).
    on_bad_shard : {"stop", "skip"}
        A bad shard raises :class:`ShardError`, or is left out and listed in ``info["shards_skipped"]``.
    cache, cache_dir : bool, path
        Use the per-shard cache, in ``default_cache_dir() / "shards"`` by default (on a cluster: a folder
        every worker can reach).
    progress : bool, optional
        tqdm bar over shards (default: on a terminal only).

    Returns
    -------
    CorpusStatistics
        ``counts`` (n_positions, vocab_size), ``full_lengths`` (n_sequences,) in increasing order,
        ``n_truncated``, ``info`` (provenance: tokenizer fingerprints, options, one record per shard,
        ``shards_skipped``, totals, ``engine``).
    """
    from ..config import default_cache_dir
    from ..progress import tqdm
    from .stats import CorpusStatistics
    validate_special(special)  # every option is checked before a shard is read
    validate_br(br_tags)
    check_choice(on_empty, "on_empty", EMPTY_POLICIES, plural="values")
    check_choice(on_bad_shard, "on_bad_shard", BAD_SHARD_POLICIES, plural="values")
    check_positions(n_positions, special)
    if sum(x is not None for x in (workers, scheduler, client)) > 1:
        raise ValueError("give at most one of workers, scheduler and client")
    if workers is not None:
        check_int(workers, "workers", 1)
    if tokenizer is not None and not isinstance(tokenizer, (str, Path)):
        raise ValueError("tokenizer must be a name or folder that every worker can load, not a tokenizer object")
    tokenizer = DEFAULT_TOKENIZER if tokenizer is None else str(tokenizer)
    shards = resolve_shards(corpus, split)
    if len(set(shards)) != len(shards):
        raise ValueError("a shard is listed twice; each must be counted once")
    fingerprint = tokenizer_fingerprint(tokenizer)
    # a tokenizer that cannot load fails here, not as a bad shard on every worker; its definition's
    # fingerprint is recorded too, which survives a copy of its files elsewhere or a library upgrade
    spec_fingerprint = tokenizer_fingerprint(load_tokenizer(tokenizer))
    options = {"n_positions": int(n_positions), "special": special, "br_tags": br_tags, "text_column": text_column,
               "on_empty": on_empty}
    folder = None
    if cache:
        folder = str(Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir() / "shards")
    task_args = (options, fingerprint, tokenizer, folder, on_bad_shard)
    bar = tqdm(total=len(shards), desc="counting shards", unit="shard",
               disable=None if progress is None else not progress)
    try:
        total, engine = _count_on_engine(shards, task_args, bar, workers, scheduler, client)
    finally:
        bar.close()
    for problem in total.problems:  # raised on the workers, shown here (a worker's warnings stay in its log)
        warnings.warn(problem, stacklevel=2)
    if total.counts is None:
        first = total.skipped[0]
        raise ValueError(f"every shard was bad ({len(total.skipped)}; first {first['shard']!r}: {first['error']})")
    if total.counts.n_sequences == 0:
        raise ValueError(f"corpus {str(corpus)!r} holds no text: its {len(total.shards)} shard(s) gave 0 sequences; "
                         "check the files, --text-column and --on-empty (drop leaves nothing of a corpus of empty "
                         "texts)")
    full_lengths = np.repeat(total.length_values, total.length_counts)
    n_truncated = int(total.length_counts[total.length_values > n_positions].sum())
    listed = isinstance(corpus, (list, tuple))
    info = {
        "corpus": str(corpus) if not listed else f"{len(shards)} shards",
        "split": split,
        "source": {"kind": "shards", "location": str(corpus) if not listed else None, "n_shards": len(shards)},
        "tokenizer": tokenizer_name(tokenizer), "tokenizer_sha256": fingerprint,
        "tokenizer_spec_sha256": spec_fingerprint, "options": options,
        "shards": sorted(total.shards, key=lambda r: r["shard"]),
        "shards_skipped": sorted(total.skipped, key=lambda r: r["shard"]),
        "n_sequences": int(total.counts.n_sequences), "n_tokens": int(total.counts.reach.sum()),
        "on_bad_shard": on_bad_shard, "engine": engine, "cache_hit": False,
    }
    json.dumps(info)  # everything stored in a counts file must be JSON-ready
    return CorpusStatistics(total.counts, full_lengths, n_truncated, info)


def _count_on_engine(shards, task_args, bar, workers, scheduler, client):
    """``(total, engine record)``: the shards counted and added in this process or on Dask."""
    if workers is None and scheduler is None and client is None:
        total = _Partial()
        for shard in shards:
            total = _merge(total, _count_shard_task(shard, *task_args))
            bar.update(1)
        return total, {"kind": "single-process"}
    own = client is None
    client, cluster = _client(workers, scheduler) if own else (client, None)
    try:
        n_workers = len(client.scheduler_info(n_workers=-1)["workers"])
        engine = {"kind": "dask", "workers": n_workers, "scheduler": str(client.scheduler.address)}
        return _reduce_on_dask(client, shards, [[a] * len(shards) for a in task_args], bar), engine
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()
