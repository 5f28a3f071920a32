"""posgeom.plotting.seed_band: the mean over seeds and the band between the lowest and highest seed."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")  # a test renders nothing on screen (never set for the book)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from posgeom.plotting import OKABE_ITO, seed_band  # noqa: E402
from posgeom.verdicts import Decision  # noqa: E402


def test_seed_band_is_the_mean_and_the_min_max_band():
    rng = np.random.default_rng(0)
    x, Y = np.arange(40), rng.normal(size=(5, 40))
    fig, ax = plt.subplots()
    seed_band(ax, x, Y, color=OKABE_ITO[0], label="five seeds")
    (line,) = ax.lines
    np.testing.assert_allclose(line.get_ydata(), Y.mean(axis=0))  # oracle: the plain mean over seeds
    band = ax.collections[0].get_paths()[0].vertices
    inside = band[(band[:, 0] >= 0) & (band[:, 0] <= 39)]
    lo = np.interp(inside[:, 0], x, Y.min(axis=0))
    hi = np.interp(inside[:, 0], x, Y.max(axis=0))
    assert np.all(np.isclose(inside[:, 1], lo) | np.isclose(inside[:, 1], hi))
    assert ax.get_legend() is None and line.get_label() == "five seeds"
    plt.close(fig)


def test_seed_band_refuses_a_shape_mismatch():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"shape \(n_seeds, 3\)"):
        seed_band(ax, np.arange(3), np.zeros((2, 4)), color="k", label="x")
    plt.close(fig)


def test_tables_show_a_dash_and_a_note_for_missing_values_never_nan():
    import pandas as pd

    from posgeom.plotting import MISSING, MISSING_NOTE, frame_html

    html = frame_html(pd.DataFrame({"a": [1.0, float("nan")], "b": ["x", None]}))
    assert "NaN" not in html and "None" not in html and html.count(f"<td>{MISSING}</td>") == 2
    assert html.endswith(f'<p class="posgeom-missing-note">{MISSING_NOTE}</p>')
    assert MISSING_NOTE not in frame_html(pd.DataFrame({"a": [1.0]}))  # no missing value, no note


def test_use_book_style_registers_the_table_display_in_a_notebook(monkeypatch):
    import types

    import pandas as pd
    import IPython

    from posgeom import plotting
    from posgeom.report import ComparisonRow, comparison_table

    registered = {}
    html_formatter = types.SimpleNamespace(for_type=lambda cls, fn: registered.setdefault(cls, fn))
    shell = types.SimpleNamespace(display_formatter=types.SimpleNamespace(formatters={"text/html": html_formatter}))
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    with pd.option_context("styler.format.na_rep", None), matplotlib.rc_context():  # leave no global style behind
        plotting.use_book_style()
        assert pd.get_option("styler.format.na_rep") == plotting.MISSING
    assert registered[pd.DataFrame] is plotting.frame_html
    # a table with its own display (the "Paper vs this book" table) keeps it
    table = comparison_table([ComparisonRow("C5", ours="x", scale="quick", model="m", corpus="c",
                                           decision=Decision("reproduced"))])
    assert plotting.frame_html(table) == table._repr_html_()
