"""The corpora's identifiers: the real corpora and the synthetic families, one name each, in one place.

A member equals its text (``Corpus.SST2 == "sst2"``), so stored parameters and results read the same as before
identifiers existed.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Corpus", "SyntheticFamily"]


class Corpus(StrEnum):
    """A real corpus (:data:`posgeom.corpora.real.CORPORA` describes each)."""

    SST2 = "sst2"
    IMDB = "imdb"


class SyntheticFamily(StrEnum):
    """A family of synthetic corpora (:data:`posgeom.corpora.synthetic.FAMILIES` holds each generator)."""

    STATIONARY = "stationary"
    DRIFT = "drift"
    REGIMES = "regimes"
    MARKOV = "markov"
    ORDER = "order"
