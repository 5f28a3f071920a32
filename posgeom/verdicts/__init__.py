r"""The decision rules of the "Paper vs this book" tables, one module per part of the book.

Each rule returns a :class:`Decision`; :mod:`~posgeom.verdicts.decision` holds what every rule shares, and the
rules are in :mod:`~posgeom.verdicts.why_position` (C1, C2), :mod:`~posgeom.verdicts.optimal_encoding` (C3–C6),
:mod:`~posgeom.verdicts.paper_experiments` (C7–C11) and :mod:`~posgeom.verdicts.learned_tables` (S1–S9).
Every public name of those modules is importable from here (``from posgeom import verdicts as rules;
rules.c5_lowrank_performance(...)``).
"""

from __future__ import annotations

import sys

from . import learned_tables, optimal_encoding, paper_experiments, why_position
from .decision import (BY_CONSTRUCTION, DEPENDS, EVIDENCE, INCONCLUSIVE, MAX_SEEDS, NOT_REPRODUCED, PAPER_MODEL,
                       REPRODUCED, SEED_S1_HUB, SEED_S1_MODEL, VERDICTS, Decision, IntervalLike, SeedIntervalLike,
                       Values, Verdict, decide_command, is_model, stand_in)
from .learned_tables import (LOSS_EFFECT, OVERFIT_GAP, S2_CLAIM, S2_FIRST, S2_MIN_RUN, S3_LEVEL, SEED_NEIGHBOUR_COS,
                             SHORTFALL, TAIL_EFFECT, USES_POSITION_SDS, s1_neighbour_similarity,
                             s2_first_positions_apart, s3_frequency_bands, s4_undertrained_tail, s5_no_vector_beyond,
                             s6_heuristics_mlm, s6_heuristics_order, s6_heuristics_powered, s7_small_init,
                             s8_sinusoidal_init, s9_dropout)
from .optimal_encoding import (ACCURACY_MARGIN, FOURIER_TOL, GAIN_MARGIN, NEAR_OPTIMAL, NEAR_STATIONARY,
                               PAPER_REDUCTION, PAPER_SAVINGS, ROUNDING_TOL, SAVINGS_ROUNDING, SINUSOIDAL_MATCH,
                               c3_beats_other_encodings, c3_exact_impossible, c3_full_rank_mds, c3_least_stress,
                               c4_circulant, c4_sinusoidal_table, c5_lowrank_performance, c5_parameter_savings,
                               c5_stress_reduction, c6_near_zero)
from .conditions import PAPER_SHAPE, SMALL_MODEL_SCALE, STATED_CONDITIONS, changed_conditions, scale_label, scale_weight
from .thresholds import RuleCall, record_inputs, redecide, thresholds_read
from .paper_experiments import (
    COUNTINGS, DIFFERENT_RATIO, LAZY_KERNEL_CHANGE, LEARNED_LOSS, MODERATE_RHO, NEARLY_IDENTICAL, ORDER_EFFECT,
    PAPER_ALIBI_STRESS, PAPER_MDS_VIOLATION, PAPER_PEAK_LAYER, RANDOM_VIOLATION, SHIFT_SHARE, VALUE_ROUNDING,
    VIOLATION_MARGIN, c10_layer_peak, c11_ntk_order, c7_alibi_ranking, c7_alibi_value, c7_shift_equivariance, c8_sinusoidal_rope,
    c9_mds_violation, c9_pretrained_correlation, c9_random_violation, ntk_lazy, ntk_learned,
)
from .why_position import (ABOVE_CHANCE, CHANCE, COLLAPSE_SHARE, EQUIVARIANCE_RATIO, FLOOR_EFFECT, KEEP_SHARE,
                           ORDERED_RHO, SEP_TOL, c1_causal_mask, c1_equivariance, c1_nope_at_chance,
                           c1_symmetric_signal, c2_broken_conditions, c2_converged, c2_separation, c2_weight_decay)

#: The modules of the rules, one per part of the book.
PARTS = (why_position, optimal_encoding, paper_experiments, learned_tables)

