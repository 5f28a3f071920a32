"""The page "Does the paper hold up?": every claim's verdict, read from the results registry only.

Each recorded "Paper vs this book" row is a **check** of a claim; the ``k``-th check of a claim in a chapter at
``quick`` is paired with the ``k``-th at ``paper``. A check recorded by code or from a notebook that has changed
since is stale. A claim's **bottom line** comes from its checks by :data:`BOTTOM_LINE_RULE` (:func:`bottom_line`);
``posgeom.summary.page`` builds the page's HTML.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..config import SCALES, get_settings
from ..registry import Registry
from ..report import CLAIMS_EXPERIMENT, INCONCLUSIVE, NEEDS_GPU, PAPER_CLAIMS, VERDICTS, Claim, verdict_text
from ..reproduce import (
    CHAPTER_TIMES_FILE, CHAPTERS, NOT_MEASURED, OTHER_CHAPTERS, Chapter, chapter_time_substitutions,
    chapter_times, claims_stale_reason, format_duration)
from ..verdicts import BY_CONSTRUCTION, DEPENDS, EVIDENCE, NOT_REPRODUCED, REPRODUCED
from ..verdicts.conditions import SCALE_WEIGHTS, SMALL_MODEL_SCALE, changed_conditions, scale_label, scale_weight

#: What a check recorded by other code, or from a changed notebook, says after its value.
STALE = "stale (rerun posgeom reproduce)"
#: What the summary says where the registry holds no check.
NOT_RUN = "not yet run"
#: The one-line "Why" of a claim whose checks are all stale.
STALE_WHY = "Its checks are out of date (the code or the notebook changed since): rerun posgeom reproduce."


@dataclass(frozen=True)
class Check:
    """One recorded "Paper vs this book" row: the ``index``-th check of ``claim`` in ``chapter`` at ``scale``.

    ``stale``: None, or why the record is out of date. ``row_scale``: the scale the row itself names (``"exact"``,
    or a paper-scale row on a small model). ``rule`` and ``inputs``: the call of the rule that decided it (empty
    and None when not recorded)."""

    chapter: str
    claim: str
    index: int
    scale: str
    ours: str
    verdict: str
    why: str
    model: str
    corpus: str
    options: str
    row_scale: str
    paper: str
    stale: str | None = None
    would_decide: str = ""
    changed: str = ""
    stand_in: str = ""
    premise: str = ""
    rule: str = ""
    inputs: dict | None = field(default=None, compare=False)

    @property
    def setting(self) -> str:
        """``model · corpus · options`` (and the row's own scale when it is not the entry's)."""
        optional = [("options", self.options), ("changed from the claim", self.changed),
                    ("checks the premise", self.premise and f"{self.premise} (context; it does not decide the claim)"),
                    ("scale", self.row_scale if self.row_scale != self.scale else "")]
        return "; ".join([f"model: {self.model}", f"corpus: {self.corpus}"] + [f"{k}: {v}" for k, v in optional if v])

    @property
    def verdict_text(self) -> str:
        return verdict_text(self.verdict, self.why, self.would_decide)

    @property
    def weight(self) -> int:
        """Weight in the bottom line: 2 at ``paper`` on the paper's model (or none), 1 on a small one, 0 at
        ``quick``."""
        return scale_weight(self.scale, self.row_scale)


@dataclass
class ClaimSummary:
    """Everything the summary shows for one claim: ``checks``, one ``{scale: Check}`` per (chapter, index) pair
    in book order, and the ``chapters`` that check the claim."""

    claim: Claim
    chapters: tuple[str, ...]
    checks: list[dict[str, Check]] = field(default_factory=list)

    @property
    def recorded(self) -> bool:
        return bool(self.checks)

    @property
    def all_checks(self) -> list[Check]:
        """Every recorded check of the claim, at every scale."""
        return [pair[scale] for pair in self.checks for scale in SCALES if scale in pair]

    @property
    def bottom_line(self) -> "BottomLine":
        return bottom_line(self.all_checks)


def recorded_checks(registry: Registry | None = None, *, notebooks_dir: str | Path | None = None) -> list[Check]:
    """Every row of every ``"claims"`` entry of the registry, as :class:`Check` objects; ``notebooks_dir`` marks
    checks recorded from a notebook that has changed since (None: only the code counts)."""
    registry = registry if registry is not None else Registry(get_settings().results_dir)
    checks = []
    for entry in registry.entries(CLAIMS_EXPERIMENT):
        chapter = entry.values.get("chapter") or entry.manifest.get("params", {}).get("chapter")
        stale = claims_stale_reason(entry, notebooks_dir=notebooks_dir)
        if stale == "code changed" and entry.manifest.get("code_modules"):
            stale = "code changed in " + ", ".join(m.removeprefix("posgeom.experiments.").removeprefix("posgeom.")
                                                   for m in entry.manifest["code_modules"])
        seen: dict[str, int] = {}
        for row in entry.values.get("rows", []):
            claim = row.get("claim")
            if claim not in PAPER_CLAIMS:
                raise ValueError(
                    f"the registry entry {entry.path} holds claim {claim!r}, unknown to posgeom.report.PAPER_CLAIMS; "
                    "run the chapter again (posgeom reproduce --force --only <chapter>) or delete that entry")
            index = seen.get(claim, 0)
            seen[claim] = index + 1
            text = {k: str(row.get(k) or "") for k in ("why", "options", "would_decide", "stand_in", "rule", "premise")}
            checks.append(Check(
                chapter=chapter, claim=claim, index=index, scale=entry.scale, ours=str(row["ours"]),
                verdict=str(row["verdict"]), model=str(row["model"]), corpus=str(row["corpus"]),
                # the label of what ran, by the rule of today (a record made before the label existed says "paper")
                row_scale=scale_label(str(row["scale"]), str(row["model"])),
                paper=str(row.get("paper") or PAPER_CLAIMS[claim].paper_value), stale=stale,
                changed=_changed(claim, row), inputs=row.get("inputs"), **text))
    return checks


def _changed(claim: str, row: dict) -> str:
    """What a row changes from its claim's conditions, by today's criterion where it declared them, else as recorded."""
    if "conditions" in row:
        try:
            return changed_conditions(claim, row["conditions"])
        except ValueError:
            pass
    return str(row.get("changed") or "")


def claim_summaries(registry: Registry | None = None, *, chapters: Sequence[Chapter] = CHAPTERS,
                    notebooks_dir: str | Path | None = None) -> list[ClaimSummary]:
    """One :class:`ClaimSummary` per claim of :data:`~posgeom.report.PAPER_CLAIMS`, in its order."""
    order = {c.slug: i for i, c in enumerate(chapters)}
    checks = recorded_checks(registry, notebooks_dir=notebooks_dir)
    out = []
    for claim_id, claim in PAPER_CLAIMS.items():
        pairs: dict[tuple[str, int], dict[str, Check]] = {}
        for check in checks:
            if check.claim == claim_id:
                pairs.setdefault((check.chapter, check.index), {})[check.scale] = check
        keys = sorted(pairs, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))
        out.append(ClaimSummary(claim, tuple(c.slug for c in chapters if claim_id in c.claims),
                                [pairs[k] for k in keys]))
    return out


#: The rule that turns a claim's checks into its bottom line (printed on the summary page).
BOTTOM_LINE_RULE = (
    "Only checks recorded by the current code from the current notebooks count; a claim whose checks "
    "are all stale says so, and a claim with none says \"not yet run\".",
    "Only evidence decides: a check that changes the claim's conditions (a hypothesis broken on purpose, "
    "another task) never decides it, nor does a check of a premise of the paper's argument (shown as "
    "context), a check on a stand-in model, an \"inconclusive here\" check "
    "or a check that \"holds by construction\" (it cannot fail, so it confirms the algebra or the code, not "
    "the claim); these are counted apart and named in the sentence.",
    "A check changes the claim's conditions when it sets a setting the paper states for the claim (a "
    "condition of a theorem, the corpus, the regime, the rate) to another value than the stated one; a choice "
    "the paper leaves open (weight decay, the size of a training set, how a regime is reached) is not a "
    "condition, and a check that varies it is evidence.",
    "Among the deciding checks the heaviest decide: one recorded at `paper` scale on the paper's model (or "
    "training no model) outweighs one with the paper's seeds and data on a small model, which outweighs every "
    "check recorded at `quick` scale.",
    "Among those, any \"not reproduced\" makes the bottom line \"not reproduced\"; otherwise any \"depends "
    "on an unstated choice\" makes it \"depends on an unstated choice\"; otherwise it is \"reproduced\".",
    "A claim with no deciding check is \"holds by construction\" when a check at its own conditions holds by "
    "construction, and \"inconclusive here\" otherwise.")
#: The bottom line of a claim whose checks are all stale.
ALL_STALE = "stale"


@dataclass(frozen=True)
class BottomLine:
    """A claim's bottom line: its ``verdict``, the ``sentence`` that explains it, and the ``deciding`` checks."""

    verdict: str
    sentence: str
    deciding: tuple[Check, ...] = ()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def evidence_kind(check: Check) -> str:
    """How a current check counts: ``"evidence"`` (it may decide), or why it is counted apart (``"premise"``,
    ``"changed conditions"``, ``"stand-in"``, ``"holds by construction"``, ``"inconclusive"``)."""
    if check.premise:
        return "premise"
    if check.changed:
        return "changed conditions"
    if check.stand_in:
        return "stand-in"
    if check.verdict == BY_CONSTRUCTION:
        return "holds by construction"
    if check.verdict not in EVIDENCE:
        return "inconclusive"
    return "evidence"


