"""Positional counts and marginals (SPEC section 1) against a plain Python loop."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import posgeom
from posgeom.geometry import accumulate as accumulate_mod
from posgeom.geometry import counting as counting_mod
from posgeom.geometry import PositionalCounts, positional_counts, positional_marginals


def loop_counts(seqs, n, v, ignore=()):
    """c_i(w) = #{x : L > i, x_i = w}, one token at a time."""
    c = np.zeros((n, v), dtype=np.int64)
    for s in seqs:
        for i, w in enumerate(list(s)[:n]):
            if w not in ignore:
                c[i, w] += 1
    return c


def random_corpus(rng, n_seq=40, max_len=15, v=9):
    return [rng.integers(0, v, size=int(rng.integers(0, max_len))).tolist() for _ in range(n_seq)]


def test_docstring_example():
    c = positional_counts([[1, 2, 3], [1, 3]], n_positions=3, vocab_size=4)
    assert c.counts.toarray().tolist() == [[0, 2, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]
    assert c.reach.tolist() == [2, 2, 1]
    assert c.n_sequences == 2
    assert sp.isspmatrix_csr(c.counts) and c.counts.dtype == np.int64 and c.reach.dtype == np.int64


@pytest.mark.parametrize("n", [1, 5, 12, 30])
def test_ragged_lists_and_arrays_match_loop(n):
    rng = np.random.default_rng(n)
    seqs = random_corpus(rng)
    ref = loop_counts(seqs, n, 9)
    for form in (seqs, [np.asarray(s, dtype=np.int32) for s in seqs], [tuple(s) for s in seqs]):
        c = positional_counts(form, n, 9)
        np.testing.assert_array_equal(c.counts.toarray(), ref)
        np.testing.assert_array_equal(c.reach, ref.sum(axis=1))
        assert c.n_sequences == len(seqs)


def test_reach_is_number_of_sequences_reaching_position():
    seqs = [[0] * 5, [1] * 2, [], [2] * 9]
    c = positional_counts(seqs, 7, 3)
    lengths = np.array([5, 2, 0, 9])
    np.testing.assert_array_equal(c.reach, [(lengths > i).sum() for i in range(7)])
    assert c.n_sequences == 4


def test_padded_lengths_mask_and_mapping_agree_with_ragged():
    rng = np.random.default_rng(1)
    seqs = random_corpus(rng, max_len=11)
    width = 11
    lengths = np.array([len(s) for s in seqs])
    padded = np.full((len(seqs), width), -100, dtype=np.int64)  # padding ids that are out of range
    for r, s in enumerate(seqs):
        padded[r, : len(s)] = s
    mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
    for n in (4, 11, 20):
        ref = loop_counts(seqs, n, 9)
        by_len = positional_counts(padded, n, 9, lengths=lengths)
        by_mask = positional_counts(padded, n, 9, attention_mask=mask)
        by_map = positional_counts({"input_ids": padded, "attention_mask": mask}, n, 9)
        for c in (by_len, by_mask, by_map):
            np.testing.assert_array_equal(c.counts.toarray(), ref)
            assert c.n_sequences == len(seqs)


def test_rectangular_array_without_padding_counts_every_entry():
    arr = np.array([[0, 1, 2], [2, 1, 0]])
    c = positional_counts(arr, 3, 3)
    np.testing.assert_array_equal(c.counts.toarray(), loop_counts(arr.tolist(), 3, 3))


def test_flat_stream_with_lengths():
    rng = np.random.default_rng(2)
    seqs = random_corpus(rng, max_len=20)
    ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs])
    lengths = np.array([len(s) for s in seqs])
    for n in (3, 19, 40):
        c = positional_counts(ids, n, 9, lengths=lengths)
        np.testing.assert_array_equal(c.counts.toarray(), loop_counts(seqs, n, 9))
        assert c.n_sequences == len(seqs)
    with pytest.raises(ValueError, match="sum to"):
        positional_counts(ids, 5, 9, lengths=lengths[:-1])


