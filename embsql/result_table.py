"""Result objects: a small immutable table that prints, renders in notebooks and converts, and a
result made of several named tables.

A statistic with one row per model is a table whose model column keeps the input column's name
(as ``GROUP BY`` would); when there is one row, its columns are also attributes, so
``embsql.anova(...).r2`` reads naturally.  A function whose result has more than one table (the
dispersion test and its per-group table) returns a frozen dataclass of ResultTables
(:class:`ResultTables`): each table is a named field, and the whole prints and renders as its tables.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import pyarrow as pa

from embsql.cells import format_cell, is_number

if TYPE_CHECKING:    # optional dependencies: only for the annotations of the conversions
    import pandas
    import polars

NO_MODEL = "all items"   # how a report names the model of a table without a model column (value None)


def model_label(model: object) -> str:
    """A model value as a report shows it: its text, or NO_MODEL for a report without a model column."""
    return NO_MODEL if model is None else str(model)


@dataclass(frozen=True)
class ResultTable:
    """Rows of named figures, in a fixed column order.

    Attributes
    ----------
    title : str
        What the table holds (the function that made it).
    columns : tuple of str
        The column names, in order.
    rows : tuple of tuple
        One tuple of values per row, in column order.

    Examples
    --------
    >>> import embsql
    >>> table = embsql.ResultTable("example", ("model", "r2"), (("mini", 0.3), ("base", 0.4)))
    >>> table.to_dicts()
    [{'model': 'mini', 'r2': 0.3}, {'model': 'base', 'r2': 0.4}]
    >>> table.to_arrow().num_rows, list(table.to_pandas().columns)
    (2, ['model', 'r2'])
    """

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    # the rows a face skipped with bad_rows="skip": a table of counts per model and reason (set on
    # the result by the face), None when it was not asked to skip
    skipped: ClassVar[ResultTable | None] = None

    @classmethod
    def from_dicts(cls, title: str, columns: Iterable[str], dicts: Iterable[Mapping[str, Any]]) -> ResultTable:
        """A table of ``columns`` from one mapping per row (each must hold every column)."""
        names = tuple(columns)
        return cls(title, names, tuple(tuple(d[c] for c in names) for d in dicts))

    @classmethod
    def of_models(cls, title: str, model: str | None, columns: Sequence[str],
                  rows: Iterable[tuple[object, Mapping[str, Any]]]) -> ResultTable:
        """A table of (model value, figures) rows: the model column first, under the input column's
        name ``model`` (no model column when ``model`` is None), then ``columns`` from the figures.

        The model value is its own cell, never a key among the figures, so a model column named like
        a figure cannot overwrite it (a face refuses such a name first: vocabulary.check_model_name)."""
        key = () if model is None else (model,)
        return cls(title, key + tuple(columns),
                   tuple(((value,) if model is not None else ()) + tuple(figures[c] for c in columns)
                         for value, figures in rows))

    def __getattr__(self, name: str) -> Any:
        # only called for names that are not fields: expose columns of a one-row result
        if name in self.columns and len(self.rows) == 1:
            return self.rows[0][self.columns.index(name)]
        if name in self.columns:
            raise AttributeError(f"{self.title} has {len(self.rows)} rows; use .column({name!r}) or .to_pandas()")
        raise AttributeError(name)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``, one per row."""
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per row, column name -> value."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_arrow(self) -> pa.Table:
        """The table as a pyarrow Table (column types inferred from the values)."""
        return pa.Table.from_pylist(self.to_dicts()) if self.rows else pa.table({c: [] for c in self.columns})

    def to_pandas(self) -> pandas.DataFrame:
        """The table as a pandas DataFrame (pandas must be installed)."""
        return cast("pandas.DataFrame", self.to_arrow().to_pandas())     # a Table gives a DataFrame

    def to_polars(self) -> polars.DataFrame:
        """The table as a polars DataFrame (polars must be installed)."""
        import polars  # optional: only when asked for

        return cast("polars.DataFrame", polars.from_arrow(self.to_arrow()))     # a Table gives a DataFrame

    def __len__(self) -> int:
        return len(self.rows)

    def _cells(self) -> list[list[str]]:
        return [[format_cell(value) for value in row] for row in self.rows]

    def __repr__(self) -> str:
        cells = self._cells()
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.title, "  ".join(c.rjust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
        if self.skipped is not None:
            lines.append(f"({_skipped_rows(self.skipped)} rows with an unusable vector were skipped: .skipped)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        # numbers right-aligned and text left, whatever the notebook's own table style
        def cell(value: object, shown: str) -> str:
            align = "right" if is_number(value) else "left"
            return f'<td style="text-align:{align}">{html.escape(shown)}</td>'

        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(cell(v, shown) for v, shown in zip(row, cells)) + "</tr>"
                       for row, cells in zip(self.rows, self._cells()))
        return (f"<table><caption>{html.escape(self.title)}</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _skipped_rows(skipped: ResultTable) -> int:
    return sum(value for row in skipped.to_dicts() for name, value in row.items() if name.startswith("skipped_"))


class ResultTables:
    """Base of a frozen dataclass whose fields are ResultTables: it prints as its tables, each under
    its field name, and renders them in a notebook one after the other."""

    skipped: ClassVar[ResultTable | None] = None     # as ResultTable.skipped

    def tables(self) -> dict[str, ResultTable]:
        """Field name -> table, in field order."""
        assert dataclasses.is_dataclass(self)
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def __repr__(self) -> str:
        text = "\n\n".join(f".{name}: {table!r}" for name, table in self.tables().items())
        if self.skipped is not None:
            text += f"\n({_skipped_rows(self.skipped)} rows with an unusable vector were skipped: .skipped)"
        return text

    def _repr_html_(self) -> str:
        return "".join(f"<div><code>.{html.escape(name)}</code>{table._repr_html_()}</div>"
                       for name, table in self.tables().items())
