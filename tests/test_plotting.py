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


def test_tables_read_as_written_for_people_and_keep_their_values():
    """Headers in words, whole numbers without decimals, numeric labels in numeric order, one percent
    style and no template plural (docs/STYLE.md); the frame itself is left as it was."""
    import pandas as pd
    from bs4 import BeautifulSoup

    from posgeom.plotting import frame_html

    frame = pd.DataFrame({"violation_rate": [0.125, 0.25, 0.5], "seeds": [5.0, 5.0, 10.0],
                          "note": ["90 % interval", "1 run(s)", "x"]}, index=pd.Index(["128", "32", "64"], name="n_pos"))
    before = frame.copy()
    soup = BeautifulSoup(frame_html(frame), "html.parser")
    assert [th.get_text() for th in soup.select("thead tr")[0].select("th")][1:] == ["violation rate", "seeds", "note"]
    rows = [[c.get_text() for c in tr.select("th, td")] for tr in soup.select("tbody tr")]
    assert rows == [["32", "0.250", "5", "1 run"], ["64", "0.500", "10", "x"], ["128", "0.125", "5", "90% interval"]]
    pd.testing.assert_frame_equal(frame, before)
    # labels already in numeric order, or not all numbers, keep their order
    other = pd.DataFrame({"a": [1, 2]}, index=["b", "a"])
    assert [th.get_text() for th in BeautifulSoup(frame_html(other), "html.parser").select("tbody th")] == ["b", "a"]


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
