"""The experiments that run a model at paper scale and the work each does, read from its paper settings."""

from __future__ import annotations

from typing import Any, Callable

from ..corpora.identifiers import Corpus
from .access import setting
from .measured import mean_tokens
from .work import BERT_BASE, Shape, Work

__all__ = ["EXPERIMENTS", "RESULT_NAMES"]


def _train(what, shape, n, real, steps, batch, runs, *, mlm=0.0, share=""):
    return Work(what, shape, "train", int(n), float(real), int(steps) * int(batch), int(runs), int(batch),
                float(mlm), share)


def _forward(what, shape, n, real, sequences, runs=1, batch=128):
    return Work(what, shape, "forward", int(n), float(real), int(sequences), int(runs), int(batch))


def _order_task(c, block: str, what: str, runs: int, train=None) -> Work:
    """Training on an order task: ``block``'s positions and [CLS], its vocabulary and two special tokens."""
    b, tr = setting(c, block), setting(c, "train") if train is None else train
    n = int(setting(b, "n_positions")) + 1
    shape = Shape.of(setting(c, "model"), int(setting(b, "vocab_size")) + 2)
    return _train(what, shape, n, n, setting(tr, "steps"), setting(tr, "batch_size"), runs)


def _necessity_order(c) -> list[Work]:
    from ..experiments.necessity import MODELS
    runs = (len(MODELS) + 1) * len(setting(c, "seeds"))  # every model, and ALiBi without [CLS] once more
    order = _order_task(c, "task", "order task (BERT-base shape)", runs)
    evals = int(setting(c, "train", "steps")) // int(setting(c, "train", "eval_every")) + 2
    n, tests = order.n_positions, evals * int(setting(c, "task", "n_test"))
    return [order, _forward("test accuracy along training", order.shape, n, n, tests, runs, batch=1024)]


def _necessity_equivariance(c) -> list[Work]:
    from ..experiments.necessity import MODELS
    e = setting(c, "equivariance")
    n, per_model = int(setting(e, "length")), int(setting(e, "n_inputs")) * (2 * int(setting(e, "n_perms")) + 1)
    shape = Shape.of(setting(c, "model"), int(setting(e, "vocab_size")))
    return [_forward("permuted inputs (float64 and float32)", shape, n, n, per_model, 2 * len(MODELS))]


#: run_separation's calls in the chapter: (corpus, task, init, weight decay from the settings?)
_SEPARATION_CALLS = (("drift", "mlm", "normal", False), ("stationary", "mlm", "normal", False),
                     ("sst2", "mlm", "normal", False), ("imdb", "mlm", "normal", False),
                     ("drift", "mlm", "tied", False), ("stationary", "mlm", "tied", False),
                     ("drift", "bag", "tied", False),
                     ("drift", "mlm", "normal", True), ("stationary", "mlm", "normal", True),
                     ("drift", "bag", "normal", True))


#: The calls made with the chapter's headline seeds (``headline_seeds`` where the settings have them).
_HEADLINE = {("drift", "mlm", "normal", False), ("sst2", "mlm", "normal", False), ("imdb", "mlm", "normal", False)}


def _separation(c) -> list[Work]:
    m, tr = setting(c, "model"), setting(c, "train")
    seeds, headline = len(setting(c, "seeds")), len(setting(c, "headline_seeds", default=setting(c, "seeds")))
    steps, batch = setting(tr, "steps"), setting(tr, "batch_size")
    out, groups = [], {}
    for call in _SEPARATION_CALLS:
        groups[call[:2]] = groups.get(call[:2], 0) + (headline if call in _HEADLINE else seeds)
    for (corpus, task), runs in groups.items():
        if corpus in tuple(Corpus):
            n = int(setting(c, "real", corpus, "n_positions"))
            real, vocab = mean_tokens(corpus, n), BERT_BASE.vocab_size
        else:
            syn = setting(c, "synthetic")
            n = real = int(setting(syn, "n_positions"))
            vocab = int(setting(syn, "vocab_size")) + 4
        out.append(_train(f"{corpus} {task}", Shape.of(m, vocab), n, real, steps, batch, runs,
                          mlm=0.15 if task == "mlm" else 0.0))
    return out


