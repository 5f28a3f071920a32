r"""Evaluating a masked language model position by position, against the entropy references of a corpus
drawn position by position: $\frac1n \sum_i H(\mu_i)$ (knowing positions) and $H(\bar\mu)$ (not).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["masked_position_loss", "entropy_references", "mlm_loss_by_position", "row_gradient_norms"]

#: The compact vocabulary of the small MLM models: 0 is ``[PAD]``, 1 is ``[MASK]``.
PAD_ID, MASK_ID = 0, 1


@torch.no_grad()
def masked_position_loss(model, input_ids, attention_mask=None, *, mask_id: int = MASK_ID,
                         special_ids=(PAD_ID, MASK_ID), seed: int = 0) -> float:
    r"""Cross-entropy (nats) of predicting one ``[MASK]``-ed token per sequence, the position drawn uniformly.

    Every scored token is hidden (no 80/10/10), so the value compares with :func:`entropy_references`.

    Parameters
    ----------
    model : EncoderForMaskedLM
    input_ids : LongTensor of shape (N, L)
    attention_mask : LongTensor of shape (N, L), optional
    """
    x = torch.as_tensor(input_ids).clone()
    N, L = x.shape
    ok = ~torch.isin(x, torch.as_tensor(list(special_ids), dtype=x.dtype))
    if attention_mask is not None:
        ok &= torch.as_tensor(attention_mask).bool()
    g = torch.Generator().manual_seed(seed)
    # one maskable position per sequence, uniform among the maskable ones
    score = torch.rand(N, L, generator=g).masked_fill(~ok, -1.0)
    pos = score.argmax(dim=1)
    rows = torch.arange(N)[ok.any(dim=1)]
    pos = pos[rows]
    labels = torch.full_like(x, -100)
    labels[rows, pos] = x[rows, pos]
    x[rows, pos] = mask_id
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    mask = None if attention_mask is None else torch.as_tensor(attention_mask).to(dev)
    out = model(x.to(dev), mask, None, labels=labels.to(dev))
    model.train(was)
    return float(out.loss)


def entropy_references(population) -> tuple[float, float]:
    r"""Two MLM loss references (nats) for a corpus drawn independently position by position.

    ``with_position`` is $\frac1n\sum_i H(\mu_i)$, ``without_position`` $H(\bar\mu)$, $\bar\mu = \frac1n \sum_i \mu_i$.

    Returns
    -------
    with_position, without_position : float
    """
    mu = np.asarray(population, dtype=np.float64)

    def H(p):
        p = p[p > 0]
        # H(p) = -sum_w p(w) log p(w)
        return float(-(p * np.log(p)).sum())

    return float(np.mean([H(m) for m in mu])), H(mu.mean(axis=0))


def mlm_loss_by_position(model, windows: np.ndarray, *, mask_token_id: int, special_token_ids, seed: int = 0,
                         probability: float = 0.15, batch_size: int = 128) -> tuple[np.ndarray, np.ndarray]:
    r"""Cross-entropy of a masked LM at each position, with BERT's 80/10/10 masking drawn once from ``seed``.

    Parameters
    ----------
    model : EncoderForMaskedLM
    windows : ndarray of shape (N, m)
        Token ids.
    special_token_ids : sequence of int
        Ids never masked.

    Returns
    -------
    loss_sum : ndarray of shape (m,)
        $\sum$ of $-\log p(x_i \mid \tilde x)$ over the selected tokens at each position.
    count : ndarray of shape (m,)
        Number of selected tokens at each position.
    """
    import torch.nn.functional as F

    from .batches import mask_tokens
    X = torch.as_tensor(np.asarray(windows), dtype=torch.long)
    gen = torch.Generator().manual_seed(int(seed))
    inputs, labels = mask_tokens(X, vocab_size=model.config.vocab_size, mask_token_id=mask_token_id,
                                 special_token_ids=special_token_ids, probability=probability, generator=gen)
    m = X.shape[1]
    loss_sum, count = np.zeros(m), np.zeros(m)
    model.eval()
    with torch.no_grad():
        for s in range(0, X.shape[0], batch_size):
            h = model.encoder(inputs[s:s + batch_size])
            lab = labels[s:s + batch_size]
            sel = lab != -100
            if not bool(sel.any()):
                continue
            # -log p(x_i | x~) at every selected token
            ce = F.cross_entropy(model.logits(h[sel]).float(), lab[sel], reduction="none").numpy()
            pos = sel.nonzero()[:, 1].numpy()
            np.add.at(loss_sum, pos, ce)
            np.add.at(count, pos, 1)
    return loss_sum, count


def row_gradient_norms(model, data) -> np.ndarray:
    r"""$\lVert \partial\mathcal L / \partial p_i\rVert$ for each row of a learned table, over all of ``data``.

    Parameters
    ----------
    model : EncoderForSequenceClassification
        With a learned absolute table.
    data : TokenData
        ``input_ids``, ``attention_mask`` (N, L) and ``labels`` (N,).

    Returns
    -------
    ndarray of shape (N_max,)
        Zero for every row that no sequence reaches.
    """
    pos = model.positional
    if pos.kind != "absolute" or not hasattr(pos, "weight"):
        raise ValueError(f"row_gradient_norms needs a learned absolute table; the model uses {pos.name!r}")
    was = model.training
    model.eval()
    model.zero_grad(set_to_none=True)
    try:
        out = model(data.input_ids, data.attention_mask, labels=data.labels)
        out.loss.backward()
        grad = pos.weight.grad
        norms = np.zeros(pos.weight.shape[0]) if grad is None else grad.detach().norm(dim=1).cpu().double().numpy()
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was)
    return norms
