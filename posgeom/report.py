"""The paper's claims and the "Paper vs this book" tables of the chapters.

A chapter's table compares the paper's side (:data:`PAPER_CLAIMS`) with rows computed in the chapter, never typed
by hand; ``comparison_table(rows, chapter=...)`` also records them in the registry (experiment ``"claims"``).
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

import pandas as pd

from .config import Settings, checkout_root, resolve_device, settings_or_default
from .codekey import notebook_modules
from .plotting import MISSING
from .registry import NeedsGPU, Registry, Result
from .storage import sha256_file
from .verdicts import (BY_CONSTRUCTION, INCONCLUSIVE, STATED_CONDITIONS, VERDICTS, Decision, changed_conditions,
                       scale_label)
from .wording import clauses, common_clauses, plain_words, top_level_cuts


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or of the second seed document) and the value it reports."""

    id: str
    statement: str
    paper_value: str


#: C1–C11 from the paper's experiments, then S1–S9: the claims about learned tables (Part IV).
PAPER_CLAIMS: dict[str, Claim] = {c.id: c for c in [
    Claim("C1", "Theorem 1: without positional information a Transformer is permutation-equivariant "
                "and cannot solve an order-sensitive task", "proved (no number)"),
    Claim("C2", "Theorem 4: trained positional tables keep distinct positions apart (sep(P) > 0)",
          "strictly positive separation, trained and pretrained"),
    Claim("C3", "Proposition 6 / Algorithm 1: classical MDS on Hellinger distances is the best encoding",
          "MDS best on every corpus"),
    Claim("C4", "Sinusoids are an approximately optimal MDS for smoothly varying statistics", "qualitative"),
    Claim("C5", "Remark 8: on the synthetic corpus, rank r = 3 cuts the stress by 99.8% relative to "
                "sinusoidal with 88% fewer parameters", "99.8% stress reduction, 88% fewer parameters"),
    Claim("C6", "P_MDS has near-zero stress on SST-2 and IMDB", "≈ 0"),
    Claim("C7", "ALiBi's stress on SST-2 is 0.563, far below sinusoidal and RoPE", "0.563"),
    Claim("C8", "Sinusoidal and RoPE have nearly identical stress", "nearly identical"),
    Claim("C9", "Monotonicity: P_MDS violation rate 22% (random 50%); pretrained models correlate moderately", "22%"),
    Claim("C10", "Layer 3 of BERT reorganises the positional signal (peak of the projected stress)", "peak at layer 3"),
    Claim("C11", "Appendix A: monotonicity holds in the NTK regime (MLM and [CLS] losses)", "proved (no number)"),
    Claim("S1", "Neighbouring positions of a learned table have cosine similarity above 0.9, decaying "
                "with distance", "> 0.9"),
    Claim("S2", "The first positions of a learned table stand apart", "qualitative"),
    Claim("S3", "Per-dimension curves of learned tables show frequency bands like sinusoids", "qualitative"),
    Claim("S4", "Positions rarely reached in training are under-trained", "qualitative"),
    Claim("S5", "No vector exists at or beyond N_max", "by construction"),
    Claim("S6", "Extrapolation heuristics (reuse last, interpolate, extend and fine-tune) fall short of "
                "models trained at the target length", "qualitative"),
    Claim("S7", "N(0, 0.02) initialisation beats N(0, 1)", "qualitative"),
    Claim("S8", "Sinusoidal initialisation of a learned table is an option", "qualitative"),
    Claim("S9", "Dropout 0.1 on the embedding sum", "standard practice")]}


