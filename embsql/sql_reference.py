"""The SQL reference's one source: the doc block above each public macro in sql/.

Each public SQL function (``emb_*``) is documented in the module that defines it, in a block of
``--`` comment lines that ends just above its ``CREATE OR REPLACE TEMP MACRO`` statement::

    -- @function emb_anova(source, "group", vector, model := NULL)
    -- The sum-of-squares decomposition of the unit vectors by group.      (the summary: Markdown)
    -- @param source the table to read ...                                 (one per argument)
    -- @param model the model column ...
    -- @column <model> the model, under the model column's own name        (one per output column;
    -- @column n number of vectors                                          <model> is the model column)
    -- @notes
    -- Errors: ...                                                          (Markdown, as it is)
    -- @example
    -- SELECT * FROM emb_anova('ex', 'topic', 'embedding', model := 'model');

A scalar function has ``@returns TYPE meaning`` instead of ``@column`` lines.  A line that starts
with no tag continues the one before it.  Whether a function runs in the stock DuckDB CLI or needs
``embsql.register`` follows from where it is defined: sql/modules/ is the CLI's file, sql/python/
is loaded after the Python UDFs.  The examples read the tables of sql/examples.sql.

sql/build.py renders sql/README.md from these blocks (and generates the list of output columns
that a model column must not be named like); tests/sql/test_sql_reference.py holds every block to
what DuckDB registers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from embsql.calibration import render as render_figures
from embsql.io.resources import resource_dir

MODEL_COLUMN = "<model>"                # an output column named after the model argument
KEYWORDS = ("group",)                   # argument names SQL needs quoted ("group" := 'topic')
_TAG = re.compile(r"@(function|param|column|returns|notes|example)\b ?(.*)")
_CREATE = re.compile(r"CREATE OR REPLACE TEMP MACRO (\w+)\(")


def spelled(name: str) -> str:
    """An argument's name as a call writes it: ``"group"`` quoted (GROUP is a keyword), the others bare."""
    return f'"{name}"' if name in KEYWORDS else name


@dataclass(frozen=True)
class Argument:
    """One argument: its name (unquoted), its default as SQL text (None: required) and meaning."""

    name: str
    default: str | None
    meaning: str

    @property
    def spelled(self) -> str:
        return spelled(self.name)


@dataclass(frozen=True)
class Column:
    """One output column: its name (``<model>`` for the model column) and meaning."""

    name: str
    meaning: str

    @property
    def only_with(self) -> str | None:
        """The argument that adds the column, when its meaning ends "(only with `arg := value`)"
        (the skipped_* columns of bad_rows := 'skip'); None for a column every call returns (the
        model column's "(only with `model`)" is handled as the model column)."""
        found = re.search(r"\(only with `([^`]+ := [^`]+)`\)$", self.meaning)
        return found.group(1) if found else None


@dataclass(frozen=True)
class Function:
    """One public SQL function's reference, as its doc block gives it."""

    name: str
    arguments: tuple[Argument, ...]
    columns: tuple[Column, ...]         # table functions
    returns: tuple[str, str] | None     # scalar functions: (SQL type, meaning)
    summary: str
    notes: str
    example: str
    needs_python: bool
    path: Path
    line: int

    @property
    def signature(self) -> str:
        arguments = (a.spelled if a.default is None else f"{a.spelled} := {a.default}" for a in self.arguments)
        return f"{self.name}({', '.join(arguments)})"

    @property
    def call(self) -> str:
        """The example's first call of the function: ``emb_x(...)`` with its arguments."""
        start = re.search(rf"\b{self.name}\(", self.example)
        if start is None:
            raise ValueError(f"the example of {self.name} does not call it")
        depth, end = 1, start.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(self.example[end], 0)
            end += 1
        return self.example[start.start():end]

    @property
    def output_columns(self) -> tuple[str, ...]:
        """The output columns a model column must not be named like (every one but the model's)."""
        return tuple(c.name for c in self.columns if c.name != MODEL_COLUMN)


def functions(sql: Path | None = None) -> list[Function]:
    """Every documented function, in file order: sql/modules/*.sql, then sql/python/*.sql."""
    sql = sql or resource_dir("sql")
    out = []
    for folder, needs_python in (("modules", False), ("python", True)):
        for path in sorted((sql / folder).glob("*.sql")):
            out += _blocks(path, needs_python)
    return out


def fixtures(sql: Path | None = None) -> str:
    """The SQL that makes the tables every example reads (sql/examples.sql)."""
    return ((sql or resource_dir("sql")) / "examples.sql").read_text(encoding="utf-8")


def _blocks(path: Path, needs_python: bool) -> list[Function]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for start, line in enumerate(lines):
        if not line.startswith("-- @function "):
            continue
        end = start
        while end < len(lines) and lines[end].startswith("--"):
            end += 1
        where = f"{path.name}:{start + 1}"
        defined = _CREATE.match(lines[end]) if end < len(lines) else None
        function = _parse([render_figures(_text(x)) for x in lines[start:end]], where, path, start + 1, needs_python)
        if defined is None or defined.group(1) != function.name:
            raise ValueError(f"{where}: the block of {function.name} must end just above its CREATE MACRO")
        out.append(function)
    return out


def _text(line: str) -> str:
    """A comment line's text: without ``--`` and the one space after it."""
    return line[3:] if line.startswith("-- ") else line[2:]


