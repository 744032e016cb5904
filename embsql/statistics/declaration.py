"""What a statistic is, declared once: its kernel, inputs, options, output columns, caution and
calibration key.  Every surface is generated from a :class:`Statistic`:

- the Python face's body is ``drive(DECLARATION, locals())`` (embsql.api.driver);
- the UDF is udfs/declared.py's one adapter;
- the SQL macro and its reference block are written by sql/build.py into
  sql/python/86_statistics.sql (:meth:`Statistic.sql_text`).

A kernel (a function of embsql/core/) takes the models (model value -> (item ids, unit vectors)) and
its options as keywords; it may also take ``groups`` and ``group`` (the input role ``group``: model
value -> group labels, and the column's name), ``progress`` (a tick callback) and ``model`` (the model
column's name, for its messages).  It returns one dict per output row.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from embsql.vocabulary import COLUMNS, OPTIONS, OUTPUTS

# the meanings of the column arguments every model-pair statistic takes, as the SQL reference words them
ROLE_MEANINGS = {
    "item": "the item column: which rows of different models embed the same item",
    "model": "the model column: the models compared",
    "vector": "the vector column (models may differ in dimension)",
}
BAD_ROWS = ("`'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model "
            "and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with "
            "`common := true`, used by no model). The table has one row per pair of models, so it does not count them")
# SQL literals of the Python defaults
_SQL_TYPES = {bool: "BOOLEAN", int: "BIGINT", str: "VARCHAR"}


def sql_literal(value: object) -> str:
    """A Python default as SQL writes it: NULL, true/false, a number or a quoted string."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def quoted(name: str) -> str:
    """An argument's name as SQL spells it (``group`` is a keyword)."""
    return f'"{name}"' if name == "group" else name


@dataclass(frozen=True)
class Input:
    """A column argument, by its vocabulary role (embsql.vocabulary.COLUMNS); ``optional``: it
    defaults to None (NULL), ``meaning``: the SQL reference's words for it here."""

    role: str
    meaning: str = ""
    optional: bool = False

    def described(self) -> str:
        return self.meaning or ROLE_MEANINGS[self.role]


@dataclass(frozen=True)
class Option:
    """An option: its name (embsql.vocabulary.OPTIONS), Python default (``REQUIRED``: none), SQL type,
    how the SQL macro hands it to the UDF (``{name}`` stands for the argument), whether SQL has it
    at all, and the SQL reference's words for it."""

    name: str
    default: Any
    meaning: str = ""
    sql_value: str = "{name}"
    in_sql: bool = True
    sql_type: str = ""

    def type_in_sql(self) -> str:
        return self.sql_type or _SQL_TYPES[type(self.default)]

    def described(self) -> str:
        return self.meaning or OPTIONS[self.name]


REQUIRED = inspect.Parameter.empty       # an option without a default (a positional SQL argument)


@dataclass(frozen=True)
class Output:
    """An output column: its name (embsql.vocabulary.OUTPUTS, or OPTIONS for a column that echoes an
    option), SQL type and what it holds here (by default the vocabulary's one-line meaning)."""

    name: str
    sql_type: str
    meaning: str = ""

    def described(self) -> str:
        return self.meaning or OUTPUTS.get(self.name) or OPTIONS[self.name]


