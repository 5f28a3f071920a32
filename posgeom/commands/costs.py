"""``posgeom costs``: the cost model's table of the paper scale, or (``--write-readme``) the README's copy."""

from __future__ import annotations

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom costs``."""
    p = subparsers.add_parser(
        "costs", help="the paper scale's cost per experiment: tokens, FLOPs, GPU memory and time",
        description="Print the cost model's table of every paper-scale experiment that runs a model "
                    "(posgeom.costmodel), or rewrite README.md's cost table from it.")
    p.add_argument("--proposed", action="store_true", help="cost the proposed settings (posgeom.costmodel.PROPOSED)")
    p.add_argument("--write-readme", action="store_true",
                   help="rewrite the cost table and the assumptions line of the checkout's README.md")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..config import checkout_root
    from ..costmodel import experiment_costs, format_costs, update_readme
    if args.write_readme:
        root = checkout_root()
        if root is None:
            raise ValueError("posgeom costs --write-readme rewrites the README of a posgeom checkout: "
                             "run it inside the repository")
        print(f"README.md {'updated' if update_readme(root / 'README.md') else 'already up to date'}")
        return 0
    print(format_costs(experiment_costs(proposed=args.proposed)))
    return 0
