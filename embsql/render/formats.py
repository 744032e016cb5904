"""Rendering of a report (embsql.reporting.report_result.ReportResult, or anything of the shape
embsql.render.document.Document): terminal text, Markdown, JSON, HTML.

Every renderer opens with the verdict (``result.verdict``: one or two sentences computed from the
numbers) and any notes, then shows the summary (one column per model), then each section's table
with its caution beneath it.  In text and Markdown a section longer than LONG_TABLE rows shows its
head, its tail and quantiles of its numeric columns (``full=True`` shows every row); JSON and
HTML always keep every row.  Cells read the same everywhere: 3 significant digits (JSON keeps every
digit; an HTML cell shows 6 on hover), None as "—", infinities as "inf" / "-inf", NaN as "nan".

JSON (``to_json``) is the stable, machine-readable form.  Schema ``embsql.report/1``::

    {
      "schema":   "embsql.report/1",
      "title":    str,
      "verdict":  [str, ...],                 # the opening sentences (may be empty)
      "notes":    [str, ...],                 # what was left out, and why
      "meta":     {str: JSON value},          # source, vector, group, model, seed, sql, versions, created, ...
      "summary":  Table,
      "sections": [ {"name": str, "title": str, "caution": str, **Table}, ... ]   # report order
    }
    Table = {
      "title":     str,                       # the ResultTable's own title
      "columns":   [str, ...],                # first column "model" (its cells null when the report has no model)
      "rows":      [[cell, ...], ...],        # one list per row, in column order
      "nonfinite": [{"row": int, "column": str, "value": "inf" | "-inf" | "nan"}, ...],
      "intervals": [{"point": str, "low": str, "high": str}, ...]   # each interval and the point it is built around
    }

Each interval (ci_low/ci_high, r2_ci_low/r2_ci_high, ...) stands beside the point it is built around,
named in ``intervals``: a bias-corrected figure is ``corrected`` (``r2_corrected`` in the summary),
and the sample figure keeps its own name (``estimate``, ``r2``).  Where a row's point lies outside
its interval the table gains a last column ``interval_note`` that says so, and why, on that row.

A cell is a JSON number, string, boolean or null.  JSON has no infinity or NaN, so a non-finite
float is written as null in ``rows`` and listed in its table's ``nonfinite`` (row index from 0),
which keeps numeric columns numeric and loses nothing.  A non-finite float inside ``meta`` is
written as the string "inf", "-inf" or "nan"; values JSON cannot hold (dates, paths) as text.
Keys are sorted and the output is indented by two spaces, so the same result always gives the
same bytes.  A reader should ignore keys it does not know: later versions of schema 1 may add
keys, never remove or retype one.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import numbers
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from embsql.cells import format_cell, is_number, plain
from embsql.render.document import Document, DocumentSection
from embsql.render.figures import Plot, matplotlib_available, png_bytes
from embsql.render.plots import report_plots
from embsql.result_table import ResultTable, model_label

SCHEMA = "embsql.report/1"
META_ORDER = ("source", "vector", "group", "model", "label", "pairs", "permutations", "seed", "embsql_version",
              "duckdb_version", "created")
META_HIDDEN = ("sql", "notes", "verdict", "skipped")   # shown in their own places, not in the header line
# the header line's keys; the rest are the run details
META_HEADER = ("source", "vector", "group", "model", "label", "pairs", "dimensions", "permutations", "seed", "created")
TALL_TABLE = 15                 # HTML tables with more rows scroll inside a box
LONG_TABLE = 40                 # text and Markdown sections with more rows are shortened
HEAD_ROWS = TAIL_ROWS = 8       # ... to this head and tail, plus quantiles
QUANTILES = (("min", 0.0), ("25%", 0.25), ("median", 0.5), ("75%", 0.75), ("max", 1.0))
DIGITS = 3                      # significant digits of the numbers in text, Markdown and HTML (JSON keeps every digit)
PLOT_NOTE = "Figures are not shown: matplotlib is not installed (pip install matplotlib)."


Grid = tuple[list[str], list[list[Any]]]   # a header and its rows


def _summary_grid(summary: ResultTable, level: object = None, digits: int | None = None) -> Grid:
    """The summary turned on its side: one row per statistic, one column per model.

    With ``digits`` (text and HTML) each interval is one row, beside the point it is built around:
    "r2_corrected [95% CI]" reads "0.411 [0.364, 0.460]", and the sample figure's row says "(sample)"."""
    columns = list(summary.columns)
    if not summary.rows or columns[0] != "model":
        return columns, [list(row) for row in summary.rows]
    header = ["statistic"] + [model_label(row[0]) for row in summary.rows]
    triples = intervals(columns) if digits is not None else []
    ends = {end for _, low, high in triples for end in (low, high)}
    corrected = {point for point, _, _ in triples if point.endswith("corrected")}
    samples = {point[:-len("_corrected")] for point in corrected}
    rows = []
    for i, column in enumerate(columns):
        if i == 0 or column in ends:
            continue
        triple = next((t for t in triples if t[0] == column), None)
        if triple is None:
            label = f"{column} (sample)" if column in samples and column in columns else column
            rows.append([label] + [row[i] for row in summary.rows])
            continue
        point, low, high = triple
        j, k = columns.index(low), columns.index(high)
        assert digits is not None   # intervals are merged only when digits are given
        cells = []
        for row in summary.rows:
            text = f"{format_cell(row[i], digits)} [{format_cell(row[j], digits)}, {format_cell(row[k], digits)}]"
            cells.append(text + (f" ({interval_note(point, low, high)})" if outside(row[i], row[j], row[k]) else ""))
        shown = f"{float(level):.0%} CI" if is_number(level) else "CI"   # type: ignore[arg-type]
        rows.append([f"{point} [{shown}]"] + cells)
    return header, rows


