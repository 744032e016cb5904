"""The HTML report in a real headless browser (Debian's chromium, driven by playwright's bundled
driver; .ci/setup-browser.sh installs chromium).

Loads the standalone file from file:// with networking features off, and checks: no console
errors or page errors, no request other than the file itself and its inline data: images, every
image decoded, no sideways scrolling, and the summary table entirely inside the first screen of a
1366x768 laptop.  Locally a missing browser skips; with CI=true it fails.

Set EMBSQL_SCREENSHOT_DIR to keep the screenshot (report-1366x768.png) for a human look.
"""

import io
import os

import pytest
from report_fixtures import fake_report

from embsql.core.model_comparison import COMPARE_COLUMNS
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
WIDTH, HEIGHT = 1366, 768
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _need(condition: bool, why: str):
    if not condition:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why} (CI must run the browser test: see .ci/setup-browser.sh)")
        pytest.skip(why)


@pytest.fixture(scope="module")
def page_of(tmp_path_factory):
    """A function that loads HTML in a fresh headless chromium and returns (page, events)."""
    _need(os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "playwright is not installed (pip install '.[test]')")
    profile = tmp_path_factory.mktemp("chromium-profile")   # a new, empty --user-data-dir
    with sync_playwright() as driver:
        browser = driver.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": WIDTH, "height": HEIGHT}, offline=True)

        def load(html: str, name: str):
            path = tmp_path_factory.mktemp("html") / name
            path.write_text(html, encoding="utf-8")
            page = browser.new_page()
            events = {"console": [], "errors": [], "requests": []}
            page.on("console", lambda m: events["console"].append((m.type, m.text)))
            page.on("pageerror", lambda e: events["errors"].append(str(e)))
            page.on("request", lambda r: events["requests"].append(r.url))
            page.goto(path.as_uri(), wait_until="load")
            return page, events, path.as_uri()

        yield load
        browser.close()


def test_report_loads_cleanly_and_summary_is_in_the_first_screen(page_of):
    page, events, url = page_of(fake_report().to_html(), "report.html")

    assert [m for m in events["console"] if m[0] in ("error", "warning")] == []
    assert events["errors"] == []
    assert all(u == url or u.startswith("data:") for u in events["requests"]), events["requests"]
    assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    assert page.evaluate("document.images.length") == 5      # the paired differences, R², W~_g, margins, dose
    # the HTML label was shown as text, not run: no script element exists
    assert page.evaluate("document.querySelectorAll('script').length") == 0
    assert '<script>alert("x")</script>' in page.inner_text("#section-groups")
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH

    box = page.locator("#summary table").bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    assert 0 <= box["x"] and box["x"] + box["width"] <= WIDTH
    assert 0 <= box["y"] and box["y"] + box["height"] <= HEIGHT
    assert page.locator("#summary table").is_visible()

    png = page.screenshot()            # the first screen only
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size == (WIDTH, HEIGHT)
    dark = sum(image.histogram()[:128]) / (WIDTH * HEIGHT)
    assert 0.005 < dark < 0.5, dark   # text and figures, neither blank nor a solid block
    if os.environ.get("EMBSQL_SCREENSHOT_DIR"):
        target = os.path.join(os.environ["EMBSQL_SCREENSHOT_DIR"], "report-1366x768.png")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(png)
        page.screenshot(path=target.replace(".png", "-full.png"), full_page=True)


def test_report_without_figures_loads_cleanly(page_of):
    page, events, url = page_of(fake_report().to_html(plots=False), "tables.html")
    assert [m for m in events["console"] if m[0] in ("error", "warning")] == []
    assert events["errors"] == [] and events["requests"] == [url]
    assert page.evaluate("document.images.length") == 0
    assert page.locator("#section-dose table").is_visible()


def test_the_verdict_opens_the_first_screen(page_of):
    page, _, _ = page_of(fake_report().to_html(), "verdict.html")
    verdict = page.locator("#verdict .verdict p").first
    box = verdict.bounding_box()
    assert box is not None and box["y"] + box["height"] <= HEIGHT
    assert page.inner_text("#verdict").startswith("base-768 separates the topic groups more than mini-384")
    figure = page.locator("#verdict img").bounding_box()
    assert figure is not None and figure["y"] < HEIGHT and figure["x"] + figure["width"] <= WIDTH


STYLES = ("font-size", "font-weight", "text-align", "background-color", "table-layout", "padding-left",
          "border-bottom-width", "color")
ELEMENTS = ("h1", "#summary h2", "#summary table", "#summary tbody tr:nth-child(1) th",
            "#summary tbody tr:nth-child(1) td", "#summary thead th:nth-child(2)", ".caution", "#verdict p",
            "nav a")


