"""The diagnosis written out: ``report.json``, the figures (PNG), a self-contained ``report.html``, a summary.

``report.html`` embeds its figures and style and loads nothing, so it reads the same offline; its colours
follow ``prefers-color-scheme``. ``report.json`` holds every number with its options and provenance.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np

from ..registry.typed import plain as json_ready  # numpy as numbers and lists: JSON-ready data
from ..storage import write_durably

__all__ = ["FIGURES", "summary_lines", "write_report", "json_ready"]

#: Figure files a report may hold (the per-layer one only for models with a learned table).
FIGURES = ("stress.png", "distances.png", "profile.png", "layers.png")


def _fmt(x, spec=".4f") -> str:
    return "n/a" if x is None else format(x, spec)


def _encodings(rep: dict) -> list[str]:
    """The model first, then the references (layers apart)."""
    layers = set(rep["layers"]["labels"])
    rest = [k for k in rep["stress"] if k != rep["model_label"] and k not in layers]
    return [rep["model_label"], *rest]


def _comparison(rep: dict) -> tuple[list[str], list[list[str]]]:
    """The comparison table: its header, and a row per encoding (the model first, layers apart)."""
    norms = rep["options"]["normalizations"]
    rows = [[label, *(_fmt(rep["stress"][label][n]) for n in norms),
             *(_fmt(rep["monotonicity"][label][k]) for k in ("violation_rate", "spearman", "separation_normalized"))]
            for label in _encodings(rep)]
    return ["encoding", *norms, "violation", "spearman", "separation/median"], rows


def summary_lines(rep: dict) -> list[str]:
    """A short plain-text summary: model, mechanism, corpus, and the comparison table."""
    mech = rep["mechanism"]
    lines = [
        f"model {rep['model']['name']} ({mech['family']}): {mech['description']}",
        f"corpus {_corpus_name(rep)}: {rep['n_sequences']} sequences, "
        f"{rep['positions_kept']} of {rep['n_positions']} positions kept, "
        f"tokenizer {rep['info'].get('tokenizer', 'none (synthetic)')}",
    ]
    header, rows = _comparison(rep)
    width = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    for r in [header, *rows]:
        lines.append("  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(r, width))))
    if rep["layers"]["labels"]:
        sf = [rep["stress"][k]["scale_free"] for k in rep["layers"]["labels"]]
        lines.append("per-layer projected stress (scale_free): " + ", ".join(_fmt(x, ".3f") for x in sf))
    r, nf = rep["effective_rank"], rep["noise_floor"]
    lines.append(f"effective rank of the corpus geometry: tol {r['tol']}, mass {r['mass']}, stress {r['stress']}; "
                 f"noise share of sum d^2 = {_fmt(nf['energy_ratio'])}")
    return lines


def _stress_figure(rep: dict, labels: list[str]):
    """Scale-free stress of the model and of every reference (the others depend on each encoding's scale)."""
    import matplotlib.pyplot as plt
    from ..plotting import OKABE_ITO
    model = rep["model_label"]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(labels) + 1.6))
    y = np.arange(len(labels))
    vals = np.array([rep["stress"][lab]["scale_free"] for lab in labels], dtype=float)  # None → NaN, no bar
    colors = [OKABE_ITO[3] if lab == model else OKABE_ITO[0] for lab in labels]
    ax.barh(y, vals, height=0.6, color=colors)
    for yi, v in zip(y, vals):
        if np.isfinite(v):
            ax.text(v, yi, f" {v:.3f}", va="center", fontsize=9)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set(xlim=(0, max(1.0, np.nanmax(vals) * 1.15)), title="How well each encoding fits the corpus",
           xlabel="scale-free stress against the corpus geometry (lower is better)")
    return fig, ("Horizontal bars: scale-free stress of the model's positions (first bar) and of "
                 "the reference encodings against the corpus's Hellinger distances.")


