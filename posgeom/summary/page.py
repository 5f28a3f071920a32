"""The summary page's HTML: the answer first (:func:`tally_html`, :func:`bottom_line_html`), the bookkeeping
below it (:func:`decisions_html`), every check (:func:`summary_html`) inside :func:`collapsed`."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Collection, Sequence

from ..config import SCALES, checkout_root
from ..report import INCONCLUSIVE, NEEDS_GPU, VERDICTS, html_table, split_verdict, verdict_html
from ..reproduce import CHAPTERS
from ..reproduce.book import toc_files
from ..verdicts import BY_CONSTRUCTION, DEPENDS, NOT_REPRODUCED, REPRODUCED
from ..wording import WHY_WORDS, plain_words, shortest_clauses, word_count
from . import ALL_STALE, NOT_RUN, STALE, STALE_WHY, Check, ClaimSummary, bottom_line_counts, summary_cells
from .robustness import robustness


def _lead(summary: ClaimSummary) -> Check | None:
    """The check a claim's one-line "Why" speaks of: a deciding one, else an inconclusive, current or waiting one."""
    line = summary.bottom_line
    deciding = [c for c in line.deciding if c.verdict == line.verdict] or list(line.deciding)
    current = [c for c in summary.all_checks if not c.stale]
    evidence = [c for c in current if c.verdict != NEEDS_GPU]
    return next(iter(deciding + [c for c in evidence if c.verdict == INCONCLUSIVE] + evidence + current), None)


def _chapter_title(slug: str) -> str:
    return next((c.title for c in CHAPTERS if c.slug == slug), slug)


def short_why(summary: ClaimSummary) -> tuple[str, str]:
    """A claim's bottom line in one plain sentence of about :data:`posgeom.wording.WHY_WORDS` words (the deciding
    check's first clauses, or what the claim waits for) and the chapter it names (``""`` when none)."""
    line, lead = summary.bottom_line, _lead(summary)
    if lead is None:
        return ("No chapter has checked this claim yet." if line.verdict == NOT_RUN else STALE_WHY), ""
    budget = max(10, WHY_WORDS - 2 - word_count(_chapter_title(lead.chapter)))
    if line.verdict == NOT_RUN or lead.verdict == NEEDS_GPU:
        minutes = re.search(r"about [\d.,]+ GPU-minutes", lead.why)
        return f"Its check waits for a GPU ({minutes.group(0) if minutes else 'GPU training'}).", lead.chapter
    if line.verdict == ALL_STALE:
        return STALE_WHY, lead.chapter
    if line.verdict == INCONCLUSIVE and lead.stand_in:
        model = re.sub(r"\s*\(.*?\)", "", lead.stand_in or lead.model)  # the stand-in's name, not "none"
        return f"Checked only on a stand-in model, {model}; the claim is about another model.", lead.chapter
    if line.verdict == INCONCLUSIVE and lead.changed:
        return ("Checked only with the claim's conditions changed; the check at its own conditions waits "
                "for a GPU."), lead.chapter
    if lead.why.lower().startswith("power") and lead.ours:
        # the reason speaks of the design (how likely it was to see an effect), not of the finding: the
        # finding is the check's own value, its first clause
        finding = shortest_clauses(lead.ours.split("; ")[0], budget, finding_before_colon=False)
    else:
        finding = shortest_clauses(lead.why, budget) if lead.why else line.verdict
    prefix = "Holds by construction: " if line.verdict == BY_CONSTRUCTION else ""
    finding = finding if prefix else finding[:1].upper() + finding[1:]
    return f"{prefix}{finding}" + ("" if finding.endswith("…") else "."), lead.chapter


_NUMBER = re.compile(r"[−-]?\d[\d,]*(?:\.\d+)?(?:e[−-]?\d+)?(?:%|×)?")


def _why_html(sentence: str, chapter: str, documents: Collection[str] | None) -> str:
    """The sentence with its first number in bold (the number that decides) and the chapter linked."""
    text = html.escape(sentence, quote=False)
    text = _NUMBER.sub(lambda m: f"<strong>{m.group(0)}</strong>", text, count=1)
    return text + (f" {_chapter_link(chapter, documents, title=True)}" if chapter else "")


def bottom_line_html(summaries: Sequence[ClaimSummary], *, documents: Collection[str] | None = None) -> str:
    """The bottom lines as one HTML table: per claim its bottom line and a one-line "Why" (:func:`short_why`)."""
    rows = [[html.escape(f"{s.claim.id}: {s.claim.statement}", quote=False), verdict_html(s.bottom_line.verdict),
             _why_html(*short_why(s), documents)] for s in summaries]
    return html_table(["Claim", "Bottom line", "Why"], rows, css_class="posgeom-bottom-line")


def decisions_html(summaries: Sequence[ClaimSummary]) -> str:
    """How each bottom line was decided, in full, and how robust it is (the nearest threshold that flips it)."""
    items = "".join(f"<li><strong>{html.escape(s.claim.id)}</strong> ({html.escape(s.bottom_line.verdict)}): "
                    f"{html.escape(plain_words(s.bottom_line.sentence), quote=False)} "
                    f'<span class="posgeom-robustness"><em>How robust:</em> '
                    f"{html.escape(plain_words(robustness(s.all_checks).sentence), quote=False)}</span></li>"
                    for s in summaries)
    return f'<ul class="posgeom-decisions">{items}</ul>'


