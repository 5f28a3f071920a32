r"""A compact BERT-style encoder that takes any positional encoding of :mod:`posgeom.models.positional`.

The architecture is BERT's (Devlin et al. 2019), so that with learned positions and copied weights it
reproduces ``transformers.BertModel`` to float32 rounding (:mod:`posgeom.models.hf`). Post-LN blocks,

.. math::

    A = \mathrm{softmax}\Big(\frac{\tilde Q \tilde K^\top}{\sqrt{d_h}} + M\Big) V,\qquad
    h' = \mathrm{LN}(h + \mathrm{Dropout}(A W_O)),\qquad
    h'' = \mathrm{LN}(h' + \mathrm{Dropout}(\mathrm{GELU}(h' W_1) W_2)),

where $\tilde Q, \tilde K$ are RoPE-rotated for ``rope`` and the additive mask $M$ holds ALiBi's bias,
padding and the causal mask. The MLM head computes logits only where a label exists. Without positions
and without a causal mask the encoder is permutation-equivariant, $f(\pi X) = \pi f(X)$ (Theorem 1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .positional import POSITIONAL, PositionalEncoding, build_positional
from ..corpora.identifiers import Corpus
from ..validation import check_choice, check_int, check_positive_int

ACTIVATIONS = ("gelu", "gelu_tanh")
POOLINGS = ("cls", "mean")


@dataclass
class EncoderConfig:
    """Shape and options of an encoder. Invalid combinations raise :class:`ValueError` at creation.

    Attributes
    ----------
    vocab_size, d_model, n_layers, n_heads, d_ff : int
        ``n_heads`` must divide ``d_model``.
    max_len : int
        Longest sequence; ``N_max`` of a learned/trainable table.
    position : str
        A name of :data:`posgeom.models.positional.POSITIONAL`.
    position_options : dict
        Options of that encoding (e.g. ``{"table": P_mds}``).
    causal : bool
        Mask attention to earlier positions; breaks Theorem 1's equivariance.
    """

    vocab_size: int = 30522
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    max_len: int = 128
    position: str = "learned"
    position_options: dict = field(default_factory=dict)
    causal: bool = False
    dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    type_vocab_size: int = 2
    pad_token_id: int = 0
    activation: str = "gelu"
    init_std: float = 0.02
    n_labels: int = 2
    pooling: str = "cls"

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_len", "n_labels"):
            check_positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads:
            divisors = [h for h in range(1, min(self.d_model, 64) + 1) if self.d_model % h == 0]
            raise ValueError(
                f"n_heads={self.n_heads} does not divide d_model={self.d_model}: every head needs "
                f"d_model / n_heads dimensions; choose n_heads in {divisors} or change d_model"
            )
        check_choice(self.position, "positional encoding", POSITIONAL, plural="encodings")
        if self.position == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(f"rope needs an even head width, got d_model / n_heads = {self.d_model // self.n_heads}")
        check_choice(self.activation, "activation", ACTIVATIONS)
        check_choice(self.pooling, "pooling", POOLINGS)
        for name in ("dropout", "attention_dropout"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {p!r}")
        check_int(self.type_vocab_size, "type_vocab_size (0: no token types)", 0)
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id={self.pad_token_id} must be a token id below vocab_size={self.vocab_size}")
        if not isinstance(self.position_options, dict):
            raise ValueError(f"position_options must be a dict, got {type(self.position_options).__name__}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def replace(self, **changes) -> "EncoderConfig":
        """A validated copy with some fields changed."""
        return replace(self, **changes)

    def to_params(self) -> dict[str, Any]:
        """The config as JSON-friendly parameters (arrays in ``position_options`` become their shape)."""
        out = asdict(self)
        out["position_options"] = {
            k: (f"array{tuple(np.shape(v))}" if isinstance(v, (np.ndarray, torch.Tensor)) else v)
            for k, v in self.position_options.items()
        }
        return out


#: Named configs. ``quick`` runs on a laptop CPU; ``paper`` is BERT-base (Devlin et al. 2019).
CONFIGS: dict[str, dict[str, Any]] = {
    "quick": dict(vocab_size=30522, d_model=128, n_layers=2, n_heads=4, d_ff=512, max_len=128),
    "paper": dict(vocab_size=30522, d_model=768, n_layers=12, n_heads=12, d_ff=3072, max_len=512),
}
#: Sequence length of the paper scale per corpus.
PAPER_MAX_LEN = {Corpus.SST2: 128, Corpus.IMDB: 512}


def get_config(scale: str = "quick", dataset: str | None = None, **overrides) -> EncoderConfig:
    """The ``quick`` or ``paper`` config, with ``max_len`` set by ``dataset`` at paper scale and any overrides."""
    base = dict(CONFIGS[check_choice(scale, "scale", CONFIGS)])
    if dataset is not None:
        check_choice(dataset, "dataset", PAPER_MAX_LEN)
        if scale == "paper":
            base["max_len"] = PAPER_MAX_LEN[dataset]
    unknown = set(overrides) - {f.name for f in fields(EncoderConfig)}
    if unknown:
        raise ValueError(f"unknown config field(s) {', '.join(sorted(unknown))}")
    return EncoderConfig(**{**base, **overrides})


@dataclass
class ModelOutput:
    """What the models return. ``logits``: (B, L, V) / (M, V) for MLM (M labelled tokens), (B, C) for classification."""

    logits: torch.Tensor
    loss: torch.Tensor | None = None
    hidden_states: torch.Tensor | None = None


def _activation(name: str):
    return (lambda x: F.gelu(x)) if name == "gelu" else (lambda x: F.gelu(x, approximate="tanh"))


class Embeddings(nn.Module):
    """Word + token-type + absolute position vectors, LayerNorm, dropout. Output ``(B, L, d)``."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        d = config.d_model
        self.word = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.token_type = nn.Embedding(config.type_vocab_size, d) if config.type_vocab_size else None
        self.position: PositionalEncoding = build_positional(
            config.position, n_positions=config.max_len, d_model=d, n_heads=config.n_heads, **config.position_options
        )
        self.norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        L = input_ids.shape[1]
        self.position.check_length(L)
        # h_i = E[x_i] + T[t_i] + p_i
        h = self.word(input_ids)
        if self.token_type is not None:
            if token_type_ids is None:
                h = h + self.token_type.weight[0]
            else:
                h = h + self.token_type(token_type_ids)
        if self.position.kind == "absolute":
            h = h + self.position(L)
        return self.dropout(self.norm(h))