def test_iterable_of_batches_and_generator_of_sequences():
    rng = np.random.default_rng(3)
    seqs = random_corpus(rng, n_seq=60)
    ref = loop_counts(seqs, 8, 9)
    batches = [seqs[k : k + 7] for k in range(0, len(seqs), 7)]
    np.testing.assert_array_equal(positional_counts(iter(batches), 8, 9).counts.toarray(), ref)
    gen = (np.asarray(s, dtype=np.int64) for s in seqs)
    c = positional_counts(gen, 8, 9, progress=False)
    np.testing.assert_array_equal(c.counts.toarray(), ref)
    assert c.n_sequences == 60
    # a mix: padded array batches then ragged ones
    first = seqs[:10]
    L = np.array([len(s) for s in first])
    pad = np.zeros((10, max(L.max(), 1)), dtype=np.int64)
    for r, s in enumerate(first):
        pad[r, : len(s)] = s
    mixed = [{"input_ids": pad, "lengths": L}, seqs[10:]]
    np.testing.assert_array_equal(positional_counts(mixed, 8, 9).counts.toarray(), ref)


def test_torch_tensors_and_progress_bar(capsys):
    torch = pytest.importorskip("torch")
    seqs = [[1, 2, 3], [4, 5], [6]]
    ref = loop_counts(seqs, 3, 7)
    tensors = [torch.tensor(s) for s in seqs]
    np.testing.assert_array_equal(positional_counts(tensors, 3, 7).counts.toarray(), ref)
    padded = torch.tensor([[1, 2, 3], [4, 5, 0], [6, 0, 0]])
    np.testing.assert_array_equal(positional_counts(padded, 3, 7, lengths=np.array([3, 2, 1])).counts.toarray(), ref)
    batched = positional_counts(iter([seqs[:2], seqs[2:]]), 3, 7, progress=True)
    np.testing.assert_array_equal(batched.counts.toarray(), ref)
    assert "counting" in capsys.readouterr().err


def test_stream_buffer_flushes(monkeypatch):
    monkeypatch.setattr(counting_mod, "_STREAM_BATCH", 3)
    monkeypatch.setattr(accumulate_mod, "_CHUNK_TOKENS", 10)
    rng = np.random.default_rng(4)
    seqs = random_corpus(rng, n_seq=50)
    c = positional_counts(iter(seqs), 6, 9)
    np.testing.assert_array_equal(c.counts.toarray(), loop_counts(seqs, 6, 9))


def test_sort_path_equals_bincount_path(monkeypatch):
    rng = np.random.default_rng(5)
    seqs = random_corpus(rng, n_seq=30, v=50)
    dense = positional_counts(seqs, 10, 50)
    calls = []
    monkeypatch.setattr(accumulate_mod, "_DENSE_LIMIT", 1)  # force np.unique
    monkeypatch.setattr(accumulate_mod, "_SPARSE_RATIO", 0)
    sort = accumulate_mod._counts_by_sort
    monkeypatch.setattr(accumulate_mod, "_counts_by_sort", lambda *a: calls.append(1) or sort(*a))
    sparse = positional_counts(seqs, 10, 50)
    assert calls, "the sort path was not taken"
    assert dense == sparse
    np.testing.assert_array_equal(sparse.counts.toarray(), loop_counts(seqs, 10, 50))
    np.testing.assert_array_equal(
        positional_counts(seqs, 10, 50, ignore_ids=[3]).counts.toarray(), loop_counts(seqs, 10, 50, ignore=(3,))
    )
    with pytest.raises(ValueError, match="token id 50"):
        positional_counts(np.array([1, 50, 2]), 10, 50, lengths=np.array([3]))


@pytest.fixture
def kernel_everywhere(monkeypatch):
    """Small thresholds, so that tiny corpora take every branch of the compiled path: several threads,
    several blocks of positions, chunked direct counting."""
    monkeypatch.setattr(accumulate_mod, "_PARALLEL_MIN_TOKENS", 1)
    monkeypatch.setattr(accumulate_mod, "_CHUNK_TOKENS", 64)
    monkeypatch.setattr(accumulate_mod, "_HIST_BYTES", 4 * 9 * 3)  # B = 3 positions per block at v = 9
    return monkeypatch


