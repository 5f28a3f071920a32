r"""What a check ran under, against what its claim states: the scale label of a row and the one criterion of
"changed conditions".

**The scale label.** A row at ``paper`` scale ran the paper-scale seeds and data; whether it also ran the
paper's model is a second question. :func:`scale_label` answers it from the model the row names (the text a
chapter builds from the settings that ran, :func:`posgeom.wording.describe_model`, or the model a stored
result's manifest names): a row that trained a model with fewer layers or a narrower width than BERT-base
(:data:`PAPER_SHAPE`) is labelled :data:`SMALL_MODEL_SCALE`, never plain ``"paper"``. A row that trained no
model (pure geometry, a pretrained table) keeps ``"paper"``; a pretrained stand-in is the business of
:func:`~posgeom.verdicts.decision.stand_in`. :func:`scale_weight` says how much a check weighs in a claim's
bottom line: the paper's model (or no trained model) at paper scale, then the paper's seeds and data on a
small model, then quick scale.

**Changed conditions.** A check changes its claim's conditions exactly when it sets a setting the paper (or
the seed) states for that claim to another value than the stated one: :data:`STATED_CONDITIONS` holds, per
claim, those settings and their stated values, and :func:`changed_conditions` is the one function that
decides. A row declares the values it used for the stated settings it sets (``conditions=``; a setting it
does not declare keeps the stated value). A choice the paper leaves open (weight decay, the size of a
training set, how the NTK regime is reached) is never a changed condition: it is an unstated choice, and a
check that varies it is evidence like any other (its rule may answer "depends on an unstated choice").
The model is not in the table: a check on another model than the one a claim is about is a stand-in
(:func:`~posgeom.verdicts.decision.stand_in`), and a small model trained on the paper's data is told apart by
its scale label.
"""

from __future__ import annotations

import re
from typing import Mapping

__all__ = ["PAPER_SHAPE", "SMALL_MODEL_SCALE", "SCALE_WEIGHTS", "trained_shapes", "scale_label", "scale_weight",
           "STATED_CONDITIONS", "changed_conditions"]

#: BERT-base's depth and width (Section 3 of the specification: 12 layers, width 768): a row that trained
#: anything smaller ran a small model, whatever its seeds and data.
PAPER_SHAPE = {"n_layers": 12, "d_model": 768}

#: The scale label of a row with the paper-scale seeds and data that trained a model smaller than BERT-base
#: (the powered CPU designs: one or two layers of width 32).
SMALL_MODEL_SCALE = "paper seeds and data, small model"

#: How much a check weighs in a claim's bottom line, by what ran (heaviest first): the words the bottom line
#: uses for each weight.
SCALE_WEIGHTS = {2: "at paper scale", 1: "with the paper's seeds and data on a small model", 0: "at quick scale"}

_LAYERS = re.compile(r"(\d+)[ -]layer(?:s|\(s\))?(?![a-z])", re.IGNORECASE)
_WIDTH = re.compile(r"(?<![a-z])(?:width|d)\s*=?\s*(\d+)", re.IGNORECASE)


def trained_shapes(model: str) -> list[tuple[int, int]]:
    """The ``(layers, width)`` of every model a row's ``model`` text says was trained.

    The text is what a chapter builds from the settings that ran: ``"posgeom encoder, 1 layer, width 32, 4
    heads"`` (:func:`posgeom.wording.describe_model`), ``"2-layer encoder of width 32 (posgeom.models)"`` (a
    stored design's manifest), ``"encoder d=32, 2 layers"``, ``"[CLS] classifier d=2048, 2 layer(s)"``. A row
    may name several models, separated by ``";"``: each part that states both a depth and a width is one
    trained model. A part that starts with ``"none"`` (fixed encodings, which train nothing) or names only a
    pretrained model states no shape.
    """
    shapes = []
    for part in str(model).split(";"):
        if part.strip().lower().startswith("none"):
            continue
        layers, width = _LAYERS.search(part), _WIDTH.search(part)
        if layers and width:
            shapes.append((int(layers.group(1)), int(width.group(1))))
    return shapes


def scale_label(scale: str, model: str) -> str:
    """The scale a row shows: ``scale`` itself, except a ``"paper"`` row whose trained model (``trained_shapes``)
    has fewer layers or a narrower width than BERT-base (:data:`PAPER_SHAPE`): :data:`SMALL_MODEL_SCALE`."""
    if scale != "paper":
        return scale
    small = [s for s in trained_shapes(model) if s[0] < PAPER_SHAPE["n_layers"] or s[1] < PAPER_SHAPE["d_model"]]
    return SMALL_MODEL_SCALE if small else scale


def scale_weight(scale: str, label: str) -> int:
    """A check's weight in a claim's bottom line (:data:`SCALE_WEIGHTS`): 2 recorded at ``paper`` scale on the
    paper's model or with no trained model (an exact result weighs as the run that recorded it), 1 recorded at
    ``paper`` scale on a small model (``label`` is :data:`SMALL_MODEL_SCALE`), 0 recorded at ``quick`` scale."""
    if scale != "paper":
        return 0
    return 1 if label == SMALL_MODEL_SCALE else 2


#: Per claim, the settings the paper (C1–C11) or the seed (S1–S9) states as the claim's conditions, and the
#: stated value of each (from the paper's statements as the specification reconstructs them; a claim that
#: states none has no entry). A check that sets one of them to another value changes the claim's conditions.
STATED_CONDITIONS: dict[str, dict[str, str]] = {
    # Theorem 1's proof covers content-only attention without a causal mask, and no positional signal
    "C1": {"attention": "bidirectional", "positional signal": "none"},
    # Theorem 4's three conditions
    "C2": {"statistics": "non-stationary", "loss": "order-sensitive", "attention": "non-degenerate"},
    "C4": {"statistics": "smoothly varying (approximately stationary)"},
    "C6": {"corpora": "SST-2 and IMDB"},
    "C7": {"corpus": "SST-2"},
    # Appendix A: the NTK regime, for MLM and [CLS] classification losses
    "C11": {"regime": "NTK (lazy training)", "loss": "MLM or [CLS] classification"},
    "S7": {"initialisations": "N(0, 0.02²) against N(0, 1)"},
    "S9": {"dropout": "0.1 on the embedding sum"},
}


def _same(a: str, b: str) -> bool:
    return " ".join(str(a).lower().split()) == " ".join(str(b).lower().split())


def changed_conditions(claim: str, conditions: Mapping[str, str] | None = None) -> str:
    """What a check changes from ``claim``'s conditions, in words (``""``: none), by the one criterion of this
    module: a setting of :data:`STATED_CONDITIONS` declared with another value than the stated one.

    ``conditions`` maps a stated setting to the value the check used. A setting the claim does not state is
    refused (an unstated choice is never a changed condition: name it in the row's options).
    """
    conditions = dict(conditions or {})
    stated = STATED_CONDITIONS.get(claim, {})
    unknown = [k for k in conditions if k not in stated]
    if unknown:
        states = ", ".join(stated) if stated else "no setting"
        raise ValueError(f"{claim} states {states}; {', '.join(map(repr, unknown))} is not a setting it states, so "
                         "it cannot be a changed condition (an unstated choice goes in the row's options)")
    return "; ".join(f"{k}: {v} (the claim states {stated[k]})" for k, v in conditions.items()
                     if not _same(v, stated[k]))
