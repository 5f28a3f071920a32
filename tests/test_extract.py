"""Reading one exercise's definitions from a notebook (posgeom.classroom.extract): the function, what its
global names lead to, nothing else."""

from __future__ import annotations

import nbformat

from posgeom.classroom.extract import exercise_program


def _nb(*cells):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def _run(program, *args):
    space: dict = {}
    exec(program.source, space)  # noqa: S102 - the test's own code
    return space[program.function](*args)


def test_only_what_the_function_uses_is_read_and_the_last_definition_wins():
    nb = _nb("%matplotlib inline\nimport math\nimport time", "while True:\n    time.sleep(1)", "SCALE = 2\nOTHER = 1 / 0",
             "def helper(x):\n    return math.sqrt(x) * SCALE", "def f(x):\n    raise NotImplementedError",
             "def f(x):\n    return helper(x) + offset", "offset = 1\noffset += 1", "f(4)\nprint('checked')")
    program = exercise_program(nb, "f")
    assert "while" not in program.source and "1 / 0" not in program.source and "print" not in program.source
    assert "NotImplementedError" not in program.source and program.skipped == ()
    assert _run(program, 4) == 2 * 2 + 2


def test_compound_statements_star_imports_and_cells_that_are_not_python():
    nb = _nb("from math import *", "try:\n    import numpy as np\nexcept ImportError:\n    np = None",
             "if True:\n    def g(x):\n        return np.float64(sqrt(x))", "this is not python (", "def h(): pass")
    program = exercise_program(nb, "g")
    assert program.skipped == (4,) and "def h" not in program.source
    assert _run(program, 9.0) == 3.0
    assert not exercise_program(nb, "missing").defined


def test_local_names_arguments_and_comprehensions_are_not_globals():
    nb = _nb("x = 10\ny = 1 / 0", "def f(y):\n    z = [y for y in range(3)]\n    return sum(z) + y + x")
    program = exercise_program(nb, "f")
    assert "1 / 0" not in program.source and _run(program, 1) == 3 + 1 + 10
