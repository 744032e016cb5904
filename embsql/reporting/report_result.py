"""What a report returns: a summary table per model and named sections, each with its caution.

Every table is a ResultTable whose first column is ``model`` (``model_a``/``model_b`` in the tables
of pairs): the value of the report's model column, or None when the report has none.  This is
the one place where embsql does not follow the functions' rule (where the model column keeps the
input column's name), for two reasons.  A report is a document of a fixed schema
(``embsql.report/1``, see embsql.render.formats) with up to eighteen tables read from up to four
inputs, so a reader, a plot or a CI check finds the models in the same column of every report
whatever the data call it.  And its tables have more than a hundred column names between them
(``n``, ``f``, ``groups``, ``value``, ``queries``, ...): under the functions' rule each would be a
model column name the report refuses (vocabulary.check_model_name), where here any name works.
``meta["model"]`` keeps the input column's name.

This module holds the data; its methods call into embsql.render (text, Markdown, JSON, HTML,
figures), which never imports reporting, and the verdict is computed by embsql.reporting.verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from embsql.render import formats
from embsql.render.figures import Figures
from embsql.render.plots import plot_report
from embsql.reporting import cautions
from embsql.reporting.verdict import verdict
from embsql.result_table import ResultTable


@dataclass(frozen=True)
class Section:
    """One part of a report: a table of figures and what they can and cannot say (its caution).

    Attributes
    ----------
    name : str
        The stable key (``decomposition``, ``groups``, ``jackknife``, ``bootstrap``, ``compare``,
        ``permanova``, ``dispersion``, ``models``, ...): ``result[name]`` is its table.
    title : str
        The heading for people.
    table : ResultTable
        The figures.
    caution : str
        In plain words, what the figures support and what they do not.

    Examples
    --------
    >>> import embsql
    >>> result = embsql.report("examples/embeddings.parquet", vector="embedding", group="topic",
    ...                        model="model", permutations=0, sections=["decomposition"]).run()
    >>> section = result.section("decomposition")
    >>> section.table.columns[:3], section.caution != ""
    (('model', 'n', 'groups'), True)
    """

    name: str          # stable key: decomposition, groups, jackknife, bootstrap, permanova, dispersion, compare, ...
    title: str         # heading for people
    table: ResultTable
    caution: str       # plain words: what the figure supports and what it does not

    @property
    def headline(self) -> str:
        """The caution in one line, as the text report prints it ("" where the caution's first sentence serves)."""
        return cautions.HEADLINES.get(self.name, "")


@dataclass(frozen=True)
class ReportResult:
    """A finished report (``Report.run``, ``embsql.run_on``): its summary, its sections, what was run.

    Attributes
    ----------
    title : str
        The report's title.
    summary : ResultTable
        One row per model: ``model``, ``n``, ``groups``, ``r2`` (the sample R²), ``r2_se``, ``r2_adj``,
        ``r2_corrected`` (the bias-corrected R² the interval is built around), ``r2_ci_low``, ``r2_ci_high``,
        ``calibrated``, ``f``, ``p_value``, ``v``, ``w_bar``, ``dispersion_p``.
    sections : tuple of Section
        The sections in order; ``result["groups"]`` is a section's table.
    meta : dict
        What was run: the source, the columns, the seed, the versions, the SQL.

    Examples
    --------
    >>> import embsql
    >>> result = embsql.report("examples/embeddings.parquet", vector="embedding", group="topic",
    ...                        model="model", permutations=0).run()
    >>> [row["model"] for row in result.summary.to_dicts()]
    ['base-768', 'mini-384']
    >>> result.verdict[0].startswith("base-768 separates the topic groups more than mini-384")
    True
    """

    title: str
    summary: ResultTable
    sections: tuple[Section, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> Section:
        """The section called ``name`` (KeyError naming the sections there are)."""
        for section in self.sections:
            if section.name == name:
                return section
        raise KeyError(f"this report has no section {name!r}; it has: {', '.join(s.name for s in self.sections)}")

    def __getitem__(self, name: str) -> ResultTable:
        return self.section(name).table

    @property
    def verdict(self) -> list[str]:
        """The opening sentences: what the numbers say, computed from them (embsql.reporting.verdict)."""
        return verdict(self)

    def __str__(self) -> str:
        return formats.to_text(self)

    def to_text(self, full: bool = False) -> str:
        """The text report; ``full=True`` prints every row of long sections."""
        return formats.to_text(self, full=full)

    def __repr__(self) -> str:
        return self.__str__()

    def _repr_html_(self) -> str:
        return formats.to_html(self, standalone=False)

    def to_json(self) -> str:
        """The report as JSON of schema ``embsql.report/1`` (embsql.render.formats)."""
        return formats.to_json(self)

    def to_markdown(self, full: bool = False, explain: bool = False) -> str:
        """GitHub-flavoured Markdown; ``full=True`` keeps every row of long sections; each caution is
        one line naming the docs section that explains it (``explain=True``: in full)."""
        return formats.to_markdown(self, full=full, explain=explain)

    def to_html(self, plots: bool = True) -> str:
        """One self-contained HTML file (inline CSS and figures; ``plots=False`` leaves the figures out)."""
        return formats.to_html(self, plots=plots)

    def plot(self) -> Figures:
        """Figures of the report: a list of matplotlib Figures that displays as images in a notebook."""
        return plot_report(self)