def bottom_line(checks: Sequence[Check]) -> BottomLine:
    """A claim's bottom line from every recorded check of it (any scale, any chapter), by :data:`BOTTOM_LINE_RULE`."""
    checks = list(checks)
    if not checks:
        return BottomLine(NOT_RUN, "No chapter has recorded a check of this claim yet.")
    waiting = [c for c in checks if not c.stale and c.verdict == NEEDS_GPU]  # no verdict yet: counted apart
    current = [c for c in checks if not c.stale and c.verdict != NEEDS_GPU]
    if not current and waiting:
        return BottomLine(NOT_RUN, f"Every current check waits for a GPU ({waiting[0].chapter}: {waiting[0].why}).")
    if not current:
        which = "Its only check was" if len(checks) == 1 else f"All {len(checks)} checks were"
        return BottomLine(ALL_STALE, f"{which} recorded by other code or from a changed notebook: "
                                     "rerun posgeom reproduce.")
    kinds = {c: evidence_kind(c) for c in current}
    apart = Counter({"awaiting a GPU": len(waiting)} if waiting else {})
    apart.update(kind for kind in kinds.values() if kind != "evidence")
    stale = sum(1 for c in checks if c.stale)  # the waiting checks are counted above, not here
    counted_apart = [f"{n} {kind}" for kind, n in apart.items()] + ([f"{stale} stale"] if stale else [])
    apart_text = f"; not counted: {', '.join(counted_apart)}" if counted_apart else ""
    evidence = [c for c in current if kinds[c] == "evidence"]
    if not evidence:
        constructed = [c for c in current if kinds[c] == "holds by construction"]
        if constructed:
            lead = constructed[0]
            return BottomLine(BY_CONSTRUCTION, f"No check tests the claim with evidence; at its own conditions it "
                                               f"holds by construction ({lead.chapter}: {lead.why}){apart_text}.",
                              tuple(constructed))
        lead = next((c for c in current if c.verdict == INCONCLUSIVE), current[0])
        # a check that changed the claim's conditions is named by what it changed, not by its own verdict's reason
        reason = (f"{lead.verdict} with its conditions changed ({lead.changed})"
                  if lead.changed and lead.verdict != INCONCLUSIVE else lead.why)
        # what decides: the lead's own run, else the GPU work a waiting check of the claim names
        would = lead.would_decide or (f"the check that waits for a GPU ({waiting[0].chapter}: {waiting[0].why})"
                                      if waiting else "")
        detail = f"{lead.chapter}: {reason}" + (f"; would decide: {would}" if would else "")
        return BottomLine(INCONCLUSIVE, f"No check could test the claim at its own conditions on its own model "
                                        f"({detail}){apart_text}.", ())
    top = max(c.weight for c in evidence)
    deciding = [c for c in evidence if c.weight == top]
    verdicts = {c.verdict for c in deciding}
    verdict = next(v for v in (NOT_REPRODUCED, DEPENDS, REPRODUCED) if v in verdicts)
    lead = next(c for c in deciding if c.verdict == verdict)
    tally = ", ".join(f"{sum(c.verdict == v for c in deciding)} {v}" for v in VERDICTS
                      if any(c.verdict == v for c in deciding))
    others = [f"{n} outweighed {SCALE_WEIGHTS[w]}" for w in sorted(SCALE_WEIGHTS, reverse=True)
              if (n := sum(c.weight == w for c in evidence)) and w < top]
    reason = f" ({lead.chapter}: {lead.why})" if lead.why else f" ({lead.chapter})"
    sentence = (f"{verdict.capitalize()}{reason}, decided by {_plural(len(deciding), 'check')} "
                f"{SCALE_WEIGHTS[top]} and the claim's own conditions ({tally})"
                + (f"; {', '.join(others)}" if others else "") + apart_text + ".")
    return BottomLine(verdict, sentence, tuple(deciding))


