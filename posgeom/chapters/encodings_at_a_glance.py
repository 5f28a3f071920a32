r"""The chapter "Encodings at a glance", from the stored zoo (:mod:`posgeom.experiments.zoo`): its records and
its C8 row."""

from __future__ import annotations

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result, stored_text
from ..registry.typed import as_record
from ..encodings.zoo import ZOO
from ..experiments.zoo import CONFIGS, KernelPair, ZooDistances, ZooEncoding, run_kernel_pair
from ..report import ComparisonRow

__all__ = ["encodings", "zoo_summary", "c8_row", "comparison_rows", "captions"]


def encodings(zoo: Result) -> dict[str, ZooEncoding]:
    """Every encoding of a stored ``run_zoo``, typed, in the zoo's order."""
    return {name: as_record(zoo, ZooEncoding, at=f"encodings.{name}") for name in ZOO}


def zoo_summary(zoo: Result) -> dict:
    """The numbers of a ``run_zoo`` result the prose quotes beside each encoding's (glued as ``zoo_<name>``)."""
    z = zoo.as_(ZooDistances)
    k, alibi = z.kernel, z.alibi
    return dict(d=z.shape.d_model, heads=z.shape.n_heads, dhead=k.d_head, nmax=z.shape.max_positions, n=z.n,
                identity_err=k.identity_max_error, kernel_err=k.sinusoidal_kernel_max_error,
                sin_rope_stress=k.stress_scale_free, sin_rope_rho=k.spearman, nfreq_sin=k.n_frequencies_sinusoidal,
                nfreq_rope=k.n_frequencies_rope, omega_min_sin=k.omega_range_sinusoidal[0],
                omega_min_rope=k.omega_range_rope[0], alibi_frac=alibi.eigen_fraction_1,
                alibi_line_err=alibi.line_mds_error, alibi_mbar=alibi.mean_slope)


def _pair_text(p: KernelPair, with_n: bool = False) -> str:
    """Sinusoidal against RoPE in words: their scale-free stress and largest distances."""
    return (f"n = {p.n}: " if with_n else "") + (f"scale-free stress {p.stress_scale_free:.4f}, largest distances "
                                                 f"{p.max_sinusoidal:.1f} vs {p.max_rope:.2f}")


def c8_row(identity_error: float, pair: KernelPair, paper_pair: str, settings=None) -> ComparisonRow:
    """C8 (:func:`posgeom.verdicts.c8_sinusoidal_rope`) on the paper model's shapes, with the zoo's identity error."""
    return ComparisonRow(
        "C8", ours=(f"same kernel K on two frequency sets (identity to {identity_error:.0e}); sinusoidal "
                    f"(d = {pair.d_model}) vs RoPE (d_head = {pair.d_head}): {_pair_text(pair)} "
                    f"(formulas, no corpus: exact, no sampling interval); paper scale: {paper_pair}"),
        scale=_settings(settings).scale,
        model=f"none (shapes of {rules.PAPER_MODEL}: d = {pair.d_model}, {pair.n_heads} heads)",
        corpus="none", options=f"n = {pair.n}, base {pair.base:g}",
        # the formulas need the shapes only: the paper model's are known without loading it
        decision=rules.c8_sinusoidal_rope(pair.stress_scale_free, pair.max_sinusoidal / pair.max_rope,
                                          model=rules.PAPER_MODEL))


def comparison_rows(zoo: Result, pair: Result, settings=None) -> list:
    """The chapter's row (:func:`c8_row`, in a list) from ``run_zoo``, ``run_kernel_pair`` and the paper-scale pair."""
    paper_pair = stored_text(run_kernel_pair, _settings(settings), lambda r: _pair_text(r.as_(KernelPair), with_n=True))
    return [c8_row(zoo.as_(ZooDistances).kernel.identity_max_error, pair.as_(KernelPair), paper_pair, settings)]


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``zcap_<key>``), and the box's at both scales."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    return {"scale": settings.scale,
            "last_position": int(conf.n) - 1,  # positions 0 to last_position are compared
            "picture_positions": int(conf.picture_positions),  # the rows of the tables drawn
            "quick_positions": int(CONFIGS["quick"].n), "paper_positions": int(CONFIGS["paper"].n)}
