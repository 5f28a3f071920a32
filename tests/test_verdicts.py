"""The decision rules of posgeom.verdicts: every rule reaches each of its outcomes on planted numbers."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from posgeom import verdicts as v
from posgeom.geometry.intervals import SeedInterval

R, D, N, I, B = v.REPRODUCED, v.DEPENDS, v.NOT_REPRODUCED, v.INCONCLUSIVE, v.BY_CONSTRUCTION
ROOT = Path(__file__).resolve().parents[1]


def iv(low, high):
    """An interval as the rules read it (public attributes ``low`` and ``high``)."""
    return SeedInterval(mean=(low + high) / 2, std=0.0, low=low, high=high, n=5, level=0.95)


BERT, MINILM, GPT2 = "bert-base-uncased", "sentence-transformers/all-MiniLM-L6-v2", "openai-community/gpt2"

#: a lazy run that learned: losses below half of ln 2, a kernel that moves far less than in the rich runs
NTK = dict(train_losses=[0.1, 0.2], kernel_change_lazy=[0.01, 0.02], kernel_change_rich=[0.5, 0.6])

def peak_at(layer, n_layers=12):
    """A per-layer curve whose global peak is ``layer`` counted from 1."""
    return [1.0 - abs(k - layer) / n_layers for k in range(1, n_layers + 1)]


#: C4's sweep from a circulant corpus (t = 0) to a drift (t = 1): approximately circulant at t = 0.1 and 0.4
C4 = dict(circulant_deviation={"t = 0": 1e-15, "t = 0.1": 0.02, "t = 0.4": 0.09, "t = 1": 0.2},
          fourier_match={"t = 0": 1.0, "t = 0.1": 0.99, "t = 0.4": 0.95, "t = 1": 0.4})

#: C5's synthetic generators: drift K=4 has population rank 3 (rank-3 MDS exact), K=5 and markov more; pure noise
#: reaches 99.8% under 'paper' only
C5 = dict(population_stress={"K=4": 1e-30, "K=5": 0.004, "markov": 0.02},
          pure_noise={"scale_free": [-1.7, -1.6], "paper": [0.9983, 0.99999]}, rank=3)

#: rule -> [(kwargs, expected verdict)]: planted numbers for each outcome.
CASES = {
    "c1_equivariance": [(dict(perm_gap=1e-15, encoded_gaps=[1.5, 2.0]), B), (dict(perm_gap=1e-3, encoded_gaps=[1.5]), N),
                        # twelve layers of float64 rounding (the paper model) against encoded gaps of order 1
                        (dict(perm_gap=9e-7, encoded_gaps=[1.9, 2.3]), B)],
    "c1_nope_at_chance": [(dict(nope_accuracies=[0.5, 0.5]), B), (dict(nope_accuracies=[0.5, 0.7]), N)],
    "c1_causal_mask": [(dict(accuracies=[0.9, 0.95]), D), (dict(accuracies=[0.5, 0.52]), R)],
    "c1_symmetric_signal": [(dict(accuracies=[0.5, 0.5], reversal_gap=0.0, encoded_gaps=[1.8]), D),
                            (dict(accuracies=[0.5, 0.5], reversal_gap=2.5e-6, encoded_gaps=[1.8, 2.2]), D),
                            (dict(accuracies=[0.9], reversal_gap=0.3, encoded_gaps=[1.8]), R)],
    "c2_separation": [(dict(hold_intervals=[iv(0.05, 0.1)], broken_separations=[0.04]), B),
                      (dict(hold_intervals=[iv(0.05, 0.1)], broken_separations=[1e-5, 0.04]), R),
                      (dict(hold_intervals=[iv(0.0, 0.1), iv(0.05, 0.1)], broken_separations=[0.04]), N)],
    "c2_broken_conditions": [(dict(broken_separations=[1e-5], rho_hold=0.9, rho_broken=[0.1]), R),
                             (dict(broken_separations=[0.05], rho_hold=0.9, rho_broken=[0.1, 0.2]), D),
                             (dict(broken_separations=[0.05], rho_hold=0.9, rho_broken=[0.8]), N)],
    "c2_weight_decay": [(dict(shrink_broken=[0.01, 0.02], shrink_hold=[0.8, 0.9]), D),
                        (dict(shrink_broken=[0.01], shrink_hold=[0.02, 0.05]), N),
                        (dict(shrink_broken=[0.3], shrink_hold=[0.8]), I)],
    "c2_converged": [(dict(difference=iv(0.1, 0.2), control_separations=[1e-5, 2e-5, 0.01]), R),
                     (dict(difference=iv(-0.2, -0.1), control_separations=[1e-5]), N),
                     (dict(difference=iv(-0.1, 0.1), control_separations=[1e-5]), I),
                     (dict(difference=iv(0.1, 0.2), control_separations=[1e-5, 0.01, 0.02]), B)],
    "c3_full_rank_mds": [(dict(max_error=1e-14), B), (dict(max_error=1e-3), N)],
    "c6_near_zero": [(dict(stresses=[1e-16, -2e-15]), B), (dict(stresses=[1e-16, 0.02]), N)],
    "c3_least_stress": [(dict(smacof_gains=[0.2, 0.3], one_hot_mds=1 / 6, one_hot_best=1 / 9), N),
                        (dict(smacof_gains=[0.0, 0.001], one_hot_mds=1 / 6, one_hot_best=1 / 6), R),
                        (dict(smacof_gains=[0.0, 0.001], one_hot_mds=1 / 6, one_hot_best=1 / 9), N),
                        (dict(smacof_gains=[0.2], one_hot_mds=1 / 6, one_hot_best=1 / 6), N)],
    "c3_exact_impossible": [(dict(chord_error=1e-14, rank_b=40, width=768), N),
                            (dict(chord_error=1e-14, rank_b=1000, width=768), D),
                            (dict(chord_error=0.1, rank_b=40, width=768), R)],
    "c3_beats_other_encodings": [(dict(differences={"a": iv(-0.2, -0.1), "b": iv(-0.3, -0.01)}), R),
                                 (dict(differences={"a": iv(-0.2, -0.1), "b": iv(0.01, 0.03)}), D),
                                 (dict(differences={"a": iv(-0.2, -0.1), "b": iv(-0.01, 0.03)}), I)],
    "c4_circulant": [(dict(fourier_match=1.0, eigen_error=1e-15), B), (dict(fourier_match=0.9, eigen_error=1e-15), N)],
    "c4_sinusoidal_table": [(dict(C4, sinusoidal_stress=0.005, mds_stress=0.0, slow=20, n_frequencies=25), R),
                            (dict(C4, sinusoidal_stress=0.2, mds_stress=0.0, slow=3, n_frequencies=25), D),
                            (dict(C4, sinusoidal_stress=0.2, mds_stress=0.0, slow=3, n_frequencies=25,
                                  fourier_match={"t = 0": 1.0, "t = 0.1": 0.99, "t = 0.4": 0.6, "t = 1": 0.4}), N),
                            (dict(C4, sinusoidal_stress=0.005, mds_stress=0.0, slow=20, n_frequencies=25,
                                  circulant_deviation={"t = 0": 1e-15, "t = 0.1": 0.2, "t = 0.4": 0.3, "t = 1": 0.4}),
                             I)],
    "c5_parameter_savings": [(dict(n=50, d=50, r=3), B), (dict(n=50, d=50, r=10), N)],
    "c5_stress_reduction": [(dict(C5, reductions={"scale_free": {"K=5": iv(0.998, 0.999), "markov": 0.9985}}), R),
                            (dict(C5, reductions={"scale_free": {"K=5": iv(0.91, 0.92), "markov": -0.2}}), N),
                            (dict(C5, reductions={"scale_free": {"K=5": iv(0.91, 0.92), "markov": 0.999}}), D),
                            (dict(C5, reductions={"scale_free": {"K=5": iv(0.99, 0.999), "markov": -0.2}}), I),
                            (dict(C5, reductions={"scale_free": {"K=4": 1.0}, "paper": {"K=5": 0.9998}}), B)],
    "c5_lowrank_performance": [(dict(gap=iv(-0.02, 0.005)), R), (dict(gap=iv(0.02, 0.05)), N),
                               (dict(gap=iv(-0.01, 0.03)), I)],
    "c7_alibi_value": [(dict(mean_slope=iv(0.55, 0.57), head_stresses=[0.4, 0.9]), R),
                       (dict(mean_slope=iv(0.30, 0.32), head_stresses=[0.2, 0.6]), D),
                       (dict(mean_slope=iv(0.30, 0.32), head_stresses=[0.2, 0.5]), N)],
    "c7_alibi_ranking": [(dict(alibi_minus_sinusoidal=iv(-0.2, -0.1), alibi_minus_rope=iv(-0.3, -0.1)), R),
                         (dict(alibi_minus_sinusoidal=iv(0.1, 0.2), alibi_minus_rope=iv(0.1, 0.3)), N),
                         (dict(alibi_minus_sinusoidal=iv(0.1, 0.2), alibi_minus_rope=iv(0.1, 0.3),
                               lowest_in=["alpha = 1"]), D),
                         (dict(alibi_minus_sinusoidal=iv(-0.1, 0.2), alibi_minus_rope=iv(0.1, 0.3)), I)],
    "c7_shift_equivariance": [(dict(rank_interval=(1, 1), shift_share=0.8), R),
                              (dict(rank_interval=(3, 6), shift_share=0.1), N),
                              (dict(rank_interval=(1, 3), shift_share=0.2), D),
                              (dict(rank_interval=(1, 1), shift_share=0.2), D)],
    "c8_sinusoidal_rope": [(dict(scale_free_difference=iv(-0.001, 0.002), paper_ratio=1.1), R),
                           (dict(scale_free_difference=iv(-0.001, 0.002), paper_ratio=1000.0), D),
                           (dict(scale_free_difference=0.05, paper_ratio=1.0), N),
                           (dict(scale_free_difference=0.0, paper_ratio=1000.0, model=MINILM), I),
                           (dict(scale_free_difference=0.0, paper_ratio=1000.0, model=BERT), D)],
    "c9_mds_violation": [(dict(natural_rates={"rank 1": 0.21, "rank 3": 0.23}, rates_over_ranks=[0.21, 0.0]), R),
                         (dict(natural_rates={"rank 1": 0.21, "rank 3": 0.10}, rates_over_ranks=[0.21, 0.0]), D),
                         # 22% lies inside the curve's range (rank 2), but at no natural rank: the old rule said D
                         (dict(natural_rates={"rank 1": 0.40, "rank 4": 0.10}, rates_over_ranks=[0.4, 0.22, 0.1, 0.0]),
                          N)],
    "c9_random_violation": [(dict(rates=[0.49, 0.505]), B), (dict(rates=[0.3]), N)],
    "c9_pretrained_correlation": [(dict(spearman_by_corpus={"sst2": 0.5, "imdb": 0.4}, model=BERT), R),
                                  (dict(spearman_by_corpus={"sst2": 0.5, "imdb": 0.1}, model=BERT), D),
                                  (dict(spearman_by_corpus={"sst2": -0.1}, model=BERT), N),
                                  (dict(spearman_by_corpus={"sst2": 0.5, "imdb": 0.4}, model=MINILM), I),
                                  (dict(spearman_by_corpus={"sst2": -0.5}, model=MINILM), I)],
    "c10_layer_peak": [(dict(model=BERT, curves={"prop": peak_at(3), "static": peak_at(5)}, headline="prop"), D),
                       (dict(model=BERT, curves={"prop": peak_at(6), "static": peak_at(3)}, headline="prop"), D),
                       (dict(model=BERT, curves={"prop": peak_at(6), "static": peak_at(5)}, headline="prop"), N),
                       (dict(model=MINILM, curves={"prop": peak_at(3)}, headline="prop"), I)],
    "c11_ntk_order": [(dict(NTK, displacement=iv(0.2, 0.3), table=iv(0.2, 0.4)), R),
                      (dict(NTK, displacement=iv(0.2, 0.3), table=iv(0.46, 0.6)), D),
                      (dict(NTK, displacement=iv(0.46, 0.55), table=iv(0.2, 0.4)), N),
                      (dict(NTK, displacement=iv(0.44, 0.49), table=iv(0.5, 0.53)), I),
                      (dict(NTK, train_losses=[0.1, 0.69], displacement=iv(0.2, 0.3), table=iv(0.2, 0.4)), I),
                      (dict(NTK, kernel_change_lazy=[0.01, 0.3], displacement=iv(0.2, 0.3), table=iv(0.2, 0.4)), I),
                      (dict(NTK, kernel_change_rich=[0.02], displacement=iv(0.2, 0.3), table=iv(0.2, 0.4)), I)],
    "s1_neighbour_similarity": [(dict(neighbour_cos=0.95, model=GPT2), R), (dict(neighbour_cos=0.5, model=GPT2), N),
                                (dict(neighbour_cos=0.95, model=MINILM), I), (dict(neighbour_cos=0.5, model=MINILM), I)],
    "s2_first_positions_apart": [(dict(stand_apart=[0, 1, 2, 3, 4, 5, 300], model=GPT2), R),
                                 (dict(stand_apart=[0], model=GPT2), N), (dict(stand_apart=[], model=GPT2), N),
                                 (dict(stand_apart=[1, 2], model=GPT2), N), (dict(stand_apart=[0, 1, 2], model=GPT2), D),
                                 (dict(stand_apart=[0], model=MINILM), I)],
    "s3_frequency_bands": [(dict(banded_columns=6, n_columns=384), R), (dict(banded_columns=0, n_columns=384), N),
                           (dict(banded_columns=2, n_columns=384), I)],
    "s4_undertrained_tail": [(dict(difference=iv(-0.2, -0.1)), R), (dict(difference=iv(0.1, 0.2)), N),
                             (dict(difference=iv(-0.1, 0.2)), I)],
    "s5_no_vector_beyond": [(dict(error_raised=True), B), (dict(error_raised=False), N)],
    "s6_heuristics_order": [(dict(heuristics={"reuse": 0.5, "interp": 0.6}, target=0.99), R),
                            (dict(heuristics={"reuse": 0.99, "interp": 0.99}, target=0.99), N),
                            (dict(heuristics={"reuse": 0.5, "interp": 0.99}, target=0.99), D)],
    "s6_heuristics_powered": [(dict(differences={"reuse": iv(-0.2, -0.1), "interp": iv(-0.03, -0.01)}), R),
                              (dict(differences={"reuse": iv(-0.2, -0.1), "interp": iv(-0.004, 0.01)}), D),
                              (dict(differences={"reuse": iv(-0.003, 0.01), "interp": iv(-0.02, 0.01)}), N),
                              (dict(differences={"reuse": iv(-0.2, -0.1), "interp": iv(-0.02, 0.01)}), I)],
    "s6_heuristics_mlm": [(dict(loss_spread=0.01, seed_sd=0.01, heuristic_losses={"a": 9.0}, no_position_loss=8.0), I),
                          (dict(loss_spread=1.0, seed_sd=0.01, heuristic_losses={"a": 9.0, "b": 8.5},
                                no_position_loss=8.0), R),
                          (dict(loss_spread=1.0, seed_sd=0.01, heuristic_losses={"a": 7.0}, no_position_loss=8.0), N),
                          (dict(loss_spread=1.0, seed_sd=0.01, heuristic_losses={"a": 9.0, "b": 7.0},
                                no_position_loss=8.0), D)],
    "s7_small_init": [(dict(steps_small=100, steps_large=300, final_loss_difference=iv(-0.2, -0.1)), R),
                      (dict(steps_small=100, steps_large=300, final_loss_difference=iv(-0.005, 0.1)), D),
                      (dict(steps_small=100, steps_large=300, final_loss_difference=iv(-0.2, 0.1)), I),
                      (dict(steps_small=300, steps_large=100, final_loss_difference=iv(-0.2, -0.1)), N),
                      (dict(steps_small=300, steps_large=float("nan"), final_loss_difference=iv(-0.2, -0.1)), R),
                      (dict(steps_small=None, steps_large=100, final_loss_difference=iv(-0.2, -0.1)), N)],
    "s8_sinusoidal_init": [(dict(accuracy=0.9), B), (dict(accuracy=0.5), N)],
    "s9_dropout": [(dict(generalisation_gap=0.01, loss_effect=iv(-0.2, -0.1)), I),
                   (dict(generalisation_gap=0.5, loss_effect=iv(-0.2, -0.1)), R),
                   (dict(generalisation_gap=0.5, loss_effect=iv(0.1, 0.2)), N),
                   (dict(generalisation_gap=0.5, loss_effect=iv(-0.1, 0.2)), I)],
}


def returned_verdicts(rule) -> set[str]:
    """The verdicts a rule's own source can return (``Decision(<CONSTANT>, ...)`` and ``stand_in``)."""
    names = {"REPRODUCED": R, "DEPENDS": D, "NOT_REPRODUCED": N, "INCONCLUSIVE": I, "BY_CONSTRUCTION": B}
    found = set()
    for node in ast.walk(ast.parse(inspect.getsource(rule).strip())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Decision" and node.args:
            found.add(names[node.args[0].id])
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "stand_in":
            found.add(I)
    return found


def test_every_rule_has_cases():
    assert set(CASES) == set(v.RULES), set(v.RULES) ^ set(CASES)
    assert set(v.RULES) <= set(v.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_rule_reaches_each_of_its_outcomes(name):
    rule = v.RULES[name]
    reached = set()
    for kwargs, expected in CASES[name]:
        decision = rule(**kwargs)
        assert isinstance(decision, v.Decision)
        assert decision.verdict == expected, (name, kwargs, decision)
        reached.add(decision.verdict)
    # every outcome the rule's code can return is reached by a planted case
    assert reached == returned_verdicts(rule), name
    # an evidence verdict the rule cannot produce is said so in its docstring, with why
    sentences = [s for s in re.split(r"(?<=\.)\s", " ".join(rule.__doc__.split())) if "cannot be" in s]
    for verdict in set(v.EVIDENCE) - reached:
        assert any(f'``"{verdict}"``' in s and ":" in s for s in sentences), (name, verdict)


def test_a_stand_in_is_inconclusive_whether_it_agrees_or_not():
    agree = v.s1_neighbour_similarity(0.99, MINILM)
    disagree = v.s1_neighbour_similarity(0.1, MINILM)
    assert agree.verdict == disagree.verdict == I
    assert agree.stand_in == MINILM and "GPT-2" in agree.would_decide
    # a check blocked by a model says the command that decides it where the model can be downloaded
    assert agree.would_decide.startswith(v.decide_command("S1", "openai-community/gpt2"))
    assert v.c10_layer_peak(MINILM, {"p": peak_at(3)}, "p").would_decide.startswith(v.decide_command("C10", BERT))
    assert v.s1_neighbour_similarity(0.99, GPT2).stand_in == ""
    assert v.stand_in(BERT, v.PAPER_MODEL, "C9") is None
    assert v.stand_in("bert-base-uncased (pretrained)", v.PAPER_MODEL, "C9") is None
    assert v.stand_in(MINILM, v.PAPER_MODEL, "C9").verdict == I
    assert v.stand_in("distilbert-base-uncased", v.PAPER_MODEL, "C9").verdict == I
    assert v.is_model("openai-community/gpt2", "gpt2") and not v.is_model("gpt2-medium", "gpt2")


def test_s2_reads_the_seed_first_positions_not_position_0_alone():
    # the old check called this reproduced; the seed says 0 to about 5-10 stand apart
    assert v.s2_first_positions_apart([0], GPT2).verdict == N
    assert v.s2_first_positions_apart(range(8), GPT2).verdict == R


def test_reasons_state_what_the_rule_computed():
    d = v.c7_alibi_ranking(iv(0.01, 0.02), iv(0.03, 0.05))
    assert "both intervals exclude 0" in d.why and "[+0.0100, +0.0200]" in d.why
    d = v.c7_alibi_ranking(iv(-0.01, 0.02), iv(0.03, 0.05))
    assert "exclude 0" not in d.why and "holds 0" in d.why
    assert "2.00%" not in v.c5_parameter_savings(50, 50, 3).why and "88.00%" in v.c5_parameter_savings(50, 50, 3).why


def test_a_reason_names_only_the_findings_that_hold():
    assert "one-hot" not in v.c3_least_stress([0.2], 1 / 6, 1 / 6).why
    assert "SMACOF" not in v.c3_least_stress([0.0], 1 / 6, 1 / 9).why


def test_rules_read_intervals_as_objects_or_mappings():
    a = v.s4_undertrained_tail({"low": -0.2, "high": -0.1, "estimate": -0.15, "sd": 0.0, "n": 5, "level": 0.95})
    b = v.s4_undertrained_tail(iv(-0.2, -0.1))
    assert a == b


@pytest.mark.parametrize("path", sorted((ROOT / "posgeom" / "verdicts").glob("*.py")), ids=lambda p: p.name)
def test_thresholds_are_named_constants_with_a_reason(path):
    source = path.read_text(encoding="utf-8").splitlines()
    for k, line in enumerate(source):
        if re.match(r"^[A-Z_]+(, [A-Z_]+)* = [-0-9.(]", line):
            assert source[k - 1].startswith("#"), f"the constant on line {k + 1} has no reason beside it: {line}"


# the package: one module per part of the book, the verdict an Enum of its words, typed intervals


def test_the_rules_live_one_part_of_the_book_a_module_none_over_600_lines():
    from posgeom.verdicts import learned_tables, optimal_encoding, paper_experiments, why_position

    assert v.PARTS == (why_position, optimal_encoding, paper_experiments, learned_tables)
    claims = {why_position: {"c1", "c2"}, optimal_encoding: {"c3", "c4", "c5", "c6"},
              paper_experiments: {"c7", "c8", "c9", "c10", "c11"},
              learned_tables: {f"s{k}" for k in range(1, 10)}}
    for part, wanted in claims.items():
        found = {name.split("_")[0] for name in part.__all__ if name in v.RULES}
        assert found == wanted, part.__name__
    for path in (ROOT / "posgeom" / "verdicts").glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 600, path.name
    for part in v.PARTS:  # the package's docstring promises every public name of its parts
        assert set(part.__all__) <= set(v.__all__) and all(hasattr(v, name) for name in part.__all__), part.__name__


#: What the one module ``posgeom/verdicts.py`` exported (its ``__all__``) and what callers read from it besides.
OLD_NAMES = (
    "REPRODUCED DEPENDS NOT_REPRODUCED INCONCLUSIVE BY_CONSTRUCTION VERDICTS EVIDENCE PAPER_MODEL Decision is_model "
    "stand_in ntk_learned ntk_lazy RULES decide_command ACCURACY_MARGIN TAIL_EFFECT LOSS_EFFECT ORDER_EFFECT "
    "FLOOR_EFFECT MAX_SEEDS SEED_S1_MODEL SEED_S1_HUB USES_POSITION_SDS SHORTFALL LAZY_KERNEL_CHANGE SEP_TOL "
    "ROUNDING_TOL CHANCE ABOVE_CHANCE OVERFIT_GAP RANDOM_VIOLATION LEARNED_LOSS PAPER_ALIBI_STRESS"
).split()


def test_every_name_of_the_old_module_is_importable_from_the_package():
    import posgeom.verdicts as package

    missing = [name for name in OLD_NAMES + sorted(v.RULES) if not hasattr(package, name)]
    assert not missing
    assert set(OLD_NAMES) - {"SEED_S1_MODEL", "SEED_S1_HUB", "USES_POSITION_SDS", "SHORTFALL", "LAZY_KERNEL_CHANGE",
                             "SEP_TOL", "ROUNDING_TOL", "CHANCE", "ABOVE_CHANCE", "OVERFIT_GAP", "RANDOM_VIOLATION",
                             "LEARNED_LOSS", "PAPER_ALIBI_STRESS"} <= set(package.__all__)


def test_a_verdict_is_an_enum_whose_value_is_the_word():
    import json

    assert [x.value for x in v.Verdict] == ["reproduced", "depends on an unstated choice", "not reproduced",
                                            "inconclusive here", "holds by construction"]
    assert v.VERDICTS == tuple(v.Verdict) and v.REPRODUCED is v.Verdict.REPRODUCED
    for verdict in v.Verdict:
        # a stored row, a table cell and a sentence read the word itself, byte for byte
        assert verdict == verdict.value and str(verdict) == f"{verdict}" == verdict.value
        assert repr(verdict) == repr(verdict.value)  # a verdict glued to a page shows as the plain word did
        assert json.dumps({"verdict": verdict}) == json.dumps({"verdict": verdict.value})
        assert {verdict.value: 1}[verdict] == 1
    # a decision given the word as a plain string holds the Verdict, and equals the one given the member
    assert v.Decision("reproduced").verdict is v.REPRODUCED
    assert v.Decision("not reproduced", why="x") == v.Decision(v.NOT_REPRODUCED, why="x")
    with pytest.raises(ValueError, match="unknown verdict 'proven'; valid verdicts are reproduced, depends"):
        v.Decision("proven")
    with pytest.raises(ValueError, match="a verdict of 'not reproduced' needs a `why`"):
        v.Decision(v.NOT_REPRODUCED)


def test_rules_take_typed_intervals_and_refuse_anything_else_clearly():
    from posgeom.geometry.bootstrap import Interval

    boot = Interval(estimate=-0.15, low=-0.2, high=-0.1)
    assert v.c7_alibi_ranking(boot, boot).verdict == R  # a bootstrap interval of a corpus statistic
    assert v.c7_alibi_ranking(boot.as_dict(), iv(-0.2, -0.1)).why == v.c7_alibi_ranking(boot, boot).why
    with pytest.raises(TypeError, match="got tuple"):
        v.c7_alibi_ranking((-0.2, -0.1), boot)
    with pytest.raises(ValueError, match="this mapping lacks high"):
        v.c7_alibi_ranking({"low": -0.2}, boot)


def test_rules_refuse_empty_input():
    with pytest.raises(ValueError, match="at least one"):
        v.c1_causal_mask([])
    with pytest.raises(ValueError, match="at least one"):
        v.c3_beats_other_encodings({})


VERDICT_LITERAL = re.compile(r"[\"'](" + "|".join(re.escape(x) for x in v.VERDICTS) + r")[\"']")


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "summary").glob("*.md")),
                         ids=lambda p: p.name)
