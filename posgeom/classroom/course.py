r"""The course build of the book: the same site without the exercises' solutions (``posgeom book --course``).

:func:`course_config` is the book's ``_config.yml`` with this module as a Sphinx extension, which removes every
solution (``{solution}`` blocks, and everything between ``{solution-start}`` and ``{solution-end}``, which
sphinx-exercise's ``hide_solutions`` leaves), and without the buttons that lead to the sources (which hold the
solutions). The repository and the public site stay public, solutions included.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["COURSE_OUTPUT", "course_config", "write_course_config", "setup"]

#: Where ``posgeom book --course`` builds (``<this>/_build/html``), relative to the checkout.
COURSE_OUTPUT = Path("_build") / "course"


def course_config(root: str | Path) -> dict:
    """The book's configuration (``root/_config.yml``) for the course build."""
    import yaml
    root = Path(root).resolve()
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    sphinx = config.setdefault("sphinx", {})
    # the course's config file is written elsewhere: the local extensions' folders are the checkout's
    sphinx["local_extensions"] = {name: str(root / folder)
                                  for name, folder in (sphinx.get("local_extensions") or {}).items()}
    sphinx["extra_extensions"] = [*(sphinx.get("extra_extensions") or []), __name__]
    sphinx.setdefault("config", {})["posgeom_course"] = True
    config.setdefault("html", {}).update(use_repository_button=False, use_issues_button=False,
                                         use_edit_page_button=False)
    config["launch_buttons"] = {}  # Binder would open the sources, solutions and all
    return config


def write_course_config(root: str | Path, folder: str | Path) -> Path:
    """Write :func:`course_config` to ``folder/_config.course.yml``; return its path."""
    import yaml
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "_config.course.yml"
    path.write_text(yaml.safe_dump(course_config(root), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _remove_solutions(app, doctree) -> None:
    """Remove every solution from the page's doctree (gated ones are solution nodes by now)."""
    if not app.config.posgeom_course:
        return
    from sphinx_exercise.nodes import solution_node, solution_start_node
    for node in list(doctree.findall(lambda n: isinstance(n, (solution_node, solution_start_node)))):
        node.parent.remove(node)


def setup(app):
    """The Sphinx extension: ``posgeom_course = True`` removes the solutions."""
    app.add_config_value("posgeom_course", False, "env")
    app.connect("doctree-read", _remove_solutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
