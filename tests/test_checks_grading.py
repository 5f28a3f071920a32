"""The exercise checks when the autograder grades (posgeom.checks.core.grading) and their wording: cases drawn
from the instructor's seed, per-case weighted credit, feedback naming the property and never the case, and
hints for two common wrong answers that had none."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import numpy as np
import pytest

from posgeom.checks.core import case_labels, grading
from posgeom.checks.optimal_encoding import check_classical_mds, check_double_centring, check_noise_floor
from posgeom.checks.why_position import check_sinusoid_distances, check_sinusoid_kernel

REPO = Path(__file__).resolve().parents[1]


def _quiet(check, fn, **grading_args):
    with (grading(**grading_args) if grading_args else contextlib.nullcontext()), \
            contextlib.redirect_stdout(io.StringIO()):
        return check(fn)


def _recorder(answer):
    seen = []

    def fn(*args):
        seen.append(tuple(a.tolist() if isinstance(a, np.ndarray) else a for a in args))
        return answer(*args)

    return fn, seen


def test_grading_draws_other_cases_from_each_seed_and_the_same_from_the_same_seed():
    def honest(v, N):
        return (v - 1) / (2.0 * N)

    runs = {}
    for name, args in (("practice", {}), ("a", {"seed": [1, 2]}), ("a again", {"seed": [1, 2]}), ("b", {"seed": [9, 2]})):
        fn, seen = _recorder(honest)
        assert _quiet(check_noise_floor, fn, **args).score == 1.0
        runs[name] = seen
    assert runs["practice"] == [(2, 10), (100, 10_000), (30_000, 8_000), (7, 1)]  # the open cases, as before
    assert runs["a"] == runs["a again"] and runs["a"] != runs["practice"] and runs["a"] != runs["b"]


def test_graded_credit_is_per_case_and_weighted_and_the_feedback_names_no_case():
    def two_tokens_only(v, N):
        return (v - 1) / (2.0 * N) if v == 2 else 0.0

    verdict = _quiet(check_noise_floor, two_tokens_only, seed=5, weights=[3, 1, 1, 1])
    assert verdict.score == 0.5 and not verdict.passed
    assert "1 of 4 hidden cases correct" in verdict.message
    assert "Case '" not in verdict.message and not any(label in verdict.message for label in case_labels(check_noise_floor))
    assert _quiet(check_noise_floor, two_tokens_only).score == 0.0  # practice: all or nothing, as before
    with pytest.raises(ValueError, match="gives 2 case weights"):
        _quiet(check_noise_floor, two_tokens_only, seed=5, weights=[1, 1])


def test_case_labels_are_the_kinds_the_key_weights():
    assert case_labels(check_noise_floor) == ["v = 2, N = 10", "v = 100, N = 10,000", "v = 30,000, N = 8,000",
                                              "v = 7, N = 1"]


def test_an_off_by_one_kernel_and_double_centring_without_J_get_a_hint():
    def kernel_from_1(offsets, d, base):
        return np.array([np.mean([math.cos(t * base ** (-2.0 * k / d)) for k in range(1, d // 2 + 1)]) for t in offsets])

    assert "count k from 0" in _quiet(check_sinusoid_kernel, kernel_from_1).message

    def distances_from_1(n, d, base):
        K = kernel_from_1(np.arange(-n + 1, n), d, base)
        offsets = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
        return np.sqrt(np.maximum(d * (1 - K[offsets + n - 1]), 0.0))

    assert "count k from 0" in _quiet(check_sinusoid_distances, distances_from_1).message

    def no_centring(D):
        return -0.5 * D * D

    assert "J = I - 11^T / n" in _quiet(check_double_centring, no_centring).message


def test_a_wrong_embedding_is_reported_in_grammatical_words():
    def wrong_mds(D, k):
        return np.ones((D.shape[0], k)) * np.arange(D.shape[0])[:, None]

    message = _quiet(check_classical_mds, wrong_mds).message
    assert "your embedding's distance matrix is wrong" in message and "distances of your embedding is" not in message


def test_no_classroom_message_points_at_the_removed_whole_notebook_option():
    for module in (REPO / "posgeom" / "classroom").glob("*.py"):
        assert "exercises_only" not in module.read_text(), module.name
    assert "exercises_only" not in (REPO / "posgeom" / "commands" / "classroom.py").read_text()
