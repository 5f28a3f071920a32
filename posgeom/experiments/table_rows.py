"""The rows of the real-corpora tables (stress, monotonicity) by identifier, which key their bootstrap intervals too.

A row is named by an :class:`~posgeom.encodings.identifiers.Encoding` (the fixed encodings, classical MDS, the
random tables, no positions) or by a :class:`TableRow` (what is not an encoding: ALiBi's chosen heads, the learned
tables, SMACOF, the NTK's predictions), with a ``rank`` where the row is a truncation. Stored results and the pages
that read them use these identifiers; :func:`row_label` is the text a table shows.
"""

from __future__ import annotations

from enum import StrEnum

from ..encodings.identifiers import Encoding

__all__ = ["TableRow", "row_label"]


class TableRow(StrEnum):
    """A row of a real-corpora table that is not one of :class:`~posgeom.encodings.identifiers.Encoding`'s."""

    #: ALiBi's head of lowest (highest) "paper" stress against the corpus.
    ALIBI_BEST_HEAD = "alibi_best_head"
    ALIBI_WORST_HEAD = "alibi_worst_head"
    LEARNED_PRETRAINED = "learned_pretrained"
    LEARNED_SCRATCH = "learned_scratch"
    #: The table trained from scratch, at its initialisation (step 0).
    LEARNED_AT_INIT = "learned_at_init"
    #: SMACOF at a ``rank``, started from classical MDS.
    SMACOF = "smacof"
    #: Classical MDS at the rank whose violation rate is closest to the paper's 22 %, refitted to each replicate.
    MDS_CLOSEST_RANK = "mds_closest_rank"
    #: The NTK's linear predictions of the learned geometry (G = I): from the marginals, from the counts.
    NTK_MARGINALS = "ntk_marginals"
    NTK_COUNTS = "ntk_counts"


#: The labels of the rows whose label is not the identifier itself (ranked rows aside).
_LABELS = {
    Encoding.RANDOM: "random N(0, sigma^2)",
    Encoding.NONE: "none (NoPE)",
    TableRow.ALIBI_BEST_HEAD: "alibi (best head)",
    TableRow.ALIBI_WORST_HEAD: "alibi (worst head)",
    TableRow.LEARNED_PRETRAINED: "learned (pretrained)",
    TableRow.LEARNED_SCRATCH: "learned (from scratch)",
    TableRow.LEARNED_AT_INIT: "learned (same model at step 0)",
    TableRow.MDS_CLOSEST_RANK: "MDS (closest rank)",
    TableRow.NTK_MARGINALS: "NTK prediction: marginals",
    TableRow.NTK_COUNTS: "NTK prediction: counts",
}


def row_label(row: str, rank: int | None = None) -> str:
    """The text a table shows for the row ``row`` (at ``rank``): ``"MDS (rank 3)"``, ``"alibi (best head)"``, ..."""
    if row == Encoding.MDS:
        return "MDS (full rank)" if rank is None else f"MDS (rank {int(rank)})"
    if row == TableRow.SMACOF:
        return f"SMACOF (rank {int(rank)})"
    return _LABELS.get(row, str(row))
