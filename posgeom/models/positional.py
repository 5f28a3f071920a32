r"""Every positional encoding of the book as a PyTorch module.

Four kinds plug into the encoder at different places: ``"absolute"`` tables added to the token embeddings,
$h_i = E(x_i) + p_i$; ``"rotary"`` (RoPE) rotating queries and keys so that $\langle R_i q, R_j k\rangle$
depends on $i - j$ only; ``"bias"`` (ALiBi) adding $-m_h |i - j|$ to the logits; ``"none"`` (NoPE).

Every module's ``distance_matrix(n)`` gives an ``(n, n)`` array for the geometry core. A table of ``N_max``
rows raises :class:`PositionLimitError` past it (the N_max wall). A new encoding subclasses
:class:`PositionalEncoding`, implements the method of its ``kind`` and joins :data:`POSITIONAL`.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import torch
from torch import nn

from .. import encodings as enc
from ..encodings.identifiers import Encoding
from ..validation import check_choice, check_even, check_int, check_positive_float, check_positive_int

EXTRAPOLATION_METHODS = ("reuse_last", "interpolate", "new_rows")
ROPE_LAYOUTS = ("interleaved", "half")


class PositionLimitError(ValueError):
    """A learned/absolute table was asked for positions at or beyond its size ``N_max``."""


class PositionalEncoding(nn.Module):
    """Base class; ``max_positions`` is ``N_max`` for a table, ``None`` when any length works."""

    name: str = ""
    kind: str = ""
    max_positions: int | None = None

    def check_length(self, n: int) -> None:
        """Raise :class:`PositionLimitError` when positions ``0 … n-1`` do not all exist."""
        if self.max_positions is not None and n > self.max_positions:
            raise PositionLimitError(
                f"sequence length {n} needs positions 0..{n - 1}, but this {self.name!r} positional table has "
                f"N_max={self.max_positions} rows: no vector exists at or beyond position {self.max_positions}. "
                f"Options: truncate the inputs to at most {self.max_positions} tokens; or extend the table with "
                f"LearnedPositional.extended(n, method=...) using one of {', '.join(EXTRAPOLATION_METHODS)} "
                "(extrapolation heuristics, weaker than training at the target length); or use an encoding "
                "without a wall (sinusoidal fixed, rope, alibi, none)"
            )

    def _default_n(self, n: int | None) -> int:
        if n is None:
            if self.max_positions is None:
                raise ValueError(f"the {self.name!r} encoding works at any length: pass n to distance_matrix")
            return self.max_positions
        n = check_positive_int(n, "n")
        self.check_length(n)
        return n

    def distance_matrix(self, n: int | None = None) -> np.ndarray:  # pragma: no cover - abstract
        """Distances between positions ``0 … n-1``, shape ``(n, n)``, float64 numpy."""
        raise NotImplementedError


# Absolute tables


class AbsolutePositional(PositionalEncoding):
    """A table ``P`` (N_max, d) added to the token embeddings; subclasses define :meth:`table`."""

    kind = "absolute"

    def table(self) -> torch.Tensor:  # pragma: no cover - abstract
        """The whole table, shape ``(N_max, d)``."""
        raise NotImplementedError

    def forward(self, seq_len: int) -> torch.Tensor:
        """Position vectors ``p_0 … p_{L-1}``, shape ``(seq_len, d)``."""
        self.check_length(seq_len)
        return self.table()[:seq_len]

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        """Euclidean distances between the first ``n`` rows of the table, shape ``(n, n)``."""
        n = self._default_n(n)
        with torch.no_grad():
            P = self.forward(n).detach().to("cpu", torch.float64).numpy()
        return enc.table_distances(P)


def _lift_table(table, d: int, seed: int) -> np.ndarray:
    """A ``(n, k)`` table as ``(n, d)``: kept when ``k = d``, else lifted by orthonormal columns."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError(f"a position table must be a 2-D array (n, k), got shape {table.shape}")
    if not np.all(np.isfinite(table)):
        raise ValueError("the position table holds NaN or infinite values")
    k = table.shape[1]
    if k > d:
        raise ValueError(
            f"the table has k={k} columns, more than the model width d={d}; keep its first d MDS coordinates "
            "(a lower rank) or widen the model"
        )
    if k == d:
        return table
    from ..geometry import lift

    return np.asarray(lift(table, d, seed=seed), dtype=np.float64)


