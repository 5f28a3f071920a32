"""Work that needs a GPU, asked for on a CPU: reported where it is needed instead of run for days.

Under ``posgeom reproduce --scale paper --cpu-parts`` the GPU work is named in :data:`GPU_WORK_ENV` (JSON
``{registry name pattern: minutes}``); :meth:`posgeom.registry.Registry.run` then returns a :class:`Pending`
for it when nothing is stored, which raises :class:`NeedsGPU` at any use, so everything downstream says so.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
from fnmatch import fnmatchcase

__all__ = ["GPU_WORK_ENV", "GPU_SLICE", "RUN_WORDS", "run_words", "NeedsGPU", "Pending", "gpu_work_minutes",
           "assigned_names", "install"]

#: The environment variable naming the GPU work a run reports instead of running (set by ``posgeom reproduce``
#: from :func:`posgeom.costmodel.gpu_work`).
GPU_WORK_ENV = "POSGEOM_GPU_WORK"
#: The script that runs the paper scale's GPU work on a GPU machine.
GPU_SLICE = "scripts/gpu-slice"

#: The corpora, tasks and regimes that name a run of GPU work (the parts of its registry key), in words.
_CORPUS_WORDS = {"sst2": "SST-2", "imdb": "IMDB", "drift": "the drift corpus", "stationary": "the stationary corpus"}
_TASK_WORDS = {"mlm": "masked-token prediction", "bag": "a bag-of-words task"}
_INIT_WORDS = {"normal": "a normal initialisation", "tied": "tied initial rows"}
_REGIME_WORDS = {"lazy": "the lazy regime", "lazy_small_init": "the lazy regime from a small initialisation",
                 "rich": "the rich regime"}


def _separation_words(m: re.Match) -> str:
    corpus, task, init, decay = m.groups()
    decay_words = "without weight decay" if float(decay) == 0 else f"with weight decay {decay}"
    return (f"the training runs of the separation on {_CORPUS_WORDS.get(corpus, corpus)} "
            f"({_TASK_WORDS.get(task, task)}, {_INIT_WORDS.get(init, init)}, {decay_words})")


#: The paper scale's GPU work as a page names it (docs/STYLE.md, rule 4): ``(pattern of the registry key, words)``,
#: the words a string or a function of the match.
RUN_WORDS: tuple[tuple[re.Pattern, object], ...] = (
    (re.compile(r"necessity\.order_task$"), "the order task's training runs"),
    (re.compile(r"necessity\.order_task_nocls$"), "the order task's training runs without [CLS]"),
    (re.compile(r"necessity\.equivariance\w*$"), "the equivariance check of the encoders"),
    (re.compile(r"separation\.factorisation_gap$"), "the training runs of the factorisation gap"),
    (re.compile(r"separation\.(\w+)\.(\w+)\.(\w+)\.wd([\d.e+-]+)$"), _separation_words),
    (re.compile(r"minimal_parametrisation\.lowrank_training$"), "the training runs of the low-rank tables"),
    (re.compile(r"real_corpora_scratch_(\w+)$"),
     lambda m: f"the table trained from scratch on {_CORPUS_WORDS.get(m.group(1), m.group(1))}"),
    (re.compile(r"monotonicity_ntk_(\w+)$"),
     lambda m: f"the training runs in {_REGIME_WORDS.get(m.group(1), m.group(1) + ' regime')}"),
    (re.compile(r"inside_bert\w*$"), "the stress of the pretrained model's layers"),
    (re.compile(r"learned_init_study$"), "the study of the learned tables' initialisation"),
    (re.compile(r"learned_dropout_overfit$"), "the study of dropout on the learned tables"),
    (re.compile(r"learned_tails$"), "the learned tables' undertrained tails"),
    (re.compile(r"learned_extrapolation_order$"), "the extrapolation runs on the order task"),
    (re.compile(r"learned_extrapolation_mlm$"), "the extrapolation runs with masked-token prediction"),
)


def run_words(experiment: str) -> str:
    """The run a registry key names, in words (:data:`RUN_WORDS`); an unknown key as it is."""
    for pattern, words in RUN_WORDS:
        if m := pattern.match(str(experiment)):
            return words(m) if callable(words) else words
    return str(experiment)


class NeedsGPU(RuntimeError):
    """A use of a result that waits for the GPU work ``experiment`` (``minutes`` by the cost model, or None)."""

    def __init__(self, experiment: str, minutes: float | None = None):
        self.experiment, self.minutes = experiment, minutes
        super().__init__(self.text)

    @property
    def detail(self) -> str:
        """``"about 23 GPU-minutes for the order task's training runs; scripts/gpu-slice"``."""
        about = f"about {self.minutes:.0f} GPU-minutes for " if self.minutes else ""
        return f"{about}{run_words(self.experiment)}; {GPU_SLICE}"

    @property
    def text(self) -> str:
        """``"needs a GPU (about 23 GPU-minutes for the order task's training runs; scripts/gpu-slice)"``."""
        return f"needs a GPU ({self.detail})"

    @property
    def command(self) -> str:
        """``"scripts/gpu-slice (writes necessity.order_task)"``."""
        return f"{GPU_SLICE} (writes {self.experiment})"

    def __reduce__(self):  # picklable with its fields (it may cross a process boundary)
        return NeedsGPU, (self.experiment, self.minutes)


class Pending:
    """What :meth:`~posgeom.registry.Registry.run` returns for GPU work asked for on a CPU.

    It shows what it waits for (``repr``, HTML); every other use raises :class:`NeedsGPU`, so nothing
    downstream can mistake it for a number.
    """

    __slots__ = ("_experiment", "_minutes")

    def __init__(self, experiment: str, minutes: float | None = None):
        object.__setattr__(self, "_experiment", str(experiment))
        object.__setattr__(self, "_minutes", minutes)

    @classmethod
    def of(cls, err: NeedsGPU) -> "Pending":
        return cls(err.experiment, err.minutes)

    @property
    def error(self) -> NeedsGPU:
        return NeedsGPU(self._experiment, self._minutes)

    def __repr__(self) -> str:
        return f"<{self.error.text}>"

    def _repr_html_(self) -> str:
        err = self.error  # the registry key in the tooltip, for the command that computes it
        return f'<p title="{html.escape(err.command)}"><em>{html.escape(err.text)}</em></p>'

    def _raise(self, *args, **kwargs):
        raise self.error

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)  # display, NumPy, copy and pickle probe private names: answer "absent"
        raise self.error

    __setattr__ = __getitem__ = __iter__ = __len__ = __call__ = __bool__ = __format__ = __str__ = _raise
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _raise
    __lt__ = __le__ = __gt__ = __ge__ = __float__ = __int__ = __index__ = __contains__ = _raise


def gpu_work_minutes(experiment: str, scale: str, device: str) -> float | None:
    """The GPU minutes of ``experiment`` when, at paper scale on a CPU, ``POSGEOM_GPU_WORK`` names it; else None."""
    spec = os.environ.get(GPU_WORK_ENV)
    if not spec or scale != "paper" or not str(device).startswith("cpu"):
        return None
    try:
        work = json.loads(spec)
    except json.JSONDecodeError as err:
        raise ValueError(f"{GPU_WORK_ENV} must be a JSON object {{experiment prefix: GPU minutes}}, got {spec!r} "
                         f"({err})") from None
    for pattern, minutes in work.items():
        if fnmatchcase(experiment, pattern):
            return float(minutes) if minutes is not None else 0.0
    return None


# ------------------------------- in the kernel of a chapter run with GPU work reported (installed by posgeom reproduce)


def assigned_names(source: str) -> list[str]:
    """The names a cell's code assigns outside functions, classes, lambdas and comprehensions ([] if unparsable)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                             ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return  # their names are local (a def's own name is bound before anything in the cell can fail)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return list(dict.fromkeys(names))


def install(shell) -> None:
    """Make an IPython ``shell`` report GPU work cell by cell: a cell raising :class:`NeedsGPU` shows one line
    instead of a traceback, and every name it assigns becomes a :class:`Pending` (not an earlier cell's value)."""

    def show(shell_, etype, value, tb, tb_offset=None):
        stb = [value.text]  # one line, not a traceback: what the cell needs
        shell_._showtraceback(etype, value, stb)  # sent as the cell's error output, named NeedsGPU
        return stb

    def bind(result) -> None:
        err = getattr(result, "error_in_exec", None)
        if isinstance(err, NeedsGPU):
            for name in assigned_names(result.info.raw_cell if result.info is not None else ""):
                shell.user_ns[name] = Pending.of(err)

    shell.set_custom_exc((NeedsGPU,), show)
    shell.events.register("post_run_cell", bind)
