"""How robust each bottom line is: the threshold value at which a claim's bottom line flips, found by a scan and a
bisection (posgeom.verdicts.thresholds, posgeom.summary.robustness), against a brute-force scan (the oracle) on
planted rules and on every planted case of every real rule."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from posgeom import summary as sm
from posgeom import verdicts as v
from posgeom.registry import Registry
from posgeom.registry.manifest import canonical
from posgeom.report import ComparisonRow, record_comparison
from posgeom.summary import page
from posgeom.summary.robustness import robustness
from posgeom.verdicts import thresholds as th
from posgeom.verdicts.decision import Decision

ROOT = Path(__file__).resolve().parents[1]
R, D, N, I = v.REPRODUCED, v.DEPENDS, v.NOT_REPRODUCED, v.INCONCLUSIVE

# ------------------------------------------------------------------------------------ planted rules

#: A planted margin: a value above it is a finding.
MARGIN = 0.1
#: A planted band's lower and upper edges.
LOW_EDGE, HIGH_EDGE = 0.2, 0.6
#: A planted count: a run at least this long is a finding.
MIN_RUN = 5
#: The paper's own value in a planted rule: not a threshold.
PAPER_VALUE = 0.5


def _helper_reads_margin(x: float) -> bool:
    return x > MARGIN


@th.record_inputs
def planted_margin(x: float) -> Decision:
    """Reproduced above the margin (read through a helper), not reproduced below."""
    if _helper_reads_margin(x):
        return Decision(R)
    return Decision(N, why=f"{x} ≤ {MARGIN}")


@th.record_inputs
def planted_band(x: float) -> Decision:
    """Reproduced inside the band, depends below it, not reproduced above it: two edges, two flips."""
    if x <= LOW_EDGE:
        return Decision(D, why="below the band")
    if x >= HIGH_EDGE:
        return Decision(N, why="above the band")
    return Decision(R)


@th.record_inputs
def planted_run(run: int) -> Decision:
    """A count against a whole-number threshold (the rule uses it as a count)."""
    if run >= MIN_RUN and len(range(MIN_RUN)) == MIN_RUN:
        return Decision(R)
    return Decision(N, why=f"a run of {run}")


@th.record_inputs
def planted_no_threshold(ok: bool, x: float = PAPER_VALUE) -> Decision:
    """Reads no threshold: the paper's value is not one."""
    return Decision(R) if ok and x == PAPER_VALUE else Decision(N, why="not ok")


PLANTED = {f.__name__: f for f in (planted_margin, planted_band, planted_run, planted_no_threshold)}


def check(decision: Decision, *, scale="paper", changed="", stale=None, row_scale=None) -> sm.Check:
    return sm.Check(chapter="alpha", claim="C7", index=0, scale=scale, ours="1", verdict=str(decision.verdict),
                    why=decision.why, model="m", corpus="c", options="", row_scale=row_scale or scale, paper="x",
                    stale=stale, would_decide=decision.would_decide, changed=changed, stand_in=decision.stand_in,
                    rule=decision.call.rule, inputs=decision.call.inputs)


def brute_force(decide, value: float, factor: float = 10.0, points: int = 4001,
                integer: bool = False) -> dict[int, tuple[float, float, str]]:
    """The oracle: every point of a fine grid in log from value/factor to value·factor (every whole number there,
    for a count); per side (-1 below, +1 above), the last point with the verdict at ``value`` and the first
    without it, going out from ``value``."""
    now = decide(value)
    found = {}
    for direction in (-1, 1):
        last = value
        grid = value * factor ** (direction * np.linspace(0, 1, points)[1:])
        if integer:
            end = value * factor ** direction
            grid = (range(value + 1, math.floor(end) + 1) if direction > 0 else range(value - 1, math.ceil(end) - 1, -1))
        for x in grid:
            x = int(x) if integer else float(x)
            if decide(x) != now:
                found[direction] = (last, x, decide(x))
                break
            last = x
    return found


def agrees_with_oracle(decide, value, *, integer=False, factor=10.0, points=4001):
    """flip_points finds a flip on a side exactly when the oracle does, inside the oracle's bracket, with the
    oracle's verdict."""
    found = th.flip_points(decide, value, factor=factor, integer=integer)
    oracle = brute_force(decide, value, factor, points, integer=integer)
    assert len(found) == len(oracle), (found, oracle)
    for at, verdict in found:
        direction = 1 if at > value else -1
        last, first, expected = oracle[direction]
        low, high = sorted((last, first))
        assert low * (1 - 1e-3) <= at <= high * (1 + 1e-3), (at, oracle[direction])
        assert verdict == expected
        assert decide(at) != decide(value)
    return found


