r"""What a check ran under, against what its claim states: the scale label of a row and the one criterion of
"changed conditions".

A ``paper`` row that trained a model smaller than BERT-base (:data:`PAPER_SHAPE`) is labelled
:data:`SMALL_MODEL_SCALE` (:func:`scale_label`), and weighs less in a claim's bottom line (:func:`scale_weight`).
A check changes its claim's conditions exactly when it sets a setting of :data:`STATED_CONDITIONS` to another
value than the stated one (:func:`changed_conditions`); a choice the paper leaves open is never a changed
condition, and a check on another model is a stand-in (:func:`~posgeom.verdicts.decision.stand_in`).
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

    The text may name several models, separated by ``";"`` (``"posgeom encoder, 1 layer, width 32, 4 heads"``,
    ``"encoder d=32, 2 layers"``): each part stating both a depth and a width is one; a part starting with
    ``"none"`` or naming only a pretrained model states no shape.
    """
    stated = [(_LAYERS.search(part), _WIDTH.search(part)) for part in str(model).split(";")
              if not part.strip().lower().startswith("none")]
    return [(int(layers.group(1)), int(width.group(1))) for layers, width in stated if layers and width]


def scale_label(scale: str, model: str) -> str:
    """``scale``, except a ``"paper"`` row whose trained model is smaller than :data:`PAPER_SHAPE`:
    :data:`SMALL_MODEL_SCALE`."""
    if scale != "paper":
        return scale
    small = [s for s in trained_shapes(model) if s[0] < PAPER_SHAPE["n_layers"] or s[1] < PAPER_SHAPE["d_model"]]
    return SMALL_MODEL_SCALE if small else scale


def scale_weight(scale: str, label: str) -> int:
    """A check's weight in a claim's bottom line (:data:`SCALE_WEIGHTS`): 2 at ``paper`` scale on the paper's model
    or with none trained, 1 at ``paper`` scale on a small model, 0 at ``quick`` scale."""
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
    """What a check changes from ``claim``'s conditions, in words (``""``: none).

    ``conditions`` maps a setting of :data:`STATED_CONDITIONS` to the value the check used; a setting the claim
    does not state is refused (an unstated choice belongs in the row's options).
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
