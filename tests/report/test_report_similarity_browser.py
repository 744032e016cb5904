"""The similarity and classification sections of the HTML report in headless Chromium (with the
page_of fixture of tests/report/test_html_browser.py): the bundled example with a pairs file made from
its items and its topic column as the label.  No console errors, no request but the file and its data: images,
every image decoded (the scatter and the accuracy figure among them), the scatter beside the
correlations inside the page's width, the verdict naming the model that agrees with people more.

Set EMBSQL_SCREENSHOT_DIR to keep the screenshots (report24-*.png)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ROOT
from test_html_browser import page_of  # noqa: F401  (the headless Chromium fixture)

import embsql

pytestmark = pytest.mark.browser

WIDTH = 1366
EXAMPLE = ROOT / "examples" / "embeddings.parquet"


def example_pairs(path: Path, count: int = 300, seed: int = 7) -> Path:
    """Pairs of the example's first 200 items, half within a topic: gold 4 for one topic, 1.5 across,
    plus noise, clipped to 0-5 (a stand-in for human judgements that follow the topics)."""
    table = pq.read_table(EXAMPLE, columns=["item", "topic"]).to_pylist()
    topic = {r["item"]: r["topic"] for r in table}
    items = sorted(topic)[:200]
    by_topic: dict[str, list[str]] = {}
    for item in items:
        by_topic.setdefault(topic[item], []).append(item)
    rng = np.random.default_rng(seed)
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < count:
        if rng.random() < 0.5:
            group = rng.choice([t for t, members in by_topic.items() if len(members) > 1])
            x, y = rng.choice(by_topic[group], 2, replace=False)
        else:
            x, y = rng.choice(items, 2, replace=False)
        pairs.add((min(x, y), max(x, y)))
    ordered = sorted(pairs)
    gold = np.array([4.0 if topic[x] == topic[y] else 1.5 for x, y in ordered]) + rng.normal(0, 0.7, len(ordered))
    pq.write_table(pa.table({"item_a": [p[0] for p in ordered], "item_b": [p[1] for p in ordered],
                             "score": np.round(np.clip(gold, 0, 5), 2)}), path)
    return path


@pytest.fixture(scope="module")
def page(page_of, tmp_path_factory):  # noqa: F811  (page_of: the fixture imported above)
    folder = tmp_path_factory.mktemp("report24")
    pairs = example_pairs(folder / "pairs.parquet")
    result = embsql.report(str(EXAMPLE), vector="embedding", group="topic", model="model", permutations=0,
                           pairs=str(pairs), label="topic").run(embsql.connect())
    return page_of(result.to_html(), "report24.html")


def test_the_sections_render_with_the_scatter(page):
    loaded, events, url = page
    assert [m for m in events["console"] if m[0] in ("error", "warning")] == []
    assert events["errors"] == []
    assert all(u == url or u.startswith("data:") for u in events["requests"]), events["requests"]
    assert loaded.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
    assert loaded.evaluate("document.documentElement.scrollWidth") <= WIDTH
    scatter = loaded.locator("#section-similarity img")
    assert scatter.count() == 1 and "judged pair" in loaded.inner_text("#section-similarity figcaption")
    box = scatter.bounding_box()
    assert box is not None and box["width"] > 300 and box["x"] + box["width"] <= WIDTH
    assert loaded.locator("#section-classification img").count() == 1
    for name in ("similarity", "similarity_compare", "similarity_pairs", "classification", "classification_compare"):
        assert loaded.locator(f"#section-{name} table").is_visible(), name
    verdict = loaded.inner_text("#verdict")
    assert "base-768 agrees with the human similarity judgements more than mini-384" in verdict
    assert "base-768 classifies the topic labels better by k-NN (k = 10) than mini-384" in verdict
    if os.environ.get("EMBSQL_SCREENSHOT_DIR"):
        folder = Path(os.environ["EMBSQL_SCREENSHOT_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        loaded.screenshot(path=str(folder / "report24-first-screen.png"))
        for name in ("similarity", "classification", "classification_compare"):
            loaded.locator(f"#section-{name}").screenshot(path=str(folder / f"report24-{name}.png"))