def _distances_figure(rep: dict):
    """The corpus's distances and the model's, side by side."""
    import matplotlib.pyplot as plt
    from ..plotting import heatmap
    dist, model = rep["distances"], rep["model_label"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    ext = dict(xlabel="kept position j", ylabel="kept position i")
    heatmap(axes[0], dist["D"], title="corpus: Hellinger distance", label="distance", **ext)
    heatmap(axes[1], dist["encodings"][model], title=f"{model}", label="distance", **ext)
    return fig, ("Two heat maps over the kept positions: the corpus's Hellinger distance matrix "
                 "and the distances between the model's positions.")


def _profile_figure(rep: dict, labels: list[str]):
    """Mean distance at each offset $|i - j|$, each curve divided by its maximum."""
    import matplotlib.pyplot as plt
    from ..plotting import OKABE_ITO
    dist = rep["distances"]
    pos, D = np.asarray(dist["positions"]), dist["D"]
    fig, ax = plt.subplots(figsize=(7.5, 4))
    offsets = np.abs(pos[:, None] - pos[None, :])
    for k, (lab, M) in enumerate([("corpus D", D)] + [(lab, dist["encodings"][lab]) for lab in labels
                                                        if not lab.startswith("none")]):
        prof = np.array([M[offsets == o].mean() for o in range(1, int(offsets.max()) + 1)])
        top = np.nanmax(prof) if prof.size and np.nanmax(prof) > 0 else 1.0
        ax.plot(np.arange(1, prof.size + 1), prof / top, color=OKABE_ITO[k % len(OKABE_ITO)],
                lw=2.5 if k < 2 else 1.2, ls="-" if k < 2 else "--", label=lab)
    ax.set(xlabel="offset |i - j| (positions)", ylabel="mean distance / its maximum", title="Distance against offset")
    ax.legend(fontsize=8)
    return fig, ("Lines: mean distance at each position offset, each scaled to its maximum, for "
                 "the corpus, the model and the reference encodings.")


def _layers_figure(rep: dict):
    """Per-layer projected stress (scale-free: logits have no natural unit), the whole table for reference."""
    import matplotlib.pyplot as plt
    from ..plotting import OKABE_ITO
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    x = np.arange(1, len(rep["layers"]["labels"]) + 1)
    ax.plot(x, [rep["stress"][lab]["scale_free"] for lab in rep["layers"]["labels"]], "o-",
            color=OKABE_ITO[0], label="layer's static positional logits")
    ax.axhline(rep["stress"][rep["model_label"]]["scale_free"], color=OKABE_ITO[3], ls="--", label="the table itself")
    ax.set(xticks=x, ylim=(0, None), xlabel="layer", ylabel="scale-free projected stress",
           title="The position table as each layer's attention sees it")
    ax.legend()
    return fig, ("Line: scale-free stress of each layer's static positional logits against the "
                 "corpus geometry; dashed: the stress of the position table itself.")


def _figures(rep: dict, folder: Path) -> dict[str, tuple[Path, str]]:
    """Draw the figures into ``folder``; returns file name → (path, alt text)."""
    import matplotlib.pyplot as plt
    from ..plotting import book_style
    labels = _encodings(rep)
    with book_style():
        out = {"stress.png": _stress_figure(rep, labels), "distances.png": _distances_figure(rep),
               "profile.png": _profile_figure(rep, labels)}
        if rep["layers"]["labels"]:
            out["layers.png"] = _layers_figure(rep)
    for name, (fig, _) in out.items():
        fig.savefig(folder / name, dpi=110, bbox_inches="tight")
        plt.close(fig)
    return {name: (folder / name, alt) for name, (_, alt) in out.items()}


_CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1b1b; --muted: #555; --rule: #d0d0d0; --head: #f2f2f2; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16181c; --fg: #e6e6e6; --muted: #a8a8a8; --rule: #3a3d44; --head: #23262c; }
}
body { background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, sans-serif; max-width: 62rem;
       margin: 2rem auto; padding: 0 1rem; }
h1, h2 { line-height: 1.2; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--rule); padding: 0.25rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
table.facts th { font-weight: normal; color: var(--muted); padding-right: 1.5rem; }
table.facts td { text-align: left; }
thead th { background: var(--head); }
figure { margin: 1rem 0; }
img { max-width: 100%; height: auto; border: 1px solid var(--rule); }
figcaption, .muted { color: var(--muted); font-size: 0.9em; }
code { font-size: 0.92em; }
"""


def _html_table(header, rows) -> str:
    """A table with a header row, or (``header=None``) one whose first column names each row."""
    if header is None:
        body = "".join(f'<tr><th scope="row">{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>'
                       for k, v in rows)
        return f'<table class="facts"><tbody>{body}</tbody></table>'
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_figure(figures: dict[str, tuple[Path, str]], name: str, caption: str) -> str:
    """The figure ``name`` embedded as a data URI ("" when it was not drawn)."""
    if name not in figures:
        return ""
    path, alt = figures[name]
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _corpus_name(rep: dict) -> str:
    return f"{rep['corpus']}" + (f" / {rep['split']}" if rep.get("split") else "")


def _html_head(rep: dict) -> list[str]:
    """The page's head, title and the table of facts about the model and the corpus."""
    mech, opts, esc, corpus = rep["mechanism"], rep["options"], html.escape, _corpus_name(rep)
    facts = [
        ("model", rep["model"]["name"]), ("location", rep["model"]["location"]),
        ("architecture", mech["family"]), ("mechanism", mech["description"]),
        ("layers, heads, width", f"{mech['n_layers']}, {mech['n_heads']}, {mech['width']}"),
        ("corpus", corpus), ("tokenizer", rep["info"].get("tokenizer", "none (synthetic corpus)")),
        ("special-token policy", opts.get("special")),
        ("sequences", rep["n_sequences"]), ("truncated", rep["n_truncated"]),
        ("positions kept", f"{rep['positions_kept']} of {rep['n_positions']} (min count {opts['min_count']})"),
        ("Hellinger distance", opts["hellinger"]),
    ]
    return [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request: the page loads nothing at all
        f"<title>posgeom diagnose: {esc(rep['model']['name'])}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
        f"<h1>Positional geometry of {esc(rep['model']['name'])}</h1>",
        f"<p>{esc(mech['description'])}, against the corpus <code>{esc(corpus)}</code>.</p>",
        _html_table(None, facts),
    ]


