"""Result objects: a small immutable table that prints, renders in notebooks and converts.

A statistic with one row per model (the ``model`` column) is a table; when there is one row,
its columns are also attributes, so ``embsql.anova(...).r2`` reads naturally.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pyarrow as pa

from embsql.cells import format_cell, is_number

NO_MODEL = "all items"   # how a report names the model of a table without a model column (value None)


def model_label(model) -> str:
    """A model value as a report shows it: its text, or NO_MODEL for a report without a model column."""
    return NO_MODEL if model is None else str(model)


@dataclass(frozen=True)
class ResultTable:
    """Rows of named figures, in a fixed column order."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]

    @classmethod
    def from_dicts(cls, title: str, columns, dicts) -> ResultTable:
        columns = tuple(columns)
        return cls(title, columns, tuple(tuple(d[c] for c in columns) for d in dicts))

    def __getattr__(self, name: str):
        # only called for names that are not fields: expose columns of a one-row result
        if name in self.columns and len(self.rows) == 1:
            return self.rows[0][self.columns.index(name)]
        if name in self.columns:
            raise AttributeError(f"{self.title} has {len(self.rows)} rows; use .column({name!r}) or .to_pandas()")
        raise AttributeError(name)

    def column(self, name: str) -> list:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]

    def to_dicts(self) -> list[dict]:
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist(self.to_dicts()) if self.rows else pa.table({c: [] for c in self.columns})

    def to_pandas(self):
        return self.to_arrow().to_pandas()

    def to_polars(self):
        import polars  # optional: only when asked for

        return polars.from_arrow(self.to_arrow())

    def __len__(self) -> int:
        return len(self.rows)

    def _cells(self) -> list[list[str]]:
        return [[format_cell(value) for value in row] for row in self.rows]

    def __repr__(self) -> str:
        cells = self._cells()
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.title, "  ".join(c.rjust(w) for c, w in zip(self.columns, widths))]
        lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        # numbers right-aligned and text left, whatever the notebook's own table style
        def cell(value, shown):
            align = "right" if is_number(value) else "left"
            return f'<td style="text-align:{align}">{html.escape(shown)}</td>'

        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(cell(v, shown) for v, shown in zip(row, cells)) + "</tr>"
                       for row, cells in zip(self.rows, self._cells()))
        return (f"<table><caption>{html.escape(self.title)}</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
