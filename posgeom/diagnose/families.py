r"""Which positional mechanism a Hugging Face model uses, read from its configuration.

Every supported architecture (the config's ``model_type``) is one entry in :data:`FAMILIES`, built by
:func:`learned`, :func:`rotary`, :func:`alibi`, :func:`sinusoidal`, :func:`relative_buckets` or :func:`switch`
(a mechanism chosen by a config flag: MPT as MosaicML's code builds it, Falcon). A family whose sinusoids
use other frequencies than $b^{-2k/d}$ (M2M-100, XGLM) needs its own builder. A learned table's ``offset`` (the
row of position 0) is :func:`posgeom.models.pretrained.position_offset`'s: its ``POSITION_OFFSETS`` needs an entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..validation import check_int

__all__ = [
    "MECHANISMS", "ALIBI_RULES", "Mechanism", "QueryKeyLayout", "Family", "FAMILIES", "learned", "rotary", "alibi",
    "sinusoidal", "relative_buckets", "switch", "no_positions", "detect_mechanism", "supported_message",
    "bloom_alibi_slopes", "mpt_alibi_slopes", "rope_frequencies_of", "t5_relative_buckets",
]

MECHANISMS = ("learned", "rotary", "alibi", "sinusoidal", "relative_bias", "none")


@dataclass(frozen=True)
class QueryKeyLayout:
    """How one layer's query/key projections and the norm in front of them are stored.

    Tensor names are templates with ``{i}`` for the layer, matched by suffix (a checkpoint may prefix them).
    ``query``/``key`` are separate ``Linear`` modules; ``fused`` stacks Q, K, V (``fused_kind`` ``"linear"``:
    weight (3d, d); ``"conv1d"``, GPT-2: (d, 3d)). ``norm`` is a pre-LN model's per-layer LayerNorm;
    ``embedding_norm`` a post-LN model's embedding LayerNorm, applied to $p_i + t_0$ (``token_type`` row 0).
    """

    query: str | None = None
    key: str | None = None
    fused: str | None = None
    fused_kind: str = "linear"
    norm: str | None = None
    embedding_norm: str | None = None
    token_type: str | None = None


@dataclass(frozen=True)
class Mechanism:
    """A model's positional mechanism (``kind``, one of :data:`MECHANISMS`) and what its geometry needs: JSON-ready
    ``params`` (tensor names, offsets, rope frequencies, slopes, buckets), the ``layout`` of a learned table's
    per-layer projections; ``max_positions`` is None where no limit is stated."""

    kind: str
    family: str
    n_layers: int
    n_heads: int
    width: int
    max_positions: int | None
    params: dict = field(default_factory=dict)
    layout: QueryKeyLayout | None = None
    layer_eps: float = 1e-5

    @property
    def needs_weights(self) -> bool:
        return self.kind in ("learned", "relative_bias")

    def describe(self) -> str:
        """One line: the mechanism and its parameters."""
        p = self.params
        if self.kind == "learned":
            return f"learned absolute table {p['table']} ({p['rows']} rows, position 0 at row {p['offset']})"
        if self.kind == "rotary":
            scaling = "" if p["rope_type"] == "default" else f", scaling {p['rope_type']} {p.get('rope_scaling')}"
            return (f"rotary (RoPE), theta {p['rope_theta']:g}, {p['rotary_dim']} of {p['head_dim']} dims per head "
                    f"rotated{scaling}")
        if self.kind == "alibi":
            return f"ALiBi, {self.n_heads} heads, {p['rule']} slopes (mean {np.mean(p['slopes']):.4g})"
        if self.kind == "sinusoidal":
            return f"fixed sinusoidal table, width {self.width}, base {p['base']:g}"
        if self.kind == "relative_bias":
            return (f"bucketed relative attention bias, {p['num_buckets']} buckets up to distance "
                    f"{p['max_distance']}, {self.n_heads} heads")
        return "no positional encoding"

    def as_dict(self) -> dict:
        return {
            "kind": self.kind, "family": self.family, "n_layers": self.n_layers, "n_heads": self.n_heads,
            "width": self.width, "max_positions": self.max_positions, "params": self.params,
            "per_layer": self.layout is not None, "description": self.describe(),
        }


@dataclass(frozen=True)
class Family:
    """One supported architecture: ``read(config) -> Mechanism`` and a one-line summary for messages."""

    summary: str
    read: Callable


def _shape(config, family: str) -> dict:
    """n_layers, n_heads, width, max_positions (transformers' attribute maps give every family these names)."""
    n_layers, n_heads, width = (
        check_int(getattr(config, attr, None), f"the {family} config's {attr} ({what})", 1)
        for attr, what in (("num_hidden_layers", "its number of layers"), ("num_attention_heads", "its heads"),
                           ("hidden_size", "its width"))
    )
    max_positions = getattr(config, "max_position_embeddings", None)
    return {"family": family, "n_layers": n_layers, "n_heads": n_heads, "width": width,
            "max_positions": max_positions if isinstance(max_positions, int) else None}


def learned(table: str, layout: QueryKeyLayout | None = None, eps_attr: str = "layer_norm_eps") -> Family:
    """A learned absolute table ``table`` (a tensor name), position 0 at row ``models.pretrained.position_offset``."""

    def read(config, family):
        from ..models.pretrained import position_offset
        shape = _shape(config, family)
        eps = getattr(config, eps_attr, None)
        params = {"table": table, "offset": position_offset(config), "rows": shape["max_positions"]}
        return Mechanism("learned", **shape, params=params, layout=layout,
                         layer_eps=float(eps) if eps is not None else 1e-5)

    return Family(f"learned absolute table ({table})", read)


def rope_frequencies_of(config, head_dim: int) -> tuple[np.ndarray, dict]:
    r"""The rotation frequencies $\theta_k$ a model applies, and their parameters.

    Default RoPE: $\theta_k = b^{-2k/r}$, $k < r/2$, $r$ the rotated dimensions; any scaled type is computed by
    ``transformers``' own ``ROPE_INIT_FUNCTIONS``, as the model does.
    """
    scaling = getattr(config, "rope_scaling", None)
    rp = dict(getattr(config, "rope_parameters", None) or (scaling if isinstance(scaling, dict) else {}))
    theta = rp.get("rope_theta", getattr(config, "rope_theta", None))
    if theta is None:
        theta = getattr(config, "rotary_emb_base", 10000.0)
    rope_type = rp.get("rope_type", rp.get("type", "default")) or "default"
    factor = rp.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", None))
    if factor is None:
        factor = getattr(config, "rotary_pct", None)
    rotary_dim = getattr(config, "rotary_dim", None)
    if rotary_dim is None:
        rotary_dim = int(head_dim * (1.0 if factor is None else float(factor)))
    rotary_dim = int(rotary_dim) - int(rotary_dim) % 2
    if rotary_dim < 2:
        raise ValueError(f"the config rotates {rotary_dim} dimensions per head; RoPE needs at least 2")
    attention_scaling = 1.0
    if rope_type == "default":
        freqs = float(theta) ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    else:
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

        if rope_type not in ROPE_INIT_FUNCTIONS:
            known = ", ".join(sorted(ROPE_INIT_FUNCTIONS))
            raise ValueError(f"unknown rope type {rope_type!r}; transformers knows {known}")
        inv_freq, attention_scaling = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu")
        freqs = inv_freq.double().numpy()
        rotary_dim = 2 * freqs.size
    scaling_params = {k: v for k, v in rp.items() if k not in ("rope_theta", "rope_type", "partial_rotary_factor")}
    return freqs, {
        "rope_theta": float(theta), "rope_type": rope_type, "head_dim": int(head_dim), "rotary_dim": int(rotary_dim),
        "partial_rotary_factor": rotary_dim / head_dim, "attention_scaling": float(attention_scaling),
        "rope_scaling": scaling_params or None,
    }


def rotary() -> Family:
    """RoPE with the model's theta, partial rotation and scaling (:func:`rope_frequencies_of`)."""

    def read(config, family):
        shape = _shape(config, family)
        head_dim = getattr(config, "head_dim", None) or shape["width"] // shape["n_heads"]
        freqs, params = rope_frequencies_of(config, int(head_dim))
        return Mechanism("rotary", **shape, params={**params, "frequencies": freqs.tolist()})

    return Family("rotary (rope_theta, partial rotary factor, rope scaling)", read)


def bloom_alibi_slopes(n_heads: int) -> np.ndarray:
    """BLOOM's slopes: those of Press et al. (:func:`posgeom.encodings.alibi_slopes`)."""
    from ..encodings import alibi_slopes
    return alibi_slopes(n_heads)


def mpt_alibi_slopes(n_heads: int, alibi_bias_max: float = 8.0) -> np.ndarray:
    r"""MPT's slopes: $m_h = 2^{-h \cdot b / H'}$, $h = 1 \dots H'$, $H' = 2^{\lceil \log_2 H \rceil}$,
    $b$ = ``alibi_bias_max``; for $H' \ne H$ the odd-indexed slopes, then the even-indexed, cut to $H$."""
    pow2 = 2 ** math.ceil(math.log2(n_heads))
    slopes = 1.0 / 2.0 ** (np.arange(1, pow2 + 1, dtype=np.float64) * (float(alibi_bias_max) / pow2))
    if pow2 != n_heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes


#: ALiBi slope rules: name → function(config, n_heads) → slopes.
ALIBI_RULES: dict[str, Callable] = {
    "press": lambda config, n_heads: bloom_alibi_slopes(n_heads),
    "mpt": lambda config, n_heads: mpt_alibi_slopes(n_heads, _attn_config(config).get("alibi_bias_max", 8)),
}


def alibi(rule: str = "press") -> Family:
    """ALiBi with the slopes of ``rule`` (:data:`ALIBI_RULES`)."""

    def read(config, family):
        shape = {**_shape(config, family), "max_positions": None}
        slopes = ALIBI_RULES[rule](config, shape["n_heads"]).tolist()
        return Mechanism("alibi", **shape, params={"rule": rule, "slopes": slopes})

    return Family(f"ALiBi ({rule} slopes)", read)


def sinusoidal(base: float = 10000.0) -> Family:
    """A fixed sinusoidal table of the model's width (translation-invariant, so offsets do not matter)."""

    def read(config, family):
        return Mechanism("sinusoidal", **_shape(config, family), params={"base": float(base)})

    return Family("fixed sinusoidal table", read)


def t5_relative_buckets(relative_position, bidirectional: bool = True, num_buckets: int = 32,
                        max_distance: int = 128) -> np.ndarray:
    """T5's bucket of each relative position ``j - i`` (as ``T5Attention``): int64, the input's shape."""
    rel = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        rel = np.abs(rel)
    else:
        rel = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    # max_exact + log(r / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact), truncated
    # (float32 as T5; r >= 1 inside the log, since small offsets take the exact branch anyway)
    ratio = np.maximum(rel, 1).astype(np.float32) / np.float32(max_exact)
    large = max_exact + (
        np.log(ratio) / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    ).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(is_small, rel, large)


def relative_buckets(table: str) -> Family:
    """T5's bucketed relative bias; ``table`` the (num_buckets, n_heads) bias tensor of the first encoder layer."""

    def read(config, family):
        params = {"table": table, "num_buckets": int(config.relative_attention_num_buckets),
                  "max_distance": int(getattr(config, "relative_attention_max_distance", 128)), "bidirectional": True}
        return Mechanism("relative_bias", **{**_shape(config, family), "max_positions": None}, params=params)

    return Family("bucketed relative attention bias (relative_attention_num_buckets / max_distance)", read)


def no_positions() -> Family:
    """No positional information at all (the attention is permutation-equivariant)."""

    def read(config, family):
        return Mechanism("none", **{**_shape(config, family), "max_positions": None})

    return Family("no positional encoding", read)


def switch(choose: Callable, summary: str, **families: Family) -> Family:
    """A family whose mechanism depends on its config: ``choose(config)`` names one of ``families``."""

    def read(config, family):
        return families[choose(config)].read(config, family)

    return Family(summary, read)


def _attn_config(config) -> dict:
    ac = getattr(config, "attn_config", None) or {}
    return ac if isinstance(ac, dict) else ac.to_dict()


def _mpt_choice(config) -> str:
    ac = _attn_config(config)
    if ac.get("alibi", False):
        return "alibi"
    return "learned" if getattr(config, "learned_pos_emb", True) else "none"


_BERT_LAYOUT = QueryKeyLayout(
    query="encoder.layer.{i}.attention.self.query", key="encoder.layer.{i}.attention.self.key",
    embedding_norm="embeddings.LayerNorm", token_type="embeddings.token_type_embeddings.weight",
)
_GPT2_LAYOUT = QueryKeyLayout(fused="h.{i}.attn.c_attn", fused_kind="conv1d", norm="h.{i}.ln_1")
_OPT_LAYOUT = QueryKeyLayout(
    query="decoder.layers.{i}.self_attn.q_proj", key="decoder.layers.{i}.self_attn.k_proj",
    norm="decoder.layers.{i}.self_attn_layer_norm",
)


#: Supported architectures (``model_type`` → :class:`Family`); adding one is one entry (module docstring).
FAMILIES: dict[str, Family] = {
    **dict.fromkeys(("bert", "roberta", "xlm-roberta"), learned("embeddings.position_embeddings.weight", _BERT_LAYOUT)),
    "gpt2": learned("wpe.weight", _GPT2_LAYOUT, eps_attr="layer_norm_epsilon"),
    # OPT-350m normalises after attention (do_layer_norm_before=False): the table enters the projections raw
    "opt": switch(lambda c: "pre_ln" if getattr(c, "do_layer_norm_before", True) else "post_ln",
                  "learned absolute table (decoder.embed_positions.weight)",
                  pre_ln=learned("decoder.embed_positions.weight", _OPT_LAYOUT),
                  post_ln=learned("decoder.embed_positions.weight", replace(_OPT_LAYOUT, norm=None))),
    **{name: rotary() for name in ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi", "gpt_neox", "gptj")},
    "bloom": alibi("press"),
    "mpt": switch(_mpt_choice, "ALiBi (mpt slopes), a learned table (wpe) or none, per attn_config",
                  alibi=alibi("mpt"), learned=learned("wpe.weight"), none=no_positions()),
    "falcon": switch(lambda c: "alibi" if getattr(c, "alibi", False) else "rotary",
                     "ALiBi (press slopes) or rotary, per the alibi flag", alibi=alibi("press"), rotary=rotary()),
    **{name: relative_buckets("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
       for name in ("t5", "mt5")},
    "marian": sinusoidal(),
}


def supported_message(model_type) -> str:
    """The one-line message for an architecture :data:`FAMILIES` lacks."""
    return (
        f"unsupported architecture model_type={model_type!r}; supported: {', '.join(sorted(FAMILIES))}. "
        "To add one, put a single entry in posgeom.diagnose.families.FAMILIES, e.g. "
        "'qwen2': rotary() or 'mybert': learned('embeddings.position_embeddings.weight') with its row of position 0 "
        "in posgeom.models.pretrained.POSITION_OFFSETS"
    )


def detect_mechanism(config) -> Mechanism:
    """The positional mechanism of a model from its ``transformers`` config (a ``PretrainedConfig``)."""
    model_type = getattr(config, "model_type", None)
    if model_type not in FAMILIES:
        raise ValueError(supported_message(model_type))
    kind = getattr(config, "position_embedding_type", "absolute") or "absolute"
    if kind != "absolute":
        raise ValueError(
            f"{model_type} with position_embedding_type={kind!r} (relative keys inside attention) is not supported; "
            "only absolute tables are read for this family"
        )
    return FAMILIES[model_type].read(config, model_type)