def test_no_chapter_or_summary_source_holds_a_verdict_as_a_string_literal(path):
    found = VERDICT_LITERAL.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} types verdicts by hand: {sorted(set(found))}; call a rule of posgeom.verdicts"


# every decision over seeds states its power for the smallest effect that matters


SEED_RULES = {
    "c5_lowrank_performance": (lambda gap: v.c5_lowrank_performance(gap), v.ACCURACY_MARGIN),
    "s4_undertrained_tail": (lambda d: v.s4_undertrained_tail(d), v.TAIL_EFFECT),
    "c2_converged": (lambda d: v.c2_converged(d, [1e-5]), v.FLOOR_EFFECT),
    "s7_small_init": (lambda d: v.s7_small_init(100, 300, d), v.LOSS_EFFECT),
    "s9_dropout": (lambda d: v.s9_dropout(0.2, d), v.LOSS_EFFECT),
    "c11_ntk_order": (lambda d: v.c11_ntk_order(displacement=d, table=d, **NTK), v.ORDER_EFFECT),
}


@pytest.mark.parametrize("name", sorted(SEED_RULES))
def test_a_decision_over_seeds_states_its_power(name):
    from posgeom.geometry.intervals import exclusion_power, seeds_for_power

    rule, effect = SEED_RULES[name]
    # a noisy pilot over 5 seeds centred on a small effect: underpowered for the effect that matters (an sd of
    # 0.05, or as large as the effect where the effect is larger)
    sd = max(0.05, effect)
    half = 2.7764451 * sd / 5 ** 0.5  # Student-t's 97.5 % quantile with 4 degrees of freedom
    noisy = SeedInterval(mean=0.004, std=sd, low=0.004 - half, high=0.004 + half, n=5, level=0.95)
    decision = rule(noisy)
    power, needed = exclusion_power(5, sd, effect), seeds_for_power(sd, effect)
    assert f"power {power:.0%} for the smallest effect that matters, {effect:.3g} (5 seeds, sd {sd:.3g}" in decision.why
    assert f"80% needs {needed} seeds" in decision.why
    if decision.verdict == I:
        assert (f"over {needed} seeds" if needed <= v.MAX_SEEDS else f"would need {needed} seeds") in decision.would_decide
    # an interval without its sd and seeds cannot state a power: a clear error, not a silent omission
    with pytest.raises(ValueError, match="number of seeds and sd"):
        rule({"low": noisy.low, "high": noisy.high})