@dataclass
class ComparisonRow:
    """One row of a "Paper vs this book" table.

    ``ours`` is the value the chapter computed; ``scale`` (relabelled by :func:`posgeom.verdicts.scale_label`),
    ``model``, ``corpus`` and ``options`` say what produced it; ``decision`` is what the check's rule
    (:mod:`posgeom.verdicts`) returned, never typed by hand. ``conditions`` declares the values the check used for
    the settings its claim states (:data:`posgeom.verdicts.STATED_CONDITIONS`); ``changed`` follows from them, and
    a check with ``changed`` never decides its claim's bottom line, nor does a ``premise`` row (a step of the
    paper's argument, shown as context). ``paper`` defaults to the claim's value. ``pending`` (with ``decision``
    None) says what GPU work the check waits for; its verdict reads :data:`NEEDS_GPU`.
    """

    claim: str
    ours: str
    scale: str
    model: str
    corpus: str
    decision: Decision | None
    options: str = ""
    paper: str | None = field(default=None)
    changed: str = ""
    pending: str = ""
    conditions: dict = field(default_factory=dict)
    premise: str = ""

    def __post_init__(self):
        if self.claim not in PAPER_CLAIMS:
            raise ValueError(f"unknown claim {self.claim!r}; valid claims are {', '.join(PAPER_CLAIMS)}")
        changed = changed_conditions(self.claim, self.conditions)
        if self.changed and self.changed != changed:  # a copy of a row (dataclasses.replace) passes the same text
            stated = ", ".join(STATED_CONDITIONS.get(self.claim, {})) or "none"
            raise ValueError(f"claim {self.claim}: `changed` is not typed by hand; declare the values of the settings "
                             f"the claim states that the check sets, conditions={{...}} (stated for {self.claim}: "
                             f"{stated}), and posgeom.verdicts.changed_conditions says what changed")
        self.changed = changed
        self.scale = scale_label(self.scale, self.model)
        if self.pending:
            if self.decision is not None:
                raise ValueError(f"claim {self.claim}: a pending check has no decision (it waits for: {self.pending})")
        elif not isinstance(self.decision, Decision):
            raise TypeError(f"claim {self.claim}: `decision` must be the Decision a rule of posgeom.verdicts returned "
                            f"(got {type(self.decision).__name__}); a row never takes a verdict typed by hand")

    @property
    def verdict(self) -> str:
        return NEEDS_GPU if self.pending else self.decision.verdict

    @property
    def why(self) -> str:
        return self.pending or self.decision.why

    @property
    def would_decide(self) -> str:
        return "" if self.pending else self.decision.would_decide

    @property
    def stand_in(self) -> str:
        return "" if self.pending else self.decision.stand_in


def decided_rows(builders, settings: Settings | None = None) -> list[ComparisonRow]:
    """A chapter's rows from ``(claim, build)`` pairs, ``build()`` returning one :class:`ComparisonRow` or a list;
    one that raises :class:`posgeom.registry.NeedsGPU` becomes a pending row of its claim."""
    scale = settings_or_default(settings).scale
    rows: list[ComparisonRow] = []
    for claim, build in builders:
        try:
            made = build()
        except NeedsGPU as err:
            made = ComparisonRow(claim, ours=err.text, scale=scale, model="—", corpus="—", decision=None,
                                 pending=err.detail)
        rows.extend(made if isinstance(made, list) else [made])
    return rows


def verdict_text(verdict: str, why: str = "", would_decide: str = "") -> str:
    """A verdict as the tables show it: ``verdict — why; would decide: run``."""
    text = verdict + (f" — {why}" if why else "")
    return text + (f"; would decide: {would_decide}" if would_decide else "")


#: The mark shown before each verdict, so a verdict never relies on colour alone (≡: an identity, not evidence).
VERDICT_MARKS = {"reproduced": "✓", "depends on an unstated choice": "◐", "not reproduced": "✗",
                 "inconclusive here": "?", "holds by construction": "≡"}
#: The mark of a verdict that :data:`VERDICT_MARKS` does not list.
OTHER_VERDICT_MARK = "•"
#: The CSS class every verdict carries (the stylesheet's fallback look for a verdict it does not know).
VERDICT_CLASS = "posgeom-verdict"


def verdict_slug(verdict: str) -> str:
    """The CSS class of a verdict (``"not reproduced"`` → ``"posgeom-verdict-not-reproduced"``)."""
    words = re.findall(r"[a-z0-9]+", str(verdict).lower())
    return f"{VERDICT_CLASS}-" + ("-".join(words) or "none")


def verdict_mark(verdict: str) -> str:
    """The mark shown before a verdict (:data:`VERDICT_MARKS`, :data:`OTHER_VERDICT_MARK` for any other)."""
    return VERDICT_MARKS.get(verdict, OTHER_VERDICT_MARK)


def split_verdict(text: str) -> tuple[str, str]:
    """Split a table's verdict text (:func:`verdict_text`) into the verdict and what follows it."""
    text = str(text)
    for verdict in sorted(VERDICTS, key=len, reverse=True):
        if text == verdict or text.startswith(verdict + " — ") or text.startswith(verdict + "; "):
            rest = text[len(verdict):]
            return verdict, rest.removeprefix(" — ").removeprefix("; ")
    verdict, _, rest = text.partition(" — ")
    return verdict, rest