@dataclass(frozen=True)
class Statistic:
    """One statistic, declared once; see the module docstring."""

    name: str                        # the Python face's name; SQL: emb_<name>
    kernel: Callable[..., list[dict]]
    inputs: tuple[Input, ...]
    options: tuple[Option, ...]
    outputs: tuple[Output, ...]
    summary: str                     # the SQL reference's first lines
    notes: str                       # the SQL reference's notes (Markdown), before the caution
    caution: str                     # what the figures can and cannot say
    example: str                     # a SQL example reading sql/examples.sql's tables
    calibration: str | None = None   # the validation/calibration.json key of its measured figure
    progress: str = ""               # the progress bar's label ("": none)
    stopped: str = "the permutation test"        # what an interrupt message says stopped
    # the last output is `interval`: always in SQL (as emb_compare_retrieval), in the Python table only
    # with intervals='simultaneous' (as embsql.compare_retrieval)
    simultaneous: bool = False

    # ---- names
    @property
    def sql_name(self) -> str:
        return f"emb_{self.name}"

    @property
    def udf_name(self) -> str:
        return f"emb__{self.name}"

    def column_names(self, options: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """The output columns: SQL's (``options`` None), or the Python table's given the options it ran with."""
        names = tuple(o.name for o in self.outputs)
        if self.simultaneous and options is not None and options.get("intervals") != "simultaneous":
            names = tuple(n for n in names if n != "interval")
        return names

    def roles(self) -> tuple[str, ...]:
        return tuple(i.role for i in self.inputs)

    def sql_options(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.in_sql)

    # ---- the kernel call, shared by the Python driver and the UDF adapter
    def run(self, models: dict, groups: dict | None, group: str | None, model: str,
            options: Mapping[str, Any], progress: Callable[[int, int], None] | None) -> list[dict]:
        """The kernel's rows for ``models`` with these option values (and the inputs it takes)."""
        takes = inspect.signature(self.kernel).parameters
        extra: dict[str, Any] = {}
        if "groups" in takes:
            extra.update(groups=groups, group=group or "group")
        if "progress" in takes:
            extra["progress"] = progress
        if "model" in takes:
            extra["model"] = model
        return self.kernel(models, **{o.name: options[o.name] for o in self.options if o.name in options}, **extra)

    # ---- the SQL surface (written into sql/python/86_statistics.sql by sql/build.py)
    def sql_arguments(self) -> str:
        required = [i.role for i in self.inputs if not i.optional]
        required += [o.name for o in self.sql_options() if o.default is REQUIRED]
        named = [f"{quoted(i.role)} := NULL" for i in self.inputs if i.optional]
        named += [f"{o.name} := {sql_literal(o.default)}" for o in self.sql_options() if o.default is not REQUIRED]
        return ", ".join(["source", *(quoted(n) for n in required), *named, f"bad_rows := {sql_literal('error')}"])

    def reference_block(self) -> list[str]:
        """The doc block's lines (embsql.sql_reference reads them), without the ``-- ``."""
        lines = [f"@function {self.sql_name}({self.sql_arguments()})", *self.summary.splitlines(),
                 "@param source the table to read: a table or view name, or a file DuckDB reads"]
        ordered = ([i for i in self.inputs if not i.optional]
                   + [o for o in self.sql_options() if o.default is REQUIRED]
                   + [i for i in self.inputs if i.optional]
                   + [o for o in self.sql_options() if o.default is not REQUIRED])
        for each in ordered:
            name = each.role if isinstance(each, Input) else each.name
            lines.append(f"@param {quoted(name)} {each.described()}")
        lines.append(f"@param bad_rows {BAD_ROWS}")
        lines += [f"@column {o.name} {o.described()}" for o in self.outputs]
        lines += ["@notes", *self.notes.splitlines()]
        if self.caution:
            lines += ["", *self.caution.splitlines()]
        lines += ["@example", *self.example.splitlines()]
        return lines

    def sql_text(self) -> str:
        """The doc block and the macro: the rows of the model table go to the UDF, its result is unnested."""
        group = '"group"' if "group" in self.roles() else "NULL"
        checked = ", ".join(f"['{role}', {quoted(role)}]" for role in self.roles() if role not in ("model",))
        values = "".join(f", {o.sql_value.format(name=quoted(o.name))}" for o in self.sql_options())
        block = "".join(f"-- {line}".rstrip() + "\n" for line in self.reference_block())
        return (f"{block}CREATE OR REPLACE TEMP MACRO {self.sql_name}({self.sql_arguments()}) AS TABLE\n"
                f"SELECT unnest(__emb_r.value, recursive := true)\n"
                f"FROM (SELECT {self.udf_name}(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,\n"
                f"          __emb_vector_col, __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, __emb_rows{values})"
                f" AS __emb_r\n"
                f"      FROM emb__model_item_groups(emb__checked_names(emb__checked_source(source, "
                f"'{self.sql_name}', model, []::VARCHAR[]), '{self.sql_name}', [{checked}]), item, model, vector,\n"
                f"           {group}, skip := emb__skip_rows(bad_rows)))\n"
                f"WHERE emb__udf_ok(__emb_r);\n")

    def struct_type(self) -> str:
        """The UDF's value type: a list of one STRUCT per output row."""
        return "STRUCT(" + ", ".join(f"{o.name} {o.sql_type}" for o in self.outputs) + ")[]"


# what every model-pair statistic shares
PAIR_INPUTS = (Input("item"), Input("model"), Input("vector"))
PAIR = (Output("model_a", "VARCHAR"), Output("model_b", "VARCHAR"))
SEED = Option("seed", 42, "the random seed, a whole number (0 or more)", sql_value="emb__whole_argument({name}, 'seed')")


def check_vocabulary(statistic: Statistic) -> list[str]:
    """The names of ``statistic`` that the vocabulary does not hold (empty: all are there)."""
    return ([f"input {i.role}" for i in statistic.inputs if i.role not in COLUMNS]
            + [f"option {o.name}" for o in statistic.options if o.name not in OPTIONS]
            + [f"output {o.name}" for o in statistic.outputs if o.name not in OUTPUTS and o.name not in OPTIONS])
