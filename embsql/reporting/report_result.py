"""What a report returns: a summary table per model and named sections, each with its caution.

Every table is a ResultTable whose first column is ``model`` (the value of the ``by`` column,
or None when the report has no ``by``), so renderers and plots find the same columns in every
report.  Rendering (text, Markdown, JSON, HTML) lives in embsql.render.formats and plots in
embsql.render.plots; this module only holds the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from embsql.result_table import ResultTable


@dataclass(frozen=True)
class Section:
    """One part of a report: a table of figures and what they can and cannot say (its caution)."""

    name: str          # stable key: decomposition, groups, jackknife, bootstrap, permanova, dispersion, compare, ...
    title: str         # heading for people
    table: ResultTable
    caution: str       # plain words: what the figure supports and what it does not


@dataclass(frozen=True)
class ReportResult:
    """A finished report.  ``meta`` records what was run: source, columns, seed, versions, the SQL."""

    title: str
    summary: ResultTable
    sections: tuple[Section, ...]
    meta: dict = field(default_factory=dict)

    def section(self, name: str) -> Section:
        for section in self.sections:
            if section.name == name:
                return section
        raise KeyError(f"this report has no section {name!r}; it has: {', '.join(s.name for s in self.sections)}")

    def __getitem__(self, name: str) -> ResultTable:
        return self.section(name).table

    @property
    def verdict(self) -> list[str]:
        """The opening sentences: what the numbers say, computed from them (embsql.reporting.verdict)."""
        from embsql.reporting.verdict import verdict

        return verdict(self)

    def __str__(self) -> str:
        from embsql.render.formats import to_text

        return to_text(self)

    def to_text(self, full: bool = False) -> str:
        """The text report; ``full=True`` prints every row of long sections."""
        from embsql.render.formats import to_text

        return to_text(self, full=full)

    def __repr__(self) -> str:
        return self.__str__()

    def _repr_html_(self) -> str:
        from embsql.render.formats import to_html

        return to_html(self, standalone=False)

    def to_json(self) -> str:
        from embsql.render.formats import to_json

        return to_json(self)

    def to_markdown(self, full: bool = False) -> str:
        from embsql.render.formats import to_markdown

        return to_markdown(self, full=full)

    def to_html(self, plots: bool = True) -> str:
        from embsql.render.formats import to_html

        return to_html(self, plots=plots)

    def plot(self):
        """Figures of the report: a list of matplotlib Figures that displays as images in a notebook."""
        from embsql.render.plots import plot_report

        return plot_report(self)