def is_missing(value) -> bool:
    """None, NaN or pandas' NA/NaT: a cell with no value."""
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def verdict_html(verdict: str, rest: str = "") -> str:
    """A verdict as HTML: its mark and word in a span with its classes, then ``rest`` (escaped)."""
    badge = (f'<span class="{VERDICT_CLASS} {verdict_slug(verdict)}">'
             f'<span class="posgeom-verdict-mark" aria-hidden="true">{verdict_mark(verdict)}</span> '
             f'<strong>{html.escape(verdict, quote=False)}</strong></span>')
    return badge + (f" — {html.escape(rest, quote=False)}" if rest else "")


def html_table(headers: list[str], rows: list[list[str]], *, css_class: str, index_header: bool = True) -> str:
    """A table of HTML cells, each labelled with its column (``data-label``) for a phone's layout; with
    ``index_header`` the first cell of a row is its header."""
    head = "".join(f'<th scope="col">{html.escape(h, quote=False)}</th>' for h in headers)
    labels = [html.escape(h, quote=True) for h in headers]
    body = []
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} columns")
        cells = [f'<th scope="row" data-label="{label}">{cell}</th>' if j == 0 and index_header
                 else f'<td data-label="{label}">{cell}</td>' for j, (label, cell) in enumerate(zip(labels, row))]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table class="posgeom-table {css_class}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _text_html(value) -> str:
    return MISSING if is_missing(value) or str(value) == "" else html.escape(str(value), quote=False)


#: The registry experiment holding each chapter's recorded "Paper vs this book" rows.
CLAIMS_EXPERIMENT = "claims"
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _check_rows(rows: Iterable[ComparisonRow]) -> list[ComparisonRow]:
    rows = list(rows)
    if not rows:
        raise ValueError("no rows: a comparison table needs at least one ComparisonRow")
    bad = [type(r).__name__ for r in rows if not isinstance(r, ComparisonRow)]
    if bad:
        raise TypeError(f"rows must be ComparisonRow objects; got {', '.join(sorted(set(bad)))}")
    return rows


def check_chapter(chapter: str) -> str:
    """A chapter slug: the notebook's file name without ``.md`` (lower case, digits and hyphens)."""
    if not isinstance(chapter, str) or not _SLUG.match(chapter):
        raise ValueError(f"chapter {chapter!r} is not a chapter slug; use the notebook's file name without .md, "
                         "e.g. chapter='sinusoids-as-mds'")
    return chapter


def chapter_notebook(chapter: str, notebooks_dir: str | Path | None = None) -> Path | None:
    """``notebooks/<chapter>.md`` (``notebooks_dir`` default: the checkout we run in), or None when absent."""
    if notebooks_dir is None:
        root = checkout_root()
        if root is None:
            return None
        notebooks_dir = root / "notebooks"
    path = Path(notebooks_dir) / f"{check_chapter(chapter)}.md"
    return path if path.is_file() else None


def notebook_sha256(chapter: str, notebooks_dir: str | Path | None = None) -> str | None:
    """SHA-256 of the chapter's notebook, or None (a later change of it shows the claims as stale)."""
    path = chapter_notebook(chapter, notebooks_dir)
    return None if path is None else sha256_file(path)


def chapter_modules(chapter: str, notebooks_dir: str | Path | None = None) -> tuple[str, ...] | None:
    """The posgeom modules the chapter's notebook imports (the code key of its claims), or None for the package."""
    path = chapter_notebook(chapter, notebooks_dir)
    modules = notebook_modules(path.read_text(encoding="utf-8")) if path is not None else ()
    return modules or None


def row_record(row: ComparisonRow) -> dict:
    """All fields of a row as plain data, ``paper`` filled in, with the ``rule`` and ``inputs`` that decided it."""
    record = asdict(row)
    record.pop("decision"), record.pop("pending")  # a pending row is its verdict (NEEDS_GPU) and why
    record.update(verdict=row.verdict, why=row.why, would_decide=row.would_decide, stand_in=row.stand_in)
    # the rule's call, so that the summary can decide the row again with a threshold moved
    call = None if row.pending else row.decision.call
    record.update(rule=call.rule if call else "", inputs=call.inputs if call else None)
    if record["paper"] is None:
        record["paper"] = PAPER_CLAIMS[row.claim].paper_value
    return record


