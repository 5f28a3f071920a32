r"""The paper's real corpora, SST-2 and IMDB, and any local text file (read with ``pyarrow``, verified).

Where the data come from (:func:`resolve_source`): a local data folder (``data_dir=`` or
``POSGEOM_DATA_DIR``, the layout ``posgeom data download`` writes), every file checked against the sha256
kept in the package or the folder's own ``checksums.json``; else the Hugging Face hub
(:func:`load_hub_split`, row counts checked); or any local file of texts, or folder of such files named
after their split. Local files are parsed from the very bytes whose sha256 was checked
(:func:`read_local_table`). Empty texts are never dropped silently (``on_empty``).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np

from ..config import HUB_DATASETS, get_settings
from ..storage import sha256_bytes, sha256_file
from ..validation import check_choice
from .identifiers import Corpus

__all__ = [
    "CorpusInfo", "CORPORA", "DataSource", "TextCorpus", "DataUnavailableError", "ChecksumError",
    "EMPTY_POLICIES", "FILE_BUILDERS", "known_checksums", "sha256_file", "resolve_source", "load_texts",
    "no_data_message", "read_local_table", "expected_checksums", "load_hub_split", "HUB_SPLIT_ROWS",
    "FOLDER_CHECKSUMS", "pick_text_column", "data_key", "describe_source",
]

EMPTY_POLICIES = ("raise", "drop", "keep")
#: File suffix → ``datasets`` builder used to read it.
FILE_BUILDERS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".txt": "text"}
_AUTO_TEXT_COLUMNS = ("text", "sentence")


@dataclass(frozen=True)
class CorpusInfo:
    """What posgeom knows about a named corpus."""

    name: str
    hub_id: str
    splits: tuple[str, ...]
    text_column: str
    label_column: str
    default_split: str
    #: Number of positions of the paper-like default analysis (SST-2: 64, IMDB: 512).
    default_positions: int
    #: Default handling of HTML line breaks (see :mod:`posgeom.corpora.tokenize`).
    default_br: str


CORPORA = {
    Corpus.SST2: CorpusInfo(Corpus.SST2, HUB_DATASETS[Corpus.SST2], ("train", "validation", "test"), "sentence",
                            "label", "train", 64, "keep"),
    Corpus.IMDB: CorpusInfo(
        Corpus.IMDB, HUB_DATASETS[Corpus.IMDB], ("train", "test"), "text", "label", "train", 512, "space"
    ),
}


class DataUnavailableError(ValueError):
    """The corpus cannot be found locally and cannot be downloaded (a ``ValueError``: bad input)."""


class ChecksumError(ValueError):
    """A local data file does not have the sha256 posgeom expects."""


def known_checksums() -> dict[str, str]:
    """The expected sha256 of each local data file, keyed by path relative to the data folder."""
    text = resources.files("posgeom.corpora").joinpath("checksums.json").read_text()
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


#: Name of the checksum file that ``posgeom data download`` writes into a data folder.
FOLDER_CHECKSUMS = "checksums.json"
#: Rows of each split of the hub's copies (``stanfordnlp/sst2``, ``stanfordnlp/imdb``), checked on load.
HUB_SPLIT_ROWS = {
    Corpus.SST2: {"train": 67_349, "validation": 872, "test": 1_821},
    Corpus.IMDB: {"train": 25_000, "test": 25_000},
}


def expected_checksums(folder: str | Path) -> dict[str, str]:
    """The sha256 the files of a data folder must have, keyed by ``corpus/split.parquet``.

    A folder written by ``posgeom data download`` carries its own ``checksums.json``; any other folder
    must hold the book's copies (:func:`known_checksums`).
    """
    own = Path(folder) / FOLDER_CHECKSUMS
    if own.is_file():
        try:
            data = json.loads(own.read_text())
        except json.JSONDecodeError as err:
            raise ChecksumError(f"{str(own)!r} is not valid JSON ({err}); download the folder again") from None
        return {k: v for k, v in data.items() if not k.startswith("_")}
    return known_checksums()


def data_key(data_dir: str | Path | None) -> str:
    """What a registry entry records as its data: the same string for the same data on any machine.

    ``"hub"`` without a data folder, ``"book copies"`` for a folder of the book's copies (verified when
    read), ``"download:<sha256 prefix>"`` of its ``checksums.json`` for a folder written by ``posgeom data download``.
    """
    if data_dir is None:
        return "hub"
    own = Path(data_dir) / FOLDER_CHECKSUMS
    if own.is_file():
        return "download:" + hashlib.sha256(own.read_bytes()).hexdigest()[:16]
    return "book copies"


def describe_source(source: "DataSource", data_dir: str | Path | None) -> dict:
    """Where a resolved split is read from, as a registry entry records it (and keys on).

    :meth:`DataSource.describe` of ``source`` (from :func:`resolve_source` with the data folder ``data_dir``),
    its ``location`` replaced by :func:`data_key` for a local folder.
    """
    description = source.describe()
    if description["kind"] == "local":
        description["location"] = data_key(data_dir)
    return description


def load_hub_split(corpus: str, split: str):
    """One split of ``corpus`` (``"sst2"`` or ``"imdb"``) from the Hugging Face hub, through ``datasets``, verified.

    Returns a ``datasets.Dataset``.

    Raises
    ------
    DataUnavailableError
        The hub cannot be reached and the split is not in the ``datasets`` cache.
    ChecksumError
        The split does not have the rows of :data:`HUB_SPLIT_ROWS`.
    """
    import datasets
    info = CORPORA[corpus]
    try:
        ds = datasets.load_dataset(info.hub_id, split=split, verification_mode="basic_checks")
    except Exception as err:  # offline, not cached, hub down: all end in the same advice
        raise DataUnavailableError(no_data_message(corpus, split, f"{type(err).__name__}: {err}")) from None
    expected = HUB_SPLIT_ROWS.get(corpus, {}).get(split)
    if expected is not None and ds.num_rows != expected:
        raise ChecksumError(
            f"{info.hub_id} split {split!r} has {ds.num_rows} rows, expected {expected}: the hub's copy changed "
            "or the download is incomplete. Clear it from the datasets cache and load it again, or use a "
            "local copy (POSGEOM_DATA_DIR)"
        )
    return ds


def _hash_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class DataSource:
    """Where one split of a corpus comes from.

    Attributes
    ----------
    corpus : str
        ``"sst2"``, ``"imdb"`` or ``"path"`` (a local file or folder of texts).
    split : str or None
    kind : str
        ``"local"`` (a data folder), ``"hub"`` or ``"path"``.
    location : str
        The file, the data folder or the hub id.
    files : tuple of Path
        The local files read (empty for the hub).
    sha256 : dict
        File name → sha256 of the local files.
    verified : bool
        Whether the files were checked against the expected checksums.
    fingerprint : str
        sha256 identifying the content (of the files' hashes, or of the hub texts).
    text_column, label_column : str or None
    """

    corpus: str
    split: str | None
    kind: str
    location: str
    files: tuple[Path, ...]
    sha256: dict
    verified: bool
    fingerprint: str
    text_column: str
    label_column: str | None
    dataset: object = field(default=None, repr=False, compare=False)

    def describe(self) -> dict:
        """A JSON-ready description (for reports and result manifests)."""
        return {
            "corpus": self.corpus, "split": self.split, "kind": self.kind, "location": self.location,
            "sha256": dict(self.sha256), "verified": self.verified, "fingerprint": self.fingerprint,
            "text_column": self.text_column,
        }


@dataclass(frozen=True)
class TextCorpus:
    """The texts of one split.

    Attributes
    ----------
    texts : list of str, length n_texts
    labels : ndarray of shape (n_texts,), int64, or None
    source : DataSource
    n_rows : int
        Rows in the source, before any empty text was dropped.
    n_empty : int
        Rows whose text was missing, empty or only whitespace.
    dropped : ndarray of int64
        Row indices dropped (``on_empty="drop"``).
    """

    texts: list
    labels: np.ndarray | None
    source: DataSource
    n_rows: int
    n_empty: int
    on_empty: str
    dropped: np.ndarray

    @property
    def name(self) -> str:
        return self.source.corpus

    @property
    def split(self) -> str | None:
        return self.source.split


def no_data_message(corpus: str, split: str | None, reason: str = "") -> str:
    """The one message that names the three ways to provide a corpus (:func:`posgeom.offline.no_data_help`)."""
    from ..offline import no_data_help
    what = f"corpus {corpus!r}{f' split {split!r}' if split else ''}"
    return (
        no_data_help(what, reason or "no local copy and the hub cannot be reached")
        + ". To analyse texts of your own instead, pass a file of texts (.parquet, .csv, .jsonl or .txt) "
        "as the corpus (--corpus PATH)"
    )


def _builder_for(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FILE_BUILDERS:
        raise ValueError(
            f"cannot read {str(path)!r}: unknown file type {suffix or '(none)'}; valid types are "
            f"{', '.join(FILE_BUILDERS)}"
        )
    return FILE_BUILDERS[suffix]


def read_local_table(path: str | Path, sha256: str | None = None):
    """A local file of texts as a ``pyarrow.Table``, parsed from the very bytes whose sha256 is checked.

    Parameters
    ----------
    path : path
        A ``.parquet``, ``.csv``, ``.json``/``.jsonl`` (records, one a line, or a JSON list) or ``.txt``
        (one text a line, column ``text``) file.
    sha256 : str, optional
        The expected digest; a file that changed since it was checked raises :class:`ChecksumError`.
    """
    import pyarrow as pa
    path = Path(path)
    builder = _builder_for(path)
    data = path.read_bytes()
    if sha256 is not None and sha256_bytes(data) != sha256:
        raise ChecksumError(
            f"{str(path)!r} changed while it was being read (its sha256 is no longer {sha256[:16]}...); run again"
        )
    try:
        if builder == "parquet":
            import pyarrow.parquet as pq
            return pq.read_table(pa.BufferReader(data))
        if builder == "csv":
            import pyarrow.csv as pcsv
            return pcsv.read_csv(pa.BufferReader(data))
        if builder == "text":
            return pa.table({"text": pa.array(data.decode("utf-8").splitlines(), type=pa.string())})
        text = data.decode("utf-8")
        stripped = text.lstrip()
        if stripped.startswith("["):
            return pa.Table.from_pylist(json.loads(text))
        import pyarrow.json as pjson
        return pjson.read_json(pa.BufferReader(data))
    except Exception as err:  # noqa: BLE001 - every parser error means the same thing: not a readable file
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ValueError(
            f"cannot read {str(path)!r} as {builder} ({type(err).__name__}: {first}); the file is damaged or not "
            f"a {builder} file: copy it again or fix it"
        ) from None


def pick_text_column(columns: list[str], text_column: str | None, where: str) -> str:
    """``text_column`` if present, else the first of ``text`` and ``sentence``; a ``ValueError`` naming ``where``."""
    if text_column is not None:
        if text_column not in columns:
            raise ValueError(
                f"text column {text_column!r} not found in {where}; its columns are {columns}. "
                "Pass the right one with text_column= (--text-column)"
            )
        return text_column
    for name in _AUTO_TEXT_COLUMNS:
        if name in columns:
            return name
    raise ValueError(
        f"no text column in {where}: its columns are {columns}, none of {list(_AUTO_TEXT_COLUMNS)}. "
        "Name the column holding the texts with text_column= (--text-column)"
    )


def _path_source(path: Path, split: str | None, text_column: str | None) -> DataSource:
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in FILE_BUILDERS)
        splits = [p.stem for p in found]
        if not found:
            raise ValueError(f"folder {str(path)!r} holds no file of texts ({', '.join(FILE_BUILDERS)})")
        if split is None and "train" not in splits:
            if len(found) > 1:
                raise ValueError(
                    f"folder {str(path)!r} holds {len(found)} files of texts ({', '.join(p.name for p in found)}) "
                    f"and no train file; choose one with --split ({', '.join(splits)})"
                )
            split = splits[0]  # the folder's only file of texts
        split = "train" if split is None else split
        if split not in splits:
            raise ValueError(f"unknown split {split!r} for folder {str(path)!r}; valid splits are {', '.join(splits)}")
        file = found[splits.index(split)]
    elif path.is_file():
        if split is not None:
            raise ValueError(f"--split applies to corpus names and folders, not to the single file {str(path)!r}")
        file = path
    else:
        raise ValueError(
            f"unknown corpus {str(path)!r}; valid corpora are {', '.join(CORPORA)}, synthetic:FAMILY, "
            "or an existing file or folder of texts"
        )
    _builder_for(file)
    digest = sha256_file(file)
    import pyarrow.parquet as pq
    try:
        columns = pq.read_schema(file).names if file.suffix.lower() == ".parquet" else None
    except Exception as err:  # noqa: BLE001 - any parser error: not a readable parquet file
        raise ValueError(
            f"cannot read {str(file)!r} as parquet ({type(err).__name__}: {str(err).strip()[:200]}); the file is "
            "damaged or not a parquet file: copy it again or fix it"
        ) from None
    text_col = text_column
    if columns is not None:
        text_col = pick_text_column(columns, text_column, str(file))
    return DataSource(
        "path", split, "path", str(file), (file,), {file.name: digest}, False,
        _hash_json({"files": {file.name: digest}}), text_col or "", "label",
    )


def resolve_source(
    corpus: str | Path,
    split: str | None = None,
    *,
    data_dir: str | Path | None = None,
    text_column: str | None = None,
    verify: bool = True,
) -> DataSource:
    """Find one split of a corpus: a local data folder, the hub, or a local file.

    Parameters
    ----------
    corpus : str or Path
        ``"sst2"``, ``"imdb"``, or a path to a file or folder of texts.
    split : str, optional
        Default: the corpus's ``default_split`` (``"train"``).
    data_dir : path, optional
        Data folder; default ``get_settings().data_dir`` (``POSGEOM_DATA_DIR``).
    verify : bool
        Check local files of named corpora against the expected checksums (a mismatch raises
        :class:`ChecksumError`); ``False`` records ``verified=False``.
    """
    if isinstance(corpus, Path) or corpus not in CORPORA:
        if isinstance(corpus, str) and (corpus in ("", "synthetic") or corpus.startswith("synthetic:")):
            raise ValueError(f"unknown corpus {corpus!r}; valid corpora are {', '.join(CORPORA)} or a path")
        return _path_source(Path(corpus).expanduser(), split, text_column)
    info = CORPORA[corpus]
    split = info.default_split if split is None else split
    if split not in info.splits:
        raise ValueError(f"unknown split {split!r} for {corpus}; valid splits are {', '.join(info.splits)}")
    text_col = text_column or info.text_column
    folder = Path(data_dir).expanduser() if data_dir is not None else get_settings().data_dir
    if folder is not None:
        rel = f"{corpus}/{split}.parquet"
        file = folder / rel
        if not file.is_file():
            raise DataUnavailableError(no_data_message(corpus, split, f"{str(file)!r} does not exist"))
        digest = sha256_file(file)
        if verify:
            expected = expected_checksums(folder)[rel]
            if digest != expected:
                raise ChecksumError(
                    f"{rel} in {str(folder)!r} has sha256 {digest[:16]}..., expected {expected[:16]}... (the copy "
                    "the book was computed from, or the one posgeom data download recorded): the file is damaged or a different version. Copy it "
                    "again, or pass verify=False (--no-verify) to use it anyway, knowing the numbers will differ "
                    "from the book's"
                )
        return DataSource(
            corpus, split, "local", str(folder), (file,), {rel: digest}, bool(verify),
            _hash_json({"files": {rel: digest}}), text_col, info.label_column,
        )
    ds = load_hub_split(corpus, split)
    texts = _column_texts(ds, pick_text_column(list(ds.column_names), text_col, info.hub_id))
    h = hashlib.sha256()
    for t in texts:
        h.update(b"\x00" if t is None else t.encode())
        h.update(b"\x01")
    return DataSource(
        corpus, split, "hub", info.hub_id, (), {}, False, _hash_json({"hub": info.hub_id, "texts": h.hexdigest()}),
        text_col, info.label_column, ds,
    )


def _arrow_column(ds, column: str):
    """One column of a ``pyarrow.Table`` or a ``datasets.Dataset``, as arrow."""
    import pyarrow as pa
    return ds[column] if isinstance(ds, pa.Table) else ds.with_format("arrow")[column]


def _column_texts(ds, column: str) -> list:
    """A text column as a list (None kept), checked to hold strings."""
    import pyarrow as pa
    col = _arrow_column(ds, column)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_null(col.type)):
        raise ValueError(f"column {column!r} holds {col.type}, not text; name the text column with text_column=")
    return col.to_pylist()


def load_texts(
    corpus: str | Path | DataSource,
    split: str | None = None,
    *,
    data_dir: str | Path | None = None,
    text_column: str | None = None,
    verify: bool = True,
    on_empty: str = "raise",
) -> TextCorpus:
    """Load the texts (and labels) of one split.

    Parameters
    ----------
    corpus : str, Path or DataSource
        See :func:`resolve_source` (a resolved source is used as is).
    on_empty : {"raise", "drop", "keep"}
        Empty texts (missing, ``""``, whitespace): an error (default), dropped with a warning (indices in
        ``TextCorpus.dropped``), or kept as ``""``.

    Returns
    -------
    TextCorpus
        ``texts`` (n_texts,), ``labels`` (n_texts,) or None.
    """
    check_choice(on_empty, "on_empty", EMPTY_POLICIES, plural="values")
    source = corpus if isinstance(corpus, DataSource) else resolve_source(
        corpus, split, data_dir=data_dir, text_column=text_column, verify=verify
    )
    if source.dataset is not None:
        ds = source.dataset
    else:
        ds = read_local_table(source.files[0], next(iter(source.sha256.values())))
    columns = list(ds.column_names)
    text_col = pick_text_column(columns, source.text_column or text_column, source.location)
    texts = _column_texts(ds, text_col)
    labels = None
    if source.label_column and source.label_column in columns:
        labels = np.asarray(_arrow_column(ds, source.label_column).to_numpy(zero_copy_only=False), dtype=np.int64)
    n_rows = len(texts)
    empty = np.fromiter((t is None or not t.strip() for t in texts), dtype=bool, count=n_rows)
    n_empty = int(empty.sum())
    dropped = np.zeros(0, dtype=np.int64)
    where = f"{source.corpus}{f'/{source.split}' if source.split else ''} ({source.location})"
    if n_empty:
        first = np.flatnonzero(empty)[:5].tolist()
        if on_empty == "raise":
            raise ValueError(
                f"{n_empty} of {n_rows} texts in {where} are empty (rows {first}{'...' if n_empty > 5 else ''}); "
                "pass on_empty='drop' (--on-empty drop) to drop them or 'keep' to keep them as empty sequences"
            )
        if on_empty == "drop":
            dropped = np.flatnonzero(empty).astype(np.int64)
            warnings.warn(f"dropped {n_empty} empty texts of {n_rows} in {where} (rows {first}...)", stacklevel=2)
            keep = ~empty
            texts = [t for t, k in zip(texts, keep) if k]
            labels = labels[keep] if labels is not None else None
        else:
            texts = ["" if t is None else t for t in texts]
    if text_col != source.text_column:
        source = replace(source, text_column=text_col)
    return TextCorpus(texts, labels, source, n_rows, n_empty, on_empty, dropped)