def test_an_inconclusive_c5_asks_for_the_seeds_that_resolve_it():
    from posgeom.geometry.intervals import seeds_for_power

    # sd 0.02: 80% power for a one-point loss needs a feasible number of seeds, and the rule asks for them
    noisy = SeedInterval(mean=0.02, std=0.02, low=0.02 - 0.0248, high=0.02 + 0.0248, n=5, level=0.95)
    decision = v.c5_lowrank_performance(noisy)
    needed = seeds_for_power(0.02, v.ACCURACY_MARGIN)
    assert decision.verdict == I and needed <= v.MAX_SEEDS
    assert decision.would_decide.startswith(f"the same paired comparison at the same model size over {needed} seeds")
    # sd 0.1: it would need hundreds: the rule asks for a less noisy design instead of an absurd run
    noisy = SeedInterval(mean=0.02, std=0.1, low=0.02 - 0.124, high=0.02 + 0.124, n=5, level=0.95)
    decision = v.c5_lowrank_performance(noisy)
    assert decision.would_decide.startswith("a less noisy design than the same paired comparison")
    assert f"would need {seeds_for_power(0.1, v.ACCURACY_MARGIN)} seeds" in decision.would_decide


def test_c5_shows_its_interval_on_the_right_side_of_the_margin():
    # an upper bound 0.0003 above the one-point margin: three decimals would print it as the margin itself
    near = SeedInterval(mean=0.002, std=0.042, low=-0.0063, high=0.0103, n=100, level=0.95)
    decision = v.c5_lowrank_performance(near)
    assert decision.verdict == I and "[-0.0063, +0.0103]" in decision.why