#: Every rule, by name (the tests reach each of their outcomes): the functions of each part named after their
#: claim (``c1_…`` to ``c11_…``, ``s1_…`` to ``s9_…``).
RULES = {name: getattr(part, name) for part in PARTS for name in part.__all__
         if callable(getattr(part, name)) and name[:2] in {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "s1",
                                                           "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}}

# Every rule's decision carries its call (the rule's name and inputs), so that a claims record can decide it
# again with a threshold moved (posgeom.verdicts.thresholds): each rule is wrapped once, here, in its own
# module and in this package, whatever its body or signature.
for _name, _rule in list(RULES.items()):
    if not hasattr(_rule, "__wrapped__"):
        RULES[_name] = record_inputs(_rule)
        setattr(sys.modules[_rule.__module__], _name, RULES[_name])
    globals()[_name] = RULES[_name]
del _name, _rule

#: The names of every part, as they were importable from the one module this package replaces, then the rest.
__all__ = [
    "REPRODUCED", "DEPENDS", "NOT_REPRODUCED", "INCONCLUSIVE", "BY_CONSTRUCTION", "VERDICTS", "EVIDENCE", "Verdict",
    "PAPER_MODEL", "Decision", "is_model", "stand_in", "ntk_learned", "ntk_lazy", "RULES", "decide_command",
    "ACCURACY_MARGIN", "TAIL_EFFECT", "LOSS_EFFECT", "ORDER_EFFECT", "FLOOR_EFFECT", "MAX_SEEDS", "IntervalLike",
    "SeedIntervalLike", "c1_equivariance", "c1_nope_at_chance", "c1_causal_mask", "c1_symmetric_signal", "c2_separation",
    "c2_broken_conditions", "c2_weight_decay", "c2_converged", "c3_full_rank_mds", "c6_near_zero",
    "c3_least_stress", "c3_exact_impossible", "c3_beats_other_encodings", "c4_circulant", "c4_sinusoidal_table",
    "c5_parameter_savings", "c5_stress_reduction", "c5_lowrank_performance", "c7_alibi_value", "c7_alibi_ranking",
    "c7_shift_equivariance", "c8_sinusoidal_rope", "c9_mds_violation", "c9_random_violation",
    "c9_pretrained_correlation", "c10_layer_peak", "c11_ntk_order", "s1_neighbour_similarity",
    "s2_first_positions_apart", "s3_frequency_bands", "s4_undertrained_tail", "s5_no_vector_beyond",
    "s6_heuristics_order", "s6_heuristics_mlm", "s6_heuristics_powered", "s7_small_init", "s8_sinusoidal_init",
    "s9_dropout", "SEED_S1_HUB", "SEED_S1_MODEL", "Values", "OVERFIT_GAP", "S2_CLAIM", "S2_FIRST", "S2_MIN_RUN",
    "S3_LEVEL", "SEED_NEIGHBOUR_COS", "SHORTFALL",
    "USES_POSITION_SDS", "FOURIER_TOL", "GAIN_MARGIN", "NEAR_OPTIMAL", "PAPER_REDUCTION", "PAPER_SAVINGS",
    "ROUNDING_TOL", "SAVINGS_ROUNDING", "DIFFERENT_RATIO", "LAZY_KERNEL_CHANGE", "LEARNED_LOSS", "MODERATE_RHO",
    "NEARLY_IDENTICAL", "PAPER_ALIBI_STRESS", "PAPER_MDS_VIOLATION", "PAPER_PEAK_LAYER", "RANDOM_VIOLATION",
    "SHIFT_SHARE", "VALUE_ROUNDING", "VIOLATION_MARGIN", "ABOVE_CHANCE", "CHANCE", "COLLAPSE_SHARE", "EQUIVARIANCE_RATIO", "KEEP_SHARE",
    "ORDERED_RHO", "SEP_TOL", "PARTS", "RuleCall", "record_inputs", "redecide", "thresholds_read", "PAPER_SHAPE",
    "SMALL_MODEL_SCALE", "NEAR_STATIONARY", "SINUSOIDAL_MATCH", "COUNTINGS", "STATED_CONDITIONS", "changed_conditions", "scale_label", "scale_weight",
]