# ---------------------------------------------------------------- intervals beside their points

INTERVAL_POINTS = ("corrected", "difference", "estimate", "value", "spearman", "accuracy", "cka", "r", "mean")
INTERVAL_NOTE = "interval_note"     # a column added to a table only where some row's point is outside its interval
_WHY_OUTSIDE = {
    "difference": "a studentized bootstrap interval need not contain the difference",
    "corrected": "the bias-corrected point lies outside the figure's range, where the interval is cut",
    "r2_corrected": "the bias-corrected point lies outside the figure's range, where the interval is cut",
}
_WHY_DEFAULT = "the interval is not built around this figure (see the caution)"


def intervals(columns: Sequence[str]) -> list[tuple[str, str, str]]:
    """(point, low, high) for each interval of a table: the ends are PREFIXci_low and PREFIXci_high, and
    the point they are built around is PREFIXcorrected (a bias-corrected figure) where there is one,
    else the figure PREFIX names (r2_ci_low: r2), else the first of INTERVAL_POINTS the table has."""
    found = []
    for low in columns:
        if not low.endswith("ci_low") or low.replace("ci_low", "ci_high") not in columns:
            continue
        prefix = low[:-len("ci_low")]
        candidates = (prefix + "corrected", prefix.rstrip("_")) if prefix else INTERVAL_POINTS
        point = next((c for c in candidates if c in columns), None)
        if point is not None:
            found.append((point, low, prefix + "ci_high"))
    return found


def outside(value: object, low: object, high: object) -> bool:
    """Whether a finite point lies outside its finite interval by more than rounding (a percentile of
    resampled means of 0.1 may be 0.09999999999999999 where the point is 0.1)."""
    if not all(is_number(v) and math.isfinite(float(v)) for v in (value, low, high)):   # type: ignore[arg-type]
        return False
    point, lo, hi = float(value), float(low), float(high)   # type: ignore[arg-type]
    slack = 1e-9 * max(abs(point), abs(lo), abs(hi), 1e-300)
    return not lo - slack <= point <= hi + slack


def interval_note(point: str, low: str, high: str) -> str:
    """What the line says when its point is outside its interval, and why."""
    return f"{point} outside {low}–{high}: {_WHY_OUTSIDE.get(point, _WHY_DEFAULT)}"


def _with_interval_notes(columns: list[str], rows: list[list[Any]]) -> tuple[list[str], list[list[Any]]]:
    """The table with an INTERVAL_NOTE column when some row's point lies outside its interval: every
    point is then read beside an interval that contains it, or beside the reason it does not."""
    triples = [(point, low, high, columns.index(point), columns.index(low), columns.index(high))
               for point, low, high in intervals(columns)]
    notes = ["; ".join(interval_note(p, lo, hi) for p, lo, hi, i, j, k in triples
                       if j < len(row) and outside(row[i], row[j], row[k])) or None for row in rows]
    if not any(notes):
        return columns, rows
    return columns + [INTERVAL_NOTE], [list(row) + [note] for row, note in zip(rows, notes)]


def _meta_items(meta: Mapping[str, Any], header: bool | None = None) -> list[tuple[str, str]]:
    """Meta entries to show (not the SQL, notes or verdict, shown on their own), known keys first;
    ``header=True`` only those of the header line, ``False`` only the rest (the run details)."""
    keys = [k for k in META_ORDER if k in meta] + sorted(k for k in meta if k not in META_ORDER + META_HIDDEN)
    if header is not None:
        keys = [k for k in keys if (k in META_HEADER) == header]
    return [(key, _meta_text(meta[key])) for key in keys if meta[key] is not None]