def record_comparison(chapter: str, rows: Iterable[ComparisonRow], settings: Settings | None = None) -> Result:
    """Store a chapter's rows (at least one) in the registry (experiment ``"claims"``, params ``{"chapter": chapter}``,
    default settings :func:`posgeom.config.get_settings`) and return the ``posgeom.registry.Result``.

    Values: ``chapter``, ``rows`` (``row_record``) and ``notebook_sha256``; recording again replaces them.
    """
    chapter = check_chapter(chapter)
    rows = _check_rows(rows)
    settings = settings_or_default(settings)
    values = {"chapter": chapter, "rows": [row_record(r) for r in rows], "notebook_sha256": notebook_sha256(chapter)}
    # the models the decided rows used (a row waiting for a GPU used none)
    models = "; ".join(dict.fromkeys(r.model for r in rows if not r.pending)) or None
    return Registry(settings.results_dir).save(
        CLAIMS_EXPERIMENT, values, params={"chapter": chapter}, scale=settings.scale, seed=settings.seed,
        device=resolve_device(settings.device), model=models, code=chapter_modules(chapter))


@dataclass(frozen=True)
class PowerCheck:
    """A decision taken over seeds, for :func:`power_frame`: the ``interval`` its rule read, the smallest
    ``effect`` that matters and the measured ``seconds`` of its run (None when not recorded)."""

    claim: str
    measure: str
    interval: object
    effect: float
    seconds: float | None = None


def power_frame(checks: Iterable[PowerCheck]) -> pd.DataFrame:
    """The design of each decision over seeds: seeds, sd, smallest effect, power, the seeds that reach the
    target power and what that design would cost here; a DataFrame indexed by claim and measure."""
    from .geometry.intervals import TARGET_POWER, seed_design
    from .timings import format_duration
    rows = []
    for check in checks:
        design = seed_design(check.interval, check.effect)
        needed, cost = "more than can be run", "—"
        if design.needed is not None:
            needed = design.needed
            cost = format_duration(None if check.seconds is None else check.seconds * max(needed, design.n) / design.n)
        rows.append({"claim": check.claim, "measure": check.measure, "seeds": design.n, "sd": f"{design.sd:.3g}",
                     "smallest effect that matters": f"{design.effect:g}", "power": f"{design.power:.0%}",
                     f"seeds for {TARGET_POWER:.0%}": needed, "time of that design": cost})
    return pd.DataFrame(rows).set_index(["claim", "measure"])


#: What a check waiting for GPU work shows where its verdict would be (it is not a verdict).
NEEDS_GPU = "needs a GPU"

#: The columns of a "Paper vs this book" table, the verdict first: the reader came for it.
COMPARISON_COLUMNS = ("verdict", "paper", "this book", "scale", "model", "corpus", "options")
#: The columns shown together in the table's "Setting" cell, in this order.
_SETTING_COLUMNS = ("scale", "model", "corpus", "options")


class ComparisonTable(pd.DataFrame):
    """A DataFrame shown in full (pandas cuts cells at 50 characters) and, in a notebook, as :func:`comparison_html`."""

    @property
    def _constructor(self):
        return ComparisonTable

    def _repr_html_(self):
        if tuple(self.columns) == COMPARISON_COLUMNS:
            return comparison_html(self)
        with pd.option_context("display.max_colwidth", None):  # a table reshaped by the reader
            return super()._repr_html_()

    def __repr__(self):
        with pd.option_context("display.max_colwidth", None):
            return super().__repr__()


#: The words a table cell shows before the rest is folded under "more" (docs/STYLE.md).
CELL_WORDS = 40


def budget_html(value, words: int = CELL_WORDS) -> str:
    """A cell's text in words, escaped: up to ``words`` words, cut at a clause, the rest folded under "more"."""
    if is_missing(value) or str(value) == "":
        return MISSING
    text = plain_words(str(value))
    if len(text.split()) <= words:
        return html.escape(text, quote=False)
    cuts = [c for c in top_level_cuts(text) if len(text[:c].split()) <= words]
    cut = cuts[-1] if cuts and len(text[:cuts[-1]].split()) >= words // 3 else len(" ".join(text.split()[:words]))
    head, rest = text[:cut].rstrip(), text[cut:].strip()
    return (f'{html.escape(head, quote=False)} <details class="posgeom-more"><summary>more</summary> '
            f"{html.escape(rest, quote=False)}</details>")