class LearnedPositional(AbsolutePositional):
    r"""A trainable table $P \in \mathbb R^{N_{max} \times d}$ (BERT's ``position_embeddings``).

    Parameters
    ----------
    n_positions : int
        ``N_max``, the number of rows.
    init : {"normal", "sinusoidal", "table"}
        $P_{ij} \sim \mathcal N(0, \sigma^2)$, the sinusoidal table, or a given ``(n_positions, k)``
        table lifted to width ``d``.
    """

    name = "learned"

    def __init__(self, n_positions: int, d: int, init: str = "normal", sigma: float = 0.02,
                 table=None, base: float = 10000.0, layout: str = "interleaved", lift_seed: int = 0):
        super().__init__()
        check_choice(init, "init for learned positions", ("normal", Encoding.SINUSOIDAL, Encoding.TABLE), plural="inits")
        self.max_positions = n = check_positive_int(n_positions, "n_positions")
        d = check_positive_int(d, "d")
        self.init_name, self.sigma = init, check_positive_float(sigma, "sigma", "0.02 as BERT/GPT-2, or 1")
        if init == "normal":
            if table is not None:
                raise ValueError("a table was given with init='normal'; use init='table' to start from it")
            weight = torch.empty(n, d).normal_(0.0, self.sigma)
        elif init == "sinusoidal":
            weight = torch.from_numpy(enc.sinusoidal_table(n, d, base=base, layout=layout)).float()
        else:
            if table is None:
                raise ValueError("init='table' needs table=, an (n_positions, k) array")
            table = np.asarray(table)
            if table.ndim != 2 or table.shape[0] != n:
                raise ValueError(f"init='table' needs an (n_positions={n}, k) array, got shape {table.shape}")
            weight = torch.from_numpy(_lift_table(table, d, lift_seed)).float()
        self.weight = nn.Parameter(weight)

    def table(self) -> torch.Tensor:
        return self.weight

    def extended(self, n: int, method: str = "reuse_last", seed: int | None = None) -> "LearnedPositional":
        r"""A copy with ``n > N_max`` rows, past the wall by a heuristic.

        ``"reuse_last"`` repeats the last row, ``"interpolate"`` resamples the table linearly onto ``n``
        points, ``"new_rows"`` draws new rows from $\mathcal N(0, \sigma^2)$ to be fine-tuned.
        """
        check_choice(method, "extrapolation method", EXTRAPOLATION_METHODS, plural="methods")
        N, d = self.weight.shape
        n = check_int(n, f"n (to extend a table of N_max={N} rows)", N + 1)
        W = self.weight.detach()
        if method == "reuse_last":
            # p_i = p_{N-1} for i >= N
            new = torch.cat([W, W[-1:].expand(n - N, d)], dim=0)
        elif method == "interpolate":
            # p'_i = (1 - t) p_floor(s) + t p_ceil(s), s = i (N - 1) / (n - 1), t = s - floor(s)
            s = torch.arange(n, dtype=torch.float64) * (N - 1) / (n - 1)
            lo = s.floor().long().clamp(max=N - 1)
            hi = (lo + 1).clamp(max=N - 1)
            t = (s - lo).to(W.dtype)[:, None]
            new = (1 - t) * W[lo] + t * W[hi]
        else:
            gen = torch.Generator().manual_seed(seed if seed is not None else 0)
            extra = torch.randn(n - N, d, generator=gen, dtype=torch.float32).to(W) * self.sigma
            new = torch.cat([W, extra], dim=0)
        with torch.random.fork_rng(devices=[]):  # the throwaway initial draw must not move the caller's stream
            out = LearnedPositional(n, d, sigma=self.sigma)
        out.weight = nn.Parameter(new.clone())  # the table's own dtype and device
        return out