@pytest.mark.parametrize("n_threads", [1, 2, 3, 5])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_kernel_threads_blocks_and_dtypes_match_loop(kernel_everywhere, n_threads, dtype):
    rng = np.random.default_rng(11)
    seqs = random_corpus(rng, n_seq=70, max_len=20)
    n = 13
    ref = loop_counts(seqs, n, 9)
    lengths = np.array([len(s) for s in seqs])
    stream = np.concatenate([np.asarray(s, dtype=dtype) for s in seqs])
    pad = np.full((len(seqs), lengths.max()), 8, dtype=dtype)
    for r, s in enumerate(seqs):
        pad[r, : len(s)] = s
    for got in (
        positional_counts(stream, n, 9, lengths=lengths, n_threads=n_threads),  # direct, chunked
        positional_counts(pad, n, 9, lengths=lengths, n_threads=n_threads),  # direct, row starts
        positional_counts([np.asarray(s, dtype=dtype) for s in seqs], n, 9, n_threads=n_threads),
        positional_counts(iter(seqs), n, 9, n_threads=n_threads),  # buffered, flushed
    ):
        np.testing.assert_array_equal(got.counts.toarray(), ref)
        assert got.counts.has_canonical_format and got.counts.dtype == np.int64
        assert got.n_sequences == len(seqs)


def test_kernel_ignore_ids_and_bad_ids(kernel_everywhere):
    rng = np.random.default_rng(12)
    seqs = random_corpus(rng, n_seq=50, max_len=20)
    lengths = np.array([len(s) for s in seqs])
    stream = np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs])
    got = positional_counts(stream, 11, 9, lengths=lengths, ignore_ids=[0, 4, 99], n_threads=2)
    np.testing.assert_array_equal(got.counts.toarray(), loop_counts(seqs, 11, 9, ignore=(0, 4)))
    # an id out of range at a counted position, found by the kernel, reported by numpy
    for bad_id in (9, -3):
        bad = stream.copy()
        bad[lengths[:10].sum() + 2] = bad_id  # position 2 of sequence 10
        with pytest.raises(ValueError, match=f"token id {bad_id} in sequences is outside"):
            positional_counts(bad, 11, 9, lengths=lengths, n_threads=2)
        with pytest.raises(ValueError, match="outside"):
            positional_counts(bad, 11, 9, lengths=lengths, ignore_ids=[1])
    # beyond position n it is never read
    long = np.array([[1, 2, 3, 99]])
    assert positional_counts(long, 3, 9).reach.tolist() == [1, 1, 1]


def test_n_threads_validation():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads"):
            positional_counts([[1]], 2, 3, n_threads=bad)


def test_threads_do_not_change_large_counts():
    # above the real thresholds: 300,000 tokens, v = 3,000 (several blocks of positions)
    rng = np.random.default_rng(13)
    lengths = rng.integers(1, 300, size=2000)
    stream = rng.integers(0, 3000, size=int(lengths.sum()))
    one = positional_counts(stream, 256, 3000, lengths=lengths, n_threads=1)
    four = positional_counts(stream, 256, 3000, lengths=lengths, n_threads=4)
    assert one == four
    starts = np.cumsum(lengths) - lengths
    pos = np.arange(stream.size) - np.repeat(starts, lengths)
    keep = pos < 256
    ref = np.bincount(pos[keep] * 3000 + stream[keep], minlength=256 * 3000).reshape(256, 3000)
    np.testing.assert_array_equal(one.counts.toarray(), ref)


