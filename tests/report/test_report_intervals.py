"""Every interval of a report stands beside the point it is built around (issue 32, item 2).

The table below is built so that the sample R² of model "wide" lies outside its interval, which is
built around the bias-corrected R²: five well separated groups with the same spread, so the jackknife
SE is small next to the bias correction.  The sample R² is pinned to a numpy loop; the rendered
terminal text and JSON must then show each interval beside a point it contains, or say why not on
the same line."""

import json
import re

import numpy as np
import pandas as pd
import pytest

import embsql
from embsql.render import formats

LEVEL_ROW = re.compile(r"^\s*(\S+) \[(\d+)% CI\]\s+(.*)$")
CELL = re.compile(r"(-?[\d.e+-]+|inf|-inf|nan|—) \[(-?[\d.e+-]+|—), (-?[\d.e+-]+|—)\]")


def _table() -> pd.DataFrame:
    rows = []
    for model, scale in (("wide", 2.0), ("narrow", 1.0)):
        rng = np.random.default_rng(1)
        for g in range(5):
            centre = np.zeros(9)
            centre[g] = scale
            rows += [(model, f"g{g}", (centre + rng.normal(size=9)).tolist()) for _ in range(40)]
    return pd.DataFrame(rows, columns=["model", "grp", "vec"])


def _sample_r2(frame: pd.DataFrame, model: str) -> float:
    """SS_B / SS_T of the unit vectors, by a plain loop over the groups."""
    part = frame[frame.model == model]
    unit = np.array([np.asarray(v) / np.linalg.norm(v) for v in part.vec])
    mean = unit.mean(axis=0)
    ss_t = float(((unit - mean) ** 2).sum())
    ss_b = 0.0
    for g in part.grp.unique():
        members = unit[(part.grp == g).to_numpy()]
        ss_b += len(members) * float(((members.mean(axis=0) - mean) ** 2).sum())
    return ss_b / ss_t


@pytest.fixture(scope="module")
def result():
    return embsql.report(_table(), vector="vec", group="grp", model="model", permutations=0, replicates=400).run()


def test_the_sample_r2_lies_outside_the_interval_and_the_corrected_one_inside(result):
    """The premise: without the corrected point beside it, this interval would exclude the R² shown."""
    rows = {row["model"]: row for row in result.summary.to_dicts()}
    wide = rows["wide"]
    assert wide["r2"] == pytest.approx(_sample_r2(_table(), "wide"), abs=1e-9)
    assert not wide["r2_ci_low"] <= wide["r2"] <= wide["r2_ci_high"]
    assert wide["r2_ci_low"] <= wide["r2_corrected"] <= wide["r2_ci_high"]
    columns = list(result.summary.columns)
    assert columns.index("r2_corrected") + 1 == columns.index("r2_ci_low")      # the point, then its interval
    boot = list(result["bootstrap"].columns)
    assert boot.index("corrected") + 1 == boot.index("ci_low") and "estimate" in boot and "estimate_bc" not in boot


def _check_json_table(table: dict) -> int:
    checked = 0
    for interval in table["intervals"]:
        point, low, high = (table["columns"].index(interval[k]) for k in ("point", "low", "high"))
        for row in table["rows"]:
            if None in (row[point], row[low], row[high]):
                continue
            inside = row[low] <= row[point] <= row[high]
            note = row[table["columns"].index("interval_note")] if "interval_note" in table["columns"] else None
            assert inside or (note and table["columns"][point] in note), (table["title"], row)
            checked += 1
    return checked


def test_every_json_interval_contains_its_point_or_its_row_says_why(result):
    document = json.loads(formats.to_json(result))
    summary = document["summary"]
    assert {"point": "r2_corrected", "low": "r2_ci_low", "high": "r2_ci_high"} in summary["intervals"]
    checked = _check_json_table(summary)
    sections = {s["name"]: s for s in document["sections"]}
    assert {"point": "corrected", "low": "ci_low", "high": "ci_high"} in sections["bootstrap"]["intervals"]
    assert {"point": "difference", "low": "ci_low", "high": "ci_high"} in sections["compare"]["intervals"]
    checked += sum(_check_json_table(s) for s in document["sections"])
    assert checked >= 2 + 2 + 1     # the summary's and the bootstrap's two models, the one pair


def test_an_outside_point_gets_a_note_on_its_own_row():
    """A point that lies outside its interval (here forced) is never shown without the reason beside it."""
    columns = ["model", "difference", "se", "ci_low", "ci_high"]
    shown, rows = formats._with_interval_notes(columns, [["a", 0.5, 0.1, 0.1, 0.4], ["b", 0.2, 0.1, 0.1, 0.4]])
    assert shown[-1] == "interval_note" and rows[0][-1].startswith("difference outside ci_low–ci_high")
    assert rows[1][-1] is None


def _text_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of each table of the terminal text that has an interval (its cells have no spaces)."""
    tables, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if "ci_low" in line.split():
            header, rows = line.split(), []
            for body in lines[i + 1:]:
                cells = body.split()
                if len(cells) != len(header):
                    break
                rows.append(cells)
            tables.append((header, rows))
    return tables


@pytest.mark.parametrize("width", [80, 100, None])
def test_every_terminal_interval_contains_the_point_beside_it(result, width):
    text = formats.to_text(result, color=False, width=width)
    merged = [LEVEL_ROW.match(line) for line in text.splitlines()]
    merged = [m for m in merged if m]
    assert [m.group(1) for m in merged] == ["r2_corrected"]      # the summary: point [low, high] on one line
    cells = CELL.findall(merged[0].group(3))
    assert len(cells) == 2
    for point, low, high in cells:
        assert float(low) <= float(point) <= float(high), merged[0].group(0)
    assert re.search(r"^\s*r2 \(sample\)\s", text, re.M)          # the sample R² is labelled so
    checked = 0
    for header, rows in _text_tables(text):
        for point, low, high in formats.intervals(header):
            for row in rows:
                values = [row[header.index(c)] for c in (point, low, high)]
                if "—" in values:
                    continue
                value, lo, hi = map(float, values)
                inside = lo <= value <= hi
                assert inside or "interval_note" in header, (header, row)
                checked += 1
    assert checked >= 3
    # the bootstrap's point column is the corrected estimate, set just before the interval
    boot = next(header for header, _ in _text_tables(text) if "corrected" in header and "statistic" in header)
    assert boot.index("corrected") + 1 == boot.index("ci_low")
