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

REPO_ROOT = Path(__file__).resolve().parents[1]


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