class SelfAttention(nn.Module):
    """Multi-head self-attention with fused Q/K/V projection. ``(B, L, d)`` → ``(B, L, d)``."""

    def __init__(self, config: EncoderConfig, rotary: PositionalEncoding | None):
        super().__init__()
        self.n_heads, self.d_head = config.n_heads, config.d_head
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        self.p = config.attention_dropout
        # A reference (not a submodule) to the model's one RoPE module, if any.
        self._rotary = [rotary] if rotary is not None else []

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, is_causal: bool) -> torch.Tensor:
        B, L, d = x.shape
        # [Q K V] = h [W_Q W_K W_V]                             (3, B, H, L, d_h)
        q, k, v = self.qkv(x).view(B, L, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4).unbind(0)
        if self._rotary:
            q, k = self._rotary[0](q, k)
        # A = softmax(Q K^T / sqrt(d_h) + M) V
        a = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0, is_causal=is_causal
        )
        return self.out(a.transpose(1, 2).reshape(B, L, d))

    def query_key_weights(self) -> tuple:
        """``(W_Q, b_Q, W_K, b_K)`` as float64 arrays, ``W`` (d, d) in (out, in) layout and ``b`` (d,)."""
        d = self.qkv.out_features // 3
        W = self.qkv.weight.detach().double().cpu().numpy()
        b = self.qkv.bias.detach().double().cpu().numpy()
        # the rows of the fused projection are stacked [W_Q; W_K; W_V]
        return W[:d], b[:d], W[d:2 * d], b[d:2 * d]