def bottom_line_frame(summaries: Sequence[ClaimSummary]) -> pd.DataFrame:
    """One row per claim: its statement, the bottom line and the sentence that explains it."""
    records = [{"id": s.claim.id, "claim": s.claim.statement, "bottom line": s.bottom_line.verdict,
                "why": s.bottom_line.sentence} for s in summaries]
    return pd.DataFrame.from_records(records).set_index("id")


def bottom_line_counts(summaries: Sequence[ClaimSummary]) -> pd.Series:
    """How many claims have each bottom line."""
    counts = dict.fromkeys([*VERDICTS, ALL_STALE, NOT_RUN], 0)
    for s in summaries:
        counts[s.bottom_line.verdict] += 1
    return pd.Series(counts, name="claims")


_GPU_CHAPTERS = {c.slug for c in CHAPTERS if c.paper_needs_gpu}


def _ours(check: Check | None) -> str:
    if check is None:
        return NOT_RUN
    if check.stand_in:  # a stand-in's value is never shown as if it were the paper's model's
        check = replace(check, ours=f"stand-in {check.stand_in}: {check.ours}")
    if check.stale and check.scale == "paper":
        where = " on a GPU" if check.chapter in _GPU_CHAPTERS else ""
        return f"{check.ours} — stale ({check.stale}; rerun posgeom reproduce --scale paper{where})"
    return check.ours + (f" — {STALE}" if check.stale else "")


