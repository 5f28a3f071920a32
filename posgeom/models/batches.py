r"""Token data and the batches of training: the rows of each step, BERT's masking, padding.

The order of epoch ``e`` is seeded with ``(seed, e)`` and the masking of step ``t`` with ``(seed, t)``, so a resumed
run sees the batches of the uninterrupted one. ``padding="full"`` trains at the data's length, ``"trim"`` cuts each
batch to its longest sequence (same losses up to rounding), ``"bucket"`` also groups rows of similar length. Under
several processes a batch is masked whole, then sharded, each shard weighted as in :mod:`posgeom.models.distributed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch

if TYPE_CHECKING:
    from .training import TrainConfig

PADDINGS = ("full", "trim", "bucket")
#: How each scale pads its training batches: ``quick`` trains at the data's full length (as the book's
#: quick numbers were made); ``paper`` groups rows of similar length so that padding is not trained on
#: (the GPU cost model, :mod:`posgeom.costmodel`, counts the bucketed tokens). Experiments pass
#: ``padding=SCALE_PADDING[settings.scale]``.
SCALE_PADDING = {"quick": "full", "paper": "bucket"}
#: ``padding="bucket"``: batches per chunk of the epoch's order that is sorted by length.
BUCKET_BATCHES = 50
#: bert-base-uncased ids: [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103.
BERT_MASK_ID = 103
BERT_SPECIAL_IDS = (0, 101, 102, 103)


@dataclass
class TokenData:
    """Token-id sequences for training: plain tensors, no tokenizer or corpus loader needed.

    Attributes
    ----------
    input_ids : LongTensor of shape (N, L)
    attention_mask : LongTensor of shape (N, L) or None
        1 = token, 0 = padding.
    labels : LongTensor of shape (N,) or None
    token_type_ids : LongTensor of shape (N, L) or None
    """

    input_ids: Any
    attention_mask: Any = None
    labels: Any = None
    token_type_ids: Any = None

    def __post_init__(self):
        self.input_ids = self._long(self.input_ids, "input_ids")
        if self.input_ids.dim() != 2 or self.input_ids.shape[0] == 0:
            raise ValueError(f"input_ids must be a non-empty (N, L) array, got shape {tuple(self.input_ids.shape)}")
        N, L = self.input_ids.shape
        for name in ("attention_mask", "token_type_ids"):
            v = getattr(self, name)
            if v is not None:
                v = self._long(v, name)
                if tuple(v.shape) != (N, L):
                    raise ValueError(f"{name} must have the shape of input_ids {(N, L)}, got {tuple(v.shape)}")
                setattr(self, name, v)
        if self.labels is not None:
            self.labels = self._long(self.labels, "labels")
            if tuple(self.labels.shape) != (N,):
                raise ValueError(f"labels must have shape (N,) = ({N},), got {tuple(self.labels.shape)}")

    @staticmethod
    def _long(x, name: str) -> torch.Tensor:
        t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            if t.dtype == torch.bool and name == "attention_mask":
                return t.long()
            raise ValueError(f"{name} must hold integers, got dtype {t.dtype}")
        return t.long()

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """Rows ``idx`` as a dict of tensors (``input_ids``, and the others that exist)."""
        out = {"input_ids": self.input_ids[idx]}
        for name in ("attention_mask", "token_type_ids", "labels"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v[idx]
        return out


_COLUMNS = {"input_ids": "input_ids", "attention_mask": "attention_mask", "token_type_ids": "token_type_ids",
            "labels": "labels", "label": "labels"}


def as_token_data(data) -> TokenData:
    """A :class:`TokenData` from itself, a dict of arrays, a ``datasets.Dataset`` or a tuple.

    A dataset's other columns are not used; a dict's unknown keys are an error.
    """
    if isinstance(data, TokenData):
        return data
    if hasattr(data, "column_names") and hasattr(data, "__getitem__"):  # a datasets.Dataset
        cols = [c for c in data.column_names if c in _COLUMNS]
        if "input_ids" not in cols:
            raise ValueError(f"the dataset has no input_ids column (columns: {data.column_names}); tokenise it first")
        if "labels" in cols and "label" in cols:
            raise ValueError("the dataset has both label and labels columns; keep one")
        return TokenData(**{_COLUMNS[c]: np.asarray(data[c]) for c in cols})
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(_COLUMNS))
        if unknown:
            raise ValueError(f"unknown data key(s) {unknown}; valid keys are {', '.join(_COLUMNS)}")
        if "labels" in data and "label" in data:
            raise ValueError("the data has both label and labels keys; keep one")
        return TokenData(**{_COLUMNS[k]: v for k, v in data.items()})
    if isinstance(data, (tuple, list)):
        return TokenData(*data)
    return TokenData(data)


def _derived_seed(seed: int, kind: int, index: int) -> int:
    """A distinct 63-bit seed for (run seed, purpose, step or epoch)."""
    return (seed * 1_000_003 + kind * 7_919 + index * 104_729 + 0x5EED) % (2**63 - 1)


def mask_tokens(input_ids: torch.Tensor, *, vocab_size: int, mask_token_id: int = BERT_MASK_ID,
                special_token_ids: Sequence[int] = BERT_SPECIAL_IDS, attention_mask: torch.Tensor | None = None,
                probability: float = 0.15, generator: torch.Generator | None = None):
    """BERT's 80/10/10 masking (Devlin et al. 2019) of a fraction ``probability`` of the non-special tokens.

    Parameters
    ----------
    input_ids : LongTensor of shape (B, L)
    attention_mask : LongTensor of shape (B, L) or None
        Padding (0) is never selected.

    Returns
    -------
    inputs : LongTensor of shape (B, L)
        The corrupted copy.
    labels : LongTensor of shape (B, L)
        The original id where selected, -100 elsewhere.
    """
    if not 0 <= mask_token_id < vocab_size:
        raise ValueError(f"mask_token_id={mask_token_id} is not a token id below vocab_size={vocab_size}")
    labels = input_ids.clone()
    prob = torch.full(input_ids.shape, float(probability))
    never = torch.isin(input_ids, torch.tensor(list(special_token_ids), dtype=input_ids.dtype))
    if attention_mask is not None:
        never |= attention_mask == 0
    prob.masked_fill_(never, 0.0)
    # selected ~ Bernoulli(p) on non-special tokens
    selected = torch.bernoulli(prob, generator=generator).bool()
    labels[~selected] = -100
    inputs = input_ids.clone()
    # 80 % of the selected → [MASK]
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & selected
    inputs[to_mask] = mask_token_id
    # half of the remaining 20 % → a uniformly random token; the other 10 % stay unchanged
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & selected & ~to_mask
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[to_random] = random_ids[to_random]
    return inputs, labels


def sequence_lengths(attention_mask: torch.Tensor) -> torch.Tensor:
    """``(N,)``: one past the last position holding a token (mask 1) in each row of ``attention_mask`` (N, L)."""
    positions = torch.arange(1, attention_mask.shape[1] + 1, device=attention_mask.device)
    # length_r = max_i { i + 1 : mask_{r,i} = 1 }
    return (attention_mask.long() * positions).amax(dim=1)


def epoch_batches(n_rows: int, batch_size: int, *, seed: int, epoch: int, padding: str = "full",
                  lengths: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The row indices of each batch of epoch ``epoch``, a function of ``(seed, epoch)`` only.

    ``padding="bucket"`` sorts each chunk of :data:`BUCKET_BATCHES` batches by length, then shuffles the batches.
    """
    gen = torch.Generator().manual_seed(_derived_seed(seed, 1, epoch))
    perm = torch.randperm(n_rows, generator=gen)
    if padding != "bucket" or lengths is None:
        return list(perm.split(batch_size))
    batches: list[torch.Tensor] = []
    for part in perm.split(BUCKET_BATCHES * batch_size):
        order = torch.argsort(lengths[part], descending=True, stable=True)
        batches.extend(part[order].split(batch_size))
    shuffle = torch.randperm(len(batches), generator=gen)
    return [batches[int(i)] for i in shuffle]


