"""``posgeom reproduce``: skip / force / resume on tiny fake chapters executed for real (nbclient), the
``--only`` resolution, bad input, the chapter table against the notebooks, and the torchrun worker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from posgeom.cli import main
from posgeom.registry import Registry
from posgeom.registry.pending import run_words
from posgeom.report import CLAIMS_EXPERIMENT, PAPER_CLAIMS
from posgeom.reproduce import (
    CHAPTERS,
    RUNS_EXPERIMENT,
    Chapter,
    ChapterFailed,
    Estimate,
    chapter_status,
    ddp_command,
    format_plan,
    reproduce,
    select_chapters,
)

HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def fake_notebook(slug: str, claim: str, body: str = "x = 1") -> str:
    cells = [
        "import posgeom\nfrom posgeom.report import ComparisonRow, comparison_table\nfrom posgeom.verdicts import Decision\n"
        "settings = posgeom.get_settings()",
        body,
        f'comparison_table([ComparisonRow("{claim}", ours=f"value at {{settings.scale}}", scale=settings.scale, '
        f'model="none", corpus="toy", decision=Decision("reproduced"))], chapter="{slug}", settings=settings)',
    ]
    return HEADER + f"\n# {slug}\n\n" + "\n\n".join(f"```{{code-cell}} ipython3\n{c}\n```" for c in cells) + "\n"


FAKES = (
    Chapter("fake-a", "Fake A", ("C7",), Estimate(0.1, 0.1), Estimate(1, 1), False),
    Chapter("fake-b", "Fake B", ("S3",), Estimate(0.1, 0.1), Estimate(1, 1), False),
)


@pytest.fixture
def fake_book(tmp_path):
    """A checkout-like folder (``_toc.yml``, ``posgeom/``, ``notebooks/``) holding two fake chapters."""
    root = tmp_path / "book"
    (root / "notebooks").mkdir(parents=True)
    (root / "posgeom").mkdir()
    (root / "_toc.yml").write_text("root: intro\n")
    return root


def run(root, lines, **kw):
    return reproduce("quick", device="cpu", chapters=FAKES, notebooks_dir=root / "notebooks",
                     results_dir=root / "results", out=lines.append, **kw)


def test_failure_resume_skip_force_and_changed_notebook(fake_book):
    nb = fake_book / "notebooks"
    (nb / "fake-a.md").write_text(fake_notebook("fake-a", "C7"))
    (nb / "fake-b.md").write_text(fake_notebook("fake-b", "S3", 'raise RuntimeError("boom in the fake chapter")'))
    registry = Registry(fake_book / "results")
    lines: list[str] = []

    # 1. fake-b fails: the error names the chapter, the cell and the exception; fake-a is done
    with pytest.raises(ChapterFailed) as err:
        run(fake_book, lines)
    message = str(err.value)
    assert "chapter 'fake-b'" in message and "code cell 2 of 3" in message
    assert "RuntimeError: boom in the fake chapter" in message and "raise RuntimeError" in message
    assert "\x1b" not in message
    assert chapter_status(FAKES[0], "quick", registry) == "done"
    assert chapter_status(FAKES[1], "quick", registry) == "not run"
    entry = registry.load(CLAIMS_EXPERIMENT, params={"chapter": "fake-a"}, scale="quick")
    assert entry.values["rows"][0]["ours"] == "value at quick"  # the kernel saw POSGEOM_SCALE
    run_entry = registry.load(RUNS_EXPERIMENT, params={"chapter": "fake-a"}, scale="quick")
    assert run_entry.values["wall_s"] > 0 and run_entry.values["peak_rss_gb"] > 0.01

    # 2. fixed: the next run resumes — fake-a is skipped, fake-b runs
    (nb / "fake-b.md").write_text(fake_notebook("fake-b", "S3"))
    report = run(fake_book, lines)
    assert [r.slug for r in report.ran] == ["fake-b"] and report.skipped == ["fake-a"]
    assert report.ran[0].claims == ("S3",)
    assert any("[1/1] fake-b: done in" in line and "claims S3 recorded" in line for line in lines)

    # 3. nothing changed: nothing runs (no kernel is started)
    lines.clear()
    report = run(fake_book, lines)
    assert report.ran == [] and report.skipped == ["fake-a", "fake-b"]
    assert any("nothing to run" in line for line in lines)
    assert re.search(r"fake-a\s+C7\s+done\s+skip", "\n".join(lines))

    # 4. --force runs a done chapter again (selected here by its claim)
    lines.clear()
    report = run(fake_book, lines, force=True, only=["s3"])
    assert [r.slug for r in report.ran] == ["fake-b"] and report.skipped == []
    assert any("[1/1] fake-b: done in" in line for line in lines)

    # 5. an edited notebook makes its chapter stale: it runs again, the other is skipped
    (nb / "fake-a.md").write_text(fake_notebook("fake-a", "C7", "x = 2"))
    assert chapter_status(FAKES[0], "quick", registry, notebooks_dir=nb) == "stale (notebook changed)"
    report = run(fake_book, lines)
    assert [r.slug for r in report.ran] == ["fake-a"] and report.skipped == ["fake-b"]


def test_a_chapter_that_records_no_claims_runs_again_next_time(fake_book):
    text = fake_notebook("fake-a", "C7").replace(', chapter="fake-a", settings=settings', "")
    (fake_book / "notebooks" / "fake-a.md").write_text(text)
    lines: list[str] = []
    report = reproduce("quick", device="cpu", chapters=FAKES[:1], notebooks_dir=fake_book / "notebooks",
                       results_dir=fake_book / "results", out=lines.append)
    assert report.ran[0].claims == ()
    assert any("recorded no claims" in line and "chapter='fake-a'" in line for line in lines)
    assert chapter_status(FAKES[0], "quick", Registry(fake_book / "results")) == "not run"


def test_missing_notebook_and_bad_options_are_refused(fake_book):
    with pytest.raises(ValueError, match="no notebook for chapter"):
        run(fake_book, [])
    (fake_book / "notebooks" / "fake-a.md").write_text(fake_notebook("fake-a", "C7"))
    (fake_book / "notebooks" / "fake-b.md").write_text(fake_notebook("fake-b", "S3"))
    with pytest.raises(ValueError, match="paper scale only"):
        run(fake_book, [], nproc=2)
    with pytest.raises(ValueError, match="positive integer"):
        run(fake_book, [], nproc=0)
    with pytest.raises(ValueError, match="unknown scale"):
        reproduce("huge", chapters=FAKES, notebooks_dir=fake_book / "notebooks")
    with pytest.raises(ValueError, match="unknown device"):
        reproduce("quick", device="tpu", chapters=FAKES, notebooks_dir=fake_book / "notebooks")
    assert not (fake_book / "results").exists()


# ------------------------------------------------------------------------------------ --only


def test_select_chapters_by_claim_and_slug():
    slugs = [c.slug for c in CHAPTERS]
    assert [c.slug for c in select_chapters(None)] == slugs
    assert [c.slug for c in select_chapters([])] == slugs
    c8 = [c.slug for c in CHAPTERS if "C8" in c.claims]  # a claim several chapters check
    assert len(c8) >= 2 and [c.slug for c in select_chapters(["C8"])] == c8
    # C7 is decided in one chapter only (issue 27)
    assert [c.slug for c in select_chapters(["C7"])] == ["real-corpora"]
    # book order, duplicates merged, commas and lower case accepted
    picked = select_chapters(["learned-tables", "c1,S4", "C1"])
    assert [c.slug for c in picked] == [s for s in slugs if s in {"learned-tables", "theorem1-necessity",
                                                                   "learned-tables-fail"}]


@pytest.mark.parametrize("value", ["C12", "S0", "chapter-x", "sinusoids"])
def test_select_chapters_unknown_value_lists_the_valid_ones(value):
    with pytest.raises(ValueError) as err:
        select_chapters([value])
    assert f"unknown chapter or claim {value!r}" in str(err.value)
    assert "sinusoids-as-mds" in str(err.value) and "C11" in str(err.value) and "S9" in str(err.value)


def test_a_claim_no_listed_chapter_checks_is_an_error():
    with pytest.raises(ValueError, match="C1 is checked by no chapter"):
        select_chapters(["C1"], FAKES)


def test_cli_bad_only_and_list(capsys):
    assert main(["reproduce", "--only", "C99"]) == 2
    assert "unknown chapter or claim 'C99'" in capsys.readouterr().err
    assert main(["reproduce", "--list", "--only", "C5"]) == 0
    out = capsys.readouterr().out
    assert "minimal-parametrisation" in out and "sinusoids-as-mds" not in out
    assert main(["reproduce", "--scale", "paper", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(c.slug in out for c in CHAPTERS) and "estimate" in out


# ------------------------------------------------------------------------------------ the chapter table


def _claims_in(text: str) -> set[str]:
    """The claims of the comparison rows a chapter shows: those its ``<alias>.comparison_rows(...)`` calls build
    (read from the source of the module of posgeom.chapters imported under that alias), and any it writes itself."""
    import importlib
    import inspect

    pattern = r"ComparisonRow\(\s*(?:claim\s*=\s*)?[\"']([CS]\d+)[\"']"
    claims = set(re.findall(pattern, text))
    aliases = dict((alias, f"posgeom.{package}.{module}") for package, module, alias in
                   re.findall(r"from posgeom\.(experiments|chapters) import (\w+) as (\w+)", text))
    for alias in set(re.findall(r"\b(\w+)\.comparison_rows\(", text)):
        assert alias in aliases, f"comparison_rows called on {alias!r}, which the chapter does not import"
        module = importlib.import_module(aliases[alias])
        # comparison_rows and every function of the module it names (a row built by a named function: c8_row)
        sources, frontier = {}, ["comparison_rows"]
        while frontier:
            name = frontier.pop()
            sources[name] = inspect.getsource(getattr(module, name))
            frontier += [n for n in set(re.findall(r"\b([A-Za-z_]\w*)\b", sources[name])) if n not in sources and n not in frontier
                     and inspect.isfunction(getattr(module, n, None)) and getattr(module, n).__module__ == module.__name__]
        source = "\n".join(sources.values())
        claims |= set(re.findall(pattern, source))
        # rows made by a name bound to partial(ComparisonRow, ...): row("C3", ...)
        for name in re.findall(r"(\w+)(?:\s*,\s*\w+)*\s*=\s*partial\(ComparisonRow\b", source):
            claims |= set(re.findall(rf"\b{name}\(\s*[\"']([CS]\d+)[\"']", source))
        # the (claim, build) pairs handed to report.decided_rows: a row built by a helper is named there
        claims |= set(re.findall(r"\(\s*[\"']([CS]\d+)[\"']\s*,\s*(?:lambda\b|\w+\))", source))
    return claims


def test_chapter_table_matches_the_notebooks(repo_root):
    assert len({c.slug for c in CHAPTERS}) == len(CHAPTERS)
    checked = set()
    for chapter in CHAPTERS:
        path = repo_root / "notebooks" / f"{chapter.slug}.md"
        assert path.is_file(), f"CHAPTERS names {chapter.slug} but {path} does not exist"
        text = path.read_text()
        assert _claims_in(text) == set(chapter.claims), chapter.slug
        assert "comparison_table(" in text
        for e in (chapter.estimate("quick"), chapter.estimate("paper")):
            assert e.minutes > 0 and e.memory_gb > 0
        for entry in chapter.ddp:
            module, name = entry.split(":")
            assert module.startswith("posgeom.experiments.")
            # the notebook calls the entry point with the settings only: torchrun's results are the ones it reads
            assert re.search(rf"\.{name}\(settings\)", text), (chapter.slug, name)
            import importlib

            assert callable(getattr(importlib.import_module(module), name))
        checked |= set(chapter.claims)
    assert checked == set(PAPER_CLAIMS), f"claims no chapter checks: {sorted(set(PAPER_CLAIMS) - checked)}"


def test_plan_names_the_torchrun_command_and_warns_without_a_gpu():
    chapters = [c for c in CHAPTERS if c.slug in ("minimal-parametrisation", "sinusoids-as-mds")]
    statuses = {"minimal-parametrisation": "not run", "sinusoids-as-mds": "done"}
    plan = format_plan(chapters, statuses, "paper", gpu_available=False, nproc=4)
    assert ("torchrun --standalone --nproc_per_node=4 -m posgeom.cli --debug reproduce --ddp-worker "
            "posgeom.experiments.minimal_parametrisation:run_lowrank_training") in plan
    assert "minimal-parametrisation needs a GPU at paper scale" in plan
    assert re.search(r"sinusoids-as-mds\s+C4\s+done\s+skip", plan)
    assert "1 of 2 chapters" in plan and "the cost model for one H100/H200-class GPU where a chapter trains" in plan
    assert ddp_command(["m:f"], 2)[:3] == [sys.executable, "-m", "torch.distributed.run"]
    with pytest.raises(ValueError, match="several processes"):
        ddp_command(["m:f"], 1)


# ------------------------------------------------------------------------------------ torchrun worker

ENTRY = '''
import json, os
import torch
import torch.distributed as dist
from posgeom.models import TokenData, TrainConfig, build_model, get_config, train
from posgeom.registry import Registry

def run_tiny(settings):
    def compute():
        torch.set_num_threads(1)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(110, 300, (32, 8), generator=g)
        model = build_model(get_config("quick", vocab_size=300, d_model=16, n_heads=2, d_ff=32, max_len=8,
                                       dropout=0.0, attention_dropout=0.0), "classification", seed=0)
        train(model, TokenData(ids, None, (ids[:, 1] > ids[:, 2]).long()),
              TrainConfig(task="classification", batch_size=8, max_steps=4, device="cpu", progress=False))
        total = float(sum(p.detach().double().sum() for p in model.parameters()))
        return {"rank": dist.get_rank(), "world": dist.get_world_size(), "param_sum": total}, {}
    result = Registry(settings.results_dir).run("tiny_ddp", compute, params={"n": 32}, scale=settings.scale,
                                                seed=0, device="cpu")
    with open(os.path.join(os.environ["FAKE_OUT"], f"rank{dist.get_rank()}.json"), "w") as f:
        json.dump({"values": result.values, "written": result.manifest.get("written", True)}, f)
'''


def test_ddp_worker_under_torchrun_writes_from_rank_0_only(tmp_path):
    (tmp_path / "fake_ddp_entry.py").write_text(textwrap.dedent(ENTRY))
    # the children import the posgeom under test (this checkout), whatever the environment has installed
    pythonpath = __import__("os").pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[1])])
    env = {**__import__("os").environ, "PYTHONPATH": pythonpath, "POSGEOM_SCALE": "quick",
           "POSGEOM_DEVICE": "cpu", "POSGEOM_RESULTS_DIR": str(tmp_path / "results"), "FAKE_OUT": str(tmp_path),
           "POSGEOM_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(ddp_command(["fake_ddp_entry:run_tiny"], 2), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["written"] is True and ranks[1]["written"] is False
    assert [r["values"]["world"] for r in ranks] == [2, 2]
    assert ranks[0]["values"]["param_sum"] == ranks[1]["values"]["param_sum"]
    (entry,) = Registry(tmp_path / "results").entries("tiny_ddp")
    assert entry.values == ranks[0]["values"] and entry.values["rank"] == 0


def test_chapter_table_follows_the_book_order(repo_root):
    """The summary page and ``posgeom reproduce`` list the chapters in the order of ``_toc.yml``."""
    import yaml

    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [e["file"] for part in toc["parts"] for e in part["chapters"]]
    in_book = [f.removeprefix("notebooks/") for f in files if f.startswith("notebooks/")]
    assert [c.slug for c in CHAPTERS] == [s for s in in_book if s in {c.slug for c in CHAPTERS}]


def test_project_root_outside_the_checkout_is_the_checkout_holding_the_package(tmp_path, monkeypatch):
    """Run from a folder outside any checkout (as `posgeom classroom build` may be), the chapters are still
    found: the checkout is the one holding this package, not the package folder itself."""
    from posgeom.reproduce.chapters import project_root

    monkeypatch.chdir(tmp_path)
    root = project_root()
    assert (root / "notebooks").is_dir() and (root / "posgeom" / "reproduce" / "chapters.py").is_file()


def test_the_paper_time_of_a_chapter_with_model_work_is_the_cost_models():
    from dataclasses import replace

    from posgeom.costmodel import experiment_costs
    from posgeom.reproduce import cost_model_minutes, paper_minutes

    chapters = {c.slug: c for c in CHAPTERS}
    gpu = sum(c.gpu_minutes for c in experiment_costs() if c.chapter == "theorem4-separation")
    assert chapters["theorem4-separation"].paper.minutes is None  # one source: no typed guess beside the model
    assert chapters["theorem4-separation"].estimate("paper").minutes == pytest.approx(gpu)
    assert paper_minutes()["theorem4-separation"] == pytest.approx(gpu)
    # a chapter left to the cost model is priced by it; one with a GPU-minute or more of model work is left to it
    # (inside BERT's forward passes cost seconds: its paper time is its CPU work, which it estimates itself)
    priced = cost_model_minutes()
    assert all(priced.get(c.slug, 0.0) > 0 for c in CHAPTERS if c.paper.minutes is None)
    assert all(c.paper.minutes is None for c in CHAPTERS if priced.get(c.slug, 0.0) >= 1.0)
    # one left to a cost model that prices nothing is an error
    orphan = replace(chapters["corpus-geometry"], paper=replace(chapters["corpus-geometry"].paper, minutes=None))
    with pytest.raises(ValueError, match="prices none of its experiments"):
        orphan.estimate("paper")


def test_the_paper_time_of_a_chapter_without_model_work_is_its_last_recorded_run(tmp_path):
    from posgeom.reproduce import cost_model_minutes, recorded_runs

    chapter = next(c for c in CHAPTERS if c.slug == "corpus-geometry")
    registry = Registry(tmp_path / "results")
    # not run yet: the typed estimate, marked as such
    assert chapter.estimate("paper", registry) == chapter.paper and not chapter.estimate("paper", registry).measured
    for wall in (600.0, 90.0):  # a second run replaces the first (one entry per chapter and scale)
        registry.save(RUNS_EXPERIMENT, {"chapter": chapter.slug, "wall_s": wall, "peak_rss_gb": 1.25},
                      params={"chapter": chapter.slug}, scale="paper", seed=0, device="cpu")
    assert recorded_runs("paper", registry)[chapter.slug].values["wall_s"] == 90.0
    measured = chapter.estimate("paper", registry)
    assert measured.measured and measured.minutes == pytest.approx(1.5) and measured.memory_gb == 1.25
    assert recorded_runs("quick", registry) == {}
    # a chapter that trains keeps the cost model's GPU time even when a CPU run of it was recorded
    training = next(c for c in CHAPTERS if c.slug == "theorem4-separation")
    registry.save(RUNS_EXPERIMENT, {"chapter": training.slug, "wall_s": 20.0, "peak_rss_gb": 1.0},
                  params={"chapter": training.slug}, scale="paper", seed=0, device="cpu")
    assert training.estimate("paper", registry).minutes == pytest.approx(cost_model_minutes()[training.slug])


# --------------------------------------------------------------------------------------------
# The GPU chapters on a CPU at paper scale: GPU work reported, not run


def gpu_notebook(slug: str, extra: str = "other = 2 + 2") -> str:
    cells = [
        "import posgeom\nfrom posgeom.registry import Registry\nfrom posgeom.report import ComparisonRow, "
        "comparison_table, decided_rows\nfrom posgeom.verdicts import Decision\nsettings = posgeom.get_settings()",
        # a registry experiment named like GPU work of the cost model (learned_init_study)
        'table = Registry(settings.results_dir).run("learned_init_study", lambda: {"x": 1}, params={}, '
        'scale=settings.scale, seed=0, device="cpu")',
        'value = table.values["x"]',
        extra,
        'def row(claim, ours):\n    return ComparisonRow(claim, ours=ours, scale=settings.scale, model="none", '
        'corpus="toy", decision=Decision("reproduced"))\n'
        f'comparison_table(decided_rows([("C7", lambda: row("C7", f"{{value}}")), ("S3", lambda: row("S3", f"{{other}}"))], '
        f'settings), chapter="{slug}", settings=settings)',
    ]
    return HEADER + f"\n# {slug}\n\n" + "\n\n".join(f"```{{code-cell}} ipython3\n{c}\n```" for c in cells) + "\n"


def test_a_gpu_chapter_on_a_cpu_records_what_the_cpu_decides_and_what_waits(fake_book, monkeypatch):
    from posgeom.registry import ALLOW_DIRTY_ENV
    from posgeom.report import NEEDS_GPU

    monkeypatch.setenv(ALLOW_DIRTY_ENV, "1")  # paper-scale writes from a test folder
    gpu = (Chapter("fake-gpu", "Fake GPU", ("C7", "S3"), Estimate(0.1, 0.1), Estimate(1, 1), True),)
    (fake_book / "notebooks" / "fake-gpu.md").write_text(gpu_notebook("fake-gpu"))
    lines: list[str] = []
    reproduce("paper", device="cpu", chapters=gpu, notebooks_dir=fake_book / "notebooks",
              results_dir=fake_book / "results", out=lines.append, report_gpu_work=True)
    entry = Registry(fake_book / "results").load(CLAIMS_EXPERIMENT, params={"chapter": "fake-gpu"}, scale="paper")
    rows = {r["claim"]: r for r in entry.values["rows"]}
    # the waiting run is named in words (posgeom.registry.pending.run_words), not by its registry key
    assert rows["C7"]["verdict"] == NEEDS_GPU and run_words("learned_init_study") in rows["C7"]["ours"]
    assert rows["S3"]["verdict"] == "reproduced" and rows["S3"]["ours"] == "4"
    assert any("1 cell(s) wait for a GPU (3)" in line and "claims C7 S3 recorded" in line for line in lines), lines
    assert not Registry(fake_book / "results").entries("learned_init_study", scale="paper")
    # any other error still fails the chapter, naming its cell
    (fake_book / "notebooks" / "fake-gpu.md").write_text(gpu_notebook("fake-gpu", 'raise ValueError("a real bug")'))
    with pytest.raises(ChapterFailed, match="code cell 4 of 5.*ValueError: a real bug"):
        reproduce("paper", device="cpu", chapters=gpu, notebooks_dir=fake_book / "notebooks", force=True,
                  results_dir=fake_book / "results", out=lines.append, report_gpu_work=True)
    with pytest.raises(ValueError, match="paper scale on a CPU"):
        reproduce("quick", device="cpu", chapters=gpu, notebooks_dir=fake_book / "notebooks",
                  results_dir=fake_book / "results", out=lines.append, report_gpu_work=True)


def test_the_gpu_work_reported_is_the_cost_models_heavy_work():
    from fnmatch import fnmatchcase

    from posgeom.costmodel import CPU_FEASIBLE_HOURS, RESULT_NAMES, experiment_costs, gpu_work

    work = gpu_work()
    heavy = {c.experiment for c in experiment_costs() if c.cpu_hours > CPU_FEASIBLE_HOURS}
    assert set(work) == {p for e in heavy for p in RESULT_NAMES[e]}
    assert fnmatchcase("necessity.order_task_nocls", next(p for p in work if p.startswith("necessity.order_task")))
    assert work["learned_init_study"] > 0
    # the CPU runs what fits: the equivariance check's forward passes, the pretrained tables, Inside BERT
    for name in ("necessity.equivariance", "separation.pretrained", "inside_bert_layers", "learned_table_anatomy"):
        assert not any(fnmatchcase(name, p) for p in work), name