#: What each verdict means, in a few words: the legend beside the counts at the top of the summary.
VERDICT_GLOSS = {str(verdict): gloss for verdict, gloss in (  # plain strings: the verdicts are an Enum
    (REPRODUCED, "the paper's result came out"),
    (DEPENDS, "the answer changes with a choice the paper leaves open"),
    (NOT_REPRODUCED, "the result did not come out"),
    (INCONCLUSIVE, "no check here could test it"),
    (BY_CONSTRUCTION, "true by how it is built: not evidence"),
    (NOT_RUN, "waiting for a GPU run or a chapter"),
    (ALL_STALE, "out of date: the code or the notebook changed"))}


def tally_html(summaries: Sequence[ClaimSummary]) -> str:
    """How many claims end in each verdict, with its mark and meaning (every verdict; "not yet run" and "stale"
    only when some claim ends there)."""
    items = [f'<li class="posgeom-tally-item" data-verdict="{html.escape(verdict)}">'
             f'<span class="posgeom-tally-count">{n}</span> {verdict_html(verdict)}'
             f'<span class="posgeom-tally-gloss">{html.escape(VERDICT_GLOSS.get(verdict, ""))}</span></li>'
             for verdict, n in bottom_line_counts(summaries).items() if n or verdict in VERDICTS]
    return (f'<p class="posgeom-tally-lead">Of the {len(summaries)} claims:</p>'
            f'<ul class="posgeom-tally">{"".join(items)}</ul>')


def book_documents(root: str | Path | None = None) -> set[str]:
    """The documents listed in the book's ``_toc.yml`` (``"notebooks/sinusoids-as-mds"``, ...)."""
    root = Path(root) if root is not None else checkout_root()
    if root is None or not (Path(root) / "_toc.yml").is_file():
        return set()
    return {str(f).removesuffix(".md").removesuffix(".ipynb") for f in toc_files(root) if f}


#: Where the summary page lies relative to the site's root: its links to chapters start with this.
PAGE_TO_ROOT = "../"


def _chapter_link(slug: str, documents: Collection[str] | None, *, title: bool = False) -> str:
    """A link to a chapter, named by its slug (or, with ``title``, by "Chapter: <its title>")."""
    name = f"({_chapter_title(slug)})" if title else slug
    if documents is None or f"notebooks/{slug}" in documents:
        return f'<a href="{PAGE_TO_ROOT}notebooks/{html.escape(slug)}.html">{html.escape(name, quote=False)}</a>'
    return html.escape(f"{name} (not in the book yet)", quote=False)


def _verdict_cell(pair: dict[str, Check]) -> str:
    parts = []
    for scale in [s for s in SCALES if s in pair]:
        check = pair[scale]
        rest = [plain_words(split_verdict(check.verdict_text)[1]), STALE if check.stale else ""]
        parts.append(f"{scale}: " + verdict_html(check.verdict, "; ".join(filter(None, rest))))
    return "<br>".join(parts)


def _html_cell(items: list[str]) -> str:
    """One check: its text; several: a numbered list, in the same order in every column."""
    if len(items) == 1:
        return items[0]
    return '<ol class="posgeom-checks">' + "".join(f"<li>{t}</li>" for t in items) + "</ol>"


#: The columns of the "Every check" table, the verdict and the chapter first.
SUMMARY_HEADERS = ("Claim", "Verdict", "Chapter", "Ours (quick)", "Ours (paper)", "Paper", "Model, corpus, options")


def summary_html(summaries: Sequence[ClaimSummary], *, documents: Collection[str] | None = None) -> str:
    """Every check of every claim as one HTML table (:data:`SUMMARY_HEADERS`), one row per claim; a chapter outside
    ``documents`` (:func:`book_documents`) is named, not linked (None links every chapter)."""
    def text(items):
        return _html_cell([html.escape(plain_words(t), quote=False) for t in items])

    rows = []
    for s in summaries:
        cells = summary_cells(s)
        verdicts = ([_verdict_cell(p) for p in s.checks] if s.checks else [verdict_html(NOT_RUN)])
        chapters = _html_cell([_chapter_link(c, documents) for c in cells["chapter"]])
        rows.append([text(cells["claim"]), _html_cell(verdicts), chapters, text(cells["ours (quick)"]),
                     text(cells["ours (paper)"]), text(cells["paper"]), text(cells["setting"])])
    return html_table(list(SUMMARY_HEADERS), rows, css_class="posgeom-summary")


def collapsed(title: str, body_html: str, *, open_: bool = False) -> str:
    """``body_html`` inside a ``<details>`` element that opens on a click on ``title``."""
    return (f'<details class="posgeom-details"{" open" if open_ else ""}><summary>{html.escape(title, quote=False)}'
            f"</summary>{body_html}</details>")


__all__ = ["short_why", "bottom_line_html", "decisions_html", "VERDICT_GLOSS", "tally_html", "book_documents",
           "PAGE_TO_ROOT", "SUMMARY_HEADERS", "summary_html", "collapsed"]