def test_shards_add_up_to_the_union():
    rng = np.random.default_rng(6)
    seqs = random_corpus(rng, n_seq=90)
    whole = positional_counts(seqs, 10, 9)
    shards = [positional_counts(seqs[k : k + 30], 10, 9) for k in range(0, 90, 30)]
    assert shards[0] + shards[1] + shards[2] == whole
    assert sum(shards) == whole
    assert 0 + shards[0] == shards[0]
    assert (whole + whole).n_sequences == 180
    with pytest.raises(ValueError, match="different shapes"):
        whole + positional_counts(seqs, 11, 9)
    with pytest.raises(ValueError, match="ignore_ids"):
        whole + positional_counts(seqs, 10, 9, ignore_ids=[0])
    assert whole != shards[0]


def test_ignore_ids_keep_positions():
    seqs = [[7, 1, 2, 8], [7, 2, 8]]
    c = positional_counts(seqs, 4, 9, ignore_ids=[7, 8])
    np.testing.assert_array_equal(c.counts.toarray(), loop_counts(seqs, 4, 9, ignore=(7, 8)))
    # position 0 held only [CLS]=7: it is empty (not shifted), so N_0 = 0
    assert c.reach.tolist() == [0, 2, 1, 0]
    assert c.ignore_ids == (7, 8)


@pytest.mark.parametrize(
    "bad, kwargs, match",
    [
        ([[0, 1, -1]], {}, "outside"),
        ([[0, 1, 9]], {}, "outside"),
        ([[0.5, 1.0]], {}, "integer"),
        ("hello", {}, "text"),
        (np.array([[1, 2], [3, 4]]), {"attention_mask": np.array([[0, 1], [1, 1]])}, "right-padded"),
        (np.array([[1, 2], [3, 4]]), {"lengths": np.array([1, 3])}, r"\[0, 2\]"),
        (np.array([[1, 2], [3, 4]]), {"lengths": np.array([1])}, "shape"),
        (np.array([[1, 2], [3, 4]]), {"lengths": np.array([1, 1]), "attention_mask": np.ones((2, 2))}, "either"),
        ([[1, 2]], {"lengths": [2]}, "single 2-D"),
        (np.ones((2, 2, 2), dtype=int), {}, "1-D or 2-D"),
        ([{"tokens": [1]}], {}, "input_ids"),
    ],
)
def test_bad_input_errors(bad, kwargs, match):
    with pytest.raises(ValueError, match=match):
        positional_counts(bad, 4, 9, **kwargs)


@pytest.mark.parametrize("n, v", [(0, 5), (3, 0), (2.5, 4), (True, 3)])
def test_bad_sizes(n, v):
    with pytest.raises(ValueError, match="integer >= 1"):
        positional_counts([[0]], n, v)


def test_padding_ids_outside_vocab_are_not_checked():
    padded = np.array([[1, 2, -100], [3, -100, -100]])
    c = positional_counts(padded, 3, 4, lengths=np.array([2, 1]))
    assert c.reach.tolist() == [2, 1, 0]


def test_from_array_and_validation():
    arr = np.array([[2, 0, 1], [0, 1, 0]])
    c = PositionalCounts.from_array(arr)
    assert c.reach.tolist() == [3, 1] and c.n_sequences == 3
    with pytest.raises(ValueError, match="non-negative"):
        PositionalCounts.from_array(-arr)
    with pytest.raises(ValueError, match="integers"):
        PositionalCounts.from_array(arr.astype(float))
    with pytest.raises(ValueError, match="smaller than the largest reach"):
        PositionalCounts(sp.csr_matrix(arr), n_sequences=1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=25),
    st.integers(1, 14),
    st.integers(1, 24),
)
def test_property_counts_equal_loop_and_shards_add(seqs, n, cut):
    ref = loop_counts(seqs, n, 7)
    c = positional_counts(seqs, n, 7)
    np.testing.assert_array_equal(c.counts.toarray(), ref)
    cut = min(cut, len(seqs))
    assert positional_counts(seqs[:cut], n, 7) + positional_counts(seqs[cut:], n, 7) == c


# ---------------------------------------------------------------- marginals


