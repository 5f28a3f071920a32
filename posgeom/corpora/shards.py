r"""Which shards make a corpus (:func:`resolve_shards`), and the texts of one shard (``read_shard``).

A corpus is local files (path, folder or glob), ``fsspec`` URLs (``"s3://bucket/corpus/*.jsonl.gz"``) or a
Hugging Face dataset id (its data files for one split); formats :data:`SHARD_FORMATS` (``.txt``: one text
a line), each optionally compressed (``.gz``, ``.bz2``, ``.xz``; ``.zst`` with ``zstandard``).
"""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

from ..validation import check_choice
from .real import EMPTY_POLICIES, pick_text_column

__all__ = ["SHARD_FORMATS", "ShardError", "resolve_shards", "read_shard"]

#: File formats a shard may have (before an optional compression suffix).
SHARD_FORMATS = (".parquet", ".jsonl", ".json", ".csv", ".txt")
_GLOB_CHARS = re.compile(r"[*?\[]")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class ShardError(ValueError):
    """A shard that cannot be counted (unreadable, not parseable, no text column, empty texts)."""

    def __init__(self, shard: str, reason: str):
        super().__init__(f"shard {shard!r}: {reason}")
        self.shard = shard
        self.reason = reason

    def __reduce__(self):  # raised on a Dask worker, re-raised here: rebuilt from both arguments
        return (type(self), (self.shard, self.reason))


def _compression(name: str) -> str | None:
    from fsspec.utils import infer_compression
    return infer_compression(name)


def _format(name: str) -> str | None:
    """The shard format of a file name (its suffix under any compression suffix), or None."""
    base = name.rsplit("/", 1)[-1].lower()
    if _compression(base) is not None:
        base = base.rsplit(".", 1)[0]
    suffix = "." + base.rsplit(".", 1)[-1] if "." in base else ""
    return suffix if suffix in SHARD_FORMATS else None


def _hub_shards(dataset_id: str, split: str) -> list[str]:
    from huggingface_hub import HfApi
    try:
        files = HfApi().list_repo_files(dataset_id, repo_type="dataset")
    except Exception as err:  # offline, unknown id, hub down: the same advice
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"dataset {dataset_id!r} could not be listed on the Hugging Face hub ({first}); offline, "
                         "give the shards as local files or a glob (e.g. 'corpus/*.parquet')") from None
    data = [f for f in files if _format(f) is not None and not f.rsplit("/", 1)[-1].startswith(".")]
    if split != "all":
        def in_split(f: str) -> bool:
            *folders, base = f.split("/")
            return split in folders or re.match(rf"{re.escape(split)}([-_.]|$)", base) is not None

        chosen = [f for f in data if in_split(f)]
        if not chosen:
            names = sorted({re.split(r"[-_.]", f.rsplit("/", 1)[-1])[0] for f in data})
            raise ValueError(f"dataset {dataset_id!r} has no data file for split {split!r} (file name prefixes: "
                             f"{', '.join(names) or 'none'}); pick one with --split, or --split all for every "
                             "data file")
        data = chosen
    if not data:
        raise ValueError(f"dataset {dataset_id!r} holds no data file of a known format ({', '.join(SHARD_FORMATS)})")
    return [f"hf://datasets/{dataset_id}/{f}" for f in sorted(data)]


def resolve_shards(corpus: str | Path | list, split: str | None = None) -> list[str]:
    """The shards of a corpus: paths or URLs, sorted.

    Parameters
    ----------
    corpus : str, Path or list of str
        A file, a folder (its files of a known format), a glob, an ``fsspec`` URL (a glob allowed), a
        Hugging Face dataset id, or a list of files and URLs taken as they are.
    split : str, optional
        For a dataset id only: the split whose data files are read (default ``"train"``; ``"all"``
        for every data file).

    """
    if isinstance(corpus, (list, tuple)):
        shards = [str(s) for s in corpus]
        if not shards:
            raise ValueError("no shards given")
        bad = [s for s in shards if _format(s) is None]
        if bad:
            raise ValueError(f"shard {bad[0]!r} is not of a known format ({', '.join(SHARD_FORMATS)}, optionally "
                             ".gz, .bz2, .xz)")
        return shards
    text = str(corpus).strip()
    if "://" in text:
        import fsspec
        fs, path = fsspec.core.url_to_fs(text)
        found = fs.glob(path) if _GLOB_CHARS.search(path) else ([path] if fs.isfile(path) else fs.find(path))
        shards = sorted(fs.unstrip_protocol(p) for p in found if _format(p) is not None)
    elif _GLOB_CHARS.search(text) or Path(text).expanduser().exists():
        path = Path(text).expanduser()
        if path.is_dir():
            found = [p for p in path.iterdir() if p.is_file()]
        elif path.is_file():
            found = [path]
        else:
            import glob
            found = [Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file()]
        shards = sorted(str(p) for p in found if _format(p.name) is not None)
    elif _HUB_ID.match(text):
        if split is not None and not isinstance(split, str):
            raise ValueError(f"split must be a string; got {split!r}")
        return _hub_shards(text, split or "train")
    else:
        raise ValueError(f"corpus {text!r} is neither an existing file or folder, a glob, an fsspec URL "
                         "(scheme://...) nor a Hugging Face dataset id (owner/name)")
    if split is not None:
        raise ValueError("--split applies to a Hugging Face dataset id only; choose files with the glob instead")
    if not shards:
        raise ValueError(f"no shard matches {text!r}; shards are files of type {', '.join(SHARD_FORMATS)} "
                         "(optionally compressed: .gz, .bz2, .xz)")
    return shards


