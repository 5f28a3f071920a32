"""posgeom.progress: tqdm switched off by POSGEOM_PROGRESS=0, no 'IProgress not found' warning."""

import sys

from posgeom.progress import progress_enabled, tqdm


def test_progress_switch(monkeypatch):
    monkeypatch.setenv("POSGEOM_PROGRESS", "0")
    assert not progress_enabled()
    assert tqdm(range(3)).disable
    monkeypatch.setenv("POSGEOM_PROGRESS", "1")
    assert progress_enabled()
    assert list(tqdm(range(3), file=sys.stderr)) == [0, 1, 2]


def test_no_iprogress_warning_in_a_jupyter_kernel():
    """In a real kernel without ipywidgets, tqdm.auto warns on first import; posgeom's import must not."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import posgeom\n"
        "from posgeom.progress import tqdm\n"
        "from tqdm.auto import tqdm as plain_auto\n"
        "sum(tqdm(range(5)))"
    )]
    NotebookClient(nb, timeout=1800, startup_timeout=600, kernel_name="python3").execute()
    text = "".join(
        out.get("text", "") + str(out.get("data", {}).get("text/plain", "")) for out in nb.cells[0].outputs
    )
    assert "IProgress" not in text and "TqdmWarning" not in text, text
    assert "10" in text
