r"""Training callbacks: the geometry of the positional table along training, and held-out accuracy.

:class:`PositionGeometry` records the separation $\operatorname{sep}(P) = \min_{i \ne j} \hat d_{ij}$ of
Theorem 4 and, against a target $D$, the stress, the monotonicity violation rate and Spearman's $\rho$.
Callbacks carry their records through checkpoints, so a resumed run records what the uninterrupted one would.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import geometry as geo
from ..geometry.stress import REPORTED_NORMALIZATIONS
from ..validation import check_positive_int


#: Training settings that do not change the numbers, left out of the registry parameters.
_NOT_PARAMS = ("progress", "checkpoint_dir", "checkpoint_seconds", "compile")
#: Later settings, recorded only when not at their default (so that earlier entries keep their keys).
_NEW_DEFAULTS = {"padding": "full"}


class Callback:
    """Hooks called by :func:`posgeom.models.training.train` with its :class:`TrainState`."""

    def on_train_begin(self, state) -> None:
        """Before the first step (also on resumption)."""

    def on_step_end(self, state) -> None:
        """After each optimiser step; ``state.step`` counts the steps done."""

    def on_train_end(self, state) -> None:
        """After the last step."""

    def state_dict(self) -> dict:
        """Plain data (lists, numbers, strings) saved in checkpoints."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""


