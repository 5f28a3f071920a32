"""Streaming and sharded counting give exactly the in-memory counts."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.corpora import count_shard, count_shards, load_tokenizer, make_corpus, tokenize_texts

TEXTS = [
    f"review {i}: " + " ".join(["good", "bad", "plot", "actor", "<br />", "scene"][j % 6] for j in range(i % 23 + 1))
    for i in range(157)
]


@pytest.fixture(scope="module")
def memory_counts():
    tok = load_tokenizer()
    return {
        (sp, br): tokenize_texts(TEXTS, tok, 12, special=sp, br_tags=br).counts()
        for sp in ("model", "content") for br in ("keep", "space")
    }


def write(path, texts):
    pq.write_table(pa.table({"text": texts}), path)
    return path


@pytest.mark.parametrize("special,br", [("model", "keep"), ("content", "space")])
def test_list_of_text_shards(memory_counts, special, br):
    shards = [TEXTS[:50], TEXTS[50:51], TEXTS[51:]]
    got = count_shards(shards, 12, special=special, br_tags=br, batch_size=7)
    assert got == memory_counts[(special, br)]


def test_iterable_dataset_stream(memory_counts, tmp_path):
    path = write(tmp_path / "all.parquet", TEXTS)
    stream = datasets.load_dataset("parquet", data_files=[str(path)], split="train", streaming=True)
    assert isinstance(stream, datasets.IterableDataset)
    assert count_shards(stream, 12, batch_size=16) == memory_counts[("model", "keep")]
    generated = datasets.IterableDataset.from_generator(lambda: ({"sentence": t} for t in TEXTS))
    got = count_shards(generated, 12, special="content", br_tags="space", batch_size=40)
    assert got == memory_counts[("content", "space")]


def test_file_shards_and_dataset_shards(memory_counts, tmp_path):
    paths = [write(tmp_path / f"part{k}.parquet", TEXTS[k::3]) for k in range(3)]
    assert count_shards(paths, 12) == memory_counts[("model", "keep")]
    in_memory = datasets.Dataset.from_dict({"text": TEXTS})
    halves = [in_memory.select(range(80)), in_memory.select(range(80, 157))]
    assert count_shards(halves, 12) == memory_counts[("model", "keep")]


def test_token_id_shards():
    corpus = make_corpus("regimes", n_sequences=900, seed=1)
    whole = corpus.counts()
    seqs = corpus.sequences()
    assert count_shards([seqs[:300], seqs[300:301], seqs[301:]], 50, 100) == whole
    rect = make_corpus("stationary", n_sequences=200, seed=2)
    assert count_shards([rect.tokens[:120], rect.tokens[120:]], 50, 100) == rect.counts()
    ids = datasets.Dataset.from_dict({"input_ids": [s.tolist() for s in seqs]})
    assert count_shard(ids, 50, 100, batch_size=64) == whole


def test_parallel_recipe_of_the_docstring():
    corpus = make_corpus("markov", n_sequences=600, seed=3)
    seqs = corpus.sequences()
    shards = [seqs[k::4] for k in range(4)]
    count = partial(count_shard, n_positions=50, vocab_size=50)
    # "fork" keeps the test fast; the workers count token ids only, never calling the Rust tokenizer
    # (the docstring's "spawn" is for workers that tokenise)
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("fork")) as pool:
        total = sum(pool.map(count, shards))
    assert total == corpus.counts()


def test_bad_shards():
    with pytest.raises(ValueError, match="is not a file; to count a list of texts pass it as one shard"):
        count_shards(["not a path", "nor this"], 8)
    with pytest.raises(ValueError, match="needs vocab_size"):
        count_shard([[1, 2, 3]], 8)
    with pytest.raises(ValueError, match="cannot count a shard of type dict"):
        count_shard({"a": 1}, 8)
    with pytest.raises(ValueError, match="no shards"):
        count_shards([], 8)
    with pytest.raises(ValueError, match="differs from the tokenizer's 30522"):
        count_shard(["some text"], 8, 100)