def _setting(pair: dict[str, Check]) -> str:
    settings = {scale: pair[scale].setting for scale in SCALES if scale in pair}
    if len(set(settings.values())) == 1:
        return next(iter(settings.values()))
    return "; ".join(f"{scale}: {text}" for scale, text in settings.items())


def _verdict(pair: dict[str, Check]) -> str:
    return "; ".join(f"{s}: {pair[s].verdict_text}" + (f" — {STALE}" if pair[s].stale else "")
                     for s in SCALES if s in pair)


def summary_cells(summary: ClaimSummary) -> dict[str, list[str]]:
    """The cells of one claim's row as plain text, one entry per check (``NOT_RUN`` if none), by column."""
    claim = summary.claim
    head = {"claim": [f"{claim.id}: {claim.statement}"], "paper": [claim.paper_value]}
    if not summary.checks:
        return {**head, "ours (quick)": [NOT_RUN], "ours (paper)": [NOT_RUN], "setting": ["—"],
                "verdict": [NOT_RUN], "chapter": list(summary.chapters) or ["—"]}
    pairs = summary.checks
    return {**head, "ours (quick)": [_ours(p.get("quick")) for p in pairs],
            "ours (paper)": [_ours(p.get("paper")) for p in pairs], "setting": [_setting(p) for p in pairs],
            "verdict": [_verdict(p) for p in pairs], "chapter": [next(iter(p.values())).chapter for p in pairs]}