class PositionGeometry(Callback):
    """Record the positional geometry of the model during training.

    Parameters
    ----------
    every : int
        Record every ``every`` steps (and before the first and after the last).
    target : array_like of shape (n, n), optional
        Target distances $D$; without it only the separation is recorded.
    n : int, optional
        Number of positions (default: ``target``'s size, else the table's ``N_max``).
    normalizations : sequence of str
        Stress normalisations of :data:`posgeom.geometry.STRESS_NORMALIZATIONS`.
    registry : posgeom.registry.Registry, optional
        Where rank 0 saves the series at the end, labelled by ``experiment``, ``params``, ``scale``, ``model_name``.
    """

    def __init__(self, every: int = 10, *, target=None, n: int | None = None,
                 normalizations: Sequence[str] = REPORTED_NORMALIZATIONS, registry=None,
                 experiment: str = "position_geometry", params: Mapping[str, Any] | None = None,
                 scale: str = "quick", model_name: str | None = None):
        every = check_positive_int(every, "every")
        bad = [z for z in normalizations if z not in geo.STRESS_NORMALIZATIONS]
        if bad:
            raise ValueError(
                f"unknown stress normalization(s) {bad}; valid ones are {', '.join(geo.STRESS_NORMALIZATIONS)}"
            )
        self.every, self.normalizations = every, tuple(normalizations)
        self.target = None if target is None else np.asarray(target, dtype=np.float64)
        if self.target is not None:
            if self.target.ndim != 2 or self.target.shape[0] != self.target.shape[1]:
                raise ValueError(f"target must be an (n, n) distance matrix, got shape {self.target.shape}")
            if n is not None and n != self.target.shape[0]:
                raise ValueError(f"n={n} does not match the target's {self.target.shape[0]} positions")
            n = self.target.shape[0]
        self.n = n
        self.registry, self.experiment, self.scale, self.model_name = registry, experiment, scale, model_name
        self.params = dict(params or {})
        self.records: dict[str, list] = {k: [] for k in self.keys()}
        self.saved = None

    def keys(self) -> list[str]:
        """Names of the recorded series."""
        keys = ["step", "separation", "separation_normalized", "median_distance"]
        if self.target is not None:
            keys += [f"stress_{z}" for z in self.normalizations] + ["violation_rate", "spearman"]
        return keys

    def measure(self, model) -> dict[str, float]:
        """The geometry of ``model``'s positional encoding now (no recording)."""
        Dhat = model.distance_matrix(self.n)
        out: dict[str, float] = {}
        with warnings.catch_warnings():
            # NoPE: every distance is 0, so rank statistics are undefined (NaN) — recorded as such
            warnings.simplefilter("ignore", RuntimeWarning)
            sep = geo.separation(Dhat, as_distances=True)
            out.update(separation=sep.raw, separation_normalized=sep.normalized, median_distance=sep.median)
            if self.target is not None:
                for z in self.normalizations:
                    out[f"stress_{z}"] = float(geo.stress(self.target, Dhat, z, as_distances=True))
                out["violation_rate"] = float(geo.violation_rate(self.target, Dhat, as_distances=True))
                out["spearman"] = float(geo.spearman(self.target, Dhat, as_distances=True))
        return out

    def _record(self, state) -> None:
        if self.records["step"] and self.records["step"][-1] == state.step:
            return
        values = self.measure(state.model)
        self.records["step"].append(int(state.step))
        for k, v in values.items():
            self.records[k].append(float(v))

    def on_train_begin(self, state) -> None:
        if not self.records["step"]:
            self._record(state)

    def on_step_end(self, state) -> None:
        if state.step % self.every == 0:
            self._record(state)

    def on_train_end(self, state) -> None:
        self._record(state)
        from .distributed import distributed_context

        if self.registry is not None and distributed_context()[0] == 0:  # one writer when several processes train
            final = {k: v[-1] for k, v in self.records.items()}
            params = {
                **self.params, "every": self.every, "n": self.n, "normalizations": list(self.normalizations),
                "train_config": {k: v for k, v in vars(state.config).items()
                                 if k not in _NOT_PARAMS and not (k in _NEW_DEFAULTS and v == _NEW_DEFAULTS[k])},
                "model_config": state.model.config.to_params() if hasattr(state.model.config, "to_params") else {},
            }
            self.saved = self.registry.save(
                self.experiment, {"final": final, "series": self.records}, params=params, scale=self.scale,
                seed=state.config.seed, device=state.device, model=self.model_name,
                arrays={k: np.asarray(v) for k, v in self.records.items()},
            )

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The series recorded so far, as numpy arrays (``step`` and one per measure)."""
        return {k: np.asarray(v) for k, v in self.records.items()}

    def state_dict(self) -> dict:
        return {"records": {k: list(v) for k, v in self.records.items()}}

    def load_state_dict(self, state: dict) -> None:
        records = state["records"]
        if set(records) != set(self.keys()):
            raise ValueError(
                f"the checkpoint's geometry records {sorted(records)} do not match this callback's {sorted(self.keys())}"
            )
        self.records = {k: list(v) for k, v in records.items()}


class AccuracyCurve(Callback):
    """Record a classifier's accuracy on held-out data every ``every`` steps (and at both ends).

    Parameters
    ----------
    x : LongTensor of shape (N, L)
        Input ids (no attention mask).
    y : LongTensor of shape (N,)
    """

    def __init__(self, x, y, every: int):
        self.x, self.y, self.every = x, y, every
        self.steps: list[int] = []
        self.accuracy: list[float] = []

    @torch.no_grad()
    def _record(self, state):
        if self.steps and self.steps[-1] == state.step:
            return
        model = state.model
        was = model.training
        model.eval()
        dev = next(model.parameters()).device
        pred = torch.cat([model(self.x[i:i + 1024].to(dev)).logits.argmax(-1).cpu()
                          for i in range(0, len(self.x), 1024)])
        model.train(was)
        self.steps.append(int(state.step))
        self.accuracy.append(float((pred == self.y).float().mean()))

    def on_train_begin(self, state):
        self._record(state)

    def on_step_end(self, state):
        if state.step % self.every == 0:
            self._record(state)

    def on_train_end(self, state):
        self._record(state)

    def state_dict(self):
        return {"steps": list(self.steps), "accuracy": list(self.accuracy)}

    def load_state_dict(self, state):
        self.steps, self.accuracy = list(state["steps"]), list(state["accuracy"])


__all__ = ["Callback", "PositionGeometry", "AccuracyCurve"]
