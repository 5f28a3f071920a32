"""Groups of SST-2 training phrases by the sentence that contains them (posgeom.corpora.groups) against a naive loop."""

from __future__ import annotations

import numpy as np

from posgeom.corpora.distances import resampling_groups
from posgeom.corpora.options import CorpusOptions
from posgeom.corpora.groups import containing_text_groups, resampling_unit, split_has_phrases


def _inside(short: list[str], long: list[str]) -> bool:
    """True when ``short`` is a contiguous run of ``long`` (the loop written out)."""
    return any(long[a:a + len(short)] == short for a in range(len(long) - len(short) + 1))


def _naive_groups(texts):
    """The lowest index among the longest texts containing each text (itself included)."""
    words = [t.split() for t in texts]
    out = []
    for w in words:
        holders = [j for j, v in enumerate(words) if _inside(w, v)]
        longest = max(len(words[j]) for j in holders)
        out.append(min(j for j in holders if len(words[j]) == longest))
    return np.array(out)


def test_groups_against_the_naive_loop():
    texts = ["the film is good", "film is", "is good", "good", "a bad film", "bad", "film", "the film is good",
             "is good fun", "good fun", "an unrelated sentence", "is  good", "the film"]
    got = containing_text_groups(texts)
    assert np.array_equal(got, _naive_groups(texts))
    # "film" is in both sentences: it goes with the longest one; "is good" with the first of the longest holders
    assert got[6] == 0 and got[5] == 4 and got[2] == 0 and got[8] == 8 and got[7] == 0
    assert containing_text_groups([]).size == 0


def test_groups_of_random_phrases_against_the_naive_loop():
    rng = np.random.default_rng(0)
    vocab = list("abcde")
    sentences = [" ".join(rng.choice(vocab, size=rng.integers(3, 9))) for _ in range(12)]
    texts = list(sentences)
    for s in sentences:  # some of its contiguous runs, as SST-2 keeps the phrases of its parse trees
        w = s.split()
        for _ in range(4):
            a = int(rng.integers(0, len(w)))
            b = int(rng.integers(a + 1, len(w) + 1))
            texts.append(" ".join(w[a:b]))
    rng.shuffle(texts)
    assert np.array_equal(containing_text_groups(texts), _naive_groups(texts))


def test_which_splits_have_phrases():
    assert split_has_phrases("sst2", "train") and not split_has_phrases("sst2", "validation")
    assert not split_has_phrases("imdb", "train")
    assert resampling_unit("sst2", "train").startswith("sentences") and resampling_unit("imdb", "train") == "sequences"


def test_sst2_training_phrases_grouped_by_their_sentence(shared_data_dir):
    from posgeom.corpora.real import load_texts

    texts = load_texts("sst2", "train", data_dir=shared_data_dir).texts
    labels = resampling_groups(CorpusOptions("sst2", "train"), data_dir=shared_data_dir)
    assert labels.shape == (len(texts),) == (67_349,)
    heads = np.unique(labels)
    assert 6_000 < heads.size < 8_000  # GLUE SST-2's training phrases come from 6,920 sentences
    assert np.all(labels[heads] == heads)  # a head is its own group
    for i in np.random.default_rng(1).choice(len(texts), size=300, replace=False):
        assert _inside(texts[i].split(), texts[labels[i]].split())
        assert len(texts[labels[i]].split()) >= len(texts[i].split())
    # a subset keeps the labels of its rows; whole-sentence splits have none
    sub = resampling_groups(CorpusOptions("sst2", "train", max_sequences=500, subset_seed=3), data_dir=shared_data_dir)
    rows = np.sort(np.random.default_rng(3).choice(len(texts), size=500, replace=False))
    assert np.array_equal(sub, labels[rows])
    assert resampling_groups(CorpusOptions("sst2", "validation"), data_dir=shared_data_dir) is None
