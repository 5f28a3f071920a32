"""The site around the book, without building it: publishing workflow, licence, citation, the one
repository URL and what it drives (launch buttons), head metadata, sitemap, and Thebe switched off.

The JSON schemas in ``tests/data/schemas/`` are vendored copies (no network in the tests): the GitHub
workflow schema of SchemaStore and the Citation File Format 1.2.0 schema, as shipped by
check-jsonschema 0.39.0 (``check_jsonschema/builtin_schemas/vendor/``), with their licences.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import tomllib
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit
from xml.etree import ElementTree

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "tests" / "data" / "schemas"
WORKFLOW = REPO / ".github" / "workflows" / "publish.yml"


def _extension():
    spec = importlib.util.spec_from_file_location("posgeom_book", REPO / "book" / "_ext" / "posgeom_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config() -> dict:
    return yaml.safe_load((REPO / "_config.yml").read_text())


def _workflow() -> dict:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as the boolean True; GitHub (and the schema) mean the string.
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def _validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(validator, instance) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(instance)]


# ----------------------------------------------------------------------------- publishing workflow


def test_publish_workflow_is_valid_against_the_github_workflow_schema():
    validator = _validator("github-workflows.json")
    workflow = _workflow()
    assert not _errors(validator, workflow)
    broken = copy.deepcopy(workflow)
    broken["jobs"]["build"]["runs-on"] = 42
    del broken["jobs"]["deploy"]["steps"]
    assert _errors(validator, broken), "the schema accepts a broken workflow: the check would not catch one"


def test_publish_workflow_builds_with_committed_results_and_the_cache_then_deploys_to_pages():
    workflow = _workflow()
    assert "main" in workflow["on"]["push"]["branches"]
    assert {"pages": "write", "id-token": "write"}.items() <= workflow["permissions"].items()
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    uses = [step.get("uses", "") for step in build["steps"]]
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    assert uses[0].startswith("actions/checkout@") and "lfs" not in json.dumps(build["steps"][0])
    cache = next(step for step in build["steps"] if step.get("uses", "").startswith("actions/cache@"))
    assert "_build/.jupyter_cache" in cache["with"]["path"].split()
    assert cache["with"]["restore-keys"].strip()  # a changed notebook still restores the previous cache
    # the cache is restored before the book is built, the site uploaded after
    at = {name: next(i for i, u in enumerate(uses) if u.startswith(name)) for name in
          ("actions/cache@", "actions/upload-pages-artifact@")}
    build_step = next(i for i, step in enumerate(build["steps"]) if "bash scripts/book" in step.get("run", ""))
    assert at["actions/cache@"] < build_step < at["actions/upload-pages-artifact@"]
    assert build["steps"][at["actions/upload-pages-artifact@"]]["with"]["path"] == "_build/html"
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs  # no multi-GB CUDA wheel on the runner
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    # Colab's launch button opens the exports from the branch this step fills
    push = next(step["run"] for step in build["steps"] if "_notebooks" in step.get("run", ""))
    branch = _extension().COLAB_BRANCH
    assert f"--initial-branch {branch}" in push and push.rstrip().endswith(f".git\" {branch}")


def test_readme_says_how_to_publish_on_any_static_host():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Publishing the book", 1)[1].split("\n## ", 1)[0]
    for needed in ("publish.yml", "html.baseurl", "_build/html", "404.html", "Any other static host"):
        assert needed in section, f"README's publishing section does not mention {needed}"


# ----------------------------------------------------------------------------- licence and citation


def test_licence_is_mit_and_matches_pyproject():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the posgeom contributors" in text
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == "MIT"


def test_citation_file_is_valid_and_cites_the_book_and_the_paper():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert not _errors(_validator("citation-file-format.json"), citation)
    assert citation["license"] == "MIT"
    assert citation["repository-code"] == _config()["repository"]["url"]
    assert citation["url"] == _config()["html"]["baseurl"]
    paper = next(r for r in citation["references"] if "arXiv:2604.05217" in json.dumps(r))
    assert paper["authors"][0]["family-names"] == "Cirrincione"
    assert paper["title"] == "On the Geometry of Positional Encodings in Transformers"
    assert _errors(_validator("citation-file-format.json"), {**citation, "cff-version": 1})


# ----------------------------------------------------------------------------- one repository URL


def test_one_repository_url_drives_the_buttons_and_launchers():
    config = _config()
    url = config["repository"]["url"]
    assert _extension().github_repository(url) == ("posgeom", "posgeom")
    assert config["repository"]["branch"] == "main"
    html = config["html"]
    assert html["use_repository_button"] and html["use_edit_page_button"] and html["use_issues_button"]
    assert html["baseurl"].startswith("https://") and html["baseurl"].endswith("/")
    assert (REPO / html["favicon"]).is_file()
    launch = config["launch_buttons"]
    assert launch["binderhub_url"] == "https://mybinder.org"
    assert launch["colab_url"] == "https://colab.research.google.com"
    assert "thebe" not in launch and "thebe" not in json.dumps(config.get("sphinx", {}))
    assert config["sphinx"]["config"]["posgeom_description"] == config["description"]


def test_colab_url_is_well_formed_and_a_bad_repository_url_is_refused():
    ext = _extension()
    url = ext.colab_url("https://github.com/posgeom/posgeom", "notebooks/real-corpora")
    parts = urlsplit(url)
    assert parts.scheme == "https" and parts.netloc == "colab.research.google.com"
    assert parts.path == f"/github/posgeom/posgeom/blob/{ext.COLAB_BRANCH}/real-corpora.ipynb"
    assert ext.colab_url("https://github.com/a/b.git", "notebooks/x", "https://colab.example/").startswith(
        "https://colab.example/github/a/b/blob/")
    for bad in ("https://gitlab.com/a/b", "https://github.com/a", "github.com/a/b"):
        with pytest.raises(ValueError, match="not a GitHub repository URL"):
            ext.github_repository(bad)


def test_binder_builds_environment_yml_which_installs_posgeom():
    # a binder/ (or .binder/) folder would make Binder ignore environment.yml at the root
    assert not (REPO / "binder").exists() and not (REPO / ".binder").exists()
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    install = [line for line in pip if line.startswith("-e .")]
    assert install and "book" in install[0] and "nlp" in install[0]
    assert any(line.startswith("jupytext==") for line in pip)  # opens the chapters' .md as notebooks


def test_binder_post_build_opens_chapters_as_notebooks(tmp_path):
    """postBuild (run by Binder after environment.yml) installs the lab setting of scripts/lab."""
    import os
    import stat
    import subprocess

    post_build = REPO / "postBuild"
    assert post_build.stat().st_mode & stat.S_IXUSR, "postBuild must be executable"
    done = subprocess.run(["bash", str(post_build)], cwd=REPO, env={**os.environ, "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / ".jupyter" / "labconfig" / "default_setting_overrides.json").read_text())
    viewers = written["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == "Jupytext Notebook"


# ----------------------------------------------------------------------------- head, sitemap, 404, Thebe


def test_head_metadata_has_description_open_graph_and_escapes():
    tags = _extension().head_metadata(title='Real corpora "SST-2"', description="a <b> & c", book_title="Book",
                                      page_url="https://x.org/a.html", image_url="https://x.org/_static/i.png")
    found = dict(re.findall(r'<meta (?:name|property)="([^"]+)" content="([^"]*)" />', tags))
    assert found["description"] == found["og:description"] == "a &lt;b&gt; &amp; c"
    assert found["og:title"] == "Real corpora &quot;SST-2&quot; — Book"
    assert found["og:image"] == "https://x.org/_static/i.png" and found["og:url"] == "https://x.org/a.html"
    assert found["twitter:card"] == "summary_large_image"


def test_page_description_takes_the_first_paragraph_and_cuts_at_a_word():
    from docutils import nodes

    ext = _extension()
    doc = nodes.document(None, None)
    doc += nodes.paragraph(text="Download this chapter as a Jupyter notebook: x.ipynb (open it in JupyterLab).")
    doc += nodes.paragraph(text="Short.")
    doc += nodes.paragraph(text="word " * 100)
    text = ext.page_description(doc, "fallback")
    assert text.startswith("word word") and text.endswith("…") and len(text) <= ext.DESCRIPTION_CHARS + 1
    assert ext.page_description(None, "the  book's\n description") == "the book's description"


def test_sitemap_lists_absolute_urls():
    xml = _extension().sitemap_xml(["https://x.org/a.html", "https://x.org/b&c.html"])
    root = ElementTree.fromstring(xml)
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    assert [e.text for e in root.findall("s:url/s:loc", ns)] == ["https://x.org/a.html", "https://x.org/b&c.html"]
    assert _extension().site_url("https://x.org/book") == "https://x.org/book/"


def test_thebe_is_switched_off():
    def thebe_handler():
        pass

    def own_handler():
        pass

    thebe_handler.__module__ = "sphinx_thebe"
    listeners = {"doctree-resolved": [SimpleNamespace(handler=thebe_handler), SimpleNamespace(handler=own_handler)]}
    app = SimpleNamespace(events=SimpleNamespace(listeners=listeners),
                          registry=SimpleNamespace(css_files=[("sphinx-thebe.css", {}), ("posgeom.css", {})]))
    _extension()._switch_off_thebe(app, None)
    assert [entry.handler for entry in listeners["doctree-resolved"]] == [own_handler]
    assert app.registry.css_files == [("posgeom.css", {})]


def test_jupyter_book_passes_the_repository_and_launch_buttons_to_the_theme():
    """The final Sphinx configuration jupyter-book derives from _config.yml: the theme options written
    under sphinx.config are merged with the repository and launch settings, not put in their place."""
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(user_yaml=REPO / "_config.yml", cli_config={"latex_individualpages": False},
                                 sourcedir=REPO, use_external_toc=False)
    theme = config["html_theme_options"]
    assert theme["repository_url"] == _config()["repository"]["url"] and theme["repository_branch"] == "main"
    assert theme["use_repository_button"] and theme["use_edit_page_button"]
    assert theme["launch_buttons"]["binderhub_url"] and theme["launch_buttons"]["colab_url"]
    assert theme["use_download_button"] and theme["show_toc_level"] == 2  # the book's own options kept
    assert config["html_baseurl"] == _config()["html"]["baseurl"]
