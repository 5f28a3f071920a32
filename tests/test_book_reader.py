"""The built book as a reader meets it (docs/STYLE.md): the summary's answer on its first screen, short
"Why"s and table cells, no template plurals, each chapter's first figure within three screens, the
licence and citation pages, and search that lists the chapters first.

Uses the build and the headless Chromium of ``tests/test_book.py`` (the same session fixtures: the
book is built once per test run).
"""

from __future__ import annotations

import re

import pytest

import test_book
from test_book import ARTIFACTS, pages, parsed

# the session fixtures of tests/test_book.py (one build, one Chromium per test run), used here by name
built_book, served_book, browser = test_book.built_book, test_book.served_book, test_book.browser

pytestmark = [pytest.mark.book]

#: The desk screen the summary must answer on, and the height within which a chapter's first figure starts.
DESK = (1400, 900)
FIRST_FIGURE_PX = 2700
#: The most words a summary "Why" and a chapter's table cell may show.
WHY_MAX_WORDS, CELL_MAX_WORDS = 30, 60
#: A template plural left in a sentence ("run(s)", "reach(es)"), and a percent in the other style ("90 %").
TEMPLATE_PLURAL = re.compile(r"[A-Za-z]\((?:s|es)\)")
SPACED_PERCENT = re.compile(r"\d %")


def _summary(built_book):
    return next(p for p in pages(built_book) if p.name == "does-the-paper-hold-up.html")


def _chapters(built_book):
    return [p for p in pages(built_book) if p.relative_to(built_book).parts[0] == "notebooks"]


def _prose_text(page) -> str:
    """The page's text a reader reads as sentences: code, code output and maths left out."""
    soup = parsed(page)
    main = soup.select_one("main") or soup
    text = []
    for node in main.find_all(string=True):
        if node.find_parent(["pre", "code", "script", "style", "math"]) or node.find_parent(class_=re.compile(
                r"^(highlight|math|MathJax)")):
            continue
        text.append(str(node))
    return "".join(text)  # each piece keeps its own spaces: "0.0" then " % of" reads "0.0 % of"


# --------------------------------------------------------------------------- without a browser


def test_no_why_of_the_summary_is_longer_than_thirty_words(built_book):
    table = parsed(_summary(built_book)).select_one("table.posgeom-bottom-line")
    assert table is not None, "the summary has no table of bottom lines"
    headers = [th.get_text(strip=True) for th in table.select("thead th")]
    column = headers.index("Why")
    whys = [tr.select("th, td")[column].get_text(" ", strip=True) for tr in table.select("tbody tr")]
    assert whys and all(whys), "a claim has no Why"
    longest = max(whys, key=lambda w: len(w.split()))
    assert len(longest.split()) <= WHY_MAX_WORDS, f"a Why of {len(longest.split())} words: {longest}"
    # the bookkeeping is below the table, not in it
    assert not any("not counted:" in w or "decided by" in w for w in whys)


def test_no_template_plural_and_one_percent_style_on_any_chapter_or_the_summary(built_book):
    found = []
    for page in _chapters(built_book) + [_summary(built_book)]:
        text = _prose_text(page)
        found += [f"{page.name}: …{text[max(0, m.start() - 40):m.end() + 10]}…"
                  for pattern in (TEMPLATE_PLURAL, SPACED_PERCENT) for m in pattern.finditer(text)]
    assert not found, "template plurals or '90 %' on the site:\n" + "\n".join(found[:10])


def test_licence_and_citation_pages_exist_and_are_linked(built_book):
    licence = parsed(built_book / "book" / "licence.html").get_text(" ")
    assert "MIT License" in licence and "Permission is hereby granted" in licence
    blocks = [pre.get_text() for pre in parsed(built_book / "book" / "cite.html").select("main pre")]
    assert any(b.startswith("@misc{cirrincione2026geometry,") for b in blocks), blocks
    assert any(b.startswith("@software{posgeom,") for b in blocks), blocks
    for page in (built_book / "book" / "intro.html", _chapters(built_book)[0]):
        links = {a["href"].split("#")[0].rsplit("/", 1)[-1] for a in parsed(page).find_all("a", href=True)}
        assert {"licence.html", "cite.html"} <= links, f"{page.name} does not link the licence and citation pages"


def test_downloads_do_not_point_at_removed_solutions(built_book):
    import nbformat

    for target in sorted((built_book / "_notebooks").glob("*.ipynb")):
        text = "\n".join(c.source for c in nbformat.read(target, as_version=4).cells if c.cell_type == "markdown")
        assert "after the solution" not in text, f"{target.name} points at a solution it does not hold"


#: A header that names a count: its cells are whole numbers, shown without decimals ("5", not "5.000").
COUNT_HEADER = re.compile(r"^(?:n )?(?:seeds|stored results|stored entries|positions kept|n kept|runs)$")
#: A field name of the code ("violation_rate", "scale_free") where a header should hold words.
FIELD_NAME = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")


