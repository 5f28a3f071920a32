r"""How far a model is from permutation equivariance (the paper's *Theorem 1*).

Without positional information an encoder is equivariant, $f(\Pi X) = \Pi f(X)$, and a pooled readout
invariant, $g(\Pi X) = g(X)$; the functions here measure the largest departure from both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..progress import tqdm
from ..validation import check_positive_int

__all__ = ["reversal", "equivariance_gap", "readout_gap", "reversal_gap", "EquivarianceRow", "equivariance_gaps"]


def reversal(L: int) -> np.ndarray:
    """The reversal permutation ``(L-1, ..., 1, 0)``, int64 of shape (L,)."""
    L = check_positive_int(L, "L")
    return np.arange(L - 1, -1, -1, dtype=np.int64)


def _inputs_and_perm(input_ids, perm) -> tuple[torch.Tensor, torch.Tensor]:
    """``input_ids`` as a (batch, length) tensor, and ``perm`` checked as a permutation of its positions."""
    x = torch.as_tensor(input_ids)
    if x.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch, length), got {tuple(x.shape)}")
    p, L = np.asarray(perm), x.shape[1]
    valid = p.ndim == 1 and p.size == L and np.issubdtype(p.dtype, np.integer)
    if not valid or not np.array_equal(np.sort(p), np.arange(L)):
        raise ValueError(
            f"perm must be a permutation of 0..{L - 1} (a 1-D integer array holding each index once), got {p!r}"
        )
    return x, torch.as_tensor(p, dtype=torch.long).to(x.device)


def _encoder(model):
    """The encoder body of a posgeom model (the model itself when it is an encoder)."""
    enc = getattr(model, "encoder", model)
    if not hasattr(enc, "embeddings") or not hasattr(enc, "layers"):
        raise TypeError(
            f"expected a posgeom Encoder or a model with an .encoder (build_model(...)), got {type(model).__name__}"
        )
    return enc


@torch.no_grad()
def equivariance_gap(model, input_ids, perm) -> float:
    r"""$\max |f(\Pi X) - \Pi f(X)|$: how far a model's hidden states are from permutation-equivariant.

    ``f`` is the last layer's hidden states in the model's current mode (use ``eval()`` to silence dropout).

    Parameters
    ----------
    model : posgeom Encoder, or a model built by :func:`posgeom.models.encoder.build_model`
    input_ids : LongTensor of shape (B, L)
    perm : array of shape (L,)
        Position ``i`` of the permuted input holds token ``perm[i]``.
    """
    enc = _encoder(model)
    x, p = _inputs_and_perm(input_ids, perm)
    # f(Pi X) and Pi f(X)
    h_of_permuted = enc(x[:, p])
    permuted_h = enc(x)[:, p]
    return float((h_of_permuted - permuted_h).abs().max())


@torch.no_grad()
def readout_gap(model, input_ids, perm) -> float:
    r"""$\max |g(\Pi X) - g(X)|$ for a classification model's logits ``g`` (an invariant readout gives 0).

    ``model`` is an ``EncoderForSequenceClassification``; ``input_ids`` and ``perm`` as :func:`equivariance_gap`.
    """
    x, p = _inputs_and_perm(input_ids, perm)
    if not hasattr(model, "pool"):
        raise TypeError("readout_gap needs a classification model (build_model(config, 'classification'))")
    return float((model(x[:, p]).logits - model(x).logits).abs().max())


def reversal_gap(model, data, batch_size: int = 256) -> float:
    r"""$\max |f(x) - f(\mathrm{rev}(x))|$ of a classifier's logits, each sequence reversed before its padding.

    Parameters
    ----------
    data : TokenData
        ``input_ids`` and ``attention_mask`` of shape (N, L).
    """
    import torch
    ids, mask = data.input_ids, data.attention_mask
    lengths = mask.sum(dim=1)
    # rev(x)_i = x_{len - 1 - i} for i < len
    idx = (lengths[:, None] - 1 - torch.arange(ids.shape[1])[None, :]).clamp(min=0)
    rev = torch.where(mask.bool(), torch.gather(ids, 1, idx), ids)
    gap = 0.0
    model.eval()
    with torch.no_grad():
        for s in range(0, ids.shape[0], batch_size):
            a = model(ids[s:s + batch_size], mask[s:s + batch_size]).logits
            b = model(rev[s:s + batch_size], mask[s:s + batch_size]).logits
            gap = max(gap, float((a - b).abs().max()))
    return gap


@dataclass(frozen=True)
class EquivarianceRow:
    """The equivariance gaps of one model (:func:`equivariance_gaps`)."""

    position: str
    causal: bool
    perm_gap: float
    reversal_gap: float
    perm_readout_gap: float
    reversal_readout_gap: float
    hidden_scale: float


def equivariance_gaps(models, *, length: int, vocab_size: int, n_inputs: int, n_perms: int, init_std: float,
                      shape: dict, seed: int, dtype: str = "float64",
                      threads: int | None = 1) -> tuple[list[EquivarianceRow], float]:
    r"""Equivariance gaps of randomly initialised encoders, one :class:`EquivarianceRow` per model.

    Parameters
    ----------
    models : sequence of (str, bool)
        ``(encoding, causal)`` pairs.
    length, vocab_size, n_inputs, n_perms : int
        ``n_inputs`` random sequences and ``n_perms`` random permutations (and the reversal), from ``seed``.
    shape : dict
        Keywords of :func:`~posgeom.models.tasks.tiny_encoder_config`.

    Returns
    -------
    rows : list of EquivarianceRow
    machine_epsilon : float
        Of ``dtype``.
    """
    from .encoder import build_model
    from .tasks import tiny_encoder_config
    from .threads import torch_threads
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(rng.integers(1, vocab_size, size=(n_inputs, length)))
    perms = [rng.permutation(length) for _ in range(n_perms)]
    rev = reversal(length)
    rows = []
    for position, causal in tqdm(models, desc="equivariance", leave=False):
        config = tiny_encoder_config(vocab_size=vocab_size, max_len=length, position=position, causal=causal,
                                     init_std=init_std, **shape)
        model = build_model(config, "classification", seed=seed).to(torch_dtype).eval()
        with torch.no_grad(), torch_threads(threads):
            h = model.encoder(x)
        with torch_threads(threads):
            rows.append(EquivarianceRow(
                position=position, causal=causal,
                perm_gap=max(equivariance_gap(model, x, p) for p in perms),
                reversal_gap=equivariance_gap(model, x, rev),
                perm_readout_gap=max(readout_gap(model, x, p) for p in perms),
                reversal_readout_gap=readout_gap(model, x, rev),
                hidden_scale=float(h.pow(2).mean().sqrt()),
            ))
    return rows, float(torch.finfo(torch_dtype).eps)
