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
    assert page.evaluate("document.images.length") == 4
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
