"""The paper's claims and the "Paper vs this book" tables of the chapters.

Every chapter ends its checks with a table comparing the paper's number with ours. This module
holds the paper's side (:data:`PAPER_CLAIMS`, from SPEC section 3 and the two seed documents) and
builds the table from rows whose "ours" values were computed in the chapter — never typed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

#: The three verdicts a row may carry (CHAPTERS.md, "Paper vs this book").
VERDICTS = ("reproduced", "depends on an unstated choice", "not reproduced")


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or of the second seed document) and the value it reports."""

    id: str
    statement: str
    paper_value: str


#: C1–C11 of SPEC section 3, then S1–S9: the claims of the second seed (SPEC section 4).
PAPER_CLAIMS: dict[str, Claim] = {c.id: c for c in [
    Claim("C1", "Theorem 1: without positional information a Transformer is permutation-equivariant "
                "and cannot solve an order-sensitive task", "proved (no number)"),
    Claim("C2", "Theorem 4: trained positional tables keep distinct positions apart (sep(P) > 0)",
          "strictly positive separation, trained and pretrained"),
    Claim("C3", "Proposition 6 / Algorithm 1: classical MDS on Hellinger distances is the best encoding",
          "MDS best on every corpus"),
    Claim("C4", "Sinusoids are an approximately optimal MDS for smoothly varying statistics",
          "qualitative"),
    Claim("C5", "Remark 8: on the synthetic corpus, rank r = 3 cuts the stress by 99.8% relative to "
                "sinusoidal with 88% fewer parameters", "99.8% stress reduction, 88% fewer parameters"),
    Claim("C6", "P_MDS has near-zero stress on SST-2 and IMDB", "≈ 0"),
    Claim("C7", "ALiBi's stress on SST-2 is 0.563, far below sinusoidal and RoPE", "0.563"),
    Claim("C8", "Sinusoidal and RoPE have nearly identical stress", "nearly identical"),
    Claim("C9", "Monotonicity: P_MDS violation rate 22% (random 50%); pretrained models correlate "
                "moderately", "22%"),
    Claim("C10", "Layer 3 of BERT reorganises the positional signal (peak of the projected stress)",
          "peak at layer 3"),
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
    Claim("S9", "Dropout 0.1 on the embedding sum", "standard practice"),
]}


@dataclass
class ComparisonRow:
    """One row of a "Paper vs this book" table.

    ``ours`` is the value the chapter computed (formatted by the chapter); ``scale``, ``model``,
    ``corpus`` and ``options`` say what produced it; ``verdict`` is one of :data:`VERDICTS`, and
    ``why`` says which choice it depends on or why it is not reproduced.
    """

    claim: str
    ours: str
    scale: str
    model: str
    corpus: str
    verdict: str
    options: str = ""
    why: str = ""
    paper: str | None = field(default=None)

    def __post_init__(self):
        if self.claim not in PAPER_CLAIMS:
            raise ValueError(f"unknown claim {self.claim!r}; valid claims are {', '.join(PAPER_CLAIMS)}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; valid verdicts are {', '.join(VERDICTS)}")
        if self.verdict != "reproduced" and not self.why:
            raise ValueError(f"claim {self.claim}: a verdict of {self.verdict!r} needs a `why`")


def comparison_table(rows: list[ComparisonRow]) -> pd.DataFrame:
    """The "Paper vs this book" table: one row per claim checked by the chapter."""
    records = []
    for row in rows:
        claim = PAPER_CLAIMS[row.claim]
        records.append({
            "claim": f"{row.claim}: {claim.statement}",
            "paper": row.paper if row.paper is not None else claim.paper_value,
            "this book": row.ours,
            "scale": row.scale,
            "model": row.model,
            "corpus": row.corpus,
            "options": row.options,
            "verdict": row.verdict + (f" — {row.why}" if row.why else ""),
        })
    return pd.DataFrame.from_records(records).set_index("claim")


__all__ = ["VERDICTS", "Claim", "PAPER_CLAIMS", "ComparisonRow", "comparison_table"]
