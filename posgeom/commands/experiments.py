"""``posgeom experiments CHAPTER`` (also ``python -m posgeom.experiments CHAPTER``): one chapter's experiments
outside the book, at ``POSGEOM_SCALE``, into the results registry."""

from __future__ import annotations

import json

__all__ = ["add", "CHAPTERS"]


def _real_corpora(settings, corpora, force: bool) -> dict:
    from ..experiments.real_corpora import run_all
    results = run_all(settings, corpora=corpora, force=force)
    for corpus in corpora:
        res = results[f"stress_{corpus}"]
        print(f"\n{corpus}: {res.path}")
        for row in res.values["rows"]:
            print(f"  {row['encoding']:<24} paper {row['paper']:>10.4f}   scale_free {row['scale_free']:.4f}   "
                  f"({row['options']})")
    return {k: str(v.path) for k, v in results.items()}


def _monotonicity(settings, corpora, force: bool) -> dict:
    from ..chapters.monotonicity import monotonicity_dataframe
    from ..experiments.monotonicity import CONFIGS, REGIMES, run_monotonicity_table, run_ntk, run_violation_intervals
    out = {}
    for corpus in corpora:
        res = run_monotonicity_table(settings, corpus=corpus, force=force)
        out[f"table_{corpus}"] = str(res.path)
        intervals = None
        if corpus in CONFIGS[settings.scale].interval_corpora:
            intervals = run_violation_intervals(settings, corpus=corpus, force=force)
            out[f"violation_intervals_{corpus}"] = str(intervals.path)
        print(monotonicity_dataframe(res, intervals).to_string())
        print("closest MDS rank to 22%:", res.values["closest_rank"], res.values["closest_violation"])
    for regime in REGIMES:
        for seed in CONFIGS[settings.scale].ntk.seeds_of(regime):
            res = run_ntk(settings, regime=regime, seed=seed, force=force)
            out[f"ntk_{regime}_{seed}"] = str(res.path)
            print(regime, seed, res.values["final"])
    return out


def _inside_bert(settings, corpora, force: bool) -> dict:
    import numpy as np

    from ..experiments.inside_bert import run_layer_stress
    res = run_layer_stress(settings, force=force)
    for name in ("propagated", "static"):
        print(name, "scale_free per layer:", np.round(res.arrays[f"{name}_pooled"][:, 0], 4).tolist())
    print("residual scale_free per layer:", np.round(res.arrays["residual"][:, 0], 4).tolist())
    print(json.dumps(res.values["peaks"]))
    return {"layer_stress": str(res.path)}


#: Chapter slug → the function that runs its experiments and prints them.
CHAPTERS = {"real-corpora": _real_corpora, "monotonicity": _monotonicity, "inside-bert": _inside_bert}


def add(subparsers) -> None:
    """Register ``posgeom experiments``."""
    p = subparsers.add_parser(
        "experiments", help="run one chapter's experiments outside the book (python -m posgeom.experiments)",
        description="Run one chapter's experiments outside the book, at the scale of POSGEOM_SCALE, into the "
                    "results registry, and print what each stored and where.")
    p.add_argument("chapter", choices=sorted(CHAPTERS), help="the chapter whose experiments to run")
    p.add_argument("--corpus", nargs="+", metavar="CORPUS",
                   help="corpora: sst2, imdb (real-corpora and monotonicity; default: all)")
    p.add_argument("--force", action="store_true", help="recompute even what the registry holds")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..config import get_settings, resolve_device
    from ..experiments.real_corpora import CORPUS_NAMES
    corpora = list(args.corpus or CORPUS_NAMES)
    unknown = [c for c in corpora if c not in CORPUS_NAMES]
    if unknown:
        raise ValueError(f"unknown corpus {', '.join(unknown)}; choose from {', '.join(CORPUS_NAMES)}")
    settings = get_settings()
    print(f"scale={settings.scale} device={resolve_device(settings.device)} pretrained={settings.pretrained} "
          f"results={settings.results_dir}")
    paths = CHAPTERS[args.chapter](settings, corpora, args.force)
    print(json.dumps(paths, indent=1))
    return 0