def _pick_column(columns: list[str], text_column: str | None, shard: str) -> str:
    """:func:`posgeom.corpora.real.pick_text_column`, its error as a :class:`ShardError`."""
    try:
        return pick_text_column(list(columns), text_column, "this shard")
    except ValueError as err:
        raise ShardError(shard, str(err)) from None


def _parse(data: bytes, fmt: str, text_column: str | None, shard: str) -> tuple[list, str]:
    """(texts, with None for missing values; the column read) of a shard's decompressed bytes."""
    if fmt == ".txt":
        if text_column not in (None, "text"):
            raise ShardError(shard, f"a .txt shard has one text a line and no column {text_column!r}")
        lines = data.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.removesuffix("\r") for line in lines], "text"
    buf = io.BytesIO(data)
    if fmt == ".parquet":
        import pyarrow.parquet as pq
        pf = pq.ParquetFile(buf)
        column = _pick_column(pf.schema_arrow.names, text_column, shard)
        table = pf.read(columns=[column])
    elif fmt in (".jsonl", ".json"):
        import pyarrow.json as pj
        table = pj.read_json(buf)
        column = _pick_column(table.column_names, text_column, shard)
    else:
        import pyarrow.csv as pc
        table = pc.read_csv(buf)
        column = _pick_column(table.column_names, text_column, shard)
    import pyarrow as pa
    col = table.column(column)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_null(col.type)):
        raise ShardError(shard, f"column {column!r} holds {col.type}, not text; name the text column (--text-column)")
    return col.to_pylist(), column


def read_shard(shard: str, text_column: str | None = None, on_empty: str = "raise") -> tuple[list[str], dict]:
    """The texts of one shard and a record of what was read.

    Parameters
    ----------
    shard : str
        A path or ``fsspec`` URL (:func:`resolve_shards`).
    text_column : str, optional
        Default ``"text"``, else ``"sentence"`` (``.txt`` shards: one text a line).
    on_empty : {"raise", "drop", "keep"}
        Empty texts: a :class:`ShardError`, dropped (counted in the record) or kept as empty sequences.

    Returns
    -------
    texts : list of str, length n_texts
    record : dict
        ``shard``, ``sha256`` (of the bytes as stored), ``bytes``, ``text_column``, ``n_rows``,
        ``n_empty``, ``n_dropped_empty``.
    """
    check_choice(on_empty, "on_empty", EMPTY_POLICIES, plural="values")
    fmt = _format(shard)
    if fmt is None:
        raise ShardError(shard, f"unknown format; valid formats are {', '.join(SHARD_FORMATS)}")
    import fsspec
    try:
        with fsspec.open(shard, "rb") as fh:
            raw = fh.read()
    except Exception as err:  # missing, permission, network: all mean "this shard cannot be read"
        raise ShardError(shard, f"cannot be read ({type(err).__name__}: {err})") from None
    digest, n_bytes = hashlib.sha256(raw).hexdigest(), len(raw)
    try:
        compression = _compression(shard)
        if compression is not None:
            from fsspec.compression import compr
            if compression not in compr:
                raise ShardError(shard, f"{compression} compression needs a package that is not installed (zstandard)")
            with compr[compression](io.BytesIO(raw), mode="rb") as fh:
                raw = fh.read()
        texts, column = _parse(raw, fmt, text_column, shard)
    except ShardError:
        raise
    except Exception as err:  # damaged or truncated file, bad encoding, bad JSON: name the shard
        first = str(err).splitlines()[0] if str(err) else ""
        raise ShardError(shard, f"cannot be parsed as {fmt} ({type(err).__name__}: {first})") from None
    del raw
    empty = [i for i, t in enumerate(texts) if t is None or not t.strip()]
    record = {"shard": shard, "sha256": digest, "bytes": n_bytes, "text_column": column, "n_rows": len(texts),
              "n_empty": len(empty), "n_dropped_empty": 0}
    if empty:
        if on_empty == "raise":
            raise ShardError(shard, f"{len(empty)} of {len(texts)} texts are empty (rows {empty[:5]}); "
                             "use --on-empty drop to drop them or keep to count them as empty sequences")
        if on_empty == "drop":
            gone = set(empty)
            texts = [t for i, t in enumerate(texts) if i not in gone]
            record["n_dropped_empty"] = len(empty)
        else:
            texts = ["" if t is None else t for t in texts]
    return texts, record