def summary_frame(summaries: Sequence[ClaimSummary]) -> pd.DataFrame:
    """The summary as a table of plain text, one row per claim (several checks joined by newlines)."""
    records = [{"id": s.claim.id, **{k: "\n".join(v) for k, v in summary_cells(s).items()}} for s in summaries]
    return pd.DataFrame.from_records(records).set_index("id")


def count_scale(check: Check) -> str:
    """The column a check is counted in: its scale, or :data:`posgeom.verdicts.SMALL_MODEL_SCALE` for a
    paper-scale check on a small model."""
    return SMALL_MODEL_SCALE if check.scale == "paper" and check.weight == 1 else check.scale


def verdict_counts(summaries: Sequence[ClaimSummary]) -> pd.DataFrame:
    """How many checks carry each verdict per column of :func:`count_scale` (stale ones apart), and how many claims
    have no check in that column: a DataFrame indexed by the verdicts, ``"needs a GPU"``, ``"stale"`` and
    ``"claims not yet run"``, with columns ``"quick"``, ``"paper"`` and the small-model scale."""
    rows = [*VERDICTS, NEEDS_GPU, "stale", "claims not yet run"]
    columns = [*SCALES, SMALL_MODEL_SCALE]
    counts = {column: dict.fromkeys(rows, 0) for column in columns}
    for s in summaries:
        checks = s.all_checks
        for column in columns:
            column_checks = [c for c in checks if count_scale(c) == column]
            if not column_checks:
                counts[column]["claims not yet run"] += 1
            for c in column_checks:
                counts[column]["stale" if c.stale else c.verdict] += 1
    return pd.DataFrame(counts).loc[rows]


def timing_frame(registry: Registry | None = None, chapters: Sequence[Chapter] = CHAPTERS,
                 measured: dict[str, float] | None = None) -> pd.DataFrame:
    """Per chapter: the book build's measured cold run (``measured``, default :func:`chapter_times`), the
    estimate at each scale and where it comes from, and the last run ``posgeom reproduce`` recorded."""
    from ..reproduce import recorded_runs
    measured = chapter_times() if measured is None else measured
    registry = registry if registry is not None else Registry(get_settings().results_dir)
    runs = {scale: recorded_runs(scale, registry) for scale in SCALES}
    records = []
    for c in chapters:
        record = {"chapter": c.slug, "claims": " ".join(c.claims),
                  "quick: measured build (min)": measured[c.slug] / 60 if c.slug in measured else None}
        for scale in SCALES:
            e = c.estimate(scale, registry)
            record[f"{scale}: estimate (min)"] = e.minutes
            record[f"{scale}: from"] = ("measured" if e.measured else "cost model (GPU)"
                                        if scale == "paper" and c.paper_from_cost_model else "estimate")
            record[f"{scale}: memory (GB)"] = e.memory_gb
            run = runs[scale].get(c.slug)
            record[f"{scale}: last run (min)"] = run.values["wall_s"] / 60 if run else None
        records.append({**record, "paper: GPU memory (GB)": c.paper.gpu_memory_gb, "GPU at paper":
                        "yes" if c.paper_needs_gpu else "no", "torchrun at paper": "yes" if c.ddp else "no"})
    return pd.DataFrame.from_records(records).set_index("chapter")


__all__ = [
    "STALE", "NOT_RUN", "STALE_WHY", "ALL_STALE", "BOTTOM_LINE_RULE", "BottomLine", "bottom_line", "bottom_line_frame",
    "bottom_line_counts", "evidence_kind", "Check", "count_scale", "ClaimSummary", "recorded_checks", "claim_summaries",
    "summary_cells", "summary_frame", "verdict_counts", "timing_frame", "CHAPTER_TIMES_FILE", "NOT_MEASURED",
    "OTHER_CHAPTERS", "chapter_times", "format_duration", "chapter_time_substitutions",
]