def _factorisation_gap(c) -> list[Work]:
    n = int(setting(c, "gap", "n_positions"))
    return [_forward("pretrained attentions, SST-2 validation", BERT_BASE, n, mean_tokens("sst2", n, "validation"),
                     872)]


def _lowrank(c) -> list[Work]:
    from ..experiments.minimal_parametrisation import TrainedTable
    t = setting(c, "train")
    m, steps, batch, syn = setting(t, "model"), setting(t, "steps"), setting(t, "batch_size"), setting(t, "synthetic")
    n_syn, n_sst = int(setting(syn, "n_positions")) + 1, int(setting(t, "sst2", "n_positions"))
    return [
        _train("synthetic order task", Shape.of(m, int(setting(syn, "vocab_size")) + 2), n_syn, n_syn,
               setting(steps, "synthetic"), batch, len(setting(t, "seeds")) * len(TrainedTable)),
        _train("SST-2 classification", Shape.of(m, BERT_BASE.vocab_size), n_sst, mean_tokens("sst2", n_sst),
               setting(steps, "sst2"), batch, len(setting(t, "sst2_seeds")) * len(setting(t, "sst2_encodings"))),
    ]


def _scratch(c) -> list[Work]:
    out = []
    for corpus in setting(c, "scratch_corpora"):
        s = setting(c, "scratch", corpus)
        n = int(setting(c, "corpora", corpus, "n_positions", default=None) or setting(c, corpus, "n_positions"))
        shape = Shape.of(setting(s, "model"), BERT_BASE.vocab_size)
        out.append(_train(f"BERT-base MLM from scratch on {corpus}", shape, n, mean_tokens(corpus, n),
                          setting(s, "max_steps"), setting(s, "batch_size"), 1, mlm=0.15,
                          share=f"real_corpora_scratch_{corpus}"))
    return out


def _ntk(c) -> list[Work]:
    from ..experiments.monotonicity import REGIMES
    k = setting(c, "ntk")
    n, probe = int(setting(k, "n_positions")), int(setting(k, "probe_sequences"))
    steps, batch, seeds = int(setting(k, "steps")), int(setting(k, "batch_size")), len(setting(k, "seeds"))
    records, out = steps // int(setting(k, "record_every")) + 2, []
    for regime in REGIMES:
        r = setting(k, regime)
        # lazy: every seed; the other regimes: the contrast seeds where the settings have them
        regime_seeds = seeds if regime == "lazy" else len(setting(k, "contrast_seeds", default=setting(k, "seeds")))
        runs = regime_seeds + (1 if regime == "rich" else 0)  # the chapter's extra rich run (table sigma 1e-4)
        shape = Shape.of(r, BERT_BASE.vocab_size)
        out.append(_train(f"{regime} regime", shape, n, mean_tokens("sst2", n), steps, batch, runs))
        # two kernels per record, one gradient (forward + backward) per probe sequence, padded
        out.append(_train(f"{regime}: NTK per-example gradients", shape, n, n, 2 * records * probe, 1, runs))
    return out


def _layer_stress(c) -> list[Work]:
    n = int(setting(c, "sentences", "n_positions"))
    return [_forward("pretrained BERT-base on SST-2 validation", BERT_BASE, n, mean_tokens("sst2", n, "validation"),
                     872, batch=int(setting(c, "batch_size")))]


def _init_study(c) -> list[Work]:
    i = setting(c, "init")
    variants = len(setting(i, "inits")) + sum(1 for p in setting(i, "dropouts") if p > 0)
    return [_order_task(c, "order", "order task per initialisation", variants * len(setting(i, "seeds")))]


def _dropout_study(c) -> list[Work]:
    runs = len(setting(c, "dropouts")) * len(setting(c, "seeds"))
    return [_order_task(c, "order", "order task per dropout rate", runs)]


