"""The one set of input validators (posgeom.validation): what passes, and the one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom import validation as v


def test_integers():
    assert v.check_int(np.int64(3), "k", 1, 5) == 3 and type(v.check_int(np.int64(3), "k", 1, 5)) is int
    for bad in (0, 6, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"k must be an integer in \[1, 5\]"):
            v.check_int(bad, "k", 1, 5)
    assert v.check_positive_int(7, "n") == 7
    for bad in (0, -1, 1.5, False):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            v.check_positive_int(bad, "n")
    assert v.check_even(8, "d") == 8
    with pytest.raises(ValueError, match="d must be even.*use 6 or 8"):
        v.check_even(7, "d")


def test_optional_integers():
    assert v.check_optional_int(None, "n_threads", 1) is None
    assert v.check_optional_int(np.int64(0), "w", 0) == 0 and type(v.check_optional_int(np.int64(2), "w", 0)) is int
    for bad in (0, 6, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"^k must be an integer in \[1, 5\] or None; got "):
            v.check_optional_int(bad, "k", 1, 5)
    with pytest.raises(ValueError, match=r"^n_threads must be an integer >= 1 or None \(all cores\); got 0$"):
        v.check_optional_int(0, "n_threads", 1, none="all cores")


def test_choices():
    assert v.check_choice("sst2", "corpus", ("drift", "sst2"), plural="corpora") == "sst2"
    with pytest.raises(ValueError, match=r"^unknown corpus 'wiki'; valid corpora are drift, sst2$"):
        v.check_choice("wiki", "corpus", ("drift", "sst2"), plural="corpora")
    with pytest.raises(ValueError, match=r"^unknown task 3; valid tasks are mlm, bag$"):
        v.check_choice(3, "task", ("mlm", "bag"))


def test_several_choices():
    assert v.check_choices(["mlm"], "task", ("mlm", "bag")) == ("mlm",)
    with pytest.raises(ValueError, match=r"^unknown families \['wiki', 'web'\]; valid families are drift, sst2$"):
        v.check_choices(["drift", "wiki", "web"], "family", ("drift", "sst2"), plural="families")


def test_positive_float():
    assert v.check_positive_float(0.02, "sigma") == 0.02
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"sigma must be a positive number \(try 1\)"):
            v.check_positive_float(bad, "sigma", "try 1")


def test_matrices_and_tables():
    A = v.as_square_matrix([[1, -2], [3, 4]], "A", min_n=2)
    assert A.dtype == np.float64 and A.shape == (2, 2)
    with pytest.raises(ValueError, match=r"A must be a square \(n, n\) matrix with n >= 3"):
        v.as_square_matrix(np.eye(2), "A", min_n=3)
    with pytest.raises(ValueError, match="NaN"):
        v.as_square_matrix([[np.nan]], "A")
    assert v.check_table(np.ones((3, 2)), min_rows=3).shape == (3, 2)
    with pytest.raises(ValueError, match="P needs at least 4 rows and 1 column"):
        v.check_table(np.ones((3, 2)), min_rows=4)
    with pytest.raises(TypeError, match="complex"):
        v.check_table(np.ones((3, 2)) * 1j)
