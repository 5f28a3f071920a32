r"""Corpora as the inputs of a small masked language model trained from scratch.

Two sources, one shape: a synthetic family of :mod:`posgeom.corpora.synthetic` (ids shifted past the
padding and ``[MASK]`` ids, with its exact population marginals), and SST-2 or IMDB through the corpora
layer's token cache (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept) with a compact vocabulary of
the ids present, so that the model's MLM head is small while the positional statistics are unchanged.
Used by the chapter on Theorem 4 (:mod:`posgeom.experiments.separation`).
"""

from __future__ import annotations

import numpy as np
import torch

from ..corpora import synthetic as syn
from .tasks import bag_labels

__all__ = ["PAD_ID", "MASK_ID", "OFFSET", "synthetic_mlm_data", "real_mlm_data"]

#: Ids of the synthetic MLM vocabulary: 0 padding, 1 ``[MASK]``, the corpus token ``t`` becomes ``t + 2``.
PAD_ID, MASK_ID, OFFSET = 0, 1, 2


def synthetic_mlm_data(family: str, *, n_sequences: int, n_positions: int, vocab_size: int, seed: int,
                       task: str = "mlm") -> dict:
    """A synthetic corpus as model inputs (ids shifted by 2: 0 padding, 1 ``[MASK]``), with its population.

    Returns
    -------
    dict
        ``input_ids`` LongTensor (N, L); ``labels`` LongTensor (N,) for ``task="bag"``; ``population``
        (L, v) the exact marginals; ``vocab_size`` of the model (v + 2).
    """
    if family not in ("drift", "stationary"):
        raise ValueError(f"the synthetic corpora of this chapter are 'drift' and 'stationary', got {family!r}")
    corpus = syn.make_corpus(family, n_sequences=n_sequences, n_positions=n_positions, vocab_size=vocab_size,
                             seed=seed)
    out = dict(input_ids=torch.as_tensor(corpus.tokens + OFFSET, dtype=torch.long), population=corpus.population,
               vocab_size=vocab_size + OFFSET, attention_mask=None)
    if task == "bag":
        out["labels"] = torch.as_tensor(bag_labels(corpus.tokens, vocab_size))
    return out


def real_mlm_data(corpus: str, *, n_positions: int, n_sequences: int | None, seed: int, data_dir=None,
                  split: str = "train") -> dict:
    """SST-2 or IMDB sequences (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept) for MLM from scratch.

    A seeded random subset of ``n_sequences`` rows (all rows for ``None``), then a compact vocabulary:
    ``[PAD]`` → 0, ``[MASK]`` → 1, ``[CLS]`` → 2, ``[SEP]`` → 3, every other id present → 4, 5, … in
    increasing order of the original id (a smaller MLM head, same statistics).

    Returns
    -------
    dict
        ``input_ids`` LongTensor (N, n_positions), ``attention_mask`` LongTensor (N, n_positions),
        ``vocab_size`` (compact), ``reach`` (n_positions,) sequences reaching each position,
        ``special_ids`` (0, 1, 2, 3), ``info`` (provenance of the tokens).
    """
    from ..corpora import CorpusOptions, corpus_tokens

    tc = corpus_tokens(CorpusOptions(corpus, split, n_positions), data_dir=data_dir, progress=False)
    ids = tc.padded(pad_id=-1)
    if n_sequences is not None and n_sequences < ids.shape[0]:
        rows = np.sort(np.random.default_rng(seed).choice(ids.shape[0], size=n_sequences, replace=False))
        ids = ids[rows]
    mask = ids >= 0
    # [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103 in bert-base-uncased
    special = {0: 0, 103: 1, 101: 2, 102: 3}
    present = np.unique(ids[mask])
    others = np.array([t for t in present if t not in special], dtype=np.int64)
    lookup = np.zeros(max(int(present.max()) + 1, 104), dtype=np.int64)
    for old, new in special.items():
        lookup[old] = new
    lookup[others] = np.arange(4, 4 + others.size)
    compact = np.where(mask, lookup[np.where(mask, ids, 0)], PAD_ID)
    return dict(
        input_ids=torch.as_tensor(compact, dtype=torch.long), attention_mask=torch.as_tensor(mask.astype(np.int64)),
        vocab_size=int(4 + others.size), reach=mask.sum(axis=0), special_ids=(0, 1, 2, 3),
        info={k: v for k, v in tc.info.items() if isinstance(v, (str, int, float, bool))},
    )
