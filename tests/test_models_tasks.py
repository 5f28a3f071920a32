"""The order task as model inputs, the tiny encoder and its table (posgeom.models.tasks), against
loops and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posgeom.models import tasks


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_order_task_data_layout():
    task = tasks.order_task_data(40, 12, 10, seed=1)
    ids, mask, labels = task.data.input_ids.numpy(), task.data.attention_mask.numpy(), task.data.labels.numpy()
    assert task.vocab_size == 11 and ids.shape == (40, 12)
    assert np.array_equal(mask.sum(axis=1), task.lengths)
    assert np.all(ids[mask == 0] == 0) and np.all(ids[mask == 1] >= 1)
    rows = np.arange(40)
    assert np.all(ids[rows, task.marker_positions[:, 0]] == 9) and np.all(ids[rows, task.marker_positions[:, 1]] == 10)
    # label 1 iff A comes first
    assert np.array_equal(labels, (task.marker_positions[:, 0] < task.marker_positions[:, 1]).astype(int))


def test_short_fraction_skews_the_lengths():
    task = tasks.order_task_data(1000, 32, 10, seed=0, short_fraction=0.9)
    assert np.mean(task.lengths < 16) == pytest.approx(0.9)
    assert task.lengths.max() <= 32 and task.lengths[task.lengths >= 16].min() == 16
    with pytest.raises(ValueError, match="short_fraction"):
        tasks.order_task_data(100, 32, 10, short_fraction=1.0)


def test_order_population_geometry_is_reproduced_by_its_mds():
    from posgeom.corpora.synthetic import population_marginals
    from posgeom.geometry import euclidean_distances, hellinger_matrix

    g = tasks.order_population_geometry(12, 10)
    mu = population_marginals("order", n_positions=12, vocab_size=10, kind="marker_order", min_length=2)
    np.testing.assert_allclose(g["D"], hellinger_matrix(mu))
    np.testing.assert_allclose(euclidean_distances(g["mds"]), g["D"], atol=1e-6)
    assert g["mds"].shape[1] <= 3


def test_steps_to_threshold_matches_a_loop(rng):
    x = np.concatenate([np.linspace(1.0, 0.1, 50), rng.uniform(0.0, 0.2, 30)])
    for w in (1, 5, 10):
        want = None
        for t in range(w, x.size + 1):
            if x[t - w:t].mean() < 0.3:
                want = t
                break
        assert tasks.steps_to_threshold(x, 0.3, w) == want
    assert tasks.steps_to_threshold(np.ones(10), 0.5, 3) is None


def _tiny_model(position="learned", max_len=8, **opts):
    from posgeom.models.encoder import build_model

    config = tasks.tiny_encoder_config(vocab_size=11, max_len=max_len, position=position, position_options=opts,
                                    d_model=8, n_layers=1, n_heads=2, d_ff=16)
    return build_model(config, "classification", seed=0)


def test_embedding_dropout_is_on_the_embedding_sum_only():
    model = tasks.set_embedding_dropout(_tiny_model(), 0.1)
    assert model.encoder.embeddings.dropout.p == 0.1
    assert all(b.dropout.p == 0.0 for b in model.encoder.layers)
    with pytest.raises(ValueError, match="dropout rate"):
        tasks.set_embedding_dropout(model, 1.0)


def test_the_wall_and_the_heuristics():
    from posgeom.models.positional import PositionLimitError

    model = _tiny_model(max_len=8)
    with pytest.raises(PositionLimitError, match="N_max=8"):
        model(torch.ones(2, 12, dtype=torch.long))
    P = tasks.position_table_of(model)
    last = tasks.extend_model(model, 12, "reuse_last")
    Q = tasks.position_table_of(last)
    np.testing.assert_allclose(Q[:8], P) and np.testing.assert_allclose(Q[8:], np.repeat(P[-1:], 4, axis=0))
    interp = tasks.position_table_of(tasks.extend_model(model, 15, "interpolate"))
    np.testing.assert_allclose(interp[0], P[0], atol=1e-7)
    np.testing.assert_allclose(interp[-1], P[-1], atol=1e-7)
    np.testing.assert_allclose(interp[7], (P[3] + P[4]) / 2, atol=1e-6)  # s = 7 * 7 / 14 = 3.5
    new = tasks.extend_model(model, 12, "new_rows", seed=1)
    assert new.config.max_len == 12 and model.config.max_len == 8  # the original is unchanged
    assert new(torch.ones(2, 12, dtype=torch.long)).logits.shape == (2, 2)
    with pytest.raises(ValueError, match="learned positional table"):
        tasks.extend_model(_tiny_model("rope"), 12, "reuse_last")


def test_cls_token_shifts_the_ids_and_the_markers():
    def ids(task):
        return np.asarray(task.data.input_ids)

    plain = tasks.order_task_data(20, 8, 10, seed=5, min_length=None)
    reserved = tasks.order_task_data(20, 8, 10, seed=5, min_length=None, reserve_cls=True)
    cls = tasks.order_task_data(20, 8, 10, seed=5, min_length=None, cls_token=True)
    np.testing.assert_array_equal(ids(reserved), ids(plain) + 1)
    np.testing.assert_array_equal(ids(cls)[:, 1:], ids(reserved))
    assert np.all(ids(cls)[:, 0] == 1) and np.all(np.asarray(cls.data.attention_mask) == 1)
    np.testing.assert_array_equal(cls.marker_positions, plain.marker_positions + 1)
    assert (plain.vocab_size, reserved.vocab_size, cls.vocab_size) == (11, 12, 12)
    rows = np.arange(20)[:, None]
    assert np.all(ids(cls)[rows, cls.marker_positions] == [[8 + 2, 9 + 2]])
