"""Checks a CPU can decide at every scale (issue: every CPU-computable check run on the CPU): C1's identity,
C8 at the paper model's shapes, the C6-C8 and C9 rows without a table trained from scratch."""

from __future__ import annotations

import pytest

from posgeom import verdicts as v
from posgeom.config import get_settings
from posgeom.experiments import zoo
from posgeom.experiments.settings import EncoderShape


@pytest.fixture
def settings(tmp_path):
    return get_settings(results_dir=tmp_path / "results", device="cpu", seed=0)


def test_the_kernel_pair_equals_the_zoos_kernel_check_at_the_same_shapes(settings):
    """Oracle: the zoo computes the same stress at the pretrained model's shapes; at those shapes the pair,
    which needs no model, must give the same numbers."""
    z = zoo.run_zoo(settings)
    shape = EncoderShape(d_model=z.values["shape"]["d_model"], n_heads=z.values["shape"]["n_heads"])
    pair = zoo.run_kernel_pair(settings, shape=shape)
    assert pair.values["stress_scale_free"] == pytest.approx(z.values["kernel"]["stress_scale_free"], rel=1e-12)
    assert pair.values["max_sinusoidal"] == pytest.approx(z.values["encodings"]["sinusoidal"]["max_distance"])
    assert pair.values["max_rope"] == pytest.approx(z.values["encodings"]["rope"]["max_distance"])


def test_c8_at_the_paper_models_shapes_is_decided_not_left_to_a_stand_in(settings):
    from posgeom.chapters import encodings_at_a_glance as zr

    pair = zoo.run_kernel_pair(settings)
    assert (pair.values["d_model"], pair.values["n_heads"]) == (768, 12)
    (row,) = zr.comparison_rows(zoo.run_zoo(settings), pair, settings)
    assert row.verdict != v.INCONCLUSIVE and not row.stand_in and "d = 768, 12 heads" in row.model


def test_c7s_value_rule_can_fail_where_the_parabola_rule_could_not():
    # every slope on the parabola reaches 0.563 whenever its minimum is below it: the old rule said "depends";
    # ALiBi's own slopes (the mean, or any single head) far from 0.563 now make it fail
    d = v.c7_alibi_value({"low": 0.20, "high": 0.22}, [0.15, 0.31, 0.44])
    assert d.verdict == v.NOT_REPRODUCED and "no standard slope" in d.why
    # the paper's three decimals: 0.5634 is 0.563
    assert v.c7_alibi_value({"low": 0.5634, "high": 0.58}, [0.1]).verdict == v.REPRODUCED


def test_c9s_rule_reads_the_natural_ranks_not_any_rank():
    # the old rule: 22% inside the range over ranks (0.4 ... 0) gave "depends"; no natural rank near 22% fails
    d = v.c9_mds_violation({"SST-2, rank 1": 0.40, "SST-2, rank 3": 0.12}, [0.40, 0.22, 0.12, 0.0])
    assert d.verdict == v.NOT_REPRODUCED
    with pytest.raises(ValueError, match="natural rank"):
        v.c9_mds_violation({}, [0.2])


def test_c7s_premise_row_is_context_and_never_decides_the_bottom_line():
    from posgeom.summary import Check, bottom_line, evidence_kind

    def check(verdict, premise=""):
        return Check(chapter="real-corpora", claim="C7", index=0, scale="paper", ours="", verdict=verdict, why="w",
                     model="none", corpus="SST-2", options="", row_scale="paper", paper="", premise=premise)

    premise = check(v.NOT_REPRODUCED, premise="SST-2's statistics are shift-equivariant")
    assert evidence_kind(premise) == "premise"
    line = bottom_line([check(v.DEPENDS), premise])
    assert line.verdict == v.DEPENDS and "1 premise" in line.sentence


def test_the_monotonicity_table_without_the_scratch_table_is_the_default_where_there_is_none(settings):
    from posgeom.experiments import monotonicity as mo
    from posgeom.experiments import real_corpora as rc

    # IMDB has no table trained from scratch at quick scale: the CPU-only table is the very same entry
    assert "imdb" not in rc.CONFIGS.quick.scratch_corpora
    default = mo.run_monotonicity_table(settings, corpus="imdb", progress=False)
    assert mo.run_monotonicity_table(settings, corpus="imdb", train_scratch=False).key == default.key
    assert not any("scratch" in r["row"] for r in default.values["rows"])