# ------------------------------------------------------------------------------------ the rule's call


def test_a_rule_records_its_call_and_moving_a_threshold_redecides_it_then_restores_it():
    d = planted_margin(0.3)
    assert d.call == th.RuleCall("planted_margin", {"x": 0.3}) and d.verdict == R
    assert th.thresholds_read(planted_margin) == {"MARGIN": 0.1}  # read through the helper
    assert th.redecide(planted_margin, d.call.inputs, {"MARGIN": 0.5}).verdict == N
    assert MARGIN == 0.1 and th.redecide(planted_margin, d.call.inputs).verdict == R
    with pytest.raises(RuntimeError, match="inside"):
        with th.moved(planted_margin, {"MARGIN": 0.0}):
            assert MARGIN == 0.0
            raise RuntimeError("inside the block")
    assert MARGIN == 0.1  # restored when the block raises too
    assert th.thresholds_read(planted_no_threshold) == {}  # PAPER_* is the paper's value, not a threshold
    assert th.threshold_reason(planted_band, "HIGH_EDGE") == "A planted band's lower and upper edges."


def _real_cases():
    spec = importlib.util.spec_from_file_location("verdict_cases", ROOT / "tests" / "test_verdicts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(name, kwargs) for name, cases in module.CASES.items() for kwargs, _ in cases]


REAL = _real_cases()


def test_every_real_rule_records_a_call_that_a_record_stores_and_decides_again():
    for name, kwargs in REAL:
        decision = v.RULES[name](**kwargs)
        assert decision.call is not None and decision.call.rule == name, name
        stored = json.loads(json.dumps(canonical(decision.call.as_dict())))  # what the claims record holds
        again = th.redecide(v.RULES[stored["rule"]], stored["inputs"])
        assert (again.verdict, again.why, again.would_decide) == (decision.verdict, decision.why,
                                                                 decision.would_decide), (name, kwargs)


def test_the_thresholds_of_a_real_rule_are_its_constants_with_their_reasons():
    assert th.thresholds_read(v.RULES["c11_ntk_order"]) == {
        "LAZY_KERNEL_CHANGE": v.LAZY_KERNEL_CHANGE, "LEARNED_LOSS": v.LEARNED_LOSS, "ORDER_EFFECT": v.ORDER_EFFECT}
    assert th.thresholds_read(v.RULES["s8_sinusoidal_init"]) == {"ABOVE_CHANCE": v.ABOVE_CHANCE}  # imported
    assert "PAPER_ALIBI_STRESS" not in th.thresholds_read(v.RULES["c7_alibi_value"])
    for name, rule in v.RULES.items():
        for constant in th.thresholds_read(rule):
            assert th.threshold_reason(rule, constant), (name, constant)


@pytest.mark.parametrize("k", range(len(REAL)), ids=[f"{n}-{k}" for k, (n, _) in enumerate(REAL)])
def test_the_flip_of_every_real_case_agrees_with_a_brute_force_scan(k):
    name, kwargs = REAL[k]
    rule = v.RULES[name]
    inputs = rule(**kwargs).call.inputs
    for constant, value in th.thresholds_read(rule).items():
        def decide(x, constant=constant):
            return str(th.redecide(rule, inputs, {constant: x}).verdict)

        # a grid of 0.6 % steps: the real rules' powered decisions take milliseconds each
        agrees_with_oracle(decide, value, integer=isinstance(value, int), points=401)


# ------------------------------------------------------------------------------------ a claim's bottom line


def test_planted_flips_agree_with_the_oracle_on_each_side():
    for x in (0.03, 0.3, 5.0):  # below the range, inside it, beyond it
        agrees_with_oracle(lambda m, x=x: str(th.redecide(planted_margin, {"x": x}, {"MARGIN": m}).verdict), MARGIN)
    # a band: its lower edge flips to "not reproduced" when raised past x, its upper edge when lowered past x
    found = agrees_with_oracle(lambda e: str(th.redecide(planted_band, {"x": 0.3}, {"LOW_EDGE": e}).verdict), LOW_EDGE)
    assert [(round(at, 3), verdict) for at, verdict in found] == [(0.3, D)]
    found = agrees_with_oracle(lambda e: str(th.redecide(planted_band, {"x": 0.3}, {"HIGH_EDGE": e}).verdict), HIGH_EDGE)
    assert [(round(at, 3), verdict) for at, verdict in found] == [(0.3, N)]
    # a count is moved in whole numbers only: a run of 3 flips the rule when the count is lowered to 3
    found = agrees_with_oracle(lambda m: str(th.redecide(planted_run, {"run": 3}, {"MIN_RUN": m}).verdict), MIN_RUN,
                               integer=True)
    assert found == [(3.0, R)]


def test_the_flip_is_of_the_bottom_line_not_of_one_row():
    # a quick check flips first (its x is nearer the margin), but the paper check decides: the bottom line
    # flips only where the paper check does
    checks = [check(planted_margin(0.3)), check(planted_margin(0.12), scale="quick")]
    r = robustness(checks, rules=PLANTED)
    assert r.verdict == R and [(f.name, f.verdict) for f in r.flips] == [("MARGIN", N)]
    assert r.flips[0].at == pytest.approx(0.3, rel=1e-3)

    def bottom(m):
        moved = [replace(c, verdict=str(th.redecide(planted_margin, c.inputs, {"MARGIN": m}).verdict)) for c in checks]
        return sm.bottom_line(moved).verdict

    last, first, verdict = brute_force(bottom, MARGIN)[1]
    assert last <= r.flips[0].at <= first * (1 + 1e-3) and verdict == N
    # a check that changes the claim's conditions never decides, so its flip is no flip of the bottom line
    changed = [check(planted_margin(0.3)), check(planted_margin(0.12), changed="corpus: IMDB")]
    assert robustness(changed, rules=PLANTED).flips[0].at == pytest.approx(0.3, rel=1e-3)
    # two checks that read the same threshold move together: the nearer one flips the bottom line
    both = robustness([check(planted_margin(0.3)), check(planted_margin(0.5))], rules=PLANTED)
    assert both.flips[0].at == pytest.approx(0.3, rel=1e-3)
    assert both.sentence == ('It would become "not reproduced" if the margin (a planted margin: a value above it is '
                             "a finding) were raised from 0.1 to 0.3 (a factor 3 from its value); no other threshold "
                             "flips it.")


def test_a_claim_whose_rules_read_no_threshold_says_so():
    r = robustness([check(planted_no_threshold(True))], rules=PLANTED)
    assert r.thresholds == {} and r.flips == ()
    assert r.sentence == "No threshold decides its checks: moving one cannot flip this bottom line."
    # the real S5 rule reads none either
    s5 = v.s5_no_vector_beyond(True)
    assert robustness([check(s5)]).sentence == r.sentence
    # a threshold that flips nothing within the range: said so too
    far = robustness([check(planted_margin(50.0))], rules=PLANTED)
    assert far.flips == () and far.sentence.startswith("No threshold flips it: moving the one its checks read from a "
                                                       "tenth to 10 times its value leaves the bottom line as it is")


def test_a_check_without_its_call_or_waiting_keeps_its_verdict_and_is_said():
    recorded = check(planted_margin(0.3))
    old = replace(recorded, rule="", inputs=None)  # a record made before rules recorded their calls
    r = robustness([old], rules=PLANTED)
    assert r.unread == 1 and r.sentence.startswith("Not known: its checks were recorded without their rules' inputs")
    waiting = replace(recorded, verdict=sm.NEEDS_GPU, rule="", inputs=None)
    assert robustness([waiting], rules=PLANTED).sentence == ("No current check has a verdict yet, so there is "
                                                             "nothing to move.")
    # a record whose rule no longer gives its verdict is not moved either
    wrong = replace(recorded, verdict=str(N), why="x")
    assert robustness([wrong, recorded], rules=PLANTED).unread == 1


def test_the_summary_shows_how_robust_each_bottom_line_is_from_the_records(tmp_path):
    from posgeom import get_settings

    settings = get_settings(scale="quick", device="cpu", results_dir=tmp_path / "results")
    gap = {"low": -0.002, "high": 0.008, "estimate": 0.003, "sd": 0.01, "n": 30, "level": 0.95}
    rows = [ComparisonRow("C5", ours="gap", scale="quick", model="none", corpus="c",
                          decision=v.c5_lowrank_performance(gap)),
            ComparisonRow("S5", ours="error", scale="quick", model="none", corpus="c",
                          decision=v.s5_no_vector_beyond(True))]
    record_comparison("alpha", rows, settings)
    summaries = {s.claim.id: s for s in sm.claim_summaries(Registry(settings.results_dir))}
    c5 = robustness(summaries["C5"].all_checks)
    assert c5.verdict == R and c5.flips[0].name == "ACCURACY_MARGIN" and c5.flips[0].verdict == I
    assert c5.flips[0].at == pytest.approx(0.008, rel=2e-3)  # the interval's upper bound, where the rule flips
    assert "the accuracy margin (the largest accuracy loss counted as" in c5.sentence
    html = page.decisions_html(list(summaries.values()))
    assert html.count("How robust:") == len(summaries)
    assert "No threshold decides its checks" in html and "lowered from 0.01 to 0.008" in html
    assert robustness(summaries["S5"].all_checks).flips == ()
