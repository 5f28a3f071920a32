"""Benchmarks of corpus geometry at scale (issue 20): sharded counting on Dask, and the geometry at large n.

Measured in one run, each against its reference:

1. Throughput: counting the same IMDB shards (train + test, parquet, n = 512) in one process
   (``count_corpus`` without Dask) and on a ``LocalCluster`` of 1 and 2 worker processes (started and warmed
   up before the clock starts). Scaling efficiency = rate(2 workers) / (2 x rate(one process)); the issue's
   goal is >= 0.8 once tokenisation dominates.
2. Dask's overhead on a small corpus (SST-2 train, one shard, n = 64): ``posgeom counts`` end to end in one
   process against ``--workers 2`` (cluster start and shutdown included), and against a warm cluster.
3. Growth of ``hellinger_matrix`` with n = 512 ... 8192 (counts of a corpus whose sequences reach every
   position; v = 30,522): the tiled sparse Gram product against the untiled one (``tile_rows=0``), time
   and peak extra memory (tracemalloc), and the growth exponent between successive n.
4. Peak memory of a worker counting one shard at n = 8192, v = 256,000 (token ids drawn from a Zipf law,
   in a fresh process: its maximum resident size, with the partial counts and one reduce step).
5. With ``--geometry``: the geometry after the counts at n = 8192 (Hellinger, classical MDS, distances and
   stress of the sinusoidal, RoPE and ALiBi encodings, bootstrap noise floor), time and the process's peak
   resident memory.

Timings are the best of ``--repeat`` runs. The machine may be shared with other jobs: both sides of each
ratio then slow down together, the absolute rates less so. Exit code 0 when the tiled Hellinger growth from
4096 to 8192 stays below n^2.3 and the tiled product is no slower than the untiled one at n = 8192.
Run: ``python benchmarks/bench_counts_dask.py [--reviews 20000] [--geometry]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def write_imdb_shards(data_dir: Path, folder: Path, reviews: int, n_shards: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    half = reviews // 2
    table = pa.concat_tables(
        [pq.read_table(data_dir / "imdb" / f"{s}.parquet").slice(0, half) for s in ("train", "test")]
    )
    per = -(-table.num_rows // n_shards)
    paths = []
    for k in range(n_shards):
        path = folder / f"imdb-{k:03d}.parquet"
        pq.write_table(table.slice(k * per, per), path)
        paths.append(str(path))
    return paths


def warm_up():
    """Run on every worker: imports, the tokenizer, the compiled counting kernels (a fresh worker's first
    shard would otherwise pay several seconds for them)."""
    from posgeom.corpora import load_tokenizer, tokenize_texts

    tokenize_texts(["a warm-up text"] * 4, load_tokenizer(), 16).counts()


def peak_rss_mib():
    """Run on every worker: the process's peak resident memory so far."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_throughput(shards, repeat):
    from distributed import Client, LocalCluster

    from posgeom.corpora import count_corpus

    kw = dict(n_positions=512, br_tags="space", cache=False, progress=False)
    warm_up()  # the same warm-up as every worker gets
    t_one, ref = best(lambda: count_corpus(shards, **kw), repeat)
    tokens = ref.info["n_tokens"]
    print(f"\n1. throughput: {len(shards)} IMDB shards, {ref.info['n_sequences']} reviews, {tokens} tokens counted (n = 512)")
    print(f"   one process (no Dask)  : {t_one:7.2f} s  {tokens / t_one / 1e3:8.0f} k tokens/s")
    rates = {0: tokens / t_one}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.run(warm_up)
            t, got = best(lambda: count_corpus(shards, client=client, **kw), repeat)
            peak = max(client.run(peak_rss_mib).values())
        assert got.counts == ref.counts, "Dask counts differ from the single-process counts"
        rates[workers] = tokens / t
        print(f"   Dask, {workers} worker(s)       : {t:7.2f} s  {rates[workers] / 1e3:8.0f} k tokens/s  "
              f"({rates[workers] / rates[0]:.2f} x one process); worker peak memory {peak:.0f} MiB")
    eff = rates[2] / (2 * rates[0])
    print(f"   scaling efficiency, 2 workers vs one process: {eff:.2f} (goal >= 0.8; counts identical: yes)")
    return rates, eff


