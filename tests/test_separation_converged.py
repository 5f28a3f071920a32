"""Theorem 4's CPU design (posgeom.experiments.separation_converged): which pairs it reads, against naive loops,
and one tiny run of the design checked against separate training runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from posgeom import verdicts
from posgeom.config import get_settings
from posgeom.experiments import separation as sp, separation_converged as sc
from posgeom.experiments.paired_design import PairedDesign


def _hellinger(p, q):
    """The chord Hellinger distance of two distributions, term by term: ||sqrt(p) - sqrt(q)||."""
    return np.sqrt(sum((np.sqrt(a) - np.sqrt(b)) ** 2 for a, b in zip(p, q)))


def test_the_sampling_ceiling_is_the_largest_distance_between_sample_marginals():
    rng = np.random.default_rng(0)
    ids = rng.integers(2, 9, size=(300, 6))
    got = sc.sampling_ceiling(ids, n_positions=5, vocab_size=9)
    marginals = [np.bincount(ids[:, i], minlength=9) / 300 for i in range(5)]  # the first 5 positions only
    naive = max(_hellinger(marginals[i], marginals[j]) for i, j in itertools.combinations(range(5), 2))
    assert got == pytest.approx(naive, rel=1e-12)


def test_resolved_pairs_are_those_above_the_ceiling_in_the_order_of_upper():
    rng = np.random.default_rng(1)
    population = rng.dirichlet(np.ones(7), size=6)
    ceiling = 0.3
    naive = [_hellinger(population[i], population[j]) > ceiling for i, j in itertools.combinations(range(6), 2)]
    assert sc.resolved_pairs(population, ceiling).tolist() == naive
    with pytest.raises(ValueError, match="ceiling must be a Hellinger distance"):
        sc.resolved_pairs(population, -0.1)


def test_the_population_the_design_reads_is_the_drift_corpus_it_trains_on():
    from posgeom.corpora.synthetic import population_marginals
    from posgeom.models.mlm_inputs import synthetic_mlm_data

    c = sp.CONFIGS["quick"].synthetic
    corpus = synthetic_mlm_data("drift", n_sequences=8, n_positions=c.n_positions, vocab_size=c.vocab_size, seed=0)
    assert np.array_equal(population_marginals("drift", n_positions=c.n_positions, vocab_size=c.vocab_size, seed=0),
                          corpus["population"])


def test_the_design_can_run():
    sc.CONVERGED_DESIGN.paired.check()


TINY = sc.ConvergedDesign(steps=6, every=2, paired=PairedDesign(effect=0.1, pilot_seeds=(100, 101), max_seeds=5))


@pytest.fixture(scope="module")
def tiny_design(tmp_path_factory):
    """The design on the chapter's quick corpora, 6 steps a run: 7 seeds of three runs."""
    settings = get_settings(scale="quick", results_dir=tmp_path_factory.mktemp("converged"), device="cpu")
    return sc.run_separation_converged(settings, design=TINY)


def test_a_tiny_design_pairs_the_conditions_with_the_stationary_floor_seed_by_seed(tiny_design):
    from posgeom.experiments.settings import as_params
    from posgeom.models.separation_training import train_separation
    from posgeom.validation import upper

    design, r = TINY, tiny_design
    v = r.values
    assert v["plan"]["seeds"] == 5 and [x["seed"] for x in v["runs"]] == [0, 1, 2, 3, 4]
    assert [x["seed"] for x in v["pilot"]] == [100, 101]
    assert 0 < v["n_resolved"] < v["n_pairs"] == 24 * 23 // 2 and v["least_resolved"] > v["ceiling"]

    # seed 3 retrained apart: a and b are log10 of the separation over the resolved pairs of each setup
    conf = sp.CONFIGS["quick"]
    pairs = None
    for key, setup in (("a", sp.Setup.HOLD), ("b", sp.Setup.STATIONARY)):
        data = sp.separation_data(setup.corpus, setup.task, conf, seed=0)
        if pairs is None:
            stationary = sp.separation_data("stationary", "mlm", conf, seed=0)
            ceiling = sc.sampling_ceiling(stationary.train["input_ids"], conf.synthetic.n_positions,
                                          stationary.vocab_size)
            assert ceiling == pytest.approx(v["ceiling"])
            from posgeom.corpora.synthetic import population_marginals
            pairs = sc.resolved_pairs(population_marginals("drift", n_positions=24, vocab_size=48, seed=0), ceiling)
        runs = train_separation(data, task=setup.task, init="normal", weight_decay=design.weight_decay, seeds=(3,),
                                shape=as_params(conf.model), steps=6, batch_size=conf.train.batch_size,
                                lr=conf.train.lr, every=2, progress=False)
        assert v["runs"][3][key] == pytest.approx(np.log10(upper(runs.final_distances[0])[pairs].min()))
    run = v["runs"][3]
    assert run["difference"] == pytest.approx(run["a"] - run["b"])
    assert set(run["loss"]) == set(sp.SETUPS) == {"hold", "stationary", "control"}
    assert run["control"] >= run["sep_all"]["control"]
    assert r.manifest["params"]["design"]["weight_decay"] == design.weight_decay


def test_the_chapter_quotes_the_design_and_decides_its_row_by_the_rule(tiny_design):
    from posgeom.chapters import theorem4_separation as spr

    r, runs = tiny_design, tiny_design.values["runs"]
    c = spr.converged_summary(r)
    assert c["seeds"] == 5 and c["n_resolved"] + c["n_unresolved"] == c["n_pairs"] and c["steps"] == TINY.steps
    assert c["model"] == r.manifest["model"] and "width 32" in c["model"]
    assert c["ratio"] == pytest.approx(10 ** np.mean([x["a"] - x["b"] for x in runs]))
    assert c["ratio_low"] <= c["ratio"] <= c["ratio_high"]
    assert c["control"] == pytest.approx(np.median([x["control"] for x in runs]))
    ratios = spr.converged_ratios(r)
    assert list(ratios.index) == [0, 1, 2, 3, 4] and list(ratios.columns) == ["resolved pairs", "unresolved pairs"]
    row = spr._converged_row(r)
    decision = verdicts.c2_converged(r.values["difference"], [x["control"] for x in runs])
    assert (row.verdict, row.why) == (decision.verdict, decision.why)
    assert f"the {c['n_resolved']} pairs" in row.ours and "seeds sized before the run" in row.options
