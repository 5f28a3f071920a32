r"""Groups of rows that are not independent: the phrases of one sentence.

SST-2's training split holds the phrases of its sentences' parse trees as rows of their own, so a
bootstrap over rows treats as independent what is not. :func:`containing_text_groups` labels each row
with the longest row that contains it as a run of whole words, so that one label is resampled together.
Rows are visited longest first; a row no earlier row claimed heads a group and claims every row equal to
one of its $L(L+1)/2$ word spans (containment is transitive). SST-2 train: 6,886 groups, in seconds.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PHRASE_SPLITS", "containing_text_groups", "split_has_phrases", "resampling_unit"]

#: ``(corpus, split)`` whose rows include phrases of other rows (the others hold independent texts).
PHRASE_SPLITS = frozenset({("sst2", "train")})


def split_has_phrases(corpus, split) -> bool:
    """True when the rows of ``corpus``/``split`` include phrases of one another (:data:`PHRASE_SPLITS`)."""
    return (corpus, split) in PHRASE_SPLITS


def resampling_unit(corpus, split) -> str:
    """What a bootstrap of ``corpus``/``split`` resamples, in words (for a page or a record)."""
    if split_has_phrases(corpus, split):
        return "sentences (each training phrase resampled with the longest training row containing it)"
    return "sequences"


def containing_text_groups(texts) -> np.ndarray:
    """Label each text with the index of the longest text of the list that contains it as a run of whole words.

    Parameters
    ----------
    texts : sequence of str
        Texts split into words on whitespace.

    Returns
    -------
    ndarray of int64, shape (len(texts),)
        The index of a longest text containing each text (its own index if none does); equal texts share a label.
    """
    texts = list(texts)
    words = [str(t).split() for t in texts]
    rows: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        rows.setdefault(" ".join(w), []).append(i)
    label = np.full(len(texts), -1, dtype=np.int64)
    # longest first (stable: among equal lengths, the first row heads the group)
    for head in sorted(range(len(texts)), key=lambda i: -len(words[i])):
        if label[head] >= 0:
            continue
        w = words[head]
        label[head] = head
        for a in range(len(w)):
            for b in range(a + 1, len(w) + 1):
                for j in rows.get(" ".join(w[a:b]), ()):
                    if label[j] < 0:
                        label[j] = head
    return label
