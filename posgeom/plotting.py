"""Plotting helpers shared by every chapter: one style, colour-blind-safe colours, provenance.

Figures have a white background on purpose (a transparent one with black axes vanishes on the book's dark
theme); a table cell with no value shows :data:`MISSING`, never "NaN".
"""

from __future__ import annotations

from contextlib import contextmanager

import matplotlib as mpl
import numpy as np
import pandas as pd

#: Okabe & Ito (2008) colour-blind-safe qualitative palette.
OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
#: Perceptually uniform, colour-blind-safe sequential and diverging colour maps.
SEQUENTIAL_CMAP = "cividis"
DIVERGING_CMAP = "PuOr"

BOOK_RC = {
    "axes.prop_cycle": mpl.cycler(color=OKABE_ITO), "image.cmap": SEQUENTIAL_CMAP, "figure.facecolor": "white",
    "axes.facecolor": "white", "savefig.facecolor": "white", "savefig.transparent": False, "figure.dpi": 110,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "figure.constrained_layout.use": True,
}

#: What a table shows in a cell with no value (never "NaN").
MISSING = "—"
#: The note under a table that has cells with no value.
MISSING_NOTE = "— : no value in this cell (it does not apply to this row, or was not computed at this scale)."


def _numeric_text(labels) -> list[float] | None:
    """The labels as numbers when every one is a number or one written as text, else None."""
    if not all(isinstance(x, (str, int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in labels):
        return None
    try:
        return [float(label) for label in labels]
    except ValueError:
        return None


def reader_frame(frame):
    """A DataFrame as a reader should see it (docs/STYLE.md): headers and text in words, numeric row labels in
    numeric order (32, 64, 128, not 128, 32, 64); its values are never changed."""
    from .wording import header_words, plain_words
    shown = frame.copy()
    if isinstance(shown.columns, pd.MultiIndex):
        shown.columns = pd.MultiIndex.from_tuples(
            [tuple(header_words(x) if isinstance(x, str) else x for x in key) for key in shown.columns],
            names=shown.columns.names)
    elif shown.columns.is_unique:
        shown.columns = [header_words(c) if isinstance(c, str) else c for c in shown.columns]
    if shown.index.name and isinstance(shown.index.name, str):
        shown.index.name = header_words(shown.index.name)
    text = shown.select_dtypes(include=["object", "string"]).columns
    if len(text) and shown.columns.is_unique:
        shown[text] = shown[text].apply(lambda col: col.map(lambda v: plain_words(v) if isinstance(v, str) else v))
    numbers = _numeric_text(list(shown.index)) if shown.index.is_unique else None
    as_text = [str(label) for label in shown.index]
    if numbers is not None and as_text == sorted(as_text) and numbers != sorted(numbers):
        shown = shown.iloc[sorted(range(len(numbers)), key=numbers.__getitem__)]
    shown.index = _index_words(shown.index)
    return shown


def _index_words(index):
    """``index`` with its labels as words (``mds_rank3`` → "MDS at rank 3"), level by level."""
    from .wording import label_words
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(label_words(x) for x in key) for key in index], names=index.names)
    if not any(isinstance(x, str) for x in index):
        return index
    return pd.Index([label_words(x) for x in index], name=index.name, dtype=object)


def _whole_number_formatters(frame) -> dict | None:
    """Float columns holding only whole numbers print without decimals ("5 seeds", not "5.000")."""
    if not frame.columns.is_unique:
        return None
    found = {}
    for name in frame.columns:
        values = frame[name]
        if values.dtype.kind == "f":
            finite = values.dropna().to_numpy()
            if len(finite) and np.all(np.isfinite(finite)) and np.all(finite == np.round(finite)) \
                    and np.all(np.abs(finite) < 1e15):
                found[name] = lambda x: MISSING if x != x else f"{x:.0f}"
    return found or None


