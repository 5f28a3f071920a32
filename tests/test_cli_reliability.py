"""The command line under bad input and failures (issue 15): one line on stderr, exit 2 for input errors and
1 for run-time failures, ``--debug`` for the traceback; options that cannot be used are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from posgeom import cli
from posgeom.cli import main
from posgeom.commands.corpus import format_ranges

REPO = Path(__file__).resolve().parents[1]
SYNTHETIC = "synthetic:drift:n_sequences=300"


def run_cli(*args, env=None):
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "posgeom.cli", *args], capture_output=True, text=True, env=full,
                          timeout=1800)


@pytest.mark.parametrize("option", [["--noise-reps", "0"], ["--rank-tol", "5"], ["--rank-mass", "7"],
                                    ["--rank-stress", "-1"], ["--rank-tol", "nan"], ["--alpha", "-1"]])
def test_unusable_stress_options_are_usage_errors(env, capsys, option):
    code = main(["stress", "--corpus", SYNTHETIC, "--json", *option])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and option[0] in captured.err


@pytest.mark.parametrize("error, code", [
    (ValueError("bad value"), 2), (TypeError("bad type"), 2), (FileNotFoundError(2, "No such file", "x.parquet"), 2),
    (NotADirectoryError(20, "Not a directory", "cache"), 2), (KeyError("no result for it"), 1),
    (RuntimeError("multi\nline\nmessage"), 1), (OSError(28, "No space left on device"), 1), (MemoryError(), 1),
    (NotImplementedError("compression type 99"), 1), (AssertionError("internal"), 1),
])
def test_every_exception_type_is_one_line(monkeypatch, capsys, error, code):
    def boom(args):
        raise error

    def add(subparsers):
        subparsers.add_parser("boom").set_defaults(func=boom)

    monkeypatch.setattr(cli, "SUBCOMMANDS", [*cli.SUBCOMMANDS, add])
    assert main(["boom"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("posgeom boom: error: ")
    if code == 1:
        assert type(error).__name__ in err and "--debug" in err
    with pytest.raises(type(error)):
        main(["--debug", "boom"])
    with pytest.raises(type(error)):
        main(["boom", "--debug"])


def test_long_messages_are_cut():
    line = cli.error_line(ValueError("x" * 5000))
    assert len(line) == cli.MAX_MESSAGE and line.endswith("...")


def test_help_imports_only_what_it_needs():
    code = ("import sys, time; t = time.perf_counter(); from posgeom.cli import build_parser; "
            "build_parser().format_help(); print(time.perf_counter() - t); "
            "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'sklearn', 'numba', 'matplotlib', "
            "'scipy.stats', 'posgeom.geometry', 'posgeom.models', 'posgeom.experiments') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout.splitlines()
    assert out[1] == "[]", out
    start = time.perf_counter()
    done = run_cli("--help")
    wall = time.perf_counter() - start
    assert done.returncode == 0 and "results" in done.stdout
    print(f"posgeom --help: {wall:.2f} s (parser {float(out[0]):.2f} s)")


def test_every_argument_parser_lives_in_the_commands():
    """One CLI: argparse is used only by posgeom/cli.py and posgeom/commands/."""
    package = REPO / "posgeom"
    users = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if "argparse" in p.read_text())
    assert users and all(u == "cli.py" or u.startswith("commands/") for u in users), users


def test_python_m_experiments_is_the_experiments_command(capsys):
    done = subprocess.run([sys.executable, "-m", "posgeom.experiments", "--help"], capture_output=True, text=True,
                          timeout=1800, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "posgeom experiments" in done.stdout and "real-corpora" in done.stdout
    assert main(["experiments", "real-corpora", "--corpus", "wiki"]) == 2
    assert capsys.readouterr().err.strip() == ("posgeom experiments: error: unknown corpus wiki; "
                                               "choose from sst2, imdb")


def test_costs_prints_the_cost_model_s_table(capsys):
    assert main(["costs", "--proposed"]) == 0
    out = capsys.readouterr().out
    assert "separation:run_separation" in out and out.splitlines()[-3].startswith("total:")


def test_format_ranges():
    assert format_ranges([]) == "none"
    assert format_ranges([5]) == "5"
    assert format_ranges([9, 1, 2, 3, 7, 10]) == "1-3, 7, 9-10"
    assert format_ranges(range(60, 100_000)) == "60-99999"


def test_dropped_positions_are_summarised_as_ranges(env, capsys):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = env / "short.parquet"
    pq.write_table(pa.table({"text": [f"a short text number {i}" for i in range(40)], "label": np.zeros(40, int)}), f)
    assert main(["stress", "--corpus", str(f), "--positions", "100000", "--encodings", "sinusoidal",
                 "--noise-reps", "2"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "positions kept" in x]
    assert len(line) < 200 and "dropped 99993: 7-99999" in line


def test_min_count_advice_only_where_it_helps(env, capsys):
    import numpy as np

    from posgeom.corpora import CorpusStatistics
    from posgeom.diagnose import stress_report
    from posgeom.geometry import PositionalCounts

    assert main(["stress", "--corpus", SYNTHETIC, "--positions", "1", "--encodings", "sinusoidal"]) == 2
    err = capsys.readouterr().err
    assert "lower --min-count" not in err and "--positions" in err
    # reaches 5, 2, 2: with min_count 3 only one position is kept, and a lower min_count would keep three
    counts = PositionalCounts.from_array(np.array([[3, 2, 0], [1, 1, 0], [0, 1, 1]]), n_sequences=5)
    stats = CorpusStatistics(counts, np.array([3, 3, 1, 1, 1]), 0, {})
    with pytest.raises(ValueError, match="lower --min-count"):
        stress_report(stats, "sinusoidal", min_count=3, noise_reps=1)
    with pytest.raises(ValueError, match="no --min-count can help"):
        stress_report(CorpusStatistics(PositionalCounts.from_array(np.array([[3, 2, 0]])), np.array([1] * 5), 0, {}),
                      "sinusoidal", min_count=1, noise_reps=1)


def test_pretrained_checked_only_when_a_model_is_needed(env, monkeypatch, capsys):
    monkeypatch.setenv("POSGEOM_PRETRAINED", "no such model at all")
    assert main(["stress", "--corpus", SYNTHETIC, "--encodings", "sinusoidal", "--noise-reps", "2", "--json"]) == 0
    capsys.readouterr()
    from posgeom.config import get_settings
    from posgeom.models.pretrained import resolve_pretrained

    assert get_settings().pretrained == "no such model at all"
    assert get_settings().with_(scale="paper").pretrained == "no such model at all"
    with pytest.raises(ValueError, match="unknown pretrained model"):
        resolve_pretrained()
    with pytest.raises(ValueError, match="unknown pretrained model"):
        get_settings(pretrained="no such model at all")  # an explicit argument is checked at once
    assert main(["about", "--device", "cpu"]) == 0
    (model,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("model")]
    assert "PROBLEM" in model and "unknown pretrained model" in model


def test_about_reports_a_missing_cuda_as_a_problem_line(monkeypatch, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    monkeypatch.setenv("POSGEOM_DEVICE", "cuda")
    assert main(["about"]) == 0
    (device,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("device")]
    assert "PROBLEM" in device and "CUDA is not available" in device


def test_stress_json_is_never_none_for_valid_options(env, capsys):
    assert main(["stress", "--corpus", SYNTHETIC, "--encodings", "sinusoidal", "--noise-reps", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert None not in rep["effective_rank"].values()
    assert rep["noise_floor"]["mean_floor"] is not None