def _meta_text(value: object) -> str:
    """A header value as text: a mapping as "key value, ...", a list as "a, b"."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_meta_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_meta_text(v) for v in value)
    return format_cell(value)


def _notes(result: Document) -> list[str]:
    notes = result.meta.get("notes") or []
    return [notes] if isinstance(notes, str) else [str(n) for n in notes]


# ---------------------------------------------------------------- long tables

def _shortened(section: DocumentSection, full: bool) -> tuple[list[list[Any]], Grid | None, str]:
    """(rows to show, quantile table or None, note) for text and Markdown.

    Beyond LONG_TABLE rows: the first and last rows, an ellipsis row, and min/quartiles/max of every
    numeric column (per model when there are several), with where to get every row."""
    table = section.table
    rows = [list(r) for r in table.rows]
    if full or len(rows) <= LONG_TABLE:
        return rows, None, ""
    gap = ["…"] * len(table.columns)
    shown = rows[:HEAD_ROWS] + [gap] + rows[-TAIL_ROWS:]
    numeric = [k for k, c in enumerate(table.columns)
               if c != "model" and any(is_number(r[k]) for r in rows) and all(r[k] is None or is_number(r[k]) for r in rows)]
    quantiles = None
    if numeric:
        by_model = table.columns[0] == "model" and len({r[0] for r in rows}) > 1
        groups: dict[Any, list[list[Any]]] = {}
        for r in rows:
            groups.setdefault(r[0] if by_model else None, []).append(r)
        header = (["model"] if by_model else []) + ["quantile"] + [table.columns[k] for k in numeric]
        body = []
        for model, members in groups.items():
            for label, q in QUANTILES:
                cells = []
                for k in numeric:
                    values = [float(r[k]) for r in members if is_number(r[k]) and math.isfinite(float(r[k]))]
                    cells.append(float(np.quantile(values, q)) if values else None)
                body.append(([model] if by_model else []) + [label] + cells)
        quantiles = (header, body)
    note = (f"{len(rows)} rows, {HEAD_ROWS + TAIL_ROWS} shown (the first and last {HEAD_ROWS}) with quantiles. "
            f"Every row: --full on the command line, --format json or html, or result[{section.name!r}].to_pandas().")
    return shown, quantiles, note


# ---------------------------------------------------------------- terminal text

MAX_WIDTH = 100                 # the text report is never wider, whatever the terminal
PIPED_WIDTH = 100               # written to a pipe or a file without COLUMNS
COMPACT_ROWS = 12               # by default (not --full) a text section with more rows shows per-model quantiles
# columns that say how a figure was computed: when a table holds one value in every row, the text
# report says it once on the section's title line instead of in a column
SETTINGS_COLUMNS = ("n", "groups", "level", "replicates", "permutations", "dropped", "sizes", "calibrated", "items",
                    "same_items", "shared_items", "groups_left_out", "items_left_out", "note", "statistic", "debiased",
                    "queries", "clusters")
# ... and the usual values, which it does not say at all (JSON and --full keep them)
QUIET_SETTINGS = {"dropped": "0", "sizes": "random", "groups_left_out": "0", "items_left_out": "0", "calibrated": "true"}
# where the documentation explains each section's caution (the full text: --explain, or <details> in HTML)
# (pages of the documentation's guides, docs/guides/ in the repository)
CAUTION_DOCS = {
    "decomposition": "compare.md#r-f-and-v", "groups": "compare.md#the-report",
    "jackknife": "how-sure.md#intervals-for-one-model", "bootstrap": "how-sure.md#intervals-for-one-model",
    "compare": "how-sure.md#model-against-model-paired", "permanova": "how-sure.md#tests",
    "dispersion": "how-sure.md#tests", "models": "designs.md#agreement-between-models",
    "ranking": "compare.md#which-model-is-best-and-how-sure",
}
KEY_COLUMNS = ("model", "model_a", "model_b", "statistic", "measure", "metric", "group", "quantile", "classifier",
               "correlation")


def caution_headline(caution: str) -> str:
    """A caution's first sentence: the one line the text report prints (the rest: --explain)."""
    text = " ".join(caution.split())
    for k in range(len(text) - 1):
        if text[k] in ".;" and text[k + 1] == " " and k > 20 and not text[k - 1].isdigit() and \
                text[max(0, k - 4):k] not in ("e.g", " i.e", "i.e"):
            return text[:k + 1] if text[k] == "." else text[:k] + "."
    return text


def caution_docs(name: str) -> str:
    """The documentation page and section that explain section ``name``'s caution."""
    if name in CAUTION_DOCS:
        return CAUTION_DOCS[name]
    if name.startswith("evaluation"):
        return "retrieval.md#evaluation-exact-top-k-and-trec_evals-metrics"
    if name.startswith(("similarity", "classification")):
        return "compare.md#human-judgements-and-labels"
    return "retrieval.md"


def headline(section: DocumentSection) -> str:
    """The section's caution in one line: its own headline where it has one, else its first sentence."""
    own = getattr(section, "headline", "")
    return own if isinstance(own, str) and own else caution_headline(section.caution)


def _text_width(width: int | None, color: bool) -> int:
    """The text's width: the terminal's (or COLUMNS when piped), never above MAX_WIDTH."""
    if width is None:
        columns = os.environ.get("COLUMNS", "")
        if color:
            width = shutil.get_terminal_size((PIPED_WIDTH, 24)).columns
        else:
            width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return max(40, min(width, MAX_WIDTH))


def _cells(rows: list[list[Any]]) -> list[list[str]]:
    return [[format_cell(cell, DIGITS) for cell in row] for row in rows]


