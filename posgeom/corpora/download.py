"""``posgeom data``: where the corpora and the pretrained model come from; ``posgeom data download``.

``posgeom data download --to DIR`` writes the folder layout ``POSGEOM_DATA_DIR`` expects
(``sst2/{train,validation,test}.parquet``, ``imdb/{train,test}.parquet``) with a ``checksums.json``, so
that a machine without internet can use it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..storage import write_durably
from .identifiers import Corpus
from .real import (
    CORPORA, FOLDER_CHECKSUMS, ChecksumError, expected_checksums, load_hub_split, resolve_source, sha256_file,
)

__all__ = ["download_corpora", "data_sources"]


def download_corpora(to: str | Path, corpora: tuple[str, ...] = tuple(Corpus)) -> dict[str, str]:
    """Write every split of ``corpora`` from the hub into ``to`` in the layout ``POSGEOM_DATA_DIR`` expects.

    ``checksums.json`` is written last, so a folder holding it is complete. A non-empty folder or an
    unknown corpus is a ``ValueError``; an unreachable hub a ``DataUnavailableError``.

    Parameters
    ----------
    to : path
        The folder to create (or an empty one).
    corpora : tuple of str
        Named corpora (:data:`posgeom.corpora.real.CORPORA`).

    Returns
    -------
    dict
        ``"corpus/split.parquet"`` → sha256 of the file written.
    """
    from ..progress import tqdm
    folder = Path(to).expanduser()
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown:
        raise ValueError(f"unknown corpus {unknown[0]!r}; valid corpora are {', '.join(CORPORA)}")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{str(folder)!r} already exists and is not an empty folder; choose another --to")
    jobs = [(corpus, split) for corpus in corpora for split in CORPORA[corpus].splits]
    written: dict[str, str] = {}
    for corpus, split in tqdm(jobs, desc="download", unit="split"):
        ds = load_hub_split(corpus, split)
        target = folder / corpus / f"{split}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        ds.to_parquet(str(partial))
        os.replace(partial, target)
        written[f"{corpus}/{split}.parquet"] = sha256_file(target)
    manifest = {"_comment": "written by `posgeom data download` from the Hugging Face hub; sha256 of each file",
                "_source": {c: CORPORA[c].hub_id for c in corpora}, **written}
    write_durably(folder / FOLDER_CHECKSUMS, (json.dumps(manifest, indent=1) + "\n").encode())
    for corpus, split in jobs:  # read back through the loader users will use, checksums included
        resolve_source(corpus, split, data_dir=folder)
    return written


def data_sources(decision=None) -> list[tuple[str, str]]:
    """``(what, where from)`` for every split of the named corpora and for the pretrained model.

    Parameters
    ----------
    decision : posgeom.offline.RunEnvironment, optional
        Default: :func:`posgeom.offline.decide` for the current environment (with a network probe).
    """
    from ..offline import decide
    decision = decide() if decision is None else decision
    rows = []
    for corpus, info in CORPORA.items():
        for split in info.splits:
            rel = f"{corpus}/{split}.parquet"
            if decision.data_dir is None:
                where = (f"hub {info.hub_id}: only if already in the datasets cache (offline)" if decision.offline
                         else f"hub {info.hub_id} (into the datasets cache on first use)")
            elif not (file := decision.data_dir / rel).is_file():
                where = f"MISSING: {file}"
            else:
                try:
                    ok = sha256_file(file) == expected_checksums(decision.data_dir).get(rel)
                    check = "sha256 verified" if ok else "sha256 MISMATCH: copy it again"
                except ChecksumError as err:
                    check = str(err)
                where = f"local {file} ({decision.data_origin}; {check})"
            rows.append((rel, where))
    model = "local" if decision.model_local else ("hub (offline: unavailable)" if decision.offline else "hub")
    rows.append(("pretrained model", f"{decision.pretrained}: {model}"))
    rows.append(("offline mode", f"{'on' if decision.offline else 'off'} ({decision.reason})"))
    return rows
