r"""Decide a claim on a named model: the checks a missing model leaves "inconclusive here" (``posgeom decide``).

C10 (BERT-base's projected stress peaks at layer 3, chapter "Inside BERT") and S1, S2 (GPT-2's learned table,
chapter "Learned tables") need a model an offline machine may lack; their rules print the command that decides
them (:func:`posgeom.verdicts.decide_command`). :func:`decide_claim` computes, on the model given, exactly the
numbers the chapter feeds to the rule, through the chapter's own functions and the results registry (keyed by
the model's name, a folder by its absolute path). A model that cannot be had, or of the wrong kind, is a
one-sentence ``ValueError`` raised before any long computation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import verdicts as rules
from .config import Settings, model_folder, resolve_model, settings_or_default as _settings

__all__ = ["DECIDABLE", "ClaimDecision", "decide_claim", "check_claim"]

#: The claims :func:`decide_claim` decides, and the model each is about (the one a stand-in cannot replace).
DECIDABLE = {"C10": rules.PAPER_MODEL, "S1": rules.SEED_S1_MODEL, "S2": rules.SEED_S1_MODEL}


@dataclass(frozen=True)
class ClaimDecision:
    """What :func:`decide_claim` found: ``model`` as the rule saw it (a hub name resolved, a folder absolute),
    ``numbers`` as plain data, ``ours`` worded as the chapter's row, ``provenance`` the stored result's line."""

    claim: str
    model: str
    scale: str
    numbers: dict
    ours: str
    decision: rules.Decision
    provenance: str


def check_claim(claim: str) -> str:
    """``claim`` (upper-cased) if :func:`decide_claim` decides it, else a ``ValueError`` naming those it does."""
    valid = ", ".join(DECIDABLE)
    if not isinstance(claim, str) or claim.strip().upper() not in DECIDABLE:
        raise ValueError(f"posgeom decide decides {valid} (the checks that need a model this machine may lack); "
                         f"got {claim!r}")
    return claim.strip().upper()


def decide_claim(claim: str, model: str, settings: Settings | None = None, *, force: bool = False) -> ClaimDecision:
    """Compute the numbers of the check of ``claim`` (C10, S1 or S2) on ``model`` as its chapter does, and decide
    it by its rule.

    ``model`` is a hub name (``"bert-base-uncased"``, ``"gpt2"``, ``"owner/name"``) or a folder written by
    ``save_pretrained``; it replaces the ``pretrained`` of ``settings`` (default
    :func:`posgeom.config.get_settings`). ``force`` recomputes the model's result even when the registry holds it.
    """
    claim = check_claim(claim)
    settings = _settings(settings)
    resolve_model(model)  # a folder that does not exist: one sentence, before anything loads
    if claim == "C10":
        return _decide_c10(settings.with_(pretrained=str(model)), force)
    return _decide_table(claim, str(model), settings, force)


def _bert_checked(settings: Settings) -> None:
    """A ``ValueError`` unless ``settings.pretrained`` is a BERT-family encoder the chapter can run."""
    from .corpora.tokenize import DEFAULT_TOKENIZER, load_tokenizer
    from .experiments.inside_bert import CONFIGS
    from .models.hf import config_from_hf
    name = settings.pretrained
    folder = model_folder(name)  # the hub's config and weights, or a ValueError saying why not
    cfg_file = Path(folder) / "config.json"
    if not cfg_file.is_file():
        raise ValueError(f"model {name!r} has no config.json in {folder}: give a folder written by save_pretrained")
    config = json.loads(cfg_file.read_text(encoding="utf-8"))
    try:
        config_from_hf(config)
    except (ValueError, KeyError) as err:
        raise ValueError(f"C10 runs a BERT-family encoder (BERT-base's family); model {name!r} is not one: "
                         f"{err}") from None
    vocab, needed = int(config["vocab_size"]), len(load_tokenizer())
    if vocab < needed:
        raise ValueError(f"C10 feeds SST-2 sentences tokenised by {DEFAULT_TOKENIZER}'s WordPiece ({needed} ids, "
                         f"bert-base-uncased's vocabulary) to the model; model {name!r} has {vocab} token ids")
    positions = CONFIGS[settings.scale].sentences.n_positions
    if int(config["max_position_embeddings"]) < positions:
        raise ValueError(f"C10 reads the first {positions} positions of SST-2 sentences; model {name!r} has "
                         f"{config['max_position_embeddings']} positions")


def _decide_c10(settings: Settings, force: bool) -> ClaimDecision:
    from .chapters.inside_bert import c10_curves, c10_ours, curve
    from .experiments.inside_bert import DEFINITIONS, StoredLayerStress, run_layer_stress
    from .geometry.peaks import local_maxima
    _bert_checked(settings)
    result = run_layer_stress(settings, force=force)  # keyed by settings.pretrained: this model's own entry
    layers = result.as_(StoredLayerStress)
    headline = "propagated_scale_free"
    curves = c10_curves(layers)
    decision = rules.c10_layer_peak(layers.model, curves, headline)
    local = {d: local_maxima(curve(layers, d, "scale_free")) for d in DEFINITIONS}
    numbers = {"curves": {k: [float(x) for x in c] for k, c in curves.items()}, "peaks": dict(layers.peaks),
               "headline": headline, "local_maxima_scale_free": local,
               "n_layers": layers.n_layers, "n_positions": layers.n_positions, "n_sentences": layers.n_sentences}
    ours = c10_ours(layers) + f"; n = {layers.n_positions} positions ({layers.n_layers} layers)"
    return ClaimDecision("C10", layers.model, rules.scale_label(settings.scale, layers.model), numbers, ours, decision,
                         result.provenance())


def _table_name(model: str) -> str:
    """The name the chapter's experiments key a table by: a hub alias resolved, a folder absolute."""
    from .models.pretrained import HUB_ALIASES
    folder = Path(model).expanduser()
    return str(folder.resolve()) if folder.is_dir() else HUB_ALIASES.get(model, model)


def _decide_table(claim: str, model: str, settings: Settings, force: bool) -> ClaimDecision:
    from .chapters.learned_tables import s1_ours, s2_ours
    from .experiments.learned_tables import TableAnatomyRecord, pretrained_availability, run_pretrained_tables
    name = _table_name(model)
    avail = pretrained_availability(settings, [name])[0]
    if not avail.available:
        raise ValueError(f"{claim} reads a model's learned absolute position table, and model {name!r} has none "
                         f"that loads here: {avail.reason}")
    result = run_pretrained_tables(settings, models=[name], force=force)["results"][name]
    anatomy = result.as_(TableAnatomyRecord)
    T = anatomy.table
    if claim == "S1":
        decision = rules.s1_neighbour_similarity(T.neighbour_cos, name)
        numbers = {"neighbour_cos": T.neighbour_cos, "neighbour_cos_centered": T.neighbour_cos_centered,
                   "frac_neighbour_above_0_9": T.frac_neighbour_above_0_9, "decay_spearman": T.decay_spearman}
        ours = s1_ours(T)
    else:
        decision = rules.s2_first_positions_apart(list(T.stand_apart), name)
        numbers = {"stand_apart": [int(i) for i in T.stand_apart],
                   "isolation_0": float(anatomy.arrays_of("table").isolation[0]),
                   "isolation_threshold": T.isolation_threshold}
        ours = s2_ours(anatomy)
    numbers["table_shape"] = [T.n, T.d]
    return ClaimDecision(claim, name, rules.scale_label(settings.scale, name), numbers, ours, decision,
                         result.provenance())