def _table_rows(table) -> list[list[str]]:
    return [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])] for tr in table.find_all("tr")]


def test_chapter_tables_show_whole_numbers_numeric_order_and_headers_in_words(built_book):
    """In every table of a chapter: a count ("seeds") without decimals, row labels that are numbers in numeric
    order (32, 64, 128, not 128, 32, 512, 64), and no field name of the code as a header."""
    decimals, text_order, fields = [], [], []
    for page in _chapters(built_book):
        for k, table in enumerate(parsed(page).select("main article table")):
            rows = _table_rows(table)
            header = next((r for r in rows if r), [])
            for j, name in enumerate(header):
                if COUNT_HEADER.match(name.lower()):
                    decimals += [f"{page.stem} table {k + 1}, {name}: {r[j]}" for r in rows[1:]
                                 if len(r) == len(header) and re.fullmatch(r"\d[\d,]*\.\d+", r[j])]
                if FIELD_NAME.search(name):
                    fields.append(f"{page.stem} table {k + 1}: {name}")
            labels = [r[0] for r in rows[1:] if r and re.fullmatch(r"\d+", r[0])]
            numbers = [int(x) for x in labels]
            if len(numbers) >= 3 and len(numbers) == len(rows) - 1 and numbers != sorted(numbers) \
                    and labels == sorted(labels):
                text_order.append(f"{page.stem} table {k + 1}: {', '.join(labels)}")
    assert not decimals, "counts shown with decimals:\n" + "\n".join(decimals[:10])
    assert not text_order, "rows of numbers sorted as text:\n" + "\n".join(text_order[:10])
    assert not fields, "field names as headers:\n" + "\n".join(fields[:10])


def test_every_chapter_has_one_box_of_needs_from_the_directive(built_book):
    """The box "What this chapter needs" is the one directive's (a closed dropdown, with the table of the parts
    at paper scale inside), once on every chapter; its download holds the same text as Markdown."""
    import nbformat

    for page in _chapters(built_book):
        boxes = parsed(page).select("main div.admonition.posgeom-needs")
        assert len(boxes) == 1 and "dropdown" in boxes[0]["class"], page.stem
        title = boxes[0].select_one(".admonition-title").get_text(strip=True)
        if title == "What this chapter needs":
            assert boxes[0].select("table tr"), f"{page.stem}: the table of parts is not in the box"
        download = built_book / "_notebooks" / f"{page.stem}.ipynb"
        text = "\n".join(c.source for c in nbformat.read(download, as_version=4).cells if c.cell_type == "markdown")
        assert f"> **{title}**" in text and "posgeom-needs" not in text, page.stem


# --------------------------------------------------------------------------- in Chromium

SUMMARY_FIRST_SCREEN = """
const height = window.innerHeight;
const items = Array.from(document.querySelectorAll('.posgeom-tally-item')).map(li => {
  const box = li.getBoundingClientRect();
  return {verdict: li.dataset.verdict, count: li.querySelector('.posgeom-tally-count').textContent.trim(),
          inTable: li.closest('table') !== null, visible: box.top >= 0 && box.bottom <= height && box.width > 0};
});
const table = document.querySelector('table.posgeom-bottom-line');
const rows = Array.from(table.querySelectorAll('tbody tr')).map(tr => {
  const badge = tr.querySelector('.posgeom-verdict');
  return badge ? badge.textContent.replace(/^\\S+\\s+/, '').trim() : '';
});
return {items: items, rows: rows, tableTop: table.getBoundingClientRect().top, height: height};
"""


@pytest.mark.browser
def test_the_summarys_first_screen_gives_the_count_of_claims_for_each_verdict(browser, served_book, built_book):
    from posgeom.report import VERDICTS

    rel = _summary(built_book).relative_to(built_book).as_posix()
    try:
        browser.set_window_size(*DESK)
        browser.get(f"{served_book}/{rel}")
        inner = browser.execute_script("return window.innerHeight")
        browser.set_window_size(DESK[0], DESK[1] + (DESK[1] - inner))  # a viewport of 900 px, whatever the frame
        found = browser.execute_script(SUMMARY_FIRST_SCREEN)
        browser.save_screenshot(str(ARTIFACTS / "summary-first-screen.png"))
    finally:
        browser.set_window_size(1280, 1600)
    shown = {item["verdict"]: item for item in found["items"]}
    assert set(VERDICTS) <= set(shown), f"verdicts without a count at the top: {set(VERDICTS) - set(shown)}"
    for verdict, item in shown.items():
        assert not item["inTable"] and item["visible"], f"{verdict}: its count is not on the first screen ({item})"
        assert int(item["count"]) == found["rows"].count(verdict), f"{verdict}: the count disagrees with the table"
    assert found["tableTop"] < found["height"], "the table of claims does not start on the first screen"