def bench_overhead(data_dir: Path, repeat):
    from distributed import Client, LocalCluster

    from posgeom.corpora import count_corpus

    sst2 = str(data_dir / "sst2" / "train.parquet")
    kw = dict(n_positions=64, text_column="sentence", cache=False, progress=False)
    warm_up()
    t_one, ref = best(lambda: count_corpus(sst2, **kw), repeat)
    t_cold, _ = best(lambda: count_corpus(sst2, workers=2, **kw), 1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(warm_up)
        t_warm, got = best(lambda: count_corpus(sst2, client=client, **kw), repeat)
    assert got.counts == ref.counts
    print(f"\n2. Dask overhead on SST-2 train ({ref.info['n_sequences']} sentences, {ref.info['n_tokens']} tokens, one shard)")
    print(f"   one process            : {t_one:7.2f} s")
    print(f"   --workers 2, end to end: {t_cold:7.2f} s  (+{t_cold - t_one:.1f} s: cluster start, imports in the workers, shutdown)")
    print(f"   warm 2-worker cluster  : {t_warm:7.2f} s  (+{t_warm - t_one:.2f} s; one shard: one worker counts it)")
    return t_one, t_cold, t_warm


def zipf_stream(n_seq, n, v, seed=0):
    """Sequences of length n, Zipfian ids whose distribution drifts with the position."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, v + 1, dtype=np.float64)
    p = ranks**-1.05
    p /= p.sum()
    ids = rng.choice(v, size=n_seq * n, p=p)
    pos = np.tile(np.arange(n), n_seq)
    return ((ids + (pos // 16) * 7) % v).astype(np.int32), np.full(n_seq, n, dtype=np.int64)


def bench_hellinger(sizes, repeat):
    from posgeom.geometry import _pairwise, hellinger_matrix, positional_counts

    v = 30_522
    print(f"\n3. hellinger_matrix(counts) growth, v = {v}, 1,500 sequences reaching every position")
    print("       n      nnz   untiled (s)   tiled (s)   speed-up   growth (tiled)   peak extra memory (tiled)")
    rows, prev = [], None
    for n in sizes:
        ids, lengths = zipf_stream(1500, n, v, seed=n)
        counts = positional_counts(ids, n, v, lengths=lengths)
        del ids
        t_untiled = None
        if n >= _pairwise.TILE_MIN_N:
            original = _pairwise.gram
            _pairwise.gram = lambda S, tile_rows=None, untiled=original: untiled(S, tile_rows=0)
            try:
                t_untiled, _ = best(lambda c=counts: hellinger_matrix(c), repeat)
            finally:
                _pairwise.gram = original
        t_tiled, D = best(lambda c=counts: hellinger_matrix(c), repeat)
        del D
        gc.collect()
        tracemalloc.start()
        hellinger_matrix(counts)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        growth = None if prev is None else np.log(t_tiled / prev[1]) / np.log(n / prev[0])
        rows.append({"n": n, "nnz": int(counts.counts.nnz), "untiled_s": t_untiled, "tiled_s": t_tiled,
                     "growth": growth, "peak_mb": peak / 2**20})
        print(f"   {n:5d} {counts.counts.nnz:9d}   {'-' if t_untiled is None else f'{t_untiled:9.2f}':>11}   "
              f"{t_tiled:9.2f}   {'-' if t_untiled is None else f'{t_untiled / t_tiled:6.2f} x':>8}   "
              f"{'-' if growth is None else f'n^{growth:.2f}':>14}   {peak / 2**20:8.0f} MiB ({peak / (8 * n * n):.1f} x n^2 doubles)")
        prev = (n, t_tiled)
    return rows


_WORKER_MEMORY = r"""
import json, resource, sys, time
import numpy as np
from posgeom.geometry import positional_counts

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

n, v = 8192, 256_000
positional_counts(np.zeros(4, np.int32), 4, 8)  # compiled kernels loaded before the baseline
ids = np.load(sys.argv[1])
lengths = np.full(ids.size // n, n, dtype=np.int64)
base = rss_mib()
t0 = time.perf_counter()
a = positional_counts(ids, n, v, lengths=lengths)
b = positional_counts(np.roll(ids, 12345), n, v, lengths=lengths)  # a second shard's partial
total = a + b  # one reduce step: two partials and their sum held at once
t = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
csr = lambda c: (c.counts.data.nbytes + c.counts.indices.nbytes + c.counts.indptr.nbytes) / 2**20
print(json.dumps({"tokens": int(ids.size), "ids_mb": ids.nbytes / 2**20, "nnz": int(a.counts.nnz),
                  "partial_mb": csr(a), "total_mb": csr(total), "base_mb": base, "peak_mb": peak, "seconds": t}))
"""


def bench_worker_memory(n_seq):
    ids, _ = zipf_stream(n_seq, 8192, 256_000, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ids.npy"
        np.save(path, ids)
        del ids
        out = subprocess.run(
            [sys.executable, "-c", _WORKER_MEMORY, str(path)], capture_output=True, text=True, check=True,
        )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\n4. worker memory, n = 8192, v = 256,000: one shard of {r['tokens'] / 1e6:.1f} M tokens "
          f"({r['ids_mb']:.0f} MiB of int32 ids)")
    print(f"   partial counts: {r['nnz']} non-zero cells, {r['partial_mb']:.0f} MiB CSR (the sum of two: "
          f"{r['total_mb']:.0f} MiB); two shards counted and added in {r['seconds']:.1f} s")
    print(f"   resident memory: {r['base_mb']:.0f} MiB with the shard's ids loaded (Python, numpy, numba, ids), "
          f"peak {r['peak_mb']:.0f} MiB while counting and adding")
    return r


def bench_geometry(n):
    import resource

    from posgeom import encodings as enc
    from posgeom.geometry import classical_mds, hellinger_matrix, noise_floor, positional_counts, stress

    ids, lengths = zipf_stream(1500, n, 30_522, seed=n)
    counts = positional_counts(ids, n, 30_522, lengths=lengths)
    del ids
    print(f"\n5. geometry after the counts at n = {n} (v = 30,522)")
    steps = {}
    t0 = time.perf_counter()
    D = hellinger_matrix(counts)
    steps["hellinger_matrix"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mds = classical_mds(D)
    steps["classical_mds (full eigendecomposition)"] = time.perf_counter() - t0
    for name in ("sinusoidal", "rope", "alibi"):
        t0 = time.perf_counter()
        stress(D, enc.encoding_distances(name, n, d=768, n_heads=12), "paper", as_distances=True)
        steps[f"{name}: distances and stress (d = 768)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    noise_floor(counts, "bootstrap", 20, 0)
    steps["noise_floor (bootstrap, 20 reps)"] = time.perf_counter() - t0
    for name, t in steps.items():
        print(f"   {name:42s} {t:8.1f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"   MDS rank {mds.embedding.shape[1]}; process peak resident memory {peak / 1024:.1f} GiB")
    return steps, peak


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("POSGEOM_DATA_DIR"), help="folder with sst2/ and imdb/")
    parser.add_argument("--reviews", type=int, default=20_000, help="IMDB reviews (half train, half test)")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--sizes", default="512,1024,2048,4096,8192")
    parser.add_argument("--worker-sequences", type=int, default=2000, help="sequences of 8192 tokens in the memory shard")
    parser.add_argument("--geometry", action="store_true", help="also time the geometry at n = 8192 (minutes)")
    parser.add_argument("--skip-dask", action="store_true", help="only the Hellinger and memory parts")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one tokenizer thread per process: fair scaling
    import posgeom

    print(f"posgeom {posgeom.__version__}, {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} at start)")
    if not args.skip_dask:
        if not args.data_dir:
            parser.error("--data-dir (or POSGEOM_DATA_DIR) is needed for the Dask parts")
        data_dir = Path(args.data_dir)
        with tempfile.TemporaryDirectory() as tmp:
            shards = write_imdb_shards(data_dir, Path(tmp), args.reviews, args.shards)
            bench_throughput(shards, args.repeat)
        bench_overhead(data_dir, args.repeat)
    rows = bench_hellinger([int(s) for s in args.sizes.split(",")], args.repeat)
    bench_worker_memory(args.worker_sequences)
    if args.geometry:
        bench_geometry(8192)
    last = rows[-1]
    ok = last["growth"] is not None and last["growth"] < 2.3 and (
        last["untiled_s"] is None or last["tiled_s"] <= last["untiled_s"]
    )
    growth = "n/a" if last["growth"] is None else f"n^{last['growth']:.2f}"
    print(f"\nsummary: tiled Hellinger growth to n = {last['n']}: {growth} -> {'PASS' if ok else 'FAIL'} (target < n^2.3)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