class Block(nn.Module):
    """A post-LN Transformer block as BERT's ``BertLayer``. ``(B, L, d)`` → ``(B, L, d)``."""

    def __init__(self, config: EncoderConfig, rotary: PositionalEncoding | None):
        super().__init__()
        self.attn = SelfAttention(config, rotary)
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ff1 = nn.Linear(config.d_model, config.d_ff)
        self.ff2 = nn.Linear(config.d_ff, config.d_model)
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)
        self.act = _activation(config.activation)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, is_causal: bool = False) -> torch.Tensor:
        # h' = LN(h + Dropout(Attn(h)))
        x = self.norm1(x + self.dropout(self.attn(x, mask, is_causal)))
        # h'' = LN(h' + Dropout(W_2 GELU(W_1 h')))
        return self.norm2(x + self.dropout(self.ff2(self.act(self.ff1(x)))))


def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation: Linear/Embedding ``N(0, std^2)``, zero biases and padding row, LayerNorm (1, 0)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, std)
            if m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


class Encoder(nn.Module):
    """The BERT-style encoder body: ``(input_ids (B, L), attention_mask (B, L))`` → hidden states ``(B, L, d)``."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        pos = self.embeddings.position
        rotary = pos if pos.kind == "rotary" else None
        self.layers = nn.ModuleList([Block(config, rotary) for _ in range(config.n_layers)])
        init_bert_weights(self, config.init_std)

    @property
    def positional(self) -> PositionalEncoding:
        """The positional-encoding module."""
        return self.embeddings.position

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        """The positional encoding's ``(n, n)`` distances."""
        return self.positional.distance_matrix(n)

    def attention_mask(self, attention_mask: torch.Tensor | None, L: int, device, dtype) -> tuple[torch.Tensor | None, bool]:
        """``(mask, is_causal)`` for SDPA: None, boolean ``(B|1, 1, L|1, L)`` or float ``(B|1, H, L, L)``."""
        keep = None
        if attention_mask is not None:
            if attention_mask.shape[-1] != L or attention_mask.dim() != 2:
                raise ValueError(f"attention_mask must have shape (batch, {L}), got {tuple(attention_mask.shape)}")
            if not bool(attention_mask.bool().all()):
                keep = attention_mask.bool()[:, None, None, :]
        if self.config.causal:
            causal = torch.ones(L, L, dtype=torch.bool, device=device).tril()
            if keep is None and self.positional.kind != "bias":
                return None, True
            keep = causal if keep is None else keep & causal
        if self.positional.kind != "bias":
            return keep, False
        # M_{h,i,j} = -m_h |i - j|, and finfo.min where attention is not allowed
        bias = self.positional(L, device=device, dtype=torch.float32)[None]
        if keep is not None:
            bias = bias.masked_fill(~keep, torch.finfo(dtype).min)
        return bias.to(dtype), False

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states ``(B, L, d)`` for token ids ``(B, L)``; ``attention_mask`` 1 = token, 0 = padding."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, length), got {tuple(input_ids.shape)}")
        h = self.embeddings(input_ids, token_type_ids)
        dev = h.device
        dtype = torch.get_autocast_dtype(dev.type) if torch.is_autocast_enabled(dev.type) else h.dtype
        mask, is_causal = self.attention_mask(attention_mask, input_ids.shape[1], dev, dtype)
        for layer in self.layers:
            h = layer(h, mask, is_causal)
        return h