def _line_width(widths: list[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


def _protected(header: list[str]) -> set[str]:
    """Columns never dropped: the leading labels (model, statistic ...) and every interval with its point."""
    keep = set()
    for name in header:
        if name not in KEY_COLUMNS:
            break
        keep.add(name)
    for point, low, high in intervals(header):
        keep |= {point, low, high}
    return keep | {INTERVAL_NOTE}


def _said_once(header: list[str], text: list[list[str]]) -> tuple[list[int], list[str]]:
    """(the columns a table shows, "name value" of the settings columns said once instead): a settings
    column with one value in every row is said once, or not at all when its value is the usual one."""
    columns = list(range(len(header)))
    said: list[str] = []
    if not text:
        return columns, said
    for k in list(columns):
        values = {row[k] for row in text}
        if header[k] in SETTINGS_COLUMNS and len(values) == 1 and header[k] not in _protected(header):
            value = values.pop()
            if value != "—" and QUIET_SETTINGS.get(header[k]) != value:
                said.append(f"{header[k]} {value}")
            columns.remove(k)
    return columns, said


def _fit(header: list[str], rows: list[list[Any]], width: int, full: bool
         ) -> tuple[list[tuple[list[str], list[list[str]]]], list[str], list[str]]:
    """The table as blocks that fit ``width`` (never a cell cut): (blocks, "name value" of the settings
    columns said once, the columns left out).  By default a settings column with one value in every row
    is said once, and the widest other columns are left out until the rest fits; with ``full`` the
    columns that do not fit go to further blocks, each starting with the label columns."""
    text = _cells(rows)
    columns, said = (list(range(len(header))), []) if full else _said_once(header, text)
    widths = {k: max([len(header[k])] + [len(row[k]) for row in text]) for k in columns}
    dropped: list[str] = []
    keep = _protected(header)
    if not full:
        while _line_width([widths[k] for k in columns]) > width:
            candidates = [k for k in columns if header[k] not in keep]
            if not candidates:
                break
            widest = max(candidates, key=lambda k: (widths[k], k))
            columns.remove(widest)
            dropped.append(header[widest])
    labels = [k for k in columns if header[k] in KEY_COLUMNS and k == columns[columns.index(k)]
              and all(header[j] in KEY_COLUMNS for j in columns[:columns.index(k)])]
    rest = [k for k in columns if k not in labels]
    blocks: list[list[int]] = []
    current = list(labels)
    for k in rest:
        if len(current) > len(labels) and _line_width([widths[j] for j in current + [k]]) > width:
            blocks.append(current)
            current = list(labels)
        current.append(k)
    blocks.append(current)
    return ([([header[k] for k in block], [[row[k] for k in block] for row in text]) for block in blocks],
            said, dropped)


def _compact_rows(section: DocumentSection) -> tuple[list[str], list[list[Any]], str] | None:
    """A long section in a few rows, for the default text: min, median and max of each numeric column
    per model.  None when the section is short (or has no numeric columns).  The ranking: one row
    per metric (_rank_rows)."""
    table = section.table
    rows = [list(r) for r in table.rows]
    if section.name == LEADING:
        return _rank_rows(table)
    pivot = _pivot_statistics(table)
    if pivot is not None:
        return pivot
    if len(rows) <= COMPACT_ROWS:
        return None
    # rows of different quantities (nDCG@10 beside recall@100): a quantile across them means nothing
    if any(len({r[k] for r in rows}) > 1 for k, c in enumerate(table.columns) if c in QUANTITY_COLUMNS):
        return None
    numeric = [k for k, c in enumerate(table.columns)
               if c != "model" and any(is_number(r[k]) for r in rows) and all(r[k] is None or is_number(r[k]) for r in rows)]
    if not numeric:
        return None
    by_model = table.columns[0] == "model"
    groups: dict[Any, list[list[Any]]] = {}
    for r in rows:
        groups.setdefault(r[0] if by_model else None, []).append(r)
    header = (["model"] if by_model else []) + ["quantile"] + [table.columns[k] for k in numeric]
    body = []
    for model, members in groups.items():
        for label, q in (("min", 0.0), ("median", 0.5), ("max", 1.0)):
            cells = []
            for k in numeric:
                values = [float(r[k]) for r in members if is_number(r[k]) and math.isfinite(float(r[k]))]
                cells.append(float(np.quantile(values, q)) if values else None)
            body.append(([model] if by_model else []) + [label] + cells)
    note = f"{len(rows)} rows as quantiles (--full: every row)"
    return header, body, note


# the columns that say which quantity a row holds (its other columns are that quantity's figures)
QUANTITY_COLUMNS = ("metric", "statistic", "measure", "correlation", "classifier")
LEADING = "ranking"     # the section shown right after the verdict, before the summary
RANK_ROWS_WIDTH = 90    # the ranking's one-row-per-metric form when it is at most this wide (else one row per model)


def _rank_rows(table: ResultTable) -> tuple[list[str], list[list[Any]], str] | None:
    """The ranking with one row per metric, its models in the order of their rank, a cell reading
    "base-768 1 [1–2]" (the rank by the estimate, then the set rank_low–rank_high; "*" marks the
    models that could be first), and no header, when it fits in RANK_ROWS_WIDTH; else None (one row
    per model and metric)."""
    found = [dict(zip(table.columns, row)) for row in table.rows]
    if not found or not {"metric", "model", "rank", "rank_low", "rank_high", "top"} <= set(table.columns):
        return None
    metrics = list(dict.fromkeys(row["metric"] for row in found))
    cells = {(row["metric"], row["model"]): f"{row['rank']} [{row['rank_low']}–{row['rank_high']}]"
             + ("*" if row["top"] else "") for row in found}
    rows = []
    for metric in metrics:
        placed = sorted((row for row in found if row["metric"] == metric),
                        key=lambda r: (r["rank"], r["rank_low"], r["rank_high"]))
        rows.append([metric] + [f"{model_label(r['model'])} {cells[(metric, r['model'])]}" for r in placed])
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    widths = [max(len(str(c)) for c in column) for column in zip(*rows)]
    if sum(widths) + len(widths) - 1 > RANK_ROWS_WIDTH:
        return None
    level = found[0].get("level")
    said = f"{level:.0%} simultaneous" if isinstance(level, float) else "simultaneous"
    return [""] * width, rows, f"{said}; model rank [set], * could be first"    # no header


def _pivot_statistics(table: ResultTable) -> tuple[list[str], list[list[Any]], str] | None:
    """A table of (model, statistic, figures...) rows with several statistics per model as one row per
    model: STATISTIC_FIGURE columns (r2_se, f_se ...), the figures that vary only; None otherwise."""
    columns = list(table.columns)
    if columns[:2] != ["model", "statistic"] or len(table.rows) < 2:
        return None
    statistics = list(dict.fromkeys(row[1] for row in table.rows))
    models = list(dict.fromkeys(row[0] for row in table.rows))
    if len(statistics) < 2 or len(table.rows) != len(statistics) * len(models):
        return None
    figures = [k for k in range(2, len(columns)) if len({row[k] for row in table.rows if row[1] == statistics[0]}) > 1
               or len({row[k] for row in table.rows}) > 1]
    by = {(row[0], row[1]): row for row in table.rows}
    header = ["model"] + [f"{stat}_{columns[k]}" for stat in statistics for k in figures]
    rows = [[model] + [by[(model, stat)][k] if (model, stat) in by else None for stat in statistics for k in figures]
            for model in models]
    return header, rows, "one row per model"


def to_text(result: Document, *, color: bool | None = None, width: int | None = None, full: bool = False,
            explain: bool = False) -> str:
    """The report as terminal text: the verdict first, then one compact table per section, each with
    its caution in one line (``explain=True``: in full).  Colour only when stdout is a terminal and
    NO_COLOR is unset (``color`` overrides); without colour the text has no escape codes at all.
    The text is as wide as the terminal (written to a pipe or a file: COLUMNS, else 100), never
    wider than 100; a number is never cut: a table that does not fit leaves out its widest columns
    and says which (``full=True`` wraps them onto further lines instead, and prints every row)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    color = _color_wanted() if color is None else color
    width = _text_width(width, color)
    buffer = io.StringIO()
    # force_jupyter=False: inside a notebook kernel rich would display the text instead of writing it
    console = Console(file=buffer, width=width, force_terminal=color, force_jupyter=False, no_color=not color,
                      color_system="standard" if color else None, highlight=False, emoji=False)

    def paragraph(text: str, style: str = "", indent: str = "") -> None:
        console.print(Text(textwrap.fill(text, width, subsequent_indent=indent, break_on_hyphens=False,
                                         break_long_words=False), style=style))

    def tables(title: Text, header: list[str], rows: list[list[Any]], first_is_label: bool = False) -> None:
        blocks, said, dropped = _fit(header, rows, width, full)
        heading = title.copy()
        if said:
            heading.append(" · " + ", ".join(said), style="dim")
        if dropped:
            heading.append(f" · not shown: {', '.join(dropped)} (--full)", style="dim")
        for line in textwrap.wrap(heading.plain, width, subsequent_indent="  ", break_on_hyphens=False):
            console.print(Text(line, style="bold"))
        for shown_header, shown_rows in blocks:
            # Text objects throughout, so that a label such as "[bold]" is printed, not read as markup
            shown = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, header_style="bold",
                          show_header=any(header))
            for k, name in enumerate(shown_header):
                numeric = any(is_number(cell) for cell in _raw_column(rows, header, name)) and \
                    not (first_is_label and k == 0)
                shown.add_column(Text(name), justify="right" if numeric else "left", no_wrap=name != INTERVAL_NOTE,
                                 overflow="fold")
            for row in shown_rows:
                shown.add_row(*(Text(cell) for cell in row))
            console.print(shown)

    console.print(Text(result.title, style="bold"))
    for sentence in result.verdict:
        console.print()
        paragraph(sentence, "bold")
    notes = _notes(result)
    if notes:
        console.print()
    for note in notes:
        paragraph(f"Note: {note.rstrip('.')}.", indent="      ")
    # the ranking right after the verdict, then the summary (a retrieval-only report has none), then the
    # sections; a blank line before the first of them (before each with --explain or --full)
    blocks: list[DocumentSection | None] = [s for s in result.sections if s.name == LEADING]
    blocks += [None] if result.summary.rows else []
    blocks += [s for s in result.sections if s.name != LEADING]
    for k, section in enumerate(blocks):
        if k == 0 or explain or full:
            console.print()
        if section is None:
            tables(Text("Summary"), *_summary_grid(_summary_for_text(result, full or explain),
                                                    result.meta.get("level"), DIGITS), first_is_label=True)
            continue
        title = Text(section.title) + Text(f" ({section.name})", style="dim")
        compact = None if full else _compact_rows(section)
        if compact is not None:
            header, rows, note = compact
            title.append(f" · {note}", style="dim")
        else:
            header, rows = list(section.table.columns), [list(r) for r in section.table.rows]
        tables(title, *_with_interval_notes(header, rows))
        if section.caution:
            if explain:
                paragraph(f"Caution: {section.caution}", "italic")
            else:
                paragraph(f"Caution: {headline(section)} → {caution_docs(section.name)}", "italic", indent="  ")
    console.print()
    details = [f"{k}: {v}" for k, v in _meta_items(result.meta, header=True)]
    if explain or full:
        details += [f"{k}: {v}" for k, v in _meta_items(result.meta, header=False)]
    for line in _pack(details, width):
        console.print(Text(line, style="dim"))
    if not explain and any(section.caution for section in result.sections):
        console.print(Text("Each caution in full: --explain, the HTML report, or the docs' guides (docs/guides/).",
                           style="dim"))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _raw_column(rows: list[list[Any]], header: list[str], name: str) -> list[Any]:
    if name not in header:
        return []
    k = header.index(name)
    return [row[k] for row in rows if k < len(row)]


def _summary_for_text(result: Document, everything: bool) -> ResultTable:
    """The summary without the rows a section of this report already shows, or that no model has
    (unless ``everything``): the figures the summary alone has, the sample R² and the interval beside
    its point stay."""
    summary = result.summary
    if everything or not summary.rows or summary.columns[0] != "model":
        return summary
    shown_in = {"r2_se": "jackknife", "f": "decomposition", "v": "decomposition", "w_bar": "decomposition",
                "n": "decomposition", "groups": "decomposition", "calibrated": "bootstrap",
                "p_value": "permanova", "dispersion_p": "dispersion"}
    names = {section.name for section in result.sections}
    keep = [k for k, c in enumerate(summary.columns) if shown_in.get(c) not in names
            and (k == 0 or any(row[k] is not None for row in summary.rows))]    # nor a figure no model has
    return ResultTable(summary.title, tuple(summary.columns[k] for k in keep),
                       tuple(tuple(row[k] for k in keep) for row in summary.rows))


def _pack(items: list[str], width: int) -> list[str]:
    """Items joined by two spaces into lines of at most ``width`` (an item is never split)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines


def _color_wanted() -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty()


# ---------------------------------------------------------------- Markdown

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|"} | {"<": "&lt;", ">": "&gt;", "&": "&amp;",
                                                                   "\n": " ", "\r": " "})


