"""Rendering (embsql.render.formats) and plots (embsql.render.plots) of a report, on the fake report in
tests/report_fixtures.py.  Expected values come from the fixture's own constants, not from a
renderer's output."""

import html
import io
import json
import math
import re
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
import report_fixtures as fx
from report_fixtures import fake_report, unlabelled_report

from embsql.render import formats as render
from embsql.render.plots import plot_report, report_plots
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

ANSI = re.compile(r"\x1b\[")


def _flat(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------- cells

@pytest.mark.parametrize("value, shown", [
    (None, "—"), (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan"), (0.312345678, "0.312346"),
    (1234567.0, "1.23457e+06"), (3, "3"), (np.int64(999), "999"), (np.float32(0.5), "0.5"), (True, "true"),
    (np.bool_(False), "false"), (np.float64(np.inf), "inf"),
    ("a|b", "a|b"),
])
def test_cells_read_the_same_everywhere(value, shown):
    assert render.format_cell(value) == shown
    table = ResultTable("t", ("x",), ((value,),))            # the ResultTable repr and notebook HTML agree
    assert repr(table).splitlines()[-1].strip() == shown
    assert f">{html.escape(shown)}</td>" in table._repr_html_()


def test_a_negative_infinity_keeps_its_sign_in_a_result_table():
    """ResultTable once printed -inf as "inf"; a figure that is -inf must not read as +inf."""
    table = ResultTable("t", ("f", "g"), ((-math.inf, math.inf),))
    assert repr(table).splitlines()[-1].split() == ["-inf", "inf"]
    assert '<td style="text-align:right">-inf</td>' in table._repr_html_()


# ---------------------------------------------------------------- text

def test_text_has_the_numbers_cautions_and_summary_first(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = render.to_text(fake_report())
    flat = _flat(text)
    for value in (fx.R2["mini-384"], fx.R2["base-768"], fx.R2_SE["base-768"], *fx.BOOT_CI["base-768"]):
        assert f"{value:.3g}" in text      # three significant digits
    assert " inf " in text and " nan " in text and "—" in text
    report = fake_report()
    for section in report.sections:        # each caution in one line, naming its docs page ...
        line = f"Caution: {render.headline(section)} → {render.caution_docs(section.name)}"
        assert line in flat
    explained = _flat(render.to_text(report, explain=True))
    for caution in fx.CAUTIONS.values():   # ... and in full with explain
        assert f"Caution: {caution}" in explained
    assert text.index("Summary") < text.index("Decomposition") < text.index("Dose")
    assert fx.EVIL_LABEL in text          # printed as is: "[red]" is not read as rich markup
    assert not ANSI.search(text)          # captured, not a terminal
    assert all(line == line.rstrip() for line in text.splitlines())


def test_the_header_names_the_model_column_as_the_argument_is_named():
    """The header says "model: model" (the argument is model=, --model), and so does the JSON's meta."""
    report = fake_report()
    assert "model: model" in render.to_text(report) and "by: model" not in render.to_text(report)
    assert "**model**: model" in render.to_markdown(report)
    meta = json.loads(render.to_json(report))["meta"]
    assert meta["model"] == "model" and "by" not in meta


def test_text_summary_has_one_column_per_model():
    lines = render.to_text(fake_report()).splitlines()
    header = next(line for line in lines if line.split()[:1] == ["statistic"])
    assert header.split() == ["statistic", "mini-384", "base-768"]
    r2_line = next(line for line in lines if line.split()[:1] == ["r2"])
    low, high = (fx.R2[m] - 1.96 * fx.R2_SE[m] for m in ("mini-384", "base-768")), \
        (fx.R2[m] + 1.96 * fx.R2_SE[m] for m in ("mini-384", "base-768"))
    cells = [f"{r2:.3g} [{lo:.3g}, {hi:.3g}]" for r2, lo, hi in zip((fx.R2["mini-384"], fx.R2["base-768"]), low, high)]
    assert " ".join(r2_line.split()) == " ".join(["r2 [CI]", *cells])   # each interval beside its point
    assert "all items" in render.to_text(unlabelled_report())


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_no_color_means_no_escape_codes_even_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", _Terminal())
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert ANSI.search(render.to_text(fake_report()))      # a terminal gets styles ...
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(render.to_text(fake_report()))  # ... unless NO_COLOR is set
    assert not ANSI.search(str(fake_report()))
    assert ANSI.search(render.to_text(fake_report(), color=True))


def test_text_fits_a_terminal_width_when_asked():
    text = render.to_text(fake_report(), color=False, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80


# ---------------------------------------------------------------- Markdown

def _md_tables(markdown: str) -> list[list[list[str]]]:
    tables, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def test_markdown_tables_are_rectangular_and_hold_the_values():
    report = fake_report()
    markdown = render.to_markdown(report, full=True)
    tables = _md_tables(markdown)
    assert len(tables) == 1 + len(report.sections)
    for table in tables:
        assert len({len(row) for row in table}) == 1, table
        assert all(re.fullmatch(r":?-{3}:?", cell) for cell in table[1])
    summary = tables[0]
    assert summary[0] == ["statistic", "mini-384", "base-768"]
    r2 = next(row for row in summary if row[0].startswith("r2 "))
    assert r2[1].startswith("0.312 \\[") and r2[2].startswith("0.457 \\[")
    groups = tables[1 + [s.name for s in report.sections].index("groups")]
    assert len(groups) == 2 + len(fx.GROUPS) * 2
    # the label is text: no raw HTML, the pipe escaped, brackets escaped
    assert r"&lt;script&gt;alert(\"x\")".replace("\\", "") in markdown
    assert "<script" not in markdown
    assert r"\| a&amp;b \[red\]" in markdown


def test_markdown_cautions_are_blockquotes_and_sql_is_fenced():
    markdown = render.to_markdown(fake_report())
    quotes = [line for line in markdown.splitlines() if line.startswith("> ")]
    assert len(quotes) == len(fx.CAUTIONS)
    assert all(line.startswith("> **Caution:** ") for line in quotes)
    assert "```sql\nSELECT \"model\", \"topic\"" in markdown


def test_markdown_cautions_are_one_line_each_as_in_the_terminal_and_in_full_with_explain():
    """Each caution's blockquote is its first sentence and the docs section that explains it (the
    terminal's line); explain=True gives the whole text instead, as --explain does on the CLI."""
    report = fake_report()
    quotes = [line for line in render.to_markdown(report).splitlines() if line.startswith("> ")]
    cautions = [section for section in report.sections if section.caution]
    assert len(quotes) == len(cautions) > 0
    terminal = " ".join(render.to_text(report, width=10_000).split())
    for line, section in zip(quotes, cautions):
        one = f"{render.headline(section)} → {render.caution_docs(section.name)}"
        assert line == f"> **Caution:** {render._md(one)}"
        assert f"Caution: {' '.join(one.split())}" in terminal                  # the terminal's own line
    # (what the blockquotes no longer hold: at least one caution is longer than its line)
    assert any(len(render.headline(section)) < len(" ".join(section.caution.split())) for section in cautions)
    explained = [line for line in render.to_markdown(report, explain=True).splitlines() if line.startswith("> ")]
    assert [line.removeprefix("> **Caution:** ") for line in explained] == \
        [render._md(section.caution) for section in cautions]
    assert "--explain" in render.to_markdown(report) and "--explain" not in render.to_markdown(report, explain=True)


# ---------------------------------------------------------------- JSON

def _strict_loads(text):
    def reject(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=reject)


def test_json_schema_and_values():
    report = fake_report()
    document = _strict_loads(render.to_json(report))
    assert set(document) == {"schema", "title", "verdict", "notes", "meta", "summary", "sections"}
    assert document["schema"] == "embsql.report/1"
    assert document["title"] == report.title
    assert document["meta"]["seed"] == 42 and document["meta"]["sql"] == report.meta["sql"]
    assert [s["name"] for s in document["sections"]] == [s.name for s in report.sections]
    for section in document["sections"]:
        assert set(section) == {"name", "title", "caution", "columns", "rows", "nonfinite", "intervals"}
        assert section["caution"] == fx.CAUTIONS[section["name"]]
    summary = document["summary"]
    assert summary["columns"] == list(report.summary.columns)
    assert summary["rows"][0][summary["columns"].index("r2")] == fx.R2["mini-384"]   # exact, not rounded
    assert summary["rows"][1][summary["columns"].index("p_value")] is None
    decomposition = document["sections"][0]
    assert decomposition["nonfinite"] == [{"row": 1, "column": "f", "value": "inf"}]
    assert decomposition["rows"][1][decomposition["columns"].index("f")] is None
    dispersion = next(s for s in document["sections"] if s["name"] == "dispersion")
    assert dispersion["nonfinite"] == [{"row": 1, "column": "f", "value": "nan"}]
    groups = next(s for s in document["sections"] if s["name"] == "groups")
    assert [row[1] for row in groups["rows"]][:6] == list(fx.GROUPS)
    assert all(isinstance(row[2], int) for row in groups["rows"])


def test_json_round_trips_every_table():
    report = fake_report()
    document = _strict_loads(report.to_json())
    tables = [(document["summary"], report.summary)] + list(zip(document["sections"], (s.table for s in report.sections)))
    for written, table in tables:
        rows = [list(row) for row in written["rows"]]
        for cell in written["nonfinite"]:
            rows[cell["row"]][written["columns"].index(cell["column"])] = float(cell["value"])
        assert len(rows) == len(table.rows)
        for got, want in zip(rows, table.rows):
            assert [g if not (isinstance(g, float) and math.isnan(g)) else "nan" for g in got] == \
                   [w if not (isinstance(w, float) and math.isnan(w)) else "nan" for w in want]


def test_json_is_deterministic_and_key_sorted():
    first, second = render.to_json(fake_report()), render.to_json(fake_report())
    assert first == second
    document = json.loads(first)
    assert list(document) == sorted(document)
    assert list(document["sections"][0]) == sorted(document["sections"][0])


def test_json_meta_with_odd_values():
    import datetime

    report = fake_report()
    odd = ReportResult(report.title, report.summary, (), {"created": datetime.date(2025, 1, 2), "x": math.inf,
                                                          "seeds": (1, 2), "np": np.float64(0.25)})
    meta = _strict_loads(render.to_json(odd))["meta"]
    assert meta == {"created": "2025-01-02", "x": "inf", "seeds": [1, 2], "np": 0.25}
    flags = ReportResult("t", ResultTable("summary", ("model", "ok", "k"), (("a", np.bool_(True), np.int32(2)),)), ())
    assert _strict_loads(render.to_json(flags))["summary"]["rows"] == [["a", True, 2]]


# ---------------------------------------------------------------- HTML

_VOID = {"meta", "img", "br", "hr", "link", "input", "col", "wbr", "source"}


class _Checker(HTMLParser):
    """Records tags and checks that every element is closed in order."""

    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.problems, self.ids = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if "id" in dict(attrs):
            self.ids.append(dict(attrs)["id"])
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _check(html: str) -> _Checker:
    checker = _Checker()
    checker.feed(html)
    checker.close()
    assert checker.problems == [] and checker.stack == []
    return checker


@pytest.fixture(scope="module")
def page():
    """The fake report's standalone HTML with figures (rendered once: figures take a second)."""
    return render.to_html(fake_report())


def test_html_is_one_self_contained_file(page):
    html = page
    assert html.startswith("<!DOCTYPE html>") and html.count("<html") == 1 and html.count("<head>") == 1
    assert not re.search(r"(?i)https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html)     # nothing fetched, no links out
    checker = _check(html)
    tags = [tag for tag, _ in checker.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags
    sources = [attrs["src"] for tag, attrs in checker.tags if "src" in attrs]
    assert len(sources) == 5 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "@import" not in html and "url(" not in html


def test_html_escapes_labels_and_puts_the_summary_first(page):
    report = fake_report()
    html = page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; | a&amp;b [red]" in html
    assert "<script" not in html
    checker = _check(html)
    assert checker.ids[:2] == ["verdict", "summary"]
    assert checker.ids[2:] == [f"section-{s.name}" for s in report.sections]
    summary = html[html.index('id="summary"'):html.index('id="section-')]
    assert ">mini-384</th>" in summary and ">0.312 [" in summary
    for caution in fx.CAUTIONS.values():
        assert render.html.escape(caution) in html


def test_html_fragment_for_notebooks():
    report = fake_report()
    fragment = render.to_html(report, plots=False, standalone=False)
    assert fragment.startswith('<div class="embsql-report">')
    assert not re.search(r"<(html|head|body|!DOCTYPE)\b", fragment, re.IGNORECASE)
    _check(fragment)
    # every style rule is scoped to the report, so a notebook's own styles are untouched
    css = fragment[fragment.index("<style>") + 7:fragment.index("</style>")]
    selectors = [rule.split("{")[0] for rule in css.split("}") if "{" in rule]
    assert selectors and all(all(s.strip().startswith(".embsql-report") for s in sel.split(",")) for sel in selectors)


def test_html_is_deterministic_and_plots_can_be_left_out(page):
    report = fake_report()
    assert render.to_html(report) == page
    tables_only = report.to_html(plots=False)
    assert "<img" not in tables_only and "matplotlib" not in tables_only
    _check(tables_only)


def test_html_without_matplotlib_says_so(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # import matplotlib now raises ImportError
    html = render.to_html(fake_report())
    assert "<img" not in html and render.PLOT_NOTE.replace("'", "&#x27;") in html
    with pytest.raises(ModuleNotFoundError, match=r"pip install matplotlib"):
        fake_report().plot()


def test_one_model_report_renders_everywhere():
    report = fake_report(models=("mini-384",))         # the compare section has no rows
    assert len(report["compare"]) == 0
    assert "compare" in render.to_text(report) and "Compare" in render.to_markdown(report)
    assert json.loads(render.to_json(report))["sections"][6]["rows"] == []
    _check(render.to_html(report, plots=False))
    assert len(plot_report(report)) == 4


# ---------------------------------------------------------------- plots

def _axes_titled(figure, title):
    return next(ax for ax in figure.axes if ax.get_title() == title)


def _suptitle(figure):
    return figure._suptitle.get_text() if figure._suptitle else ""


def test_one_figure_per_kind_of_data():
    figures = plot_report(fake_report())
    assert len(figures) == 5
    assert [p.anchor for p in report_plots(fake_report())] == ["verdict", "summary", "groups", "alignment", "dose"]
    assert len(plot_report(fake_report(sections=("decomposition",)))) == 1
    assert len(plot_report(fake_report(sections=("groups", "permanova")))) == 2
    empty = ReportResult("t", ResultTable("summary", ("model", "n"), (("a", 3),)), ())
    assert plot_report(empty) == []


def test_r2_points_and_bootstrap_intervals_equal_the_tables():
    figure = plot_report(fake_report())[1]
    ax = _axes_titled(figure, "R² per model")
    assert ax.get_ylabel() == "R² = SS_B / SS_T"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fx.MODELS)
    points = next(line for line in ax.lines if line.get_label() == "R²")
    np.testing.assert_allclose(points.get_ydata(), [fx.R2[m] for m in fx.MODELS])
    nulls = next(line for line in ax.lines if line.get_label().startswith("null expectation"))
    np.testing.assert_allclose(nulls.get_ydata(), [(len(fx.SIZES) - 1) / (sum(fx.SIZES) - 1)] * 2)
    segments = [seg for c in ax.collections for seg in c.get_segments() if seg[0][0] == seg[1][0]]  # vertical: intervals
    np.testing.assert_allclose([(s[0][1], s[1][1]) for s in segments], [fx.BOOT_CI[m] for m in fx.MODELS])
    assert "bootstrap" in report_plots(fake_report())[1].caption


def test_r2_intervals_fall_back_to_the_jackknife():
    plot = report_plots(fake_report(sections=("jackknife",)))[0]
    ax = plot.figure.axes[0]
    segments = [seg for c in ax.collections for seg in c.get_segments() if seg[0][0] == seg[1][0]]  # vertical: intervals
    want = [(fx.R2[m] - 1.96 * fx.R2_SE[m], fx.R2[m] + 1.96 * fx.R2_SE[m]) for m in fx.MODELS]
    np.testing.assert_allclose([(s[0][1], s[1][1]) for s in segments], want)
    assert "jackknife" in plot.caption and plot.caution_from == "jackknife"
    assert 0 <= ax.get_ylim()[0] and ax.get_ylim()[1] <= 1


def test_r2_without_by_is_labelled_all_items():
    ax = plot_report(unlabelled_report())[0].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all items"]


def test_w_tilde_panels_show_every_non_singleton_group():
    figure = plot_report(fake_report(sections=("groups",)))[1]
    assert "W" in _suptitle(figure)
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == 2
    for ax, model in zip(panels, fx.MODELS):
        assert ax.get_title().startswith(model) and "1 singleton left out" in ax.get_title()
        shown = sorted(ax.collections[0].get_offsets()[:, 1])
        np.testing.assert_allclose(shown, sorted(w for w in fx.W_TILDE[model] if w is not None))
    assert "W" in panels[0].get_ylabel()


def test_margin_histograms_count_every_query():
    figure = plot_report(fake_report(sections=("alignment",)))[1]
    ax = figure.axes[0]
    assert ax.get_title() == "Normalised retrieval margin M per query" and ax.get_ylabel() == "queries"
    steps = [p for p in ax.patches if hasattr(p, "get_data")]
    assert len(steps) == 2
    for step, model in zip(steps, fx.MODELS):
        counts, edges, _ = step.get_data()
        assert counts.sum() == len(fx.MARGINS[model]) and edges[0] == -1 and edges[-1] == 1
        want, _ = np.histogram(fx.MARGINS[model], bins=edges)
        np.testing.assert_array_equal(counts, want)
        share = sum(m > 0 for m in fx.MARGINS[model]) / len(fx.MARGINS[model])
        assert f"{share:.0%} of 40 with M > 0" in step.get_label()


def test_dose_curves_with_se_bars():
    figure = plot_report(fake_report(sections=("dose",)))[1]
    assert "dose" in _suptitle(figure)
    panels = [ax for ax in figure.axes if ax.get_visible()]
    for ax, model in zip(panels, fx.MODELS):
        assert ax.get_title() == model and ax.get_xlabel() == "paraphrase level"
        line = ax.lines[0]
        np.testing.assert_allclose(np.asarray(line.get_xdata(), float), fx.DOSE_LEVELS)
        np.testing.assert_allclose(np.asarray(line.get_ydata(), float), fx.DOSE[model])
        segments = [seg for c in ax.collections for seg in c.get_segments()]
        np.testing.assert_allclose([s[1][1] - s[0][1] for s in segments], [2 * 1.96 * se for se in fx.DOSE_SE[model]])


def test_dose_with_text_levels_keeps_their_order():
    report = fake_report(sections=("dose",))
    dose = report["dose"]
    names = {0: "none", 1: "light", 2: "medium", 3: "heavy"}
    relabelled = ResultTable(dose.title, dose.columns, tuple((r[0], names[r[1]], *r[2:]) for r in dose.rows))
    report = ReportResult(report.title, report.summary, (Section("dose", "Dose", relabelled, ""),))
    ax = plot_report(report)[1].axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "light", "medium", "heavy"]


def test_a_percentile_interval_that_misses_the_estimate_still_plots():
    """A cluster-bootstrap interval of R² need not contain R² (R² is biased upward); it is drawn as is."""
    import retrieval_data

    import embsql

    _, docs = retrieval_data.make(1, models=("m1", "m2"), dims=(16, 24), levels=3, dose=0.5)
    con = embsql.connect()
    con.register("docs", docs)
    result = embsql.report("docs", vector="vector", group="group", model="model", sections=["bootstrap"]).run(con)
    rows = result["bootstrap"].to_dicts()
    assert any(not (r["ci_low"] <= r["estimate"] <= r["ci_high"]) for r in rows)   # the case this test is for
    ax = _axes_titled(plot_report(result)[0], "R² per model")
    segments = [seg for c in ax.collections for seg in c.get_segments() if seg[0][0] == seg[1][0]]
    np.testing.assert_allclose([(s[0][1], s[1][1]) for s in segments], [(r["ci_low"], r["ci_high"]) for r in rows])


# ---------------------------------------------------------------- figures that read

def _many_models_report(count=11):
    """The summary of a report with many long model names (the demo's case), for tick labels."""
    models = [f"common direction c = {k}" for k in range(count)]
    summary = ResultTable.from_dicts("summary", ("model", "n", "groups", "r2", "r2_se"),
                                     [{"model": m, "n": 80, "groups": 20, "r2": 0.3 + 0.01 * k, "r2_se": 0.02}
                                      for k, m in enumerate(models)])
    return ReportResult("many", summary, ())


def _three_models_compared():
    """Three models with long names and every pair compared (intervals on both sides of 0)."""
    models = ("lg-static-300-multilingual", "md-static-96", "md-static-64")
    r2 = dict(zip(models, (0.40, 0.31, 0.28)))
    summary = ResultTable.from_dicts("summary", ("model", "n", "groups", "r2", "r2_se"),
                                     [{"model": m, "n": 2700, "groups": 300, "r2": r2[m], "r2_se": 0.002} for m in models])
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    compare = ResultTable.from_dicts("compare", ("model_a", "model_b", "difference", "ci_low", "ci_high"),
                                     [{"model_a": a, "model_b": b, "difference": r2[a] - r2[b],
                                       "ci_low": r2[a] - r2[b] - 0.05, "ci_high": r2[a] - r2[b] + 0.01} for a, b in pairs])
    return ReportResult("three", summary, (Section("compare", "Paired comparison", compare, "paired"),))


def _figures_to_check():
    import retrieval_data

    import embsql
    from embsql.demo import demo_report

    queries, docs = retrieval_data.make(5, models=("m1", "m2"), levels=2, dose=0.5)
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    retrieval = embsql.report("d", vector="vector", group="group", model="model", queries="q", docs="d",
                              permutations=19, retrieval={"strength": "level"}).run(con)
    reports = {"fake": fake_report(), "one model": fake_report(models=("mini-384",)),
               "three long names": _three_models_compared(),
               "no by": unlabelled_report(), "many models": _many_models_report(), "demo": demo_report(seeds=2),
               "retrieval": retrieval}
    return [(name, k, plot.figure) for name, report in reports.items() for k, plot in enumerate(report_plots(report))]


def _text_boxes(figure):
    """Every text drawn on the figure with its box in pixels: titles, axis labels, legends, and the
    tick labels of ticks inside the axis limits (matplotlib keeps, but does not draw, the others)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    FigureCanvasAgg(figure).draw()         # the renderer savefig uses
    renderer = figure.canvas.get_renderer()
    ticks = set()
    for ax in figure.axes:
        for axis, (low, high) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            span = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.add(id(tick.label1))
                ticks.add(id(tick.label2))
                if low - span <= tick.get_loc() <= high + span:
                    ticks.discard(id(tick.label1) if tick.label1.get_visible() else None)
                    ticks.discard(id(tick.label2) if tick.label2.get_visible() else None)
    shown = []
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in ticks:
            continue
        if text.axes is not None and not text.axes.get_visible():
            continue
        shown.append((text, text.get_window_extent(renderer)))
    return shown


def test_no_figure_clips_a_label_or_overlaps_tick_labels():
    checked = 0
    for name, k, figure in _figures_to_check():
        drawn = _text_boxes(figure)
        width, height = figure.canvas.get_width_height()
        for text, box in drawn:
            inside = box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1
            assert inside, f"{name} figure {k}: {text.get_text()!r} at {box} is outside the {width}x{height} canvas"
            checked += 1
        for ax in figure.axes:
            labels = {id(t) for t in ax.get_xticklabels()}
            placed = sorted(((text, box) for text, box in drawn if id(text) in labels), key=lambda tb: tb[1].x0)
            for (text, a), (_, b) in zip(placed, placed[1:]):
                angle = math.radians(text.get_rotation())
                if angle:    # slanted labels: their lines must lie at least one text height apart
                    height = text.get_fontsize() * figure.dpi / 72
                    assert (b.x1 - a.x1) * math.sin(angle) >= height, f"{name} figure {k}: x tick labels overlap"
                else:
                    assert not a.overlaps(b), f"{name} figure {k}: x tick labels overlap"
    assert checked > 100


def test_the_demo_plots_v_beside_r2_for_each_experiment():
    from embsql.demo import EXPERIMENTS, demo_report

    report = demo_report(seeds=2)
    plots = report_plots(report)
    assert [p.anchor for p in plots] == [name for _, name, _, _ in EXPERIMENTS]
    for plot in plots:
        left, right = plot.figure.axes
        assert left.get_title().startswith("V") and right.get_title().startswith("R²")
        rows = report[plot.anchor].to_dicts()
        np.testing.assert_allclose(sorted(left.lines[0].get_ydata()), sorted(r["v"] for r in rows))
        np.testing.assert_allclose(sorted(right.lines[0].get_ydata()), sorted(r["r2"] for r in rows))


def test_the_compare_figure_draws_every_pair_with_its_interval():
    report = fake_report()
    (plot,) = [p for p in report_plots(report) if p.anchor == "verdict"]
    ax = plot.figure.axes[0]
    rows = report["compare"].to_dicts()
    np.testing.assert_allclose(ax.lines[0].get_xdata(), [r["difference"] for r in rows])
    segments = [seg for c in ax.collections for seg in c.get_segments() if seg[0][1] == seg[1][1]]
    np.testing.assert_allclose(sorted((s[0][0], s[1][0]) for s in segments),
                               sorted((r["ci_low"], r["ci_high"]) for r in rows))


def test_the_header_is_text_not_a_dict():
    report = fake_report()
    report = ReportResult(report.title, report.summary, report.sections,
                          {**report.meta, "dimensions": {"mini-384": 384, "base-768": 768},
                           "sections": ["decomposition", "groups"]})
    for text in (render.to_text(report), render.to_markdown(report), render.to_html(report, plots=False)):
        assert "{" not in text.split("Summary")[0].replace("{font", "") or "'mini-384'" not in text
        assert "mini-384 384, base-768 768" in text and "['decomposition'" not in text


def test_long_sections_show_head_tail_and_quantiles_in_text_and_markdown():
    report = fake_report()
    alignment = report["alignment"]
    assert len(alignment) > render.LONG_TABLE
    text, markdown = render.to_text(report), render.to_markdown(report).replace("\\", "")
    assert f"{len(alignment)} rows, {2 * render.HEAD_ROWS} shown" in _flat(markdown)
    assert "--full" in markdown and "to_pandas()" in markdown and "Quantiles" in markdown
    first, last = alignment.rows[0], alignment.rows[-1]
    hidden = alignment.rows[render.HEAD_ROWS + 2]
    assert str(first[1]) in markdown and str(last[1]) in markdown and f" {hidden[1]} " not in markdown
    # the text is shorter still: min, median and max per model, computed from the rows themselves
    assert f"{len(alignment)} rows as quantiles (--full: every row)" in _flat(text)
    assert f" {first[1]} " not in text and f" {hidden[1]} " not in text
    m = [r["m"] for r in alignment.to_dicts() if r["model"] == "mini-384"]
    for value in (min(m), float(np.median(m)), max(m)):
        assert render.format_cell(value, 3) in text
        assert render.format_cell(value) in markdown
    assert len(render.to_text(report, full=True).splitlines()) > len(text.splitlines()) + 40
    assert len(json.loads(render.to_json(report))["sections"][[s.name for s in report.sections].index("alignment")]
               ["rows"]) == len(alignment)


def _evaluation_report(rows: list[tuple]) -> ReportResult:
    table = ResultTable("evaluation", ("model", "metric", "value", "ci_low", "ci_high"), tuple(rows))
    return ReportResult("t", ResultTable("summary", ("model", "n"), (("a", 3),)),
                        (Section("evaluation", "Evaluation", table, "caution"),))


def test_a_long_table_of_different_metrics_is_shown_row_by_row_not_as_quantiles_across_them():
    """(The retrieval evaluation's 7 metrics x 2 models were shown as min/median/max over the metrics.)"""
    metrics = ["ndcg@10", "map@100", "recall@10", "recall@100", "mrr@10", "precision@10", "hit_rate@10"]
    rows = [(model, metric, 0.5 + i / 100, 0.4, 0.7) for model in ("a", "b") for i, metric in enumerate(metrics)]
    text = render.to_text(_evaluation_report(rows))
    assert "as quantiles" not in text and "median" not in text
    for model, metric, value, _, _ in rows:
        assert re.search(rf"^{model}\s+{re.escape(metric)}\s+{value:.3g}\s", text, re.MULTILINE), (model, metric)


def test_a_point_on_the_end_of_its_interval_by_rounding_is_not_called_outside():
    """A percentile interval of means of 0.1 whose low end is 0.1 less one ulp holds the point 0.1; a
    point outside by more than rounding gets its note."""
    below = math.nextafter(0.1, 0)
    text = render.to_text(_evaluation_report([("a", "precision@10", 0.1, below, 0.1)]))
    assert "interval_note" not in text and "outside" not in text
    text = render.to_text(_evaluation_report([("a", "precision@10", 0.1, 0.1001, 0.2)]))
    assert "value outside ci_low–ci_high" in text