def _html_fit(rep: dict, figures: dict[str, tuple[Path, str]]) -> list[str]:
    """How well the model's positions (and the reference encodings, and each layer's) fit the corpus."""
    opts = rep["options"]
    parts = [
        "<h2>How well the model's positions fit the corpus</h2>",
        "<p>Stress compares the model's distances between positions with the corpus's Hellinger distances "
        "between the token distributions at those positions (0 = the same geometry). <em>scale_free</em> "
        "ignores the overall scale; <em>violation</em> is the share of position pairs ordered differently; "
        "<em>separation</em> is the closest two positions over the median distance (0 = two positions "
        "coincide). The reference encodings use the model's width and heads; <em>mds</em> is the optimal "
        "encoding of this corpus, <em>random</em> a table at initialisation (nearly equidistant positions, "
        "no order: a model should beat its violation rate) and <em>none</em> no position at all.</p>",
        _html_table(*_comparison(rep)),
        _html_figure(figures, "stress.png", "Scale-free stress of the model and of the reference encodings."),
        _html_figure(figures, "distances.png", "The corpus's distances and the model's, over the kept positions."),
        _html_figure(figures, "profile.png",
                     "Mean distance at each offset, scaled to its maximum: the shape of each geometry."),
    ]
    if rep["layers"]["labels"]:
        rows = [[lab, *(_fmt(rep["stress"][lab][n]) for n in opts["normalizations"]),
                 _fmt(c)] for lab, c in zip(rep["layers"]["labels"], rep["layers"]["clipped_mass"])]
        parts += [
            "<h2>Layer by layer</h2>",
            "<p>The position table as each layer's query and key projections see it (the static positional "
            "logits, pooled over heads), compared with the corpus. <em>clipped</em> is the share of the logits' "
            "geometry that is not Euclidean.</p>",
            _html_table(["layer", *opts["normalizations"], "clipped"], rows),
            _html_figure(figures, "layers.png", "Scale-free projected stress per layer, and of the table itself."),
        ]
    return parts


def _html_corpus_and_provenance(rep: dict) -> list[str]:
    """The corpus's effective rank and noise floor, the notes, and what the report was made from."""
    opts, nf, r, esc = rep["options"], rep["noise_floor"], rep["effective_rank"], html.escape
    parts = [
        "<h2>The corpus geometry</h2>",
        f"<p>Effective rank (dimensions the corpus's geometry needs): {r['tol']} by eigenvalue tolerance "
        f"{opts['rank_tol']:g}, {r['mass']} for {opts['rank_mass_q']:g} of the eigenvalue mass, {r['stress']} for "
        f"an MDS stress at most {opts['rank_stress_threshold']:g}. Sampling noise "
        f"({esc(nf['method'])}, {nf['n_rep']} replicates) accounts for {_fmt(nf['energy_ratio'])} of the distance "
        "energy: a stress below that cannot be told apart from noise.</p>",
    ]
    if rep["notes"]:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in rep["notes"]) + "</ul>")
    prov = rep["provenance"]
    parts += [
        "<h2>Provenance</h2>",
        f"<p class=\"muted\">Config sha256 {esc(rep['model']['config_sha256'])}; tensors read: "
        f"{esc(', '.join(prov['tensors_read']) or 'none (config only)')}; "
        + esc(", ".join(f"{k} {v}" for k, v in prov["versions"].items() if v)) + ". Every number, with its "
        "options, is in <code>report.json</code>.</p>",
        "</body>", "</html>",
    ]
    return parts


def write_report(rep: dict, out_dir) -> dict[str, Path]:
    """Write ``report.json``, the figures and ``report.html`` into ``out_dir``; return file name → path."""
    folder = Path(out_dir).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--out {str(folder)!r} exists and is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    figures = _figures(rep, folder)
    data = {k: v for k, v in rep.items() if k != "distances"}
    data["figures"] = {name: alt for name, (_, alt) in figures.items()}
    written = {name: path for name, (path, _) in figures.items()}
    page = _html_head(rep) + _html_fit(rep, figures) + _html_corpus_and_provenance(rep)
    for name, text in (("report.json", json.dumps(json_ready(data), indent=1, default=str)),
                       ("report.html", "\n".join(part for part in page if part))):
        write_durably(folder / name, text.encode("utf-8"))  # complete or absent
        written[name] = folder / name
    return written
