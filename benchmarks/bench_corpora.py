"""Benchmark (issue 4): IMDB train raw text → positional counts, against the bare fast tokenizer.

Targets
-------
* cold: ``corpus_counts(CorpusOptions("imdb", "train", 512, br_tags="keep"))`` with an empty cache takes at most 1.2 ×
  the time of the reference, the transformers fast tokenizer's batch call ``tokenizer(texts,
  truncation=True, max_length=512)`` on the same raw texts (already in memory). ``br_tags="keep"``
  makes both sides tokenise exactly the same texts (the IMDB default, ``"space"``, has ~4% fewer
  tokens). The cold pipeline includes everything the reference does not: reading the parquet file,
  its sha256 check, tokenising without truncation (for the full lengths), truncation, counting and
  writing the cache.
* warm: the same call with the cache filled takes at most 1 s (file checksum, tokenizer fingerprint,
  reading and verifying the cached counts), measured in this process and in a fresh one (call only,
  imports excluded).

Run from the repository root (data from ``--data-dir``, else ``POSGEOM_DATA_DIR``, else ``../shared/data``)::

    python benchmarks/bench_corpora.py [--repeat 2]

Ratios use the best of ``--repeat`` runs of each side; the machine's other load affects both sides.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM_SNIPPET = """
import sys, time
from posgeom.corpora import CorpusOptions, corpus_counts
t = time.perf_counter()
s = corpus_counts(CorpusOptions("imdb", "train", 512, br_tags="keep"), data_dir=sys.argv[1], progress=False)
dt = time.perf_counter() - t
assert s.cache_hit, "expected a cache hit"
print(dt)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="folder laid out like shared/data")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side (best is kept)")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    data = Path(args.data_dir or os.environ.get("POSGEOM_DATA_DIR") or repo.parent / "shared" / "data")
    if not (data / "imdb" / "train.parquet").is_file():
        print(f"IMDB not found under {data}; pass --data-dir or set POSGEOM_DATA_DIR", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    import numpy as np
    import pyarrow.parquet as pq

    from posgeom.corpora import CorpusOptions, corpus_counts, load_tokenizer

    texts = pq.read_table(data / "imdb" / "train.parquet", columns=["text"]).column("text").to_pylist()
    tok = load_tokenizer()
    print(f"IMDB train: {len(texts)} reviews; tokenizer {tok.posgeom_name}; n = 512; 'model' policy")

    ref_times, cold_times = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        enc = tok(texts, truncation=True, max_length=512)
        ref_times.append(time.perf_counter() - t)
        n_ref_tokens = sum(map(len, enc["input_ids"]))
        del enc
        with tempfile.TemporaryDirectory() as cache:
            os.environ["POSGEOM_CACHE_DIR"] = cache
            t = time.perf_counter()
            stats = corpus_counts(CorpusOptions("imdb", "train", 512, br_tags="keep"), data_dir=data, progress=False)
            cold_times.append(time.perf_counter() - t)
            assert not stats.cache_hit
            # the same texts, the same truncation: exactly the reference's tokens are counted
            assert int(stats.counts.reach.sum()) == n_ref_tokens, "counted tokens differ from the reference"
            t = time.perf_counter()
            warm = corpus_counts(CorpusOptions("imdb", "train", 512, br_tags="keep"), data_dir=data, progress=False)
            warm_in = time.perf_counter() - t
            assert warm.cache_hit and warm.counts == stats.counts
            proc = subprocess.run(
                [sys.executable, "-c", WARM_SNIPPET, str(data)], capture_output=True, text=True, check=True,
                env={**os.environ, "POSGEOM_CACHE_DIR": cache},
            )
            warm_fresh = float(proc.stdout.strip().splitlines()[-1])
    ref, cold = min(ref_times), min(cold_times)
    print(f"reference  tokenizer(texts, truncation=True, max_length=512): {ref:8.3f} s ({n_ref_tokens} tokens)")
    print(f"cold       corpus_counts (read, verify, tokenise, count, cache): {cold:8.3f} s "
          f"({int(stats.counts.reach.sum())} tokens counted, {stats.n_truncated} truncated)")
    print(f"warm       corpus_counts from the cache, this process:          {warm_in:8.3f} s")
    print(f"warm       corpus_counts from the cache, fresh process:         {warm_fresh:8.3f} s")
    ratio = cold / ref
    ok_cold, ok_warm = ratio <= 1.2, max(warm_in, warm_fresh) <= 1.0
    print(f"ratio cold / reference = {ratio:.3f}  (target <= 1.2)  {'PASS' if ok_cold else 'FAIL'}")
    print(f"warm cache = {max(warm_in, warm_fresh):.3f} s  (target <= 1 s)  {'PASS' if ok_warm else 'FAIL'}")
    if args.repeat > 1:
        print("all runs: reference " + ", ".join(f"{x:.2f}" for x in ref_times)
              + " | cold " + ", ".join(f"{x:.2f}" for x in cold_times))
    _ = np  # numpy is imported so that its import time is not charged to the first timed call
    return 0 if ok_cold and ok_warm else 1


if __name__ == "__main__":
    sys.exit(main())