def comparison_html(table: pd.DataFrame) -> str:
    """A "Paper vs this book" table (columns :data:`COMPARISON_COLUMNS`, index the claim) as HTML: a setting every
    row shares is said once above the table, the others in one "Setting" cell per row."""
    missing = [c for c in COMPARISON_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"not a comparison table: columns {missing} are missing")

    def shown(value) -> str:
        return "" if is_missing(value) else str(value)

    shared = [c for c in _SETTING_COLUMNS if len(table) > 1 and table[c].map(shown).nunique() == 1]
    varying = [c for c in _SETTING_COLUMNS if c not in shared]
    # the clauses every row's value of a varying setting holds ("chord Hellinger" in every row's options)
    common = {c: common_clauses([shown(v) for v in table[c]]) if len(table) > 1 else [] for c in varying}
    rows = []
    for claim, row in table.iterrows():
        verdict, rest = split_verdict(row["verdict"])
        why = f" — {budget_html(rest)}" if rest else ""
        cells = [_text_html(claim), verdict_html(verdict) + why, budget_html(row["paper"]),
                 budget_html(row["this book"])]
        if varying:  # one budget for the whole cell: its settings joined, cut between them
            own = {c: ", ".join(k for k in clauses(shown(row[c])) if k not in common[c]) for c in varying}
            cells.append(budget_html("; ".join(f"{c}: {own[c]}" for c in varying if own[c])) if any(own.values())
                         else "as above")
        rows.append(cells)
    headers = ["Claim", "Verdict", "Paper", "This book"] + (["Setting"] if varying else [])
    first = table.iloc[0] if len(table) else None
    said = "; ".join([f"{c}: {html.escape(plain_words(shown(first[c])), quote=False)}"
                      for c in shared if shown(first[c])]
                     + [f"{c}, in every row: {html.escape(plain_words(', '.join(common[c])), quote=False)}"
                        for c in varying if common[c]])
    above = f'<p class="posgeom-shared-setting">Setting of every row: {said}.</p>' if said else ""
    return above + html_table(headers, rows, css_class="posgeom-comparison")


def comparison_table(rows: Iterable[ComparisonRow], *, chapter: str | None = None,
                     settings: Settings | None = None) -> pd.DataFrame:
    """The "Paper vs this book" table, one row per check (a claim's further checks read ``"C7 (check 2)"``); with
    ``chapter`` (the notebook's slug) the rows are also recorded (``record_comparison``)."""
    rows = _check_rows(rows)
    if chapter is None and settings is not None:
        raise ValueError("settings= is used only to record the rows; pass chapter='<notebook slug>' too")
    if chapter is not None:
        record_comparison(chapter, rows, settings)
    records = []
    seen: dict[str, int] = {}
    for row in rows:
        claim = PAPER_CLAIMS[row.claim]
        seen[row.claim] = seen.get(row.claim, 0) + 1
        first = seen[row.claim] == 1
        records.append({
            "claim": f"{row.claim}: {claim.statement}" if first else f"{row.claim} (check {seen[row.claim]})",
            "verdict": verdict_text(row.verdict, row.why, row.would_decide),
            "paper": row.paper if row.paper is not None else claim.paper_value, "this book": row.ours,
            "scale": row.scale, "model": row.model, "corpus": row.corpus,
            "options": "; ".join(filter(None, [row.options, row.changed and f"changed from the claim: {row.changed}"])),
        })
    return ComparisonTable(pd.DataFrame.from_records(records).set_index("claim"))


__all__ = [
    "VERDICTS", "INCONCLUSIVE", "BY_CONSTRUCTION", "Decision", "verdict_text", "Claim", "PAPER_CLAIMS", "ComparisonRow",
    "ComparisonTable", "comparison_table", "record_comparison", "CLAIMS_EXPERIMENT", "check_chapter", "notebook_sha256",
    "row_record", "VERDICT_MARKS", "OTHER_VERDICT_MARK", "VERDICT_CLASS", "verdict_slug", "verdict_mark",
    "split_verdict", "verdict_html", "html_table", "is_missing", "MISSING", "COMPARISON_COLUMNS", "comparison_html",
    "PowerCheck", "power_frame", "NEEDS_GPU", "decided_rows", "CELL_WORDS", "budget_html"]