def _styles(page) -> dict:
    script = """([selectors, names]) => Object.fromEntries(selectors.map(s => {
        const e = document.querySelector('.embsql-report ' + s) || document.querySelector(s);
        const style = getComputedStyle(e);
        return [s, Object.fromEntries(names.map(n => [n, style.getPropertyValue(n)]))];
    }))"""
    return page.evaluate(script, [list(ELEMENTS), list(STYLES)])


def test_the_report_looks_the_same_in_a_notebook_and_in_a_browser(page_of):
    """The fragment a notebook shows (ReportResult._repr_html_), inside nbconvert's JupyterLab page
    with its own table and heading styles, computes the same styles as the standalone file."""
    try:
        import nbformat
        from nbconvert import HTMLExporter
    except ImportError:
        _need(False, "nbconvert is not installed (pip install '.[test]')")
    report = fake_report()
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("result")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/html": report._repr_html_(),
                                                                    "text/plain": "report"}, execution_count=1)]
    notebook.cells = [cell]
    body, _ = HTMLExporter().from_notebook_node(notebook)
    in_notebook, events, _ = page_of(body, "notebook.html")
    in_browser, _, _ = page_of(report.to_html(), "standalone.html")
    assert events["errors"] == []
    assert _styles(in_notebook) == _styles(in_browser)
    if os.environ.get("EMBSQL_SCREENSHOT_DIR"):
        target = os.path.join(os.environ["EMBSQL_SCREENSHOT_DIR"], "notebook-fragment-1366x768.png")
        in_notebook.screenshot(path=target, full_page=True)


def test_no_table_is_clipped_at_1280_px(page_of):
    """Issue 32: at 1280 px the comparison table was cut off (`cali…`).  Every table of the report
    fits its box at that width: nothing scrolls sideways inside a table's box and no cell is cut."""
    report = fake_report()
    wide = Section("compare", "Paired comparison of R² across models", ResultTable("compare", COMPARE_COLUMNS, (
        ("base-768", "mini-384", 0.400632, 0.296253, 0.104379, 0.0170889, 0.0733033, 0.143507, 600, None, None, 0,
         True, "random"),)), "The paired comparison.")
    report = ReportResult(report.title, report.summary, report.sections + (wide,), report.meta)
    page, _, _ = page_of(report.to_html(plots=False), "report-1280.html")
    page.set_viewport_size({"width": 1280, "height": 800})
    clipped = page.evaluate("""() => Array.from(document.querySelectorAll('.tablewrap'))
        .filter(w => w.scrollWidth > w.clientWidth + 1)
        .map(w => (w.closest('section') || {}).id)""")
    assert clipped == []
    cut = page.evaluate("""() => Array.from(document.querySelectorAll('.tablewrap td, .tablewrap th'))
        .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)""")
    assert cut == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_the_retrieval_comparison_is_not_clipped_at_1280_px_and_says_its_settings_once(page_of):
    """The evaluation's paired comparison has 18 columns; at 1280 px its last ones (permutations,
    level, calibrated) were cut.  Those with one value in every row are said once above the table, as
    in the text report; the JSON keeps them."""
    from embsql.core.retrieval_comparison import PAIR_COLUMNS

    values = {"model_a": "base-768", "model_b": "mini-384", "metric": "ndcg@10", "mean_a": 0.974, "mean_b": 0.979,
              "difference": -0.00411, "se": 0.00871, "ci_low": -0.0219, "ci_high": 0.0137, "p_value": 0.646,
              "p_adjusted": 0.646, "p_adjust": "holm", "queries": 207, "groups": 29, "permutations": 10000,
              "method": "exact group sign-flip", "level": 0.95, "calibrated": False}
    assert set(values) == set(PAIR_COLUMNS)
    report = fake_report()
    wide = Section("evaluation_compare", "Paired comparison of models on nDCG@10",
                   ResultTable("evaluation_compare", PAIR_COLUMNS, (tuple(values[c] for c in PAIR_COLUMNS),)), "")
    report = ReportResult(report.title, report.summary, report.sections + (wide,), report.meta)
    page, _, _ = page_of(report.to_html(plots=False), "retrieval-1280.html")
    page.set_viewport_size({"width": 1280, "height": 800})
    clipped = page.evaluate("""() => Array.from(document.querySelectorAll('.tablewrap'))
        .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => (w.closest('section') || {}).id)""")
    assert clipped == []
    said = page.evaluate("document.querySelector('#section-evaluation_compare p.meta').textContent")
    for shown in ("queries 207", "groups 29", "permutations 10000", "level 0.95", "calibrated false"):
        assert shown in " ".join(said.split()), said
    assert '"permutations"' in report.to_json() and '"calibrated"' in report.to_json()   # every column
