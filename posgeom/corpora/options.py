r"""The options that define a corpus's positional geometry, carried as one typed value (:class:`CorpusOptions`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["CorpusOptions", "check_options"]


@dataclass(frozen=True)
class CorpusOptions:
    """The options that define a corpus's positional geometry.

    Attributes
    ----------
    corpus : str
        ``"sst2"``, ``"imdb"``, or a file or folder of texts.
    split : str, optional
        Default: ``"train"``, or a folder's only file; a single file has no split.
    n_positions : int, optional
        Default :func:`posgeom.corpora.stats.default_positions` (SST-2 64, IMDB 512).
    special : {"model", "content"}
    br_tags : {"keep", "space"}, optional
        Default :func:`posgeom.corpora.stats.default_br`.
    tokenizer : str or tokenizer, optional
        Default the packaged bert-base-uncased WordPiece.
    max_sequences : int, optional
        Count a random subset of that many texts (drawn without replacement with ``subset_seed``).
    subset_seed : int
    min_count : int
        Keep the positions reached by at least that many sequences.
    alpha : float
        Additive smoothing of the marginals.
    kind : {"chord", "normalized", "geodesic"}
    """

    corpus: str = "sst2"
    split: str | None = None
    n_positions: int | None = None
    special: str = "model"
    br_tags: str | None = None
    tokenizer: object = None
    max_sequences: int | None = None
    subset_seed: int = 0
    min_count: int = 1
    alpha: float = 0.0
    kind: str = "chord"

    @classmethod
    def from_dict(cls, options: dict) -> "CorpusOptions":
        """The options of a dict with these keys (a ``ValueError`` names any other key)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown corpus option(s) {unknown}; valid options are {sorted(known)}")
        return cls(**options)

    def as_dict(self) -> dict:
        """The options as a plain dict (as stored in a result's parameters)."""
        return asdict(self)


def check_options(options) -> "CorpusOptions":
    """``options`` if it is a :class:`CorpusOptions`, else a one-line ``TypeError``."""
    if not isinstance(options, CorpusOptions):
        raise TypeError(f"options must be a CorpusOptions; got {type(options).__name__} (use CorpusOptions.from_dict)")
    return options
