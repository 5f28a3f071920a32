"""``posgeom data``: where SST-2, IMDB and the pretrained model come from; ``data download``: an offline copy."""

from __future__ import annotations

from pathlib import Path

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom data`` and ``posgeom data download``."""
    p = subparsers.add_parser(
        "data", help="where SST-2, IMDB and the pretrained model come from; `data download` prepares an offline copy")
    sub = p.add_subparsers(dest="data_command")
    d = sub.add_parser("download", help="write SST-2 and IMDB from the hub into a folder for POSGEOM_DATA_DIR")
    d.add_argument("--to", default="posgeom-data", help="the folder to create (default: ./posgeom-data)")

    def show(args) -> int:
        from ..corpora.download import data_sources
        from ..offline import decide
        from ..validation import printable
        decision = decide()
        rows = data_sources(decision)
        width = max(len(what) for what, _ in rows)
        for what, where in rows:
            print(printable(f"{what.ljust(width)}  {where}"))  # a folder's name may hold terminal escapes
        for problem in decision.problems:
            print(printable(f"problem: {problem}"))
        return 1 if decision.problems else 0

    def download(args) -> int:
        from ..corpora.download import download_corpora
        from ..corpora.real import FOLDER_CHECKSUMS
        from ..validation import printable
        written = download_corpora(args.to)
        folder = Path(args.to).expanduser().resolve()
        print(printable(f"wrote {len(written)} files and {FOLDER_CHECKSUMS} to {folder}"))
        print(printable(f"use it with: export POSGEOM_DATA_DIR={folder}"))
        return 0

    p.set_defaults(func=show)
    d.set_defaults(func=download)