class SinusoidalPositional(AbsolutePositional):
    r"""The sinusoidal table of Vaswani et al., fixed (grown on demand, no wall) or trainable (with a wall)."""

    name = "sinusoidal"

    def __init__(self, n_positions: int, d: int, base: float = 10000.0, layout: str = "interleaved",
                 trainable: bool = False, scale: float = 1.0):
        super().__init__()
        self.d, self.base, self.layout, self.trainable = check_even(d, "d"), float(base), layout, bool(trainable)
        self.scale = float(scale)
        if not math.isfinite(self.scale) or self.scale <= 0:
            raise ValueError(f"scale must be a positive number, got {scale!r}")
        n = check_positive_int(n_positions, "n_positions")
        # P = scale * sinusoids (scale 1: entries in [-1, 1], the original; BERT's token vectors are ~0.02)
        weight = torch.from_numpy(self.scale * enc.sinusoidal_table(n, d, base=base, layout=layout)).float()
        if self.trainable:
            self.max_positions = n
            self.weight = nn.Parameter(weight)
        else:
            self.register_buffer("weight", weight, persistent=False)

    def table(self) -> torch.Tensor:
        return self.weight

    def forward(self, seq_len: int) -> torch.Tensor:
        """Position vectors, shape ``(seq_len, d)``; a fixed table grows to any ``seq_len``."""
        if not self.trainable and seq_len > self.weight.shape[0]:
            grown = self.scale * enc.sinusoidal_table(seq_len, self.d, base=self.base, layout=self.layout)
            self.weight = torch.from_numpy(grown).to(self.weight)
        return super().forward(seq_len)


class MDSPositional(AbsolutePositional):
    r"""Algorithm 1's table $P_{MDS} = U_k \Lambda_k^{1/2}$, lifted to width ``d`` isometrically; fixed or trainable."""

    name = "mds"

    def __init__(self, d: int, table=None, trainable: bool = False, lift_seed: int = 0, scale: float = 1.0):
        super().__init__()
        if table is None:
            raise ValueError("the mds encoding needs table=, an (n, k) MDS embedding from posgeom.geometry.classical_mds")
        table = np.asarray(table)
        d = check_positive_int(d, "d")
        lifted = _lift_table(table, d, lift_seed) * float(scale)
        self.max_positions = lifted.shape[0]
        self.trainable = bool(trainable)
        weight = torch.from_numpy(lifted).float()
        if self.trainable:
            self.weight = nn.Parameter(weight)
        else:
            self.register_buffer("weight", weight)

    def table(self) -> torch.Tensor:
        return self.weight


class LowRankPositional(AbsolutePositional):
    r"""The minimal parametrisation of Remark 8: $P = A C^\top$, $A \in \mathbb R^{n\times r}$,
    $C \in \mathbb R^{d \times r}$ — $r (n + d)$ parameters instead of $n d$.

    ``init="table"`` starts from the rank-``r`` MDS factors of a given ``(n, k)`` embedding or ``(n, n)``
    distance matrix (:func:`posgeom.geometry.low_rank_factors`).
    """

    name = "lowrank"

    def __init__(self, n_positions: int, d: int, rank: int = 3, init: str = "normal", sigma: float = 0.02,
                 table=None, lift_seed: int = 0):
        super().__init__()
        n = self.max_positions = check_positive_int(n_positions, "n_positions")
        d = check_positive_int(d, "d")
        r = check_positive_int(rank, "rank")
        if r > min(n, d):
            raise ValueError(f"rank={r} exceeds min(n_positions, d)={min(n, d)}; a rank above that saves nothing")
        if init == "normal":
            # s = (sigma^2 / r)^(1/4) so that Var(P_ij) = r s^4 = sigma^2
            s = (check_positive_float(sigma, "sigma", "0.02 as BERT/GPT-2, or 1") ** 2 / r) ** 0.25
            A, C = torch.randn(n, r) * s, torch.randn(d, r) * s
        elif init == "table":
            if table is None:
                raise ValueError("init='table' needs table=, an (n_positions, k) embedding or (n, n) distance matrix")
            table = np.asarray(table)
            if table.ndim != 2 or table.shape[0] != n:
                raise ValueError(f"init='table' needs an (n_positions={n}, k) array, got shape {table.shape}")
            from ..geometry import low_rank_factors

            # A = U_r Lambda_r^(1/2) (rank-r classical MDS), C (d, r) with orthonormal columns
            f = low_rank_factors(table, r, d, seed=lift_seed)
            A, C = torch.from_numpy(f.A).float(), torch.from_numpy(f.C).float()
        else:
            raise ValueError(f"unknown init {init!r} for low-rank positions; valid inits are normal, table")
        self.rank = r
        self.A, self.C = nn.Parameter(A.contiguous()), nn.Parameter(C.contiguous())

    def table(self) -> torch.Tensor:
        # P = A C^T                                                              (n, d)
        return self.A @ self.C.T


