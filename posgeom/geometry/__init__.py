"""Geometry core (SPEC sections 1–2): positional statistics, Hellinger distances,
classical MDS, stress, effective rank, low-rank factors, SMACOF, monotonicity, separation."""

__all__: list[str] = []
