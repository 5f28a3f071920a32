"""Geometry core: positional statistics, Hellinger distances, MDS, stress, rank, SMACOF, noise and shift structure.

numpy/scipy, and numba for the compiled loops (imported on first use); imports no higher layer of :mod:`posgeom`.
"""

from .agreement import mds_monotonicity_curve, monotonicity_of
from .bootstrap import (
    Interval, bootstrap_intervals, difference_bounds, difference_interval, fold_bootstrap, interval_text,
    nested_intervals, percentile_interval, percentile_intervals, sequence_intervals,
)
from .counting import positional_counts
from .counts import PositionalCounts
from .entries import encoding_stresses, offdiag, offset_profiles, rms_offdiag
from .fourier import circulant_eigenvalues, fourier_basis, fourier_match
from .hellinger import HELLINGER_KINDS, euclidean_distances, hellinger_distance, hellinger_matrix, sqrt_marginals
from .fitted import FittedEmbedding, FittedMethod, fitted_embeddings
from .intervals import MIN_SEEDS, SeedInterval, draws_summary, mean_sd, paired_difference, seed_interval, spread
from .marginals import PositionalMarginals, positional_marginals
from .mds import (
    EFFECTIVE_RANK_CRITERIA, LowRankFactors, MDSResult, classical_mds, double_centered_gram,
    double_centered_gram_of_squares, effective_rank, exact_embedding, lift, low_rank_factors, mds_stress_curve,
)
from .monotonicity import Separation, ViolationCounts, linear_predictions, separation, spearman, violation_rate
from .noise import NOISE_METHODS, NoiseFloor, delta_method_noise, noise_floor
from .rank import (
    NoiseAwareRank, cross_fitted_eigenvalues, cross_fitted_gram, fold_counts, fold_members, noise_aware_rank,
    noise_aware_rank_from_folds, parameter_savings, rank_estimates, resolvable_distances,
)
from .shift import circulant_deviation, offset_means, toeplitz_deviation, toeplitz_projection, toeplitz_spread
from .similarity import head_logits, kernel_distances
from .slope import (
    SLOPE_RULES, alibi_choices, alibi_paper_stress, alibi_parabola, alibi_slopes_for, head_slope_choices,
    line_stresses, slope_for,
)
from .smacof import SmacofResult, one_hot_distances, one_hot_layouts, smacof, smacof_curve
from .spectra import (
    eigen_fraction, gram_eigenvalues, line_fit_error, null_eigenvalues, rank_above_noise, rank_one_report,
)
from .stress import STRESS_BOUNDS, STRESS_NORMALIZATIONS, distances_of, stress, stress_pair
from .summaries import (
    CORPUS_DRAW_STATISTICS, DRAW_STATISTICS, corpus_draw_statistics, corpus_geometry_values, draw_statistics,
    rank_report, resolvable_draws, resolvable_summary, spread_columns,
)
from .table_fit import TableGeometry, table_geometry
from .tables import (
    SinusoidFit, analyse_table, cosine_similarity_matrix, dimension_periodograms, fit_sinusoid, isolation_scores,
    principal_components, similarity_by_lag, spectral_summary, stand_apart,
)
from .circulant import SHIFT_BOUNDS, SHIFT_STATISTICS, shift_intervals, shift_statistics

__all__ = [
    # bootstrap over sequences
    "Interval", "percentile_interval", "percentile_intervals", "fold_bootstrap", "bootstrap_intervals",
    "difference_interval", "nested_intervals",
    # counts and marginals
    "PositionalCounts", "positional_counts", "PositionalMarginals", "positional_marginals",
    # distances
    "HELLINGER_KINDS", "hellinger_matrix", "hellinger_distance", "sqrt_marginals", "euclidean_distances",
    "distances_of",
    # MDS, rank, low rank
    "MDSResult", "classical_mds", "double_centered_gram", "double_centered_gram_of_squares", "lift",
    "mds_stress_curve", "effective_rank", "EFFECTIVE_RANK_CRITERIA", "LowRankFactors", "low_rank_factors",
    # stress
    "stress", "STRESS_NORMALIZATIONS", "STRESS_BOUNDS", "SmacofResult", "smacof",
    # monotonicity and separation
    "violation_rate", "ViolationCounts", "spearman", "Separation", "separation",
    # distances induced by similarities (attention logits)
    "kernel_distances", "head_logits",
    # shift structure (dependence on the offset only)
    "offset_means", "toeplitz_projection", "toeplitz_deviation", "circulant_deviation", "toeplitz_spread",
    # position tables: similarity, spectra, principal components, the best sinusoid
    "cosine_similarity_matrix", "similarity_by_lag", "isolation_scores", "stand_apart", "dimension_periodograms",
    "spectral_summary", "principal_components", "SinusoidFit", "fit_sinusoid", "analyse_table",
    # the rank and the geometry without sampling noise (cross-fitting)
    "NoiseAwareRank", "noise_aware_rank", "noise_aware_rank_from_folds", "fold_counts", "fold_members",
    "cross_fitted_gram", "cross_fitted_eigenvalues", "resolvable_distances", "rank_estimates", "parameter_savings",
    # noise floor
    "NoiseFloor", "noise_floor", "delta_method_noise", "NOISE_METHODS",
    # spectra, Fourier structure, entries, agreement, intervals over seeds, table fit, ALiBi slopes
    "offdiag", "rms_offdiag", "encoding_stresses", "fourier_basis", "fourier_match", "circulant_eigenvalues",
    "MIN_SEEDS", "SeedInterval", "seed_interval", "paired_difference", "spread", "draws_summary", "gram_eigenvalues",
    "rank_one_report", "eigen_fraction", "line_fit_error", "null_eigenvalues", "rank_above_noise", "monotonicity_of",
    "mds_monotonicity_curve", "TableGeometry", "table_geometry", "offset_profiles", "alibi_parabola",
    "alibi_paper_stress", "alibi_slopes_for", "SLOPE_RULES", "slope_for", "head_slope_choices", "alibi_choices",
    "line_stresses", "FittedMethod", "FittedEmbedding", "fitted_embeddings", "linear_predictions", "sequence_intervals",
    "mean_sd", "stress_pair", "interval_text", "difference_bounds",
    # summaries of a counted corpus's geometry, and their spread over random draws
    "resolvable_summary", "corpus_geometry_values", "rank_report", "DRAW_STATISTICS", "draw_statistics",
    "spread_columns", "resolvable_draws", "CORPUS_DRAW_STATISTICS", "corpus_draw_statistics",
    # SMACOF over ranks, one-hot layouts, exact embedding, shift statistics with intervals
    "smacof_curve", "one_hot_distances", "one_hot_layouts", "exact_embedding",
    "SHIFT_STATISTICS", "SHIFT_BOUNDS", "shift_statistics", "shift_intervals",
]