def _tails(c) -> list[Work]:
    t = setting(c, "tails")
    return [_order_task(c, "tails", "skewed and uniform lengths", 2 * len(setting(t, "seeds")), setting(t, "train"))]


def _extrapolation(block: str, vocab_key: str, mlm: float):
    def work(c) -> list[Work]:
        b = setting(c, block)
        L, seeds, encodings = int(setting(b, "L")), len(setting(b, "seeds")), setting(b, "encodings")
        shape = Shape.of(setting(c, "model"), int(setting(b, vocab_key)) + 4)
        steps, batch = setting(b, "train", "steps"), setting(b, "train", "batch_size")

        def learned(what: str, factors: str, run_steps) -> list[Work]:
            return [_train(f"learned, {what} {m_}", shape, m_ + 1, m_ + 1, run_steps, batch, seeds, mlm=mlm)
                    for m_ in (round(f * L) for f in setting(b, factors)) if m_ > L]

        out = [_train(f"{len(encodings)} encodings at L={L}", shape, L + 1, L + 1, steps, batch,
                      len(encodings) * seeds, mlm=mlm)]
        if "learned" in encodings:
            out += learned("new rows fine-tuned at", "factors", setting(b, "finetune", "steps"))
            if setting(b, "target_baseline"):
                out += learned("trained at", "target_factors", steps)
        return out
    return work


#: Per chapter, the experiments that run a model at paper scale: (chapter, module, function, work builder, the
#: registry experiments it writes as an ``fnmatch`` pattern); ``module`` holds the settings (``CONFIGS["paper"]``).
#: A module this checkout lacks is skipped. The tables below are read from this one.
_CATALOGUE: tuple[tuple[str, str, str, Callable[[Any], list[Work]], str], ...] = (
    ("theorem1-necessity", "necessity", "run_order_task", _necessity_order, "necessity.order_task*"),
    ("theorem1-necessity", "necessity", "run_equivariance", _necessity_equivariance, "necessity.equivariance*"),
    ("theorem4-separation", "separation", "run_separation", _separation, "separation.*.*.*.wd*"),
    ("theorem4-separation", "separation", "run_factorisation_gap", _factorisation_gap, "separation.factorisation_gap"),
    ("minimal-parametrisation", "minimal_parametrisation", "run_lowrank_training", _lowrank,
     "minimal_parametrisation.lowrank_training"),
    ("real-corpora", "real_corpora", "run_scratch_table", _scratch, "real_corpora_scratch_*"),
    ("monotonicity", "monotonicity", "run_ntk", _ntk, "monotonicity_ntk_*"),
    ("monotonicity", "real_corpora", "run_scratch_table", _scratch, "real_corpora_scratch_*"),
    ("inside-bert", "inside_bert", "run_layer_stress", _layer_stress, "inside_bert*"),
    ("learned-tables", "learned_tables", "run_init_study", _init_study, "learned_init_study"),
    ("learned-tables", "table_dropout", "run_dropout_study", _dropout_study, "learned_dropout_overfit"),
    ("learned-tables-fail", "extrapolation", "run_undertrained_tails", _tails, "learned_tails"),
    ("learned-tables-fail", "extrapolation", "run_extrapolation_order", _extrapolation("order", "vocab_size", 0.0),
     "learned_extrapolation_order"),
    ("learned-tables-fail", "extrapolation", "run_extrapolation_mlm", _extrapolation("mlm", "top_k", 0.15),
     "learned_extrapolation_mlm"),
)
#: ``(chapter, module, function, work builder)`` of every experiment that runs a model at paper scale.
EXPERIMENTS: tuple[tuple[str, str, str, Callable[[Any], list[Work]]], ...] = tuple(row[:4] for row in _CATALOGUE)
#: The registry experiments (``fnmatch`` patterns) each costed experiment (``module:function``) writes.
RESULT_NAMES: dict[str, tuple[str, ...]] = {f"{module}:{function}": (pattern,)
                                            for _, module, function, _, pattern in _CATALOGUE}
