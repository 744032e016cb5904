"""The documentation site in a real headless browser (Debian's chromium, driven by playwright).

The site is built strictly, served over HTTP on the loopback address (the search runs in a web
worker, which a file:// page may not start) and every page is loaded offline: no console error,
no page error, no request to another host, and every image shown.  The search finds emb_permanova
and leads to its section.  The executed notebook page (notebook.html, generated at build) loads
offline too.  Screenshots of the home page, a reference page, a guide, the vocabulary page and the
notebook page are kept for a person to look at: in EMBSQL_SCREENSHOT_DIR if it is set, else beside
the test's output (tmp dir).
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest
from test_docs_site import build_site
from test_html_browser import CHROMIUM, FLAGS, _need  # the same browser, flags and CI rule

pytestmark = [pytest.mark.browser, pytest.mark.skipif(bool(os.environ.get("EMBSQL_LOWEST_BOUNDS")),
                                                      reason="the docs tools are not in the lowest-bounds venv")]

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base URL, site directory, a new browser page) for the built site."""
    _need(os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "playwright is not installed (pip install '.[test]')")
    site = build_site(tmp_path_factory.mktemp("site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    with sync_playwright() as driver:
        browser = driver.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900})
        yield base, site, browser
        browser.close()
    server.shutdown()


SCREENSHOTS = {".": "home", "reference/python/decomposition": "reference_python_decomposition",
               "guides/compare": "guides_compare", "reference/vocabulary": "reference_vocabulary"}


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where the screenshots go."""
    folder = Path(os.environ.get("EMBSQL_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(browser, url: str):
    page = browser.new_page()
    events: dict[str, list] = {"console": [], "errors": [], "elsewhere": []}
    page.on("console", lambda m: events["console"].append((m.type, m.text)) if m.type == "error" else None)
    page.on("pageerror", lambda e: events["errors"].append(str(e)))
    page.on("request", lambda r: events["elsewhere"].append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "data:", "blob:")) else None)
    page.goto(url, wait_until="load")
    return page, events


def test_every_page_renders_cleanly_with_its_images(served, shots):
    base, site, browser = served
    pages = sorted(p.relative_to(site).parent.as_posix() for p in site.rglob("index.html"))
    assert len(pages) >= 15
    images = 0
    for path in pages:
        url = base + ("" if path == "." else path + "/")
        page, events = _open(browser, url)
        page.wait_for_load_state("networkidle")
        assert events == {"console": [], "errors": [], "elsewhere": []}, (path, events)
        assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"), path
        images += page.evaluate("document.images.length")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), \
            f"{path}: the page is wider than the window (an overflowing table or block)"
        if path in SCREENSHOTS:
            page.screenshot(path=str(shots / f"{SCREENSHOTS[path]}.png"), full_page=True)
        page.close()
    assert images >= 1          # the home page's picture of the report


def test_the_search_finds_emb_permanova(served):
    base, _, browser = served
    page, events = _open(browser, base)
    page.wait_for_load_state("networkidle")
    page.keyboard.press("s")                    # the search's shortcut, as a reader would open it
    page.keyboard.type("emb_permanova", delay=20)
    results = page.locator(".md-search-result a")
    results.first.wait_for(timeout=60_000)
    links = [results.nth(i).get_attribute("href") or "" for i in range(results.count())]
    assert any("/reference/sql/" in link and link.endswith("#emb_permanova-python-only") for link in links), links
    assert events["errors"] == []


def test_the_notebook_guide_links_the_rendered_report(served):
    base, _, browser = served
    page, events = _open(browser, base + "report.html")
    assert "base-768 separates the topic groups more than mini-384" in page.inner_text("body")
    assert page.evaluate("document.images.length") >= 2
    assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    assert events["errors"] == []


def test_the_executed_notebook_page_loads_offline(served, shots):
    base, _, browser = served
    page, events = _open(browser, base + "notebook.html")
    page.wait_for_load_state("networkidle")
    text = page.inner_text("body")
    assert "embsql in a notebook" in text and "base-768 separates the topic groups more than mini-384" in text
    assert page.locator(".jp-CodeCell").count() >= 4 and page.locator(".jp-OutputArea-output").count() >= 4
    assert page.evaluate("document.images.length") >= 2
    assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    assert events == {"console": [], "errors": [], "elsewhere": []}, events
    page.screenshot(path=str(shots / "notebook.png"), full_page=True)
    page.close()


def test_printed_output_wraps_and_code_scrolls(served):
    """docs/stylesheets/extra.css: a text block (what a command prints) wraps at the page's width; a
    code block keeps its lines (and scrolls)."""
    base, _, browser = served
    page, events = _open(browser, base + "guides/compare/")
    style = "b => getComputedStyle(b.querySelector('pre > code')).whiteSpace"
    assert page.locator(".language-text").first.evaluate(style) == "pre-wrap"
    assert page.locator(".language-python").first.evaluate(style) == "pre"
    text = page.locator(".language-text pre > code").first
    assert text.evaluate("c => c.scrollWidth <= c.clientWidth")
    assert events["errors"] == []
    page.close()


def test_a_name_in_a_table_is_not_broken_over_lines(served):
    """docs/stylesheets/extra.css: on the vocabulary page (narrow columns of long names) every name in
    a table cell stays on one line (an inline element broken over lines has several boxes)."""
    base, _, browser = served
    page, events = _open(browser, base + "reference/vocabulary/")
    boxes = page.evaluate("Array.from(document.querySelectorAll('td code')).map(c => c.getClientRects().length)")
    assert len(boxes) > 50 and set(boxes) == {1}
    assert events["errors"] == []
    page.close()