def _trim(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Cut the (B, L) tensors of ``batch`` to its longest sequence (trailing padding of every row)."""
    mask = batch.get("attention_mask")
    if mask is None:
        return batch
    Lb = max(1, int(sequence_lengths(mask).max()))
    if Lb == mask.shape[1]:
        return batch
    return {k: (v[:, :Lb] if v.dim() == 2 else v) for k, v in batch.items()}


def _drop_full_mask(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``batch`` without its attention mask when it has no padding (the fastest attention kernels)."""
    if "attention_mask" in batch and bool(batch["attention_mask"].all()):
        del batch["attention_mask"]
    return batch


@dataclass
class Batch:
    """One step's batch, as :func:`step_batch` hands it to the model."""

    tensors: dict[str, torch.Tensor]
    tokens: int  # positions computed for this step, all processes together
    weight: float  # W n_r / n: this shard's share of the batch's loss terms (1 in one process)


def _shard_weight(parts: list[dict[str, torch.Tensor]], task: str, rank: int, world: int) -> float:
    """$W n_r / n$: the loss weight of shard ``rank`` holding ``n_r`` of the batch's ``n`` loss terms."""
    if task == "mlm":
        counts = [int((p["labels"] != -100).sum()) for p in parts]
    else:
        counts = [int(p["labels"].shape[0]) for p in parts]
    total = sum(counts)
    # DDP averages the W shard gradients: W n_r / n makes that the gradient of the batch's mean loss
    return world * counts[rank] / total if total else 1.0


def step_batch(data: TokenData, config: TrainConfig, vocab_size: int, step: int, idx: torch.Tensor, device: str,
               shard: tuple[int, int] | None = None) -> Batch:
    """The batch of rows ``idx``, masked for MLM with the generator of ``step``, trimmed and sharded.

    Parameters
    ----------
    config : posgeom.models.training.TrainConfig
    idx : LongTensor of shape (B,)
    shard : (int, int), optional
        ``(rank, world)``: return this process's share.

    Returns
    -------
    Batch
        Tensors of shape (B, L') on ``device`` (``B / W`` rows with ``shard``), the positions computed by all
        processes and the shard's loss weight.
    """
    batch = data.batch(idx)
    trim = config.padding != "full"
    if not trim:
        _drop_full_mask(batch)
    if config.task == "mlm":
        # masked at the data's full length, so that every padding choice masks the same tokens
        gen = torch.Generator().manual_seed(_derived_seed(config.seed, 2, step))
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], vocab_size=vocab_size, mask_token_id=config.mask_token_id,
            special_token_ids=config.special_token_ids, attention_mask=batch.get("attention_mask"),
            probability=config.mlm_probability, generator=gen,
        )
    elif "labels" not in batch:
        raise ValueError("classification needs labels: TokenData(input_ids, attention_mask, labels)")
    weight = 1.0
    if shard is None:
        if trim:
            batch = _drop_full_mask(_trim(batch))
        parts = [batch]
    else:
        rank, world = shard
        parts = [{k: v for k, v in zip(batch, chunk)}
                 for chunk in zip(*(torch.tensor_split(v, world) for v in batch.values()))]
        weight = _shard_weight(parts, config.task, rank, world)
        if trim:
            parts = [_trim(p) for p in parts]
            batch = _drop_full_mask(parts[rank])
        else:
            batch = parts[rank]
    tokens = sum(int(p["input_ids"].numel()) for p in parts)
    nb = device.startswith("cuda")
    return Batch({k: v.to(device, non_blocking=nb) for k, v in batch.items()}, tokens, weight)


__all__ = [
    "PADDINGS", "SCALE_PADDING", "BUCKET_BATCHES", "BERT_MASK_ID", "BERT_SPECIAL_IDS", "TokenData", "as_token_data",
    "mask_tokens", "sequence_lengths", "epoch_batches", "Batch", "step_batch",
]
