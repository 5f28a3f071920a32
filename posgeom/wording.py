r"""Generated sentences as a reader should see them: the house style of ``docs/STYLE.md`` applied at display.

The decision rules and the chapters write their reasons for the record (every number, every bracket); the
pages show them through these functions, which change the wording and never a number: template plurals
agreed (:func:`plain_plurals`), code identifiers as words (:func:`plain_words`, :func:`header_words`,
:func:`label_words`), a reason cut to a word budget (:func:`shortest_clauses`), a chapter's settings as a
caption says them (``describe_*``, :func:`model_words`) and a noise-aware rank in words (:func:`rank_words`).
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["describe_model", "model_words", "describe_seeds", "short_float", "describe_training", "describe_sequences",
           "describe_scales", "rank_words", "special_words", "plain_plurals", "plain_prose", "plain_words", "top_level_cuts", "clauses", "common_clauses", "shortest_clauses", "word_count", "header_words", "label_words", "FIELD_WORDS", "WHY_WORDS",
           "WHY_WORDS_MAX"]

#: The length a one-line "Why" aims at, in words, and the most it may ever have.
WHY_WORDS, WHY_WORDS_MAX = 25, 30

# "<n> word(s)": the noun agrees with the number before it.
_COUNTED = re.compile(r"\b(\d[\d,]*(?:\.\d+)?) (\w+)\((s|es)\)")
# "<list> verb(s)": the verb agrees with the list before it (a comma or "and" makes it plural).
_AGREEING = re.compile(r"([^:;()—]*?)\s(\w+)\((s|es)\)")


def _counted(match: re.Match) -> str:
    number, word, ending = match.groups()
    return f"{number} {word}" + ("" if number == "1" else ending)


def _agreeing(match: re.Match) -> str:
    subject, word, ending = match.groups()
    subject_words = subject.lstrip(" ,")  # the list starts after the separator that ends the clause before
    many = "," in subject_words or " and " in subject_words
    return f"{subject} {word}" + ("" if many else ending)


def plain_plurals(text: str) -> str:
    """``text`` with every ``"(s)"``/``"(es)"`` template plural resolved: a noun agrees with the number before it
    ("1 pair(s)" → "1 pair"), a verb with its subject, plural when it holds a comma or "and" ("ALiBi, RoPE fall(s)
    short" → "ALiBi, RoPE fall short")."""
    text = _COUNTED.sub(_counted, str(text))
    return _AGREEING.sub(_agreeing, text)


# one percent style: "90 %" as "90%"
_PERCENT = re.compile(r"(\d) %")

#: Code identifiers and wordings that reach running text, and what a reader should see instead. Each
#: entry says why in its comment; the left side is matched as written.
_REWORDINGS = (
    # the stress normalisations named by their option values (posgeom.geometry.STRESS_NORMALIZATIONS)
    (re.compile(r"under ['\"]paper['\"]"), "under the paper's stress"),
    (re.compile(r"under ['\"]scale_free['\"]"), "under the scale-free stress"),
    (re.compile(r"['\"]scale_free['\"]"), "scale-free"),
    (re.compile(r"\bscale_free\b"), "scale-free"),
    # "only 0 stands apart" reads as "no position stands apart": it means position 0
    (re.compile(r"\bonly (\d+) stands apart"), r"only position \1 stands apart"),
    # a symbol of the code where the sentence means a plain fact
    (re.compile(r"\bN_max rows\b"), "a fixed number of rows"),
    (_PERCENT, r"\1%"),
)


def plain_prose(text: str) -> str:
    """A page's prose in the house style: one percent style ("90 %" → "90%") and no template plural; quoted option
    values are left as they are."""
    return _PERCENT.sub(r"\1%", plain_plurals(text))


def plain_words(text: str) -> str:
    """``text`` with the identifiers and wordings of :data:`_REWORDINGS` written for a reader and its template
    plurals resolved; numbers are never changed."""
    text = plain_plurals(text)
    for pattern, words in _REWORDINGS:
        text = pattern.sub(words, text)
    return text


#: An option value of the code (``reuse_last``, ``new_rows``) named in a reason: written as words where a
#: reason is shortened for a reader (not in a table's values, where it may be a name to copy).
_SNAKE = re.compile(r"\b([a-z]+)_([a-z0-9]+)\b")


def word_count(text: str) -> int:
    """Words in ``text`` as a reader counts them (whitespace-separated)."""
    return len(str(text).split())


# a bracket that holds more than one number (a lone number in brackets is kept: it is often the one that decides)
_BRACKETS = re.compile(r"\s*[(\[](?![−+-]?[\d.,]+[)\]])[^()\[\]]*[)\]]")


def _without_brackets(text: str) -> str:
    while True:  # innermost first, so that "(median sep(P) 1e-4)" goes whole
        shorter = _BRACKETS.sub("", text)
        if shorter == text:
            return " ".join(text.split())
        text = shorter


def shortest_clauses(reason: str, budget: int, *, finding_before_colon: bool = True) -> str:
    """The first clauses of ``reason`` that fit in ``budget`` words, brackets left out.

    A reason reads "finding: explanation; further finding": the finding before the first colon is kept alone when
    it holds a number. Clauses are cut at a semicolon, a colon or a comma; a first clause over the budget is cut
    at a word and ends with "…". ``finding_before_colon=False`` reads a value ("steps to loss 0.3: 113 vs 283")
    whose colon introduces the numbers.
    """
    text = _SNAKE.sub(r"\1 \2", _without_brackets(plain_words(reason))).strip().rstrip(".")
    head, colon, _ = text.partition(": ")
    if finding_before_colon and colon and re.search(r"(?<![\w-])\d", head):  # a number of its own, not the 2 of "SST-2"
        text = head
    if word_count(text) <= budget:
        return text
    kept = ""
    for clause in re.split(r"(?<=[;,:]) ", text):
        candidate = f"{kept} {clause}".strip()
        if word_count(candidate) > budget:
            break
        kept = candidate
    if kept:
        return kept.rstrip(";,:")
    return " ".join(text.split()[:budget]) + " …"


#: A field name inside a header already in words ("stress (scale_free)", "eval_loss mean").
_FIELD_IN_HEADER = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def header_words(name: str) -> str:
    """A column header in words: a field name (``violation_rate``) with its underscores as spaces, ``mds:47`` as
    "mds 47", ``scale_free`` as "scale-free"; a header already in words keeps its words."""
    name = re.sub(r"\bscale_free\b", "scale-free", str(name))
    if " " in name.strip():
        return _FIELD_IN_HEADER.sub(lambda m: m.group(0).replace("_", " "), name)
    if not re.search(r"[_:]", name):
        return name
    return re.sub(r"[_:]+", " ", name).strip()


#: Field names of the code that tables use as row labels and that underscores-as-spaces would not make words
#: (the encodings of :data:`posgeom.encodings.ENCODINGS_COMPARED` and the learned tables' references).
FIELD_WORDS = {"mds_rank3": "MDS at rank 3", "random_normal": "random N(0, 0.02²)", "random_walk": "random walk",
               "scale_free": "scale-free"}


def label_words(label):
    """A row label in words (docs/STYLE.md, rule 13): a name of :data:`FIELD_WORDS` as its words, any other field
    name as :func:`header_words` writes it; anything else as it is."""
    if not isinstance(label, str):
        return label
    return FIELD_WORDS.get(label, header_words(label))


def top_level_cuts(text: str) -> list[int]:
    """Where ``text`` may be cut: after each "; " or ", " outside brackets (an interval stays whole)."""
    cuts, depth = [], 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if depth == 0 and char in ";," and text[i + 1:i + 2] == " ":
            cuts.append(i + 1)
    return cuts


def clauses(text: str) -> list[str]:
    """``text`` cut into its clauses at each ", " or "; " outside brackets."""
    cuts = [0, *top_level_cuts(text), len(text)]
    return [k for k in (text[a:b].strip().rstrip(";,").strip() for a, b in zip(cuts, cuts[1:])) if k]


def common_clauses(values: list[str]) -> list[str]:
    """The clauses (:func:`clauses`) every one of ``values`` holds, in the first value's order."""
    split = [clauses(v) for v in values]
    if not split or not all(split):
        return []
    return [k for k in split[0] if all(k in other for other in split[1:])]


# the text of posgeom.geometry.NoiseAwareRank: "3 (90% interval 3)", "undetermined (90% interval 3–4)"
_RANK_TEXT = re.compile(r"^(?:(?P<rank>\d+)|undetermined) \((?P<level>\d+) ?% interval (?P<lo>\d+)(?:[–-](?P<hi>\d+))?\)$")


def rank_words(text: str, resamples: int | None = None) -> str:
    """A noise-aware rank (the text of :class:`posgeom.geometry.NoiseAwareRank`) in words, its numbers unchanged.

    ``"3 (90% interval 3)"`` → "3 (in 90% of the half-splits)"; ``"undetermined (90% interval 4)"`` →
    "undetermined: 4 directions clear the noise in 90% of the half-splits, weaker ones unresolved". ``resamples``
    is named when given; any other text is returned as it is.
    """
    m = _RANK_TEXT.match(str(text).strip())
    if m is None:
        return str(text)
    level, lo, hi = f"{m.group('level')}%", int(m.group("lo")), int(m.group("hi") or m.group("lo"))
    splits = f"the {resamples:,} half-splits" if resamples else "the half-splits"
    if m.group("rank") is not None:
        return f"{m.group('rank')} (in {level} of {splits})"
    if lo == hi:
        # one count in the interval, yet undetermined: signal is left below the noise threshold
        return (f"undetermined: {lo} direction{'s' if lo != 1 else ''} clear{'' if lo != 1 else 's'} the noise in "
                f"{level} of {splits}, weaker ones unresolved")
    return f"undetermined: {lo} to {hi} directions clear the noise in {level} of {splits}"


#: The corpora's ``special`` option (:class:`posgeom.corpora.CorpusOptions`) in words.
SPECIAL_WORDS = {"model": "the model's special tokens", "content": "content tokens only"}


def special_words(special: str) -> str:
    """How the special tokens were counted, in words (``SPECIAL_WORDS``); any other value as it is."""
    return SPECIAL_WORDS.get(str(special), str(special))


def describe_model(shape, *, name: str = "posgeom encoder", detail: str = "") -> str:
    """A chapter's small model in words from ``shape`` (``n_layers``, ``d_model``, ``n_heads``): ``"posgeom encoder,
    1 layer, width 32, 4 heads"``, plus ``detail`` when given."""
    layers = f"{shape.n_layers} layer{'s' if shape.n_layers != 1 else ''}"
    text = f"{name}, {layers}, width {shape.d_model}, {shape.n_heads} heads"
    return f"{text}, {detail}" if detail else text


_SMALL_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def model_words(shape) -> str:
    """A small model's shape as a sentence says it: ``"one layer of width 32 with 4 heads"``."""
    n = int(shape.n_layers)
    layers = f"{_SMALL_NUMBERS[n] if n < len(_SMALL_NUMBERS) else n} layer{'s' if n != 1 else ''}"
    return f"{layers} of width {shape.d_model} with {shape.n_heads} heads"


def describe_seeds(seeds) -> str:
    """Seeds in words: ``"seeds 0–4"`` (four or more consecutive), ``"seeds 0, 1, 2"``, ``"seed 3"``."""
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("describe_seeds needs at least one seed")
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if len(seeds) >= 4 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def short_float(x: float) -> str:
    """A small setting in scientific notation without padding: ``3e-3``, ``2.5e-4``."""
    return np.format_float_scientific(float(x), trim="-", exp_digits=1)


def describe_training(train, *, optimiser: str = "AdamW") -> str:
    """``"AdamW lr 3e-3, batch 64, 300 steps"`` from a training block with ``lr``, ``batch_size`` and ``steps``."""
    return f"{optimiser} lr {short_float(train.lr)}, batch {int(train.batch_size)}, {int(train.steps):,} steps"


def describe_sequences(n: int | None, what: str = "sequences", *, random: bool = False) -> str:
    """A corpus size in words: ``"4,096 sequences"``, ``"8,192 random phrases"``, or ``"all phrases"`` when ``n``
    is None."""
    if n is None:
        return f"all {what}"
    return f"{int(n):,} {'random ' if random else ''}{what}"


def describe_scales(quick: str, paper: str) -> str:
    """A fact at both scales: ``"200 at quick, 1,000 at paper"``, or ``"... at both scales"`` when they agree."""
    return f"{quick} at both scales" if quick == paper else f"{quick} at quick, {paper} at paper"
