"""Corpora: synthetic families, SST-2 and IMDB loaders, tokenisation, cached positional counts.

:mod:`~posgeom.corpora.synthetic` (seeded families with exact population marginals),
:mod:`~posgeom.corpora.real` (SST-2, IMDB, files of texts), :mod:`~posgeom.corpora.tokenize`,
:mod:`~posgeom.corpora.cache`, :mod:`~posgeom.corpora.options`, :mod:`~posgeom.corpora.stats` (corpus →
cached tokens and counts), :mod:`~posgeom.corpora.sharded` (``posgeom counts``, any size, on Dask),
:mod:`~posgeom.corpora.countsfile` and :mod:`~posgeom.corpora.spec` (``--corpus`` values, ``posgeom
corpus-report``). Heavy libraries are imported only when a function needs them.
"""

from .cache import CACHE_VERSION, ArrayCache, cache_key
from .countsfile import COUNTS_FORMAT, CountsFileError, load_counts, save_counts
from .spec import CorpusSpec, as_statistics, corpus_report, load_statistics, parse_corpus_spec
from .real import (
    CORPORA, ChecksumError, DataSource, DataUnavailableError, TextCorpus, known_checksums, load_texts,
    resolve_source, sha256_file, data_key, describe_source,
)
from .options import CorpusOptions
from .stats import CorpusStatistics, corpus_counts, corpus_tokens, default_br, default_positions
from .sharded import BAD_SHARD_POLICIES, count_corpus
from .shards import SHARD_FORMATS, ShardError, read_shard, resolve_shards
from .synthetic import (
    FAMILIES, PAD, SyntheticCorpus, drift, make_corpus, markov, markov_transition, order_task,
    population_marginals, regimes, stationary, zipf_distribution,
)
from .tokenize import (
    BR_OPTIONS, DEFAULT_TOKENIZER, SPECIAL_POLICIES, TokenizedCorpus, clean_br, load_tokenizer, tokenize_texts,
    tokenizer_fingerprint, tokenizer_folder, tokenizer_name,
)

__all__ = [
    "CACHE_VERSION", "ArrayCache", "cache_key", "CORPORA", "ChecksumError", "DataSource", "DataUnavailableError",
    "TextCorpus", "known_checksums", "load_texts", "resolve_source", "sha256_file", "data_key", "describe_source",
    "CorpusOptions", "CorpusStatistics", "corpus_counts", "corpus_tokens", "default_br", "default_positions",
    "COUNTS_FORMAT", "CountsFileError", "load_counts", "save_counts", "BAD_SHARD_POLICIES", "SHARD_FORMATS",
    "ShardError", "count_corpus", "read_shard", "resolve_shards", "FAMILIES", "PAD", "SyntheticCorpus", "drift",
    "make_corpus", "markov", "markov_transition", "order_task", "population_marginals", "regimes", "stationary",
    "zipf_distribution", "BR_OPTIONS", "DEFAULT_TOKENIZER", "SPECIAL_POLICIES", "TokenizedCorpus", "clean_br",
    "load_tokenizer", "tokenize_texts", "tokenizer_fingerprint", "tokenizer_folder", "tokenizer_name", "CorpusSpec",
    "as_statistics", "corpus_report", "load_statistics", "parse_corpus_spec",
]
