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
META_HIDDEN = ("sql", "notes", "verdict")   # shown in their own places, not in the header line
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
    """Whether a finite point lies outside its finite interval."""
    if not all(is_number(v) and math.isfinite(float(v)) for v in (value, low, high)):   # type: ignore[arg-type]
        return False
    return not float(low) <= float(value) <= float(high)   # type: ignore[arg-type]


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

def to_text(result: Document, *, color: bool | None = None, width: int | None = None, full: bool = False) -> str:
    """The report as terminal text.  Colour only when stdout is a terminal and NO_COLOR is unset
    (``color`` overrides); without colour the text has no escape codes at all.  Tables fit the
    terminal; written elsewhere (a file, a pipe, a string) they are never squeezed or cut.
    ``full=True`` prints every row of long sections."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    color = _color_wanted() if color is None else color
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns if color else 400
    buffer = io.StringIO()
    # force_jupyter=False: inside a notebook kernel rich would display the text instead of writing it
    console = Console(file=buffer, width=width, force_terminal=color, force_jupyter=False, no_color=not color,
                      color_system="standard" if color else None, highlight=False, emoji=False)
    prose = min(width, 100)

    def table(title: Text, header: list[str], rows: list[list[Any]], first_is_label: bool = False) -> Table:
        # Text objects throughout, so that a label such as "[bold]" is printed, not read as markup
        shown = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                      show_edge=False, header_style="bold")
        for k, name in enumerate(header):
            numeric = any(is_number(row[k]) for row in rows) and not (first_is_label and k == 0)
            shown.add_column(Text(name), justify="right" if numeric else "left")
        for row in rows:
            shown.add_row(*(Text(format_cell(cell, DIGITS)) for cell in row))
        return shown

    console.print(Text(result.title, style="bold"))
    for line in _pack([f"{k}: {v}" for k, v in _meta_items(result.meta, header=True)], prose):
        console.print(Text(line, style="dim"))
    for sentence in result.verdict:
        console.print()
        console.print(Text(textwrap.fill(sentence, prose), style="bold"))
    if _notes(result):
        console.print()
    for note in _notes(result):
        console.print(Text(textwrap.fill(f"Note: {note.rstrip('.')}.", prose, subsequent_indent="      ")))
    console.print()
    console.print(table(Text("Summary"), *_summary_grid(result.summary, result.meta.get("level"), DIGITS),
                        first_is_label=True))
    for section in result.sections:
        console.print()
        title = Text(section.title) + Text(f"  ({section.name})", style="dim")
        rows, quantiles, note = _shortened(section, full)
        console.print(table(title, *_with_interval_notes(list(section.table.columns), rows)))
        if quantiles:
            console.print(table(Text("Quantiles", style="dim"), *quantiles))
        if note:
            console.print(Text(textwrap.fill(note, prose), style="dim"))
        if section.caution:
            console.print(Text(textwrap.fill(f"Caution: {section.caution}", prose), style="italic"))
    details = _meta_items(result.meta, header=False)
    if details:
        console.print()
        for line in _pack([f"{k}: {v}" for k, v in details], prose):
            console.print(Text(line, style="dim"))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


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


def to_markdown(result: Document, *, full: bool = False) -> str:
    """GitHub-flavoured Markdown: tables, cautions as blockquotes, the SQL in a code block.
    ``full=True`` keeps every row of long sections."""
    lines = [f"# {_md(result.title)}", ""]
    lines += [f"- **{_md(k)}**: {_md(v)}" for k, v in _meta_items(result.meta, header=True)]
    for sentence in result.verdict:
        lines += ["", f"**{_md(sentence)}**"]
    if _notes(result):
        lines += [""] + [f"- Note: {_md(note)}" for note in _notes(result)]
    lines += ["", "## Summary", ""] + _md_table(*_summary_grid(result.summary, result.meta.get("level"), DIGITS))
    for section in result.sections:
        lines += ["", f"## {_md(section.title)}", ""]
        rows, quantiles, note = _shortened(section, full)
        lines += _md_table(*_with_interval_notes(list(section.table.columns), rows))
        if quantiles:
            lines += ["", "Quantiles:", ""] + _md_table(*quantiles)
        if note:
            lines += ["", f"*{_md(note)}*"]
        if section.caution:
            lines += ["", f"> **Caution:** {_md(section.caution)}"]
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

    parts.append('<section id="summary"><h2>Summary</h2><div class="row">')
    parts.append(_html_table(*_summary_grid(result.summary, result.meta.get("level"), DIGITS), row_headers=True))
    parts += [_html_figure(plot, result) for plot in figures.get("summary", [])]
    parts.append("</div></section>")

    for section in result.sections:
        parts.append(f'<section id="section-{esc(section.name)}">'
                     f'<h2>{esc(section.title)} <span class="key">{esc(section.name)}</span></h2>')
        parts.append('<div class="row">')
        parts += [_html_figure(plot, result, with_caution=False) for plot in figures.get(section.name, [])]
        parts.append(_html_table(*_with_interval_notes(list(section.table.columns), [list(r) for r in section.table.rows])))
        parts.append("</div>")
        if section.caution:
            parts.append(f'<p class="caution"><strong>Caution.</strong> {esc(section.caution)}</p>')
        parts.append("</section>")

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
    caution = ""
    if with_caution and plot.caution_from:
        caution = next((s.caution for s in result.sections if s.name == plot.caution_from), "")
    caution_html = f'<p class="caution"><strong>Caution.</strong> {html.escape(caution)}</p>' if caution else ""
    # the figure is as wide as its image, so the caption wraps under the image, not beside it
    return (f'<figure style="width:{width}px"><img alt="{title}" width="{width}" height="{height}" '
            f'src="data:image/png;base64,{data}">'
            f"<figcaption>{title}</figcaption>{caution_html}</figure>")


def _html_table(header: list[str], rows: list[list[Any]], *, row_headers: bool = False) -> str:
    esc = html.escape
    numeric = [any(is_number(row[k]) for row in rows) for k in range(len(header))]
    head = "".join(f'<th class="{"num" if numeric[k] and not (row_headers and k == 0) else "txt"}">{esc(h)}</th>'
                   for k, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for k, cell in enumerate(row):
            text = esc(format_cell(cell, DIGITS))
            if row_headers and k == 0:
                cells.append(f'<th scope="row" class="txt">{text}</th>')
            elif cell is None:
                cells.append(f'<td class="na" title="no value">{text}</td>')
            else:   # the full value on hover
                full = format_cell(cell)
                hover = f' title="{esc(full)}"' if full != format_cell(cell, DIGITS) else ""
                cells.append(f'<td class="{"num" if is_number(cell) else "txt"}"{hover}>{text}</td>')
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
.embsql-report thead th{background:#f1f4f7;position:sticky;top:0;font-weight:600}
.embsql-report .num{text-align:right}
.embsql-report .txt{text-align:left}
.embsql-report tbody th{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:normal}
.embsql-report td.na{color:#8a939c;text-align:center}
.embsql-report figure{margin:0 0 10px;max-width:100%}
.embsql-report figure img{max-width:100%;height:auto;display:block}
.embsql-report figcaption{font-size:.85rem;color:#3d4650}
.embsql-report .caution{border-left:4px solid #c98f00;background:#fff7df;padding:6px 12px;margin:8px 0;
 font-size:.9rem;max-width:82ch}
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
