r"""Corpora as the inputs of a small masked language model trained from scratch.

A synthetic family with its exact marginals, or SST-2 or IMDB re-numbered to a compact vocabulary of the ids
present (a small MLM head, the same positional statistics).
"""

from __future__ import annotations

import numpy as np
import torch

from ..corpora import synthetic as syn
from ..corpora.identifiers import SyntheticFamily
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
        ``input_ids`` LongTensor (N, L), ``labels`` (N,) for ``task="bag"``, ``population`` (L, v), ``vocab_size``.
    """
    if family not in (SyntheticFamily.DRIFT, SyntheticFamily.STATIONARY):
        raise ValueError(f"the synthetic corpora of this chapter are 'drift' and 'stationary', got {family!r}")
    corpus = syn.make_corpus(family, n_sequences=n_sequences, n_positions=n_positions, vocab_size=vocab_size, seed=seed)
    out = dict(input_ids=torch.as_tensor(corpus.tokens + OFFSET, dtype=torch.long), population=corpus.population,
               vocab_size=vocab_size + OFFSET, attention_mask=None)
    if task == "bag":
        out["labels"] = torch.as_tensor(bag_labels(corpus.tokens, vocab_size))
    return out


def real_mlm_data(corpus: str, *, n_positions: int, n_sequences: int | None, seed: int, data_dir=None,
                  split: str = "train") -> dict:
    """SST-2 or IMDB sequences (bert-base-uncased WordPiece, ``[CLS]``/``[SEP]`` kept) for MLM from scratch.

    A seeded subset of ``n_sequences`` rows, ids compacted to ``[PAD]`` 0, ``[MASK]`` 1, ``[CLS]`` 2,
    ``[SEP]`` 3 and the other ids present from 4 in their original order.

    Returns
    -------
    dict
        ``input_ids``, ``attention_mask`` LongTensor (N, n_positions), ``vocab_size``, ``reach``
        (n_positions,), ``special_ids`` and ``info`` (provenance of the tokens).
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
