"""``posgeom about``: versions, device, scale, data and model availability (see :func:`posgeom.about`)."""

from __future__ import annotations

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom about``."""
    p = subparsers.add_parser("about", help="print versions, device, scale, data and model availability")
    p.add_argument("--scale", help="quick or paper (default: POSGEOM_SCALE or quick)")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:N or mps (default: POSGEOM_DEVICE or auto)")
    p.add_argument("--pretrained", help="pretrained model (default: POSGEOM_PRETRAINED or bert-base-uncased)")

    def run(args) -> int:
        from ..about import about
        from ..config import get_settings
        about(get_settings(scale=args.scale, device=args.device, pretrained=args.pretrained))
        return 0

    p.set_defaults(func=run)