# Relative: RoPE, ALiBi, none


class RotaryPositional(PositionalEncoding):
    r"""RoPE (Su et al. 2021). Pair ``k`` of a head's coordinates is rotated by $i\theta_k$,
    $\theta_k = b^{-2k/d_{head}}$:

    .. math:: (x_a, x_b) \mapsto (x_a \cos i\theta_k - x_b \sin i\theta_k,\; x_a \sin i\theta_k + x_b \cos i\theta_k)

    ``layout="interleaved"`` pairs coordinates ``(2k, 2k+1)``; ``"half"`` pairs ``(k, k + d_head/2)`` (LLaMA).
    """

    name = "rope"
    kind = "rotary"

    def __init__(self, d_head: int, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        check_choice(layout, "RoPE layout", ROPE_LAYOUTS, plural="layouts")
        self.d_head, self.base, self.layout = check_even(d_head, "d_head"), float(base), layout
        self._cache: tuple[int, torch.device, torch.dtype, torch.Tensor, torch.Tensor] | None = None

    def _cos_sin(self, L: int, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        r"""cos and sin of $i\theta_k$, laid out like the coordinates, each ``(L, d_head)``."""
        c = self._cache
        if c is not None and c[0] >= L and c[1] == device and c[2] == dtype:
            return c[3][:L], c[4][:L]
        # angle_{i,k} = i theta_k, computed in float64 on the CPU whatever the compute dtype
        theta = torch.from_numpy(enc.rope_frequencies(self.d_head, self.base))
        angle = torch.arange(L, dtype=torch.float64)[:, None] * theta[None, :]
        if self.layout == "interleaved":
            angle = angle.repeat_interleave(2, dim=-1)
        else:
            angle = torch.cat([angle, angle], dim=-1)
        cos, sin = angle.cos().to(device, dtype), angle.sin().to(device, dtype)
        self._cache = (L, device, dtype, cos, sin)
        return cos, sin

    def _turn(self, x: torch.Tensor) -> torch.Tensor:
        """The quarter turn of each pair: ``(x_a, x_b) -> (-x_b, x_a)``."""
        if self.layout == "interleaved":
            x2 = x.unflatten(-1, (-1, 2))
            return torch.stack([-x2[..., 1], x2[..., 0]], dim=-1).flatten(-2)
        a, b = x.chunk(2, dim=-1)
        return torch.cat([-b, a], dim=-1)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate queries or keys, shape ``(..., L, d_head)`` → same shape."""
        if x.shape[-1] != self.d_head:
            raise ValueError(f"RoPE was built for d_head={self.d_head}, got vectors of size {x.shape[-1]}")
        cos, sin = self._cos_sin(x.shape[-2], x.device, x.dtype)
        # R_i x = x cos(i theta) + turn(x) sin(i theta)
        return x * cos + self._turn(x) * sin

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotated ``(q, k)``, each ``(B, H, L, d_head)``."""
        return self.rotate(q), self.rotate(k)

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        r"""RoPE's induced distance $\sqrt{2 (K(0) - K(i-j))}$, shape ``(n, n)``."""
        return enc.rope_distances(self._default_n(n), self.d_head, self.base)


class ALiBiPositional(PositionalEncoding):
    r"""ALiBi (Press et al. 2022): the logits of head ``h`` get the symmetric bias $-m_h |i - j|$."""

    name = "alibi"
    kind = "bias"

    def __init__(self, n_heads: int, head: int | None = None):
        super().__init__()
        self.n_heads = check_positive_int(n_heads, "n_heads")
        self.head = head
        self.register_buffer("slopes", torch.from_numpy(enc.alibi_slopes(n_heads)).float(), persistent=False)

    def forward(self, seq_len: int, device=None, dtype=torch.float32) -> torch.Tensor:
        """The additive bias, shape ``(n_heads, seq_len, seq_len)``."""
        idx = torch.arange(seq_len, device=device or self.slopes.device, dtype=torch.float32)
        # bias_{h,i,j} = -m_h |i - j|
        bias = -self.slopes.to(idx.device)[:, None, None] * (idx[:, None] - idx[None, :]).abs()[None]
        return bias.to(dtype)

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        r"""ALiBi's induced distance $\bar m |i - j|$ (mean slope, or head ``self.head``)."""
        return enc.alibi_distances(self._default_n(n), self.n_heads, head=self.head)


class NoPositional(PositionalEncoding):
    """NoPE: no positional signal (a zero distance matrix)."""

    name = "none"
    kind = "none"

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        return enc.none_distances(self._default_n(n))


NoPE = NoPositional

# Registry and factory

#: name → module class. The names match :data:`posgeom.encodings.ENCODINGS` where both exist.
POSITIONAL: dict[str, type[PositionalEncoding]] = {
    Encoding.NONE: NoPositional,
    Encoding.LEARNED: LearnedPositional,
    Encoding.SINUSOIDAL: SinusoidalPositional,
    Encoding.MDS: MDSPositional,
    Encoding.LOWRANK: LowRankPositional,
    Encoding.ROPE: RotaryPositional,
    Encoding.ALIBI: ALiBiPositional,
}

#: The arguments the factory fills in from the model's shape, per encoding.
_SHAPE_ARGS = {"n_positions", "d", "d_head", "n_heads"}


def build_positional(name: str, *, n_positions: int, d_model: int, n_heads: int, **options) -> PositionalEncoding:
    """Build the positional module ``name`` for a model of this shape.

    Parameters
    ----------
    name : str
        One of :data:`POSITIONAL`.
    n_positions : int
        ``N_max`` for tables.
    **options
        The encoding's own options (see its class).
    """
    cls = POSITIONAL[check_choice(name, "positional encoding", POSITIONAL, plural="encodings")]
    params = inspect.signature(cls.__init__).parameters
    valid = [p for p in params if p != "self" and p not in _SHAPE_ARGS]
    bad = sorted(set(options) - set(valid))
    if bad:
        raise ValueError(
            f"unknown option(s) {', '.join(bad)} for the {name!r} encoding; valid options are {', '.join(valid) or 'none'}"
        )
    shape = {"n_positions": n_positions, "d": d_model, "d_head": d_model // n_heads, "n_heads": n_heads}
    kwargs = {k: v for k, v in shape.items() if k in params}
    return cls(**kwargs, **options)


__all__ = [
    "PositionalEncoding", "AbsolutePositional", "LearnedPositional", "SinusoidalPositional", "MDSPositional",
    "LowRankPositional", "RotaryPositional", "ALiBiPositional", "NoPositional", "NoPE", "PositionLimitError",
    "POSITIONAL", "EXTRAPOLATION_METHODS", "ROPE_LAYOUTS", "build_positional",
]
