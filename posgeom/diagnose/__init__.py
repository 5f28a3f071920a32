"""Diagnose any Hugging Face model: its positional geometry against a corpus's, as a report.

A new architecture is one entry in :data:`~posgeom.diagnose.families.FAMILIES`; the layout of the subpackage
is in docs/ARCHITECTURE.md.
"""

from .core import REFERENCES, ModelInfo, corpus_statistics, diagnose, inspect_model, layer_distances, \
    leading_specials, model_tokenizer, position_distances
from .families import (
    ALIBI_RULES, FAMILIES, MECHANISMS, Family, Mechanism, QueryKeyLayout, alibi, bloom_alibi_slopes, detect_mechanism,
    learned, mpt_alibi_slopes, no_positions, relative_buckets, rope_frequencies_of, rotary, sinusoidal,
    supported_message, switch, t5_relative_buckets,
)
from .report import FIGURES, summary_lines, write_report
from .stress import ENCODING_NAMES, parse_encodings, stress_report
from .weights import TensorReader

__all__ = [
    "REFERENCES", "ModelInfo", "corpus_statistics", "diagnose", "inspect_model", "layer_distances", "leading_specials",
    "model_tokenizer", "position_distances", "ALIBI_RULES", "FAMILIES", "MECHANISMS", "Family", "Mechanism",
    "QueryKeyLayout", "alibi", "bloom_alibi_slopes", "detect_mechanism", "learned", "mpt_alibi_slopes", "no_positions",
    "relative_buckets", "rope_frequencies_of", "rotary", "sinusoidal", "supported_message", "switch",
    "t5_relative_buckets", "FIGURES", "summary_lines", "write_report", "ENCODING_NAMES", "parse_encodings",
    "stress_report", "TensorReader",
]
