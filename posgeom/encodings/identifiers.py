"""The encodings' identifiers: one name per encoding, in one place.

A member equals its text (``Encoding.ROPE == "rope"``), so stored parameters and results read the same as before
identifiers existed; labels for display are the chapters' business.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Encoding"]


class Encoding(StrEnum):
    """A positional encoding, fixed, fitted or trained (the keys of ``ENCODINGS`` and ``POSITIONAL``)."""

    SINUSOIDAL = "sinusoidal"
    ROPE = "rope"
    ALIBI = "alibi"
    #: ALiBi with the slope chosen by the kernel rule rather than by the paper's head.
    ALIBI_KERNEL_RULE = "alibi (kernel rule)"
    EQUIDISTANT = "equidistant"
    RANDOM = "random"
    NONE = "none"
    TABLE = "table"
    #: Classical MDS of a corpus's Hellinger distances at full rank (the paper's optimal encoding).
    MDS = "mds"
    MDS_RANK3 = "mds_rank3"
    LEARNED = "learned"
    LOWRANK = "lowrank"