def test_marginals_closed_form_with_smoothing():
    c = PositionalCounts.from_array(np.array([[3, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]))
    m = positional_marginals(c, alpha=0.5)
    assert m.positions.tolist() == [0, 2] and m.dropped == [1]
    # mu_i = (c_i + alpha) / (N_i + alpha v)
    np.testing.assert_allclose(m.probs[0], (np.array([3, 1, 0, 0]) + 0.5) / (4 + 0.5 * 4), rtol=0, atol=1e-15)
    np.testing.assert_allclose(m.probs.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_array_equal(m.reach, [4, 4])
    m0 = positional_marginals(c)
    np.testing.assert_array_equal(m0.probs[0], [0.75, 0.25, 0, 0])
    assert isinstance(m0.probs, np.ndarray) and m0.probs.dtype == np.float64


def test_min_count_drop_and_raise():
    c = PositionalCounts.from_array(np.array([[5, 5], [2, 1], [1, 0], [0, 0]]))
    m = positional_marginals(c, min_count=3)
    assert m.positions.tolist() == [0, 1] and m.dropped == [2, 3]
    with pytest.raises(ValueError, match=r"2 position\(s\).*\[2, 3\]"):
        positional_marginals(c, min_count=3, on_low_count="raise")
    with pytest.raises(ValueError, match="no position"):
        positional_marginals(c, min_count=100)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"alpha": -1}, "alpha"), ({"alpha": np.nan}, "alpha"), ({"min_count": 0}, "min_count"),
     ({"on_low_count": "keep"}, "on_low_count")],
)
def test_marginals_bad_arguments(kwargs, match):
    c = PositionalCounts.from_array(np.array([[1, 1]]))
    with pytest.raises(ValueError, match=match):
        positional_marginals(c, **kwargs)
    with pytest.raises(ValueError, match="PositionalCounts"):
        positional_marginals(np.array([[1, 1]]))


def test_top_level_reexports():
    for name in ("positional_counts", "hellinger_matrix", "classical_mds", "stress", "smacof", "noise_floor"):
        assert getattr(posgeom, name) is getattr(posgeom.geometry, name)
        assert name in posgeom.__all__


def test_ids_beyond_the_counted_positions_are_not_read():
    seqs = [[1, 2, 99], [3, 0, -5], [1, 2]]  # n = 2 never reads 99 or -5
    ids, lengths = np.concatenate(seqs), np.array([3, 3, 2])
    c = positional_counts(ids, 2, 4, lengths=lengths)
    np.testing.assert_array_equal(c.counts.toarray(), loop_counts(seqs, 2, 4))
    assert positional_counts(seqs, 2, 4) == c
    with pytest.raises(ValueError, match="token id"):
        positional_counts(ids, 3, 4, lengths=lengths)


def test_import_posgeom_does_not_load_numba():
    import subprocess
    import sys

    code = "import sys, posgeom; print('numba' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "False", "numba is loaded on import posgeom; it should wait for the first count"


def test_list_of_lists_converted_in_chunks(monkeypatch):
    monkeypatch.setattr(counting_mod, "_STREAM_BATCH", 4)
    rng = np.random.default_rng(14)
    seqs = random_corpus(rng, n_seq=23)
    np.testing.assert_array_equal(positional_counts(seqs, 8, 9).counts.toarray(), loop_counts(seqs, 8, 9))
    np.testing.assert_array_equal(
        positional_counts([tuple(s) for s in seqs], 8, 9).counts.toarray(), loop_counts(seqs, 8, 9)
    )
    bad = [list(s) for s in seqs] + [[1, 2.5]]
    with pytest.raises(ValueError, match="integer token ids; found 2.5"):
        positional_counts(bad, 8, 9)


def test_kernels_compile_without_a_writable_cache(monkeypatch):
    """No writable cache folder: the kernels are compiled per process instead of failing on import."""
    from numba import njit

    from posgeom.geometry import _kernels

    def njit_without_cache(**kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function 'f': no locator available for file 'f.py'")
        return njit(**kwargs)

    monkeypatch.setattr(_kernels, "njit", njit_without_cache)

    def add_one(x):
        return x + 1

    assert _kernels._jit(add_one)(41) == 42
