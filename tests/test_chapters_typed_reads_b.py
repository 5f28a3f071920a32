"""Issue #46, part B: nine chapter modules read their stored results typed (``posgeom.registry.typed.as_record``
into frozen dataclasses), never a stored value by string key, and none is longer than the house limit."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import posgeom.chapters

CHAPTERS = Path(posgeom.chapters.__file__).parent

#: The modules of part B (issue #46, item 1).
MODULES = ("learned_tables", "learned_tables_fail", "theorem1_necessity",
           "theorem4_separation", "monotonicity", "optimal_encoding", "encodings_at_a_glance", "powered")

#: A stored value read by string key: ``result.values["x"]``, ``result.values.get("x")``, ``result.arrays["x"]``,
#: ``result.arrays.get("x")`` (the issue's count).
STRING_KEY_READ = re.compile(r"\.(values|arrays)(\[|\.get\()")

#: The house limit of a module's length (the issue's rule).
MAX_LINES = 600


@pytest.mark.parametrize("module", MODULES)
def test_no_stored_value_is_read_by_string_key(module):
    source = (CHAPTERS / f"{module}.py").read_text()
    hits = [f"{k}: {line.strip()}" for k, line in enumerate(source.splitlines(), 1) if STRING_KEY_READ.search(line)]
    assert not hits, f"{module} reads stored values by string key:\n" + "\n".join(hits)


@pytest.mark.parametrize("module", MODULES)
def test_the_module_is_at_most_the_house_limit_long(module):
    n = len((CHAPTERS / f"{module}.py").read_text().splitlines())
    assert n <= MAX_LINES, f"{module}.py has {n} lines (at most {MAX_LINES})"


def test_the_typed_reads_refuse_a_result_that_lacks_a_field():
    """A typed read names what is missing, where a look-up by key said only the key."""
    from types import SimpleNamespace

    from posgeom.chapters.learned_tables import dropout_rate
    from posgeom.experiments.table_dropout import DropoutStudyRecord
    from posgeom.registry.typed import as_record

    study = SimpleNamespace(values={"runs": [], "dropouts": [0.0, 0.1], "seeds": [0, 1], "n_train": 128,
                                    "passes": 100.0}, arrays={})
    assert dropout_rate(as_record(study, DropoutStudyRecord)) == 0.1
    del study.values["passes"]
    with pytest.raises(KeyError, match="passes"):
        as_record(study, DropoutStudyRecord)


def test_a_tails_study_reads_into_its_record():
    """The tails study waits for a GPU at paper scale (nothing committed): its record reads a planted result."""
    from types import SimpleNamespace

    from posgeom.experiments.undertrained_tails import TailsRecord
    from posgeom.registry.typed import as_record

    per = {q: [0.5, 0.6] for q in ("accuracy_head", "accuracy_tail", "movement_head", "movement_tail",
                                   "neighbour_cos_head", "neighbour_cos_tail")}
    tails = SimpleNamespace(values={"conditions": ["skewed", "uniform"], "boundary": 4, "seeds": [0, 1],
                                    "skewed": {**per, "frac_long": 0.1, "n_train": 100},
                                    "uniform": {**per, "frac_long": 1.0, "n_train": 100}},
                            arrays={"reach": np.ones((2, 8)), "movement": np.zeros((2, 2, 8)),
                                    "tables_final": np.zeros((2, 2, 8, 4)), "tables_initial": np.zeros((2, 2, 8, 4))})
    t = as_record(tails, TailsRecord)
    assert t.conditions == ("skewed", "uniform") and t.boundary == 4 and t.reach.shape == (2, 8)
    assert t.skewed.accuracy_tail == (0.5, 0.6) and t.skewed.n_train == 100 and t.skewed.frac_long == 0.1
