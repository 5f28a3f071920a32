"""Shared test fixtures.

Tests never reach the network: the hub is switched off here, whatever the caller's environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Tests write paper-scale results only into temporary registries: a developer's uncommitted edits must not
# fail them (tests/test_registry_provenance.py checks the refusal itself with this switch off).
os.environ.setdefault("POSGEOM_ALLOW_DIRTY", "1")

# Every chapter module binds its experiment's CONFIGS by name when it is first imported. Imported here, before
# any test shrinks an experiment's CONFIGS with monkeypatch, each binds the real settings whatever the order the
# tests run in; otherwise the first test to import one inside a shrinking fixture would leave it bound to the
# tiny settings for every later test of that process.
import posgeom.chapters  # noqa: E402
import importlib  # noqa: E402
import pkgutil  # noqa: E402

for _module in pkgutil.iter_modules(posgeom.chapters.__path__):
    importlib.import_module(f"posgeom.chapters.{_module.name}")

# transformers gives its loggers one stream handler, bound to the sys.stderr of the moment it first logs. Made
# here, it writes to the session's stream; made inside a test that captures output (capsys), it would keep that
# test's stream, closed afterwards, and write "--- Logging error ---" into the output of later tests (seen as
# test_decide.py failing after test_cli_refusals.py in one process).
try:
    from transformers.utils import logging as _transformers_logging
except ImportError:  # the nlp extra is not installed: nothing logs through transformers
    pass
else:
    _transformers_logging.get_verbosity()

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The test file that builds the book: the longest piece of the suite, so it runs first.
BOOK_TESTS = "tests/test_book.py"


def pytest_collection_modifyitems(config, items):
    """Put the book's tests first. The strict build they share is the critical path of the test command;
    with ``--dist loadfile --no-loadscope-reorder`` (``scripts/test``) the first worker starts it at once,
    while the other worker runs every other file."""
    items.sort(key=lambda item: not item.nodeid.startswith(BOOK_TESTS + "::"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The real SST-2/IMDB copies: ``POSGEOM_DATA_DIR``, else ``../shared/data`` beside the checkout.

    Fails (does not skip) when neither exists: these tests are part of what CI must check.
    """
    env = os.environ.get("POSGEOM_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for folder in candidates:
        if (folder / "sst2").is_dir() and (folder / "imdb").is_dir():
            return folder.resolve()
    pytest.fail(
        "real corpora not found: set POSGEOM_DATA_DIR to a folder holding sst2/ and imdb/ parquet files "
        "(the layout of shared/data)"
    )


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run fastest on one thread (and the machine may be shared); restored afterwards.

    Opted into per module (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``) so that tests
    without torch do not import it.
    """
    from posgeom.models import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private corpora cache under ``tmp_path`` and no data folder from the caller's environment."""
    monkeypatch.setenv("POSGEOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("POSGEOM_DATA_DIR", raising=False)
    return tmp_path