CELL_WORDS = """
// The words each table cell of the page shows (innerText: a folded "more" shows nothing until opened).
return Array.from(document.querySelectorAll('main table td, main table th')).map(c => {
  const text = c.innerText.replace(/\\s+/g, ' ').trim();
  return [text.split(' ').filter(w => w).length, text.slice(0, 80)];
});
"""

BROKEN_WORDS = """
// Plain words (letters only) wider than their cell in the verdict tables: the browser would break them inside.
const canvas = document.createElement('canvas'), ctx = canvas.getContext('2d'), out = [];
document.querySelectorAll('main table.posgeom-table td, main table.posgeom-table th').forEach(c => {
  if (c.offsetParent === null) return;
  const st = getComputedStyle(c);
  ctx.font = `${st.fontWeight} ${st.fontSize} ${st.fontFamily}`;
  const room = c.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
  c.innerText.split(/\\s+/).filter(w => /^[("]?[A-Za-z]+[,.;:)"]*$/.test(w))
    .filter(w => ctx.measureText(w).width > room + 1).forEach(w => out.push(w));
});
return out;
"""

FIRST_FIGURE = """
// Where the first figure (or, on a page without one, the first output table) starts, from the page's top.
const article = document.querySelector('main article') || document.querySelector('main');
// only what is shown: an image inside a folded box has no height
const shown = selector => Array.from(article.querySelectorAll(selector)).find(e => e.getBoundingClientRect().height > 0);
const figure = shown('figure img, .cell_output img') || shown('.cell_output table');
if (!figure) return null;
return figure.getBoundingClientRect().top + window.scrollY;
"""


@pytest.mark.browser
def test_every_chapters_first_figure_is_within_three_screens_and_no_cell_is_a_wall_or_breaks_a_word(browser, served_book, built_book):
    from selenium.webdriver.support.ui import WebDriverWait

    tops, walls, broken = {}, [], []
    try:
        browser.set_window_size(1400, 900)
        for page in _chapters(built_book):
            rel = page.relative_to(built_book).as_posix()
            browser.get(f"{served_book}/{rel}")
            WebDriverWait(browser, 60).until(lambda b: b.execute_script("return document.readyState") == "complete")
            tops[page.stem] = browser.execute_script(FIRST_FIGURE)
            walls += [f"{page.stem}: {n} words: {text}…" for n, text in browser.execute_script(CELL_WORDS)
                      if n > CELL_MAX_WORDS]
            broken += [f"{page.stem}: {word}" for word in browser.execute_script(BROKEN_WORDS)]
    finally:
        browser.set_window_size(1280, 1600)
    (ARTIFACTS / "first-figure-px.txt").write_text("\n".join(f"{k} {v}" for k, v in sorted(tops.items())) + "\n")
    late = {k: round(v) for k, v in tops.items() if v is None or v > FIRST_FIGURE_PX}
    assert not late, f"chapters whose first figure starts below {FIRST_FIGURE_PX} px at 1400 px: {late}"
    assert not walls, "table cells of more than 60 words:\n" + "\n".join(walls[:10])
    assert not broken, "words broken inside in the verdict tables at 1400 px: " + ", ".join(broken[:10])


SEARCH_RESULTS = """
const done = arguments[arguments.length - 1];
const start = Date.now();
let last = -1, steady = 0;
// Sphinx adds the results one by one: wait until their number has not changed for a second
(function wait() {
  const links = Array.from(document.querySelectorAll('#search-results li a')).map(a => a.getAttribute('href'));
  steady = links.length && links.length === last ? steady + 1 : 0;
  last = links.length;
  if (steady >= 5 || Date.now() - start > 30000) done(links); else setTimeout(wait, 200);
})();
"""


@pytest.mark.browser
def test_search_lists_chapters_before_the_api_reference(browser, served_book, built_book):
    browser.get(f"{served_book}/search.html?q=SMACOF")
    links = browser.execute_async_script(SEARCH_RESULTS)
    assert links, "searching the book for SMACOF found nothing"
    api = [i for i, href in enumerate(links) if "book/api" in href]
    other = [i for i, href in enumerate(links) if "book/api" not in href]
    assert api and other, f"SMACOF should be found in the chapters and in the API reference: {links[:5]}"
    assert max(other) < min(api), f"an API entry comes before a chapter: {links[:6]}"


def test_every_figure_of_a_chapter_is_numbered_and_captioned(built_book):
    """Every image a chapter's code draws sits in a figure with a numbered caption ("Fig. 3 ...")."""
    bare = []
    for page in _chapters(built_book):
        for img in parsed(page).select("main article img"):
            if "_images/" not in img.get("src", ""):
                continue  # the theme's own icons (launch buttons)
            figure = img.find_parent("figure")
            if figure is None or figure.select_one("figcaption .caption-number") is None:
                bare.append(f"{page.stem}: {img['src'].rsplit('/', 1)[-1][:16]}…")
    assert not bare, "figures without a numbered caption:\n" + "\n".join(bare)