class _WithEncoder(nn.Module):
    config: EncoderConfig
    encoder: Encoder

    @property
    def positional(self) -> PositionalEncoding:
        return self.encoder.positional

    def distance_matrix(self, n: int | None = None) -> np.ndarray:
        """The positional encoding's ``(n, n)`` distances."""
        return self.encoder.distance_matrix(n)

    def num_parameters(self) -> int:
        """Distinct trainable parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


class EncoderForMaskedLM(_WithEncoder):
    """Encoder + BERT's MLM head, decoder tied to the word embeddings; ``labels`` (B, L), -100 = ignore."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        d = config.d_model
        self.transform = nn.Linear(d, d)
        self.transform_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.decoder_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.act = _activation(config.activation)
        init_bert_weights(self.transform, config.init_std)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits ``(..., V)`` of hidden states ``(..., d)``."""
        # z = LN(GELU(h W_t)) E^T + b
        z = self.transform_norm(self.act(self.transform(h)))
        return F.linear(z, self.encoder.embeddings.word.weight, self.decoder_bias)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None) -> ModelOutput:
        h = self.encoder(input_ids, attention_mask, token_type_ids)
        if labels is None:
            return ModelOutput(self.logits(h), None, h)
        selected = labels != -100
        logits = self.logits(h[selected])  # (M, V): only where a label exists
        target = labels[selected]
        if target.numel() == 0:
            loss = logits.sum() * 0.0  # no masked token in this batch: zero loss, gradient graph kept
        else:
            loss = F.cross_entropy(logits.float(), target)
        return ModelOutput(logits, loss, h)


class EncoderForSequenceClassification(_WithEncoder):
    """Encoder + [CLS] pooler (BERT) or mean pooling, dropout, linear classifier → ``(B, n_labels)``."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.encoder = Encoder(config)
        d = config.d_model
        self.pooler = nn.Linear(d, d) if config.pooling == "cls" else None
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(d, config.n_labels)
        init_bert_weights(self.classifier, config.init_std)
        if self.pooler is not None:
            init_bert_weights(self.pooler, config.init_std)

    def pool(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """``(B, L, d)`` → ``(B, d)``: ``tanh(h_0 W_p)`` or the mean over non-padding tokens."""
        if self.pooler is not None:
            return torch.tanh(self.pooler(h[:, 0]))
        if attention_mask is None:
            return h.mean(dim=1)
        w = attention_mask.to(h.dtype)[..., None]
        # mean_i h_i over tokens with mask 1
        return (h * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None) -> ModelOutput:
        h = self.encoder(input_ids, attention_mask, token_type_ids)
        logits = self.classifier(self.dropout(self.pool(h, attention_mask)))
        loss = None if labels is None else F.cross_entropy(logits.float(), labels)
        return ModelOutput(logits, loss, h)


TASKS = {"mlm": EncoderForMaskedLM, "classification": EncoderForSequenceClassification}


def build_model(
    config: EncoderConfig, task: str = "mlm", seed: int | None = None
) -> "EncoderForMaskedLM | EncoderForSequenceClassification":
    """An MLM (``task="mlm"``) or classification model; ``seed`` makes the initialisation reproducible."""
    check_choice(task, "task", TASKS)
    if seed is not None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return TASKS[task](config)
    return TASKS[task](config)


def model_flops_per_token(config: EncoderConfig, seq_len: int, mlm_fraction: float | None = 0.15) -> float:
    r"""Training FLOPs per token (3 × forward, matmuls only, as in PaLM's MFU).

    Per layer $2 (4 d^2 + 2 d d_{ff}) + 4 L d$; the MLM head adds $2 (d^2 + d V)$ per predicted token.
    """
    d, L = config.d_model, seq_len
    per_layer = 2 * (4 * d * d + 2 * d * config.d_ff) + 2 * 2 * L * d
    head = 2 * (d * d + d * config.vocab_size) * (1.0 if mlm_fraction is None else mlm_fraction)
    return 3.0 * (config.n_layers * per_layer + head)


__all__ = [
    "EncoderConfig", "CONFIGS", "PAPER_MAX_LEN", "get_config", "ModelOutput", "Embeddings", "SelfAttention",
    "Block", "Encoder", "EncoderForMaskedLM", "EncoderForSequenceClassification", "TASKS", "build_model",
    "init_bert_weights", "model_flops_per_token", "ACTIVATIONS", "POOLINGS",
]