def _parse(lines: list[str], where: str, path: Path, line: int, needs_python: bool) -> Function:
    parts: list[tuple[str, str, list[str]]] = []       # (tag, first line, following lines)
    summary: list[str] = []
    for text in lines:
        tagged = _TAG.fullmatch(text)
        if tagged:
            parts.append((tagged.group(1), tagged.group(2), []))
        elif len(parts) == 1:
            summary.append(text)
        else:
            parts[-1][2].append(text)
    name, signature = _signature(parts[0][1], where)
    meanings: dict[str, str] = {}
    columns: list[Column] = []
    returns: tuple[str, str] | None = None
    notes = example = ""
    for tag, first, rest in parts[1:]:
        if tag == "param":
            argument, meaning = _named(first, rest, where)
            meanings[argument.strip('"')] = meaning
        elif tag == "column":
            column, meaning = _named(first, rest, where)
            columns.append(Column(column, meaning))
        elif tag == "returns":
            sql_type, meaning = _named(first, rest, where)
            returns = (sql_type, meaning)
        elif tag == "notes":
            notes = _paragraphs([first] + rest)
        elif tag == "example":
            example = _paragraphs([first] + rest)
        else:
            raise ValueError(f"{where}: a second @function")
    if set(meanings) != {a for a, _ in signature}:
        raise ValueError(f"{where}: {name}'s @param lines ({', '.join(meanings)}) are not its arguments "
                         f"({', '.join(a for a, _ in signature)})")
    if not example or (not columns) == (returns is None):
        raise ValueError(f"{where}: {name} needs an @example and either @column lines or @returns")
    arguments = tuple(Argument(a, default, meanings[a]) for a, default in signature)
    return Function(name, arguments, tuple(columns), returns, _paragraphs(summary), notes, example, needs_python,
                    path, line)


def _named(first: str, rest: list[str], where: str) -> tuple[str, str]:
    """``name meaning`` (the meaning may go on over the next lines) -> (name, meaning)."""
    match = re.match(r'("[^"]+"|\S+)\s+(.*)', first)
    if match is None:
        raise ValueError(f"{where}: a tag without a meaning: {first!r}")
    return match.group(1), " ".join([match.group(2)] + [r.strip() for r in rest]).strip()


def _paragraphs(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def _signature(text: str, where: str) -> tuple[str, list[tuple[str, str | None]]]:
    """``emb_x(a, "group", b := 'x')`` -> ('emb_x', [('a', None), ('group', None), ('b', "'x'")])."""
    match = re.fullmatch(r"(\w+)\((.*)\)", text.strip())
    if match is None:
        raise ValueError(f"{where}: @function needs name(arguments), not {text!r}")
    out = []
    for part in split_arguments(match.group(2)):
        name, _, default = part.partition(":=")
        out.append((name.strip().strip('"'), default.strip() if default else None))
    return match.group(1), out


def split_arguments(text: str) -> list[str]:
    """The top-level comma-separated parts of an argument list (commas inside quotes, brackets or
    parentheses do not split)."""
    parts, depth, quote, current = [], 0, "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    return parts + ([current.strip()] if current.strip() else [])


# ---------------------------------------------------------------- rendering (sql/README.md)

def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def anchor(function: Function) -> str:
    """The Markdown anchor of a function's heading."""
    return function.name + ("-python-only" if function.needs_python else "")


def heading(function: Function) -> str:
    return f"## {function.name}" + (" (Python only)" if function.needs_python else "")


def first_sentence(text: str) -> str:
    """The summary's first sentence (the index's one line): up to the first '. ', '? ' or '! ' that
    does not end an abbreviation ("et al.", "e.g.")."""
    flat = " ".join(text.split())
    match = re.match(r"(.+?(?<!\bal)(?<!\be\.g)(?<!\bi\.e)[.?!])(\s|$)", flat)
    return match.group(1) if match else flat


def render_index(items: list[Function]) -> str:
    """The index: the functions the stock CLI runs, then those that need Python."""
    out = []
    for needs_python, title in ((False, "In the stock DuckDB CLI (`.read embsql.sql`) and from Python"),
                                (True, "Only from Python, after `embsql.register(con)` or `embsql.connect()` (they "
                                       "call Python UDFs)")):
        out += [f"**{title}:**", ""]
        out += [f"- [`{f.name}`](#{anchor(f)}): {first_sentence(f.summary)}" for f in items
                if f.needs_python == needs_python]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render(function: Function) -> str:
    """One function's section of sql/README.md."""
    runs = ("Needs Python: `embsql.register(con)` or `embsql.connect()` defines it (it calls a Python UDF); "
            "in the stock CLI after `.read embsql.sql` it is a stub that raises `embsql: [query.needs_python]`."
            if function.needs_python else
            "Runs in the stock DuckDB CLI after `.read embsql.sql` (and from Python).")
    out = [heading(function), "", f"`{function.signature}`", "", function.summary, "", runs, ""]
    if function.arguments:
        out += ["| argument | default | meaning |", "|---|---|---|"]
        out += [f"| `{a.spelled}` | {'' if a.default is None else f'`{a.default}`'} | {_cell(a.meaning)} |"
                for a in function.arguments]
        out.append("")
    if function.returns:
        out += [f"Returns `{function.returns[0]}`: {function.returns[1]}.", ""]
    else:
        out += ["| column | meaning |", "|---|---|"]
        out += [f"| {'the model column' if c.name == MODEL_COLUMN else f'`{c.name}`'} | {_cell(c.meaning)} |"
                for c in function.columns]
        out.append("")
    if function.notes:
        out += [function.notes, ""]
    out += ["```sql", function.example, "```", ""]
    return "\n".join(out)
