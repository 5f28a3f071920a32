"""``posgeom decide CLAIM --model NAME``: decide a check that a missing model leaves "inconclusive here" (C10,
S1, S2) on a model that can be loaded, by the chapter's rule (:func:`posgeom.decide.decide_claim`)."""

from __future__ import annotations

import json

__all__ = ["add", "build_lines"]

#: The claims the command decides (kept here too, so that ``posgeom --help`` imports nothing heavy).
CLAIMS = ("C10", "S1", "S2")


def add(subparsers) -> None:
    """Register ``posgeom decide``."""
    p = subparsers.add_parser(
        "decide", help="decide C10, S1 or S2 on a model that can be loaded (BERT-base, GPT-2, or a local folder)",
        description="Compute the numbers of one check on a given model exactly as its chapter does (C10: "
                    "'Inside BERT'; S1, S2: 'Learned tables'), store them in the results registry under the "
                    "model's name, decide the claim by the chapter's rule, and print the claim, the model, the "
                    "scale, the numbers, the verdict and its reason.")
    p.add_argument("claim", metavar="CLAIM", help=f"the claim to decide: {', '.join(CLAIMS)}")
    p.add_argument("--model", required=True, metavar="NAME",
                   help="a hub name (bert-base-uncased for C10, gpt2 for S1 and S2) or a folder written by "
                        "save_pretrained")
    p.add_argument("--scale", choices=("quick", "paper"), default=None,
                   help="the scale of the chapter's settings (default: POSGEOM_SCALE, else quick)")
    p.add_argument("--device", default=None,
                   help="auto, cpu, cuda, cuda:N or mps (default: POSGEOM_DEVICE, else auto); C10 only")
    p.add_argument("--force", action="store_true", help="recompute the model's result even when the registry holds it")
    p.set_defaults(func=_run)


def build_lines(found) -> list[str]:
    """The lines ``posgeom decide`` prints for a :class:`posgeom.decide.ClaimDecision`."""
    from ..report import PAPER_CLAIMS
    d = found.decision
    lines = [f"claim: {found.claim} ({PAPER_CLAIMS[found.claim].statement})",
             f"model: {found.model}",
             f"scale: {found.scale}",
             f"ours: {found.ours}",
             f"numbers: {json.dumps(found.numbers, sort_keys=True)}",
             f"verdict: {d.verdict}"]
    if d.why:
        lines.append(f"why: {d.why}")
    if d.would_decide:
        lines.append(f"would decide: {d.would_decide}")
    lines.append(f"stored: {found.provenance}")
    return lines


def _run(args) -> int:
    from ..config import get_settings
    from ..decide import check_claim, decide_claim
    from ..validation import printable
    claim = check_claim(args.claim)  # a wrong claim fails before anything is loaded
    settings = get_settings(scale=args.scale, device=args.device)
    found = decide_claim(claim, args.model, settings, force=args.force)
    print(printable("\n".join(build_lines(found))))
    return 0