def frame_html(frame) -> str:
    """A DataFrame as a notebook shows it, with :data:`MISSING` for NaN and :data:`MISSING_NOTE` under it."""
    if type(frame)._repr_html_ is not pd.DataFrame._repr_html_:
        return frame._repr_html_()
    shown = reader_frame(frame)
    table = shown.to_html(na_rep=MISSING, notebook=True, max_rows=pd.get_option("display.max_rows"),
                          max_cols=pd.get_option("display.max_columns"),
                          show_dimensions=pd.get_option("display.show_dimensions"),
                          formatters=_whole_number_formatters(shown))
    if frame.isna().to_numpy().any():
        table += f'<p class="posgeom-missing-note">{MISSING_NOTE}</p>'
    return table


def styler_html(styler) -> str:
    """A pandas Styler as the book shows it (docs/STYLE.md, rules 9 and 13): headers and row labels in words,
    integer columns without decimals; every other cell as the chapter formatted it."""
    from .wording import header_words, label_words
    data = styler.data

    def words(label):
        return header_words(label) if isinstance(label, str) else label

    if isinstance(data.columns, pd.MultiIndex):
        for level in range(data.columns.nlevels):
            styler.format_index(words, axis="columns", level=level)
    else:
        styler.format_index(words, axis="columns")
    for level in range(data.index.nlevels):
        styler.format_index(label_words, axis="index", level=level)
    if data.columns.is_unique:
        whole = [c for c in data.columns if data[c].dtype.kind in "iu"]
        if whole:
            styler.format("{:,d}", subset=whole)
    return styler._repr_html_()


def use_book_style() -> None:
    """Apply the book's style globally: matplotlib's and, in a notebook, :func:`frame_html` and :func:`styler_html`."""
    mpl.rcParams.update(BOOK_RC)
    pd.set_option("styler.format.na_rep", MISSING)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing displays tables
        return
    shell = get_ipython()
    if shell is not None:
        from pandas.io.formats.style import Styler
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, frame_html)
        shell.display_formatter.formatters["text/html"].for_type(Styler, styler_html)


@contextmanager
def book_style():
    """The book's style inside a ``with`` block only."""
    with mpl.rc_context(BOOK_RC):
        yield


def seed_band(ax, x, Y, *, color, label: str, ls: str = "-", lw: float = 2.0):
    """On ``ax``, the mean over seeds of ``Y`` (shape ``(n_seeds, t)``) against ``x`` (shape ``(t,)``) as a line of
    ``color``, ``label``, style ``ls`` and width ``lw``, shaded between the lowest and the highest seed (seaborn)."""
    import seaborn as sns
    Y, x = np.asarray(Y, dtype=float), np.asarray(x)
    if Y.ndim != 2 or Y.shape[1] != x.size:
        raise ValueError(f"Y must have shape (n_seeds, {x.size}) to match x; got {Y.shape}")
    frame = pd.DataFrame({"x": np.tile(x, Y.shape[0]), "y": Y.ravel()})
    # errorbar=("pi", 100): the 0-100 percentile interval over the seeds, i.e. lowest to highest seed
    sns.lineplot(data=frame, x="x", y="y", estimator="mean", errorbar=("pi", 100), color=color, label=label,
                 linestyle=ls, linewidth=lw, err_kws={"alpha": 0.2, "linewidth": 0}, legend=False, ax=ax)
    ax.set(xlabel="", ylabel="")


def heatmap(ax, matrix, *, title: str, label: str, xlabel: str = "position j", ylabel: str = "position i",
            cmap: str = SEQUENTIAL_CMAP, vmin=None, vmax=None):
    """Draw an ``(n, m)`` matrix with a colour bar labelled ``label`` (say the units); returns the image."""
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {matrix.shape}")
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", origin="upper")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(False)
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.85)
    return image


def provenance(scale: str, model: str | None = None, corpus: str | None = None, **options) -> str:
    """A one-line caption suffix saying which scale, model, corpus and options made a figure."""
    parts = [f"scale: {scale}", f"model: {model}" if model else "model: none (pure geometry)"]
    if corpus:
        parts.append(f"corpus: {corpus}")
    parts += [f"{k}: {v}" for k, v in options.items()]
    return "; ".join(parts)


__all__ = ["OKABE_ITO", "SEQUENTIAL_CMAP", "DIVERGING_CMAP", "MISSING", "MISSING_NOTE", "frame_html", "use_book_style",
           "book_style", "heatmap", "provenance"]
