"""Words where the pages showed the code's names (issue #45, docs/STYLE.md rules 2, 4 and 13): a table's row labels,
the run a pending row waits for, and a range over seeds whose ends are equal."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- row labels of tables


def test_row_labels_that_are_field_names_read_as_words():
    """A Styler's and a DataFrame's row labels go through posgeom.wording.label_words: "mds_rank3" is "MDS at rank
    3", another field name has spaces for underscores, a label in words or a number is left as it is; the row
    order and the values do not change."""
    from posgeom.plotting import frame_html, reader_frame, styler_html
    from posgeom.wording import label_words

    assert label_words("mds_rank3") == "MDS at rank 3"
    assert label_words("violation_rate") == "violation rate"
    assert label_words("sinusoidal") == "sinusoidal" and label_words("SST-2, rank 3") == "SST-2, rank 3"
    assert label_words(128) == 128
    stress = pd.DataFrame({"SST-2": [0.01, 0.02, 0.3]}, index=["mds", "mds_rank3", "random_walk"])
    for html in (styler_html(stress.style.format("{:.3g}")), frame_html(stress)):
        text = re.sub(r"<[^>]+>", " ", html)
        assert "mds_rank3" not in text and "random_walk" not in text, text
        assert "MDS at rank 3" in text and "random walk" in text
        assert text.index("MDS at rank 3") < text.index("random walk")
    shown = reader_frame(stress)
    assert list(shown.index) == ["mds", "MDS at rank 3", "random walk"] and list(shown["SST-2"]) == [0.01, 0.02, 0.3]
    two_levels = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.MultiIndex.from_tuples([("SST-2", "mds_rank3"),
                                                                                  ("IMDB", "mds_rank3")]))
    assert "mds_rank3" not in styler_html(two_levels.style) and "mds_rank3" not in frame_html(two_levels)


def test_the_rank_table_names_its_options_in_words():
    """The minimal parametrisation's rank table (a cell of its page) labels its SST-2 rows with the options in
    words, not "SST-2 (model, min_count 10, n = 60)": through special_words, and the minimum count in words."""
    from posgeom.wording import special_words

    assert special_words("model") == "the model's special tokens" and special_words("content") == "content tokens only"
    page = (ROOT / "notebooks" / "minimal-parametrisation.md").read_text()
    assert "SST-2 ({special_words(special)}, positions reached {reached}, n = {n_kept})" in page
    assert 'reached = "at least once" if min_count == 1 else f"{min_count:,} times or more"' in page


# --------------------------------------------------------------------------- what a pending row waits for


def test_a_pending_row_names_its_run_in_words_and_keeps_the_key_for_the_command():
    """"needs a GPU (about 5 GPU-minutes for the table trained from scratch on SST-2; scripts/gpu-slice)", not
    "... for real_corpora_scratch_sst2; ..."; the registry key stays on the error, for the command."""
    from posgeom.registry import NeedsGPU, Pending
    from posgeom.registry.pending import run_words

    err = NeedsGPU("real_corpora_scratch_sst2", 5.2)
    assert err.text == "needs a GPU (about 5 GPU-minutes for the table trained from scratch on SST-2; scripts/gpu-slice)"
    assert err.experiment == "real_corpora_scratch_sst2" and err.command == "scripts/gpu-slice (writes real_corpora_scratch_sst2)"
    assert "real_corpora_scratch_sst2" in Pending("real_corpora_scratch_sst2", 5.2)._repr_html_()  # in its tooltip
    assert run_words("separation.drift.mlm.normal.wd0") == ("the training runs of the separation on the drift corpus "
                                                            "(masked-token prediction, a normal initialisation, "
                                                            "without weight decay)")
    assert run_words("monotonicity_ntk_rich") == "the training runs in the rich regime"
    assert run_words("toy.gpu") == "toy.gpu"  # a key without words is shown as it is


def _matching(pattern: str) -> list[str]:
    """Registry keys that a RESULT_NAMES pattern stands for (its stars filled as the experiments fill them)."""
    from posgeom.costmodel.catalogue import _SEPARATION_CALLS

    if pattern.startswith("separation.*"):
        return [f"separation.{c}.{t}.{i}.wd{0.01 if d else 0:g}" for c, t, i, d in _SEPARATION_CALLS]
    if pattern == "real_corpora_scratch_*":
        return ["real_corpora_scratch_sst2", "real_corpora_scratch_imdb"]
    if pattern == "monotonicity_ntk_*":
        from posgeom.experiments.monotonicity_ntk import REGIMES

        return [f"monotonicity_ntk_{r}" for r in REGIMES]
    return [pattern.rstrip("*"), pattern.replace("*", "_nocls")] if pattern.endswith("*") else [pattern]


def test_every_gpu_run_has_words():
    """Every registry entry the cost model calls GPU work (posgeom.costmodel.RESULT_NAMES) is named in words on a
    page: no key, no underscore, no dotted name."""
    from posgeom.costmodel import RESULT_NAMES
    from posgeom.registry.pending import run_words

    keys = [key for patterns in RESULT_NAMES.values() for pattern in patterns for key in _matching(pattern)]
    assert len(keys) > len(RESULT_NAMES)
    unnamed = [f"{key} -> {run_words(key)}" for key in keys if re.search(r"_|[a-z]\.[a-z]", run_words(key))]
    assert not unnamed, unnamed


# --------------------------------------------------------------------------- a range over seeds


def test_a_range_over_seeds_with_equal_ends_is_said_once():
    """"1.000 in every seed", not "1.000 (seeds 1.000–1.000)"; a real range keeps the mean and its ends."""
    from posgeom.chapters.theorem1_necessity import seed_spread

    assert seed_spread(1.0, 1.0, 1.0) == "1.000 in every seed"
    assert seed_spread(0.99995, 0.99991, 1.0) == "1.000 in every seed"  # equal as shown, to 3 decimals
    assert seed_spread(0.95, 0.9, 1.0) == "0.950 (seeds 0.900–1.000)"


def _order_row(position, causal, accuracy):
    return SimpleNamespace(position=position, causal=causal, accuracy=accuracy, mean=sum(accuracy) / len(accuracy),
                           std=0.0, min=min(accuracy), max=max(accuracy))


def test_theorem1_rows_say_a_range_over_seeds_once(monkeypatch):
    """The chapter's C1 rows (the causal mask, ALiBi without [CLS]) never print "(seeds 1.000–1.000)"."""
    from posgeom.chapters import theorem1_necessity as t1
    from posgeom.config import get_settings

    rows = [_order_row("none", False, [0.5] * 5), _order_row("none", True, [1.0] * 5),
            _order_row("alibi", False, [0.5, 0.52, 0.49, 0.5, 0.51]), _order_row("learned", False, [1.0] * 5)]
    gaps = [SimpleNamespace(position="none", causal=False, perm_gap=1e-16, reversal_gap=1e-16),
            SimpleNamespace(position="alibi", causal=False, perm_gap=0.3, reversal_gap=1e-16),
            SimpleNamespace(position="learned", causal=False, perm_gap=0.3, reversal_gap=0.2)]
    monkeypatch.setattr(t1, "order_task_rows", lambda result: rows)
    monkeypatch.setattr(t1, "equivariance_rows", lambda result: gaps)
    made = t1.comparison_rows(None, None, None, get_settings(scale="quick", device="cpu"))
    texts = [r.ours for r in made]
    causal = next(t for t in texts if t.startswith("NoPE with a causal mask"))
    assert causal == "NoPE with a causal mask: 1.000 in every seed"
    alibi = next(t for t in texts if t.startswith("ALiBi without [CLS]"))
    assert alibi.startswith("ALiBi without [CLS]: 0.504 (seeds 0.490–0.520); ")
    assert not any(re.search(r"seeds (\d\.\d+)–\1\b", t) for t in texts), texts