def _md(text: str) -> str:
    """Text safe in a Markdown table cell or paragraph (no markup, no HTML, no line breaks)."""
    return str(text).translate(_MD_SPECIAL)


def to_markdown(result: Document, *, full: bool = False, explain: bool = False) -> str:
    """GitHub-flavoured Markdown: tables, cautions as blockquotes, the SQL in a code block.
    ``full=True`` keeps every row of long sections.  Each caution is one line naming the docs
    section that explains it, as in the terminal (``explain=True``: in full)."""
    lines = [f"# {_md(result.title)}", ""]
    lines += [f"- **{_md(k)}**: {_md(v)}" for k, v in _meta_items(result.meta, header=True)]
    for sentence in result.verdict:
        lines += ["", f"**{_md(sentence)}**"]
    if _notes(result):
        lines += [""] + [f"- Note: {_md(note)}" for note in _notes(result)]
    leading = [s for s in result.sections if s.name == LEADING]     # the ranking first, as in the other formats
    for k, section in enumerate(leading + [s for s in result.sections if s.name != LEADING]):
        if k == len(leading) and result.summary.rows:
            lines += ["", "## Summary", ""] + _md_table(*_summary_grid(result.summary, result.meta.get("level"),
                                                                       DIGITS))
        lines += ["", f"## {_md(section.title)}", ""]
        rows, quantiles, note = _shortened(section, full)
        lines += _md_table(*_with_interval_notes(list(section.table.columns), rows))
        if quantiles:
            lines += ["", "Quantiles:", ""] + _md_table(*quantiles)
        if note:
            lines += ["", f"*{_md(note)}*"]
        if section.caution:
            caution = section.caution if explain else f"{headline(section)} → {caution_docs(section.name)}"
            lines += ["", f"> **Caution:** {_md(caution)}"]
    if result.summary.rows and all(s.name == LEADING for s in result.sections):
        lines += ["", "## Summary", ""] + _md_table(*_summary_grid(result.summary, result.meta.get("level"), DIGITS))
    if not explain and any(section.caution for section in result.sections):
        lines += ["", "*Each caution in full: --explain, the HTML report, or the docs' guides (docs/guides/).*"]
    details = _meta_items(result.meta, header=False)
    if details:
        lines += ["", "## Run details", ""] + [f"- **{_md(k)}**: {_md(v)}" for k, v in details]
    sql = result.meta.get("sql")
    if sql:
        fence = "`" * max(3, _longest_backtick_run(sql) + 1)
        # folded, as in the HTML report: with hundreds of dimensions the aggregate is long
        lines += ["", "## SQL", "", "<details><summary>SQL that was run</summary>", "", f"{fence}sql",
                  str(sql).rstrip(), fence, "", "</details>"]
    return "\n".join(lines) + "\n"


def _md_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    align = ["---:" if any(is_number(row[k]) for row in rows) else ":---" for k in range(len(header))]
    lines = ["| " + " | ".join(_md(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_md(format_cell(cell, DIGITS)) for cell in row) + " |" for row in rows]
    return lines


def _longest_backtick_run(text: object) -> int:
    longest = run = 0
    for char in str(text):
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


# ---------------------------------------------------------------- JSON

def to_json(result: Document) -> str:
    """The report as JSON of schema ``embsql.report/1`` (see the module docstring)."""
    document = {
        "schema": SCHEMA,
        "title": result.title,
        "verdict": result.verdict,
        "notes": _notes(result),
        "meta": _json_value(result.meta),
        "summary": _json_table(result.summary),
        "sections": [{"name": s.name, "title": s.title, "caution": s.caution, **_json_table(s.table)}
                     for s in result.sections],
    }
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)


def _json_table(table: ResultTable) -> dict[str, Any]:
    rows: list[list[Any]] = []
    nonfinite: list[dict[str, Any]] = []
    for r, row in enumerate(table.rows):
        cells = []
        for column, value in zip(table.columns, row):
            if is_number(value) and not math.isfinite(float(value)):
                nonfinite.append({"row": r, "column": column, "value": format_cell(value)})
                value = None
            cells.append(_json_value(value))
        rows.append(cells)
    columns, rows = _with_interval_notes(list(table.columns), rows)
    return {"title": table.title, "columns": columns, "rows": rows, "nonfinite": nonfinite,
            "intervals": [{"point": point, "low": low, "high": high} for point, low, high in intervals(columns)]}


def _json_value(value: Any) -> Any:
    value = plain(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else format_cell(number)
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


# ---------------------------------------------------------------- HTML

def to_html(result: Document, plots: bool = True, standalone: bool = True) -> str:
    """One self-contained HTML file: inline CSS, figures as inline PNG, no scripts, no fetches.

    ``standalone=False`` gives a fragment (no <html> or <head>) for Jupyter's _repr_html_.  When
    matplotlib is missing, ``plots=True`` renders without figures and says so in a note.
    """
    figures, note = _html_figures(result) if plots else ({}, "")
    esc = html.escape
    parts = [f'<div class="embsql-report"><style>{_CSS}</style>', "<header>", f"<h1>{esc(result.title)}</h1>"]
    meta = _meta_items(result.meta, header=True)
    if meta:
        parts.append('<p class="meta">' + " · ".join(
            f'<span><span class="key">{esc(k)}</span> {esc(v)}</span>' for k, v in meta) + "</p>")
    if result.sections:
        parts.append('<nav>' + " · ".join(f'<a href="#section-{esc(s.name)}">{esc(s.title)}</a>'
                                           for s in result.sections) + "</nav>")
    parts.append("</header>")
    if note:
        parts.append(f'<p class="note">{esc(note)}</p>')
    sentences, notes = result.verdict, _notes(result)
    if sentences or notes or figures.get("verdict"):
        parts.append('<section id="verdict" class="row"><div class="verdict">')
        parts += [f"<p>{esc(sentence)}</p>" for sentence in sentences]
        if notes:
            parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
        parts.append("</div>")
        parts += [_html_figure(plot, result, with_caution=False) for plot in figures.get("verdict", [])]
        parts.append("</section>")

    ordered = [s for s in result.sections if s.name == LEADING] + [s for s in result.sections if s.name != LEADING]
    for k, section in enumerate(ordered):
        if section.name != LEADING and (k == 0 or ordered[k - 1].name == LEADING):
            parts += _html_summary(result, figures)    # after the ranking, before the other sections
        parts.append(f'<section id="section-{esc(section.name)}">'
                     f'<h2>{esc(section.title)} <span class="key">{esc(section.name)}</span></h2>')
        # as in the text report, a setting with one value in every row is said once above the table (the
        # JSON keeps every column), so that the table fits the page
        header, rows = _with_interval_notes(list(section.table.columns), [list(r) for r in section.table.rows])
        shown, said = _said_once(header, _cells(rows))
        if said:
            parts.append('<p class="meta">' + " · ".join(
                f'<span><span class="key">{esc(k)}</span> {esc(v)}</span>'
                for k, v in (item.split(" ", 1) for item in said)) + "</p>")
        parts.append('<div class="row">')
        parts += [_html_figure(plot, result, with_caution=False) for plot in figures.get(section.name, [])]
        parts.append(_html_table([header[k] for k in shown], [[row[k] for k in shown] for row in rows]))
        parts.append("</div>")
        if section.caution:   # one line; the full text folded beneath it
            parts.append(f'<details class="caution"><summary><strong>Caution.</strong> {esc(headline(section))} '
                         f'<span class="key">{esc(caution_docs(section.name))}</span></summary>'
                         f'<p>{esc(section.caution)}</p></details>')
        parts.append("</section>")

    if all(s.name == LEADING for s in result.sections):
        parts += _html_summary(result, figures)
    details = _meta_items(result.meta, header=False)
    if details:
        parts.append('<details class="run"><summary>Run details</summary><p class="meta">' + " · ".join(
            f'<span><span class="key">{esc(k)}</span> {esc(v)}</span>' for k, v in details) + "</p></details>")
    sql = result.meta.get("sql")
    if sql:
        parts.append(f'<details class="sql"><summary>SQL that was run</summary><pre>{esc(str(sql))}</pre></details>')
    parts.append("</div>")
    body = "\n".join(parts)
    if not standalone:
        return body
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(result.title)}</title>\n<style>{_PAGE_CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _html_summary(result: Document, figures: dict[str, list[Plot]]) -> list[str]:
    """The summary grid with its figures (none for a retrieval-only report)."""
    if not result.summary.rows:
        return []
    return (['<section id="summary"><h2>Summary</h2><div class="row">',
             _html_table(*_summary_grid(result.summary, result.meta.get("level"), DIGITS), row_headers=True)]
            + [_html_figure(plot, result) for plot in figures.get("summary", [])] + ["</div></section>"])


def _html_figures(result: Document) -> tuple[dict[str, list[Plot]], str]:
    """Figures keyed by where they go; or no figures and a note when matplotlib is missing."""
    if not matplotlib_available():
        return {}, PLOT_NOTE
    placed: dict[str, list[Plot]] = {}
    for plot in report_plots(result):
        placed.setdefault(plot.anchor, []).append(plot)
    return placed, ""


def _html_figure(plot: Plot, result: Document, *, with_caution: bool = True) -> str:
    """A figure as an inline PNG (rendered at 160 dpi, shown at 96 px per inch: sharp text on high-density screens)."""
    width, height = (round(v * 96) for v in plot.figure.get_size_inches())  # CSS px per inch
    data = base64.b64encode(png_bytes(plot.figure)).decode("ascii")
    title = html.escape(plot.caption)
    caution_html = ""
    if with_caution and plot.caution_from:   # the caution is under its section's table: a link, not a copy
        section = next((s for s in result.sections if s.name == plot.caution_from and s.caution), None)
        if section is not None:
            caution_html = (f'<p class="caution"><strong>Caution.</strong> {html.escape(headline(section))} '
                            f'<a href="#section-{html.escape(section.name)}">More under {html.escape(section.title)}'
                            '</a></p>')
    # the figure is as wide as its image, so the caption wraps under the image, not beside it
    return (f'<figure style="width:{width}px"><img alt="{title}" width="{width}" height="{height}" '
            f'src="data:image/png;base64,{data}">'
            f"<figcaption>{title}</figcaption>{caution_html}</figure>")


def _html_table(header: list[str], rows: list[list[Any]], *, row_headers: bool = False) -> str:
    esc = html.escape
    numeric = [any(is_number(row[k]) for row in rows) for k in range(len(header))]
    # a long column name may break after an underscore (<wbr>): the names, not the numbers, make tables wide
    head = "".join(f'<th class="{"num" if numeric[k] and not (row_headers and k == 0) else "txt"}">'
                   f'{esc(h).replace("_", "_<wbr>")}</th>' for k, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for k, cell in enumerate(row):
            text = esc(format_cell(cell, DIGITS))
            if row_headers and k == 0:
                cells.append(f'<th scope="row" class="txt">{text}</th>')
            elif cell is None:
                cells.append(f'<td class="na" title="no value">{text}</td>')
            else:   # the full value on hover; a column of numbers is right-aligned throughout
                full = format_cell(cell)
                hover = f' title="{esc(full)}"' if full != format_cell(cell, DIGITS) else ""
                aligned = "num" if is_number(cell) or (numeric[k] and not isinstance(plain(cell), bool)) else "txt"
                cells.append(f'<td class="{aligned}"{hover}>{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    tall = " tall" if len(rows) > TALL_TABLE else ""
    return (f'<div class="tablewrap{tall}"><table><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


# Every rule is scoped to .embsql-report so that a fragment in a notebook styles only itself.
# System fonts only: nothing is fetched.  _CSS doubles the class (.embsql-report.embsql-report)
# so that its rules outrank a notebook's own table, heading and link styles (JupyterLab's
# .jp-RenderedHTMLCommon rules): the report looks the same in a notebook and in a browser.
_RULES = """
.embsql-report{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
 color:#1d232a;background:#fff;max-width:1240px;margin:0 auto;padding:14px 24px 40px;box-sizing:border-box;text-align:left}
.embsql-report h1{font-size:1.4rem;margin:0 0 2px}
.embsql-report h2{font-size:1.1rem;margin:22px 0 6px;padding-top:6px;border-top:1px solid #d5dae0}
.embsql-report #summary h2{border-top:none;margin-top:8px}
.embsql-report .key{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#5b6570;font-weight:normal}
.embsql-report .meta{color:#3d4650;font-size:.85rem;margin:2px 0}
.embsql-report .meta>span{white-space:nowrap;margin-right:4px}
.embsql-report nav{font-size:.85rem;margin:4px 0}
.embsql-report a{color:#1f5f99}
.embsql-report .row{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.embsql-report .tablewrap{overflow-x:auto;max-width:100%;width:fit-content}
.embsql-report .tablewrap.tall{max-height:24em;overflow-y:auto;border:1px solid #e3e6ea}
.embsql-report table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.88rem}
.embsql-report th,.embsql-report td{padding:3px 10px;border-bottom:1px solid #e3e6ea;white-space:nowrap}
.embsql-report thead th{background:#f1f4f7;position:sticky;top:0;font-weight:600;white-space:normal;vertical-align:bottom}
.embsql-report .num{text-align:right}
.embsql-report .txt{text-align:left}
.embsql-report tbody th{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:normal}
.embsql-report td.na{color:#8a939c;text-align:center}
.embsql-report figure{margin:0 0 10px;max-width:100%}
.embsql-report figure img{max-width:100%;height:auto;display:block}
.embsql-report figcaption{font-size:.85rem;color:#3d4650}
.embsql-report .caution{border-left:4px solid #c98f00;background:#fff7df;padding:6px 12px;margin:8px 0;
 font-size:.9rem;max-width:82ch;color:#1d232a}
.embsql-report details.caution summary{cursor:pointer}
.embsql-report details.caution p{margin:6px 0 0}
.embsql-report .note{background:#eef3f8;padding:6px 12px;font-size:.9rem}
.embsql-report #verdict{margin:10px 0 4px;align-items:center}
.embsql-report .verdict{max-width:62ch;flex:1 1 32ch}
.embsql-report .verdict p{font-size:1.02rem;margin:0 0 8px;line-height:1.5}
.embsql-report .verdict p:first-child{font-weight:600}
.embsql-report ul.notes{font-size:.88rem;color:#3d4650;margin:4px 0;padding-left:18px}
.embsql-report details.sql pre{background:#f6f8fa;padding:10px;overflow-x:auto;font-size:.85rem}
.embsql-report details{font-size:.88rem;color:#3d4650;margin-top:8px}
.embsql-report h1,.embsql-report h2{font-weight:600;line-height:1.25;color:#1d232a}
.embsql-report p{margin:6px 0}
.embsql-report table{table-layout:auto;margin:0;color:inherit;border:none}
.embsql-report th,.embsql-report td{line-height:1.35;vertical-align:baseline;max-width:none}
.embsql-report tbody tr,.embsql-report tbody tr:nth-child(odd),.embsql-report tbody tr:hover{background:transparent}
.embsql-report a{text-decoration:underline}
"""
_CSS = _RULES.replace(".embsql-report", ".embsql-report.embsql-report")
_PAGE_CSS = "body{margin:0;background:#fff}"
