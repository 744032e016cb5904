"""The reference pages, generated from the code each time the site is built (a mkdocs hook).

Nothing here is written by hand, so the reference cannot drift from what it describes:

- the Python reference: one page per area, one ``::: embsql.NAME`` (mkdocstrings) per name of
  ``embsql.__all__``, placed by the module that defines it (a name from a module not listed in
  AREAS gets a page of its own module, so a new public function appears without editing this file);
- the SQL reference: the doc blocks above the macros (embsql.sql_reference, the source sql/README.md
  and tests/sql/test_sql_reference.py read too);
- the command line: embsql.cli's argparse parser;
- the error catalogue: embsql.errors.CATALOGUE.

``pages()`` returns every generated page as {path under docs/: Markdown}; tests/docs/test_docs_site.py
reads it too.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
from pathlib import Path
from typing import Any

import embsql
from embsql import calibration, sql_reference, vocabulary
from embsql.cli import build_parser
from embsql.errors import CATALOGUE, EmbsqlError

# the module that defines a public name -> (page, title, what the page is for)
AREAS = {
    "embsql.api.decomposition": ("decomposition", "Decomposition: R², F, V",
                                 "The sum-of-squares decomposition of unit vectors by group, per model."),
    "embsql.api.permutation": ("inference", "Tests and intervals",
                               "Is a difference real, and how sure is a figure: permutation tests, the dispersion "
                               "test, the cluster jackknife and bootstrap, the paired model comparison."),
    "embsql.api.resampling": ("inference", "", ""),
    "embsql.api.model_ranking": ("inference", "", ""),
    "embsql.api.permanova_terms": ("designs", "Designs: several terms, pairs of groups",
                                   "PERMANOVA with several terms (adonis2's semantics) and every pair of groups."),
    "embsql.api.pairwise_permanova": ("designs", "", ""),
    "embsql.api.retrieval": ("retrieval", "Retrieval diagnostics",
                             "Why a query set succeeds or fails: margins, summaries, the four layers, dose and pairing."),
    "embsql.io.retrieval_tables": ("retrieval", "", ""),
    "embsql.api.evaluation": ("evaluation", "Retrieval evaluation",
                              "Exact top-k runs, trec_eval's metrics against qrels, and the paired test between models."),
    "embsql.api.compare_retrieval": ("evaluation", "", ""),
    "embsql.api.agreement": ("agreement", "Agreement between models",
                             "How alike two models' geometries are: k-NN overlap, Mantel, linear CKA, Procrustes."),
    "embsql.api.geometry": ("agreement", "", ""),
    "embsql.reporting.build": ("report", "Reports",
                               "One description of a report; its SQL for any engine; its result as tables, text, "
                               "HTML, JSON and figures."),
    "embsql.reporting.report_result": ("report", "", ""),
    "embsql.io.registration": ("connections", "Connections and results",
                               "Registering the SQL functions on a DuckDB connection, running SQL, and the result table."),
    "embsql.io.interrupts": ("connections", "", ""),
    "embsql.io.sql": ("connections", "", ""),
    "embsql.result_table": ("connections", "", ""),
    "embsql.errors": ("exceptions", "Exceptions",
                      "embsql's exception classes; every check and its message is in the "
                      "[error catalogue](../errors.md)."),
}

# what to do, by the family of a catalogue kind (the part before the dot)
ADVICE = {
    "design": "The grouping leaves the statistic undefined: check the group column (more than one group, "
              "more items than groups, vectors that differ), or choose a statistic the design supports.",
    "vector": "Filter out or repair the row named in the message (NULL, zero, NaN or infinite vectors, or a "
              "vector of another length: a second model's rows mixed in without a model column).",
    "label": "Give every row a label (or filter the NULL ones out); make ids unique; make every positive a "
             "doc_id of the documents.",
    "model": "Every model must be on both sides (queries and documents, or both runs), and a comparison needs "
             "at least two models in the model column.",
    "column": "Name a column the source has, of a type the statistic can use (vectors FLOAT[] or DOUBLE[]); "
              "rename a model column that clashes with an output column or starts with __emb_ (embsql's own prefix, "
              "on every route); column names match exactly, case included.",
    "source": "Name a table, view or file that exists and has rows.",
    "value": "Filter out or fill the NULL or non-finite values; relevance must be a whole number of 0 or more.",
    "distance": "Give every pair of labelled ids once (or in both orders with the same distance), distances "
                "finite and ≥ 0, 0 on the diagonal, and a label for every id.",
    "argument": "Pass the argument as the message says: one of the names the function takes, a value in its range.",
    "query": "The query was stopped (embsql.interrupt or Ctrl-C); run it again.",
    "item": "Compare predictions of the same items: every model's per-item table must hold every item.",
    "metric": "Name each retrieval metric once, as a metric the message lists with a cutoff of 1 or more "
              "(ndcg@10); compare a metric the evaluation table holds.",
    "pair": "Give each judged pair two different items that have a vector in every model (or pass "
            "missing='skip'), at least three pairs, and scores that vary.",
}


# ---------------------------------------------------------------- Python reference

def python_pages() -> dict[str, str]:
    """{reference/python/PAGE.md: its Markdown}, every name of embsql.__all__ on exactly one page."""
    names: dict[str, list[str]] = {}
    titles: dict[str, tuple[str, str]] = {}
    for page, title, about in AREAS.values():
        names.setdefault(page, [])
        if title:
            titles[page] = (title, about)
    for name in embsql.__all__:
        module = getattr(getattr(embsql, name), "__module__", "embsql")
        page = AREAS[module][0] if module in AREAS else module.rsplit(".", 1)[-1]
        if page not in titles:
            titles[page] = (page.replace("_", " ").capitalize(), f"The public names defined in `{module}`.")
        names.setdefault(page, []).append(name)
    out = {}
    for page, members in names.items():
        if not members:
            continue
        title, about = titles[page]
        body = [f"# {title}", "", about, ""]
        body += [f"::: embsql.{name}\n" for name in members]
        out[f"reference/python/{page}.md"] = "\n".join(body)
    return out


# ---------------------------------------------------------------- SQL reference

def sql_page() -> str:
    functions = sql_reference.functions()
    fixtures = sql_reference.fixtures()
    out = ["# SQL functions", "",
           "Every SQL function embsql defines, with its signature, its named arguments and their defaults, its "
           "output columns and one example. Each says whether the stock DuckDB CLI runs it (after "
           "`.read` of the installed `embsql.sql`: `duckdb -c \".read $(embsql sql-path)\"`) or it needs "
           "Python (`embsql.register(con)` or `embsql.connect()`: it calls a Python UDF).", "",
           "Arguments go by position or by name (`model := 'model'`); GROUP is an SQL keyword, so it is written "
           "`\"group\" := 'topic'`. The names are those of the Python keywords and the command-line flags.", "",
           sql_reference.render_index(functions),
           "The examples read small tables that this SQL makes:", "",
           '??? example "The example tables"', "",
           "    ```sql",
           *("    " + line if line else "" for line in fixtures.rstrip().splitlines()),
           "    ```", ""]
    for function in functions:
        out.append(sql_reference.render(function))
    return "\n".join(out)


# ---------------------------------------------------------------- command line

def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:          # argparse offers no public way to list subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flag_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | default | meaning |", "|---|---|---|"]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.metavar or action.dest}`"
        if action.option_strings and action.nargs != 0:
            name += f" `{action.metavar or action.dest.upper()}`"
        default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{action.default}`"
        meaning = (action.help or "").replace("|", "\\|")
        if action.choices:
            meaning += " (one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        rows.append(f"| {name} | {default} | {meaning} |")
    return rows


def cli_page() -> str:
    parser = build_parser()
    out = ["# Command line", "",
           f"`embsql`: {parser.description}", "",
           "A flag is the argument's name of the Python and SQL faces with `-` for `_` (`--doc-id`); an "
           "unknown flag is one line and exit 2.", "",
           "Exit codes: 0 ok; 1 a finding you asked to fail on (`--min-r2`, `--fail-if-dispersion`); 2 bad "
           "input, as one line naming the column or value (`--debug` shows the traceback); 130 interrupted "
           "(Ctrl-C prints the one line `embsql: interrupted`). A bare `embsql` prints the help below and exits "
           "0; `embsql --version` prints the version. `NO_COLOR` is honoured.", "",
           "```text", parser.format_help().rstrip(), "```", ""]
    for name, command in _commands(parser).items():
        out += [f"## embsql {name}", "", command.description or "", "",
                "```text", command.format_usage().strip(), "```", ""]
        out += _flag_rows(command) + [""]
        if command.epilog:
            out += ["```text", inspect.cleandoc(command.epilog), "```", ""]
    return "\n".join(out)


# ---------------------------------------------------------------- error catalogue

def _classes() -> list[type[EmbsqlError]]:
    return [getattr(embsql, n) for n in embsql.__all__
            if isinstance(getattr(embsql, n), type) and issubclass(getattr(embsql, n), EmbsqlError)]


def advice(kind: str) -> str:
    """What to do about an error of ``kind``: its family's advice."""
    return ADVICE.get(kind.split(".")[0], "")


def errors_page() -> str:
    out = ["# Error catalogue", "",
           "Every check embsql makes has a kind, one message template and one exception class. Python raises "
           "the class (`except embsql.DesignError`); a SQL function raises a DuckDB error whose message starts "
           "`embsql: [kind]`, and `embsql.run_sql` turns it back into the class; the command line prints one "
           "line and exits with code 2. The message names the column and the row, group or value at fault; "
           "`{field}` below is filled in.", "",
           "## Classes", "",
           "| class | kind when raised without one | raised when |", "|---|---|---|"]
    for cls in _classes():
        base = ", ".join(b.__name__ for b in cls.__bases__ if b is not Exception)
        first = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        out.append(f"| [`{cls.__name__}`][embsql.{cls.__name__}]"
                   f"{f' ({base})' if base else ''} | `{cls.kind}` | {first} |")
    out += ["", "## Kinds", "", "Grouped by family (the part of the kind before the dot), each with what to do.", ""]
    families: dict[str, list[str]] = {}
    for kind in CATALOGUE:
        families.setdefault(kind.split(".")[0], []).append(kind)
    for family, kinds in families.items():
        out += [f"### {family}", "", f"**What to do:** {advice(family)}", "", "| kind | class | message |", "|---|---|---|"]
        for kind in kinds:
            check = CATALOGUE[kind]
            out.append(f"| `{kind}` | `{check.error.__name__}` | {check.template.replace('|', chr(92) + '|')} |")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- mkdocs

def vocabulary_page() -> str:
    """The one vocabulary (embsql.vocabulary): every argument name with its meaning."""

    def table(names: dict[str, str]) -> list[str]:
        cell = lambda text: text.replace("|", chr(92) + "|")      # a | in a meaning would end the cell
        return ["| name | meaning |", "|---|---|"] + [f"| `{n}` | {cell(m)} |" for n, m in sorted(names.items())]

    out = ["# Vocabulary", "",
           "A concept has one name on every surface: a SQL function's named argument (`model := 'm'`), a "
           "Python keyword (`model='m'`), a command-line flag (`--model m`; `_` becomes `-`, as in "
           "`--doc-id`) and a key of a report file (`model = \"m\"`). The tests read every SQL function's, "
           "Python function's and flag's parameters and fail on a name that is not on this page.", "",
           "**The model column.** Where a function returns one row per model, the model column keeps the "
           "input column's name, as `GROUP BY` would. A model column named like one of the function's "
           "output columns is refused (`column.collision`), never overwritten; a NULL or NaN model value is "
           "refused (`label.null`), naming the column and a row. Names starting `__emb_` are embsql's own: "
           "a model column so named is refused (`column.reserved`). Column names match exactly, case "
           "included: with the default `model`, a column `Model` is refused (`column.missing`, saying it "
           "differs only in case), never read as a table of one model.", ""]
    for title, names in (("Tables and their columns", {**vocabulary.TABLES, **vocabulary.COLUMNS}),
                         ("Options", vocabulary.OPTIONS), ("Command line only", vocabulary.CLI)):
        out += [f"## {title}", "", *table(names), ""]
    return "\n".join(out)


def pages() -> dict[str, str]:
    """Every generated page: {path under docs/: Markdown}."""
    return {**python_pages(), "reference/sql.md": sql_page(), "reference/cli.md": cli_page(),
            "reference/errors.md": errors_page(), "reference/vocabulary.md": vocabulary_page()}


def _title(markdown: str) -> str:
    match = re.search(r"^# (.+)$", markdown, re.MULTILINE)
    return match.group(1) if match else ""


def on_config(config: Any) -> Any:
    """Put the generated pages in the nav's Reference section."""
    generated = pages()
    python = [{_title(text): path} for path, text in generated.items() if path.startswith("reference/python/")]
    for entry in config["nav"]:
        if isinstance(entry, dict) and "Reference" in entry:
            entry["Reference"] = [{"Python": python}, {"SQL functions": "reference/sql.md"},
                                  {"Command line": "reference/cli.md"}, {"Errors": "reference/errors.md"},
                                  {"Vocabulary": "reference/vocabulary.md"}]
    return config


def example_report_html() -> str:
    """The HTML a notebook shows for the report on the bundled example (guides/notebook.md links it)."""
    example = Path(__file__).resolve().parent.parent / "examples" / "embeddings.parquet"
    result = embsql.report(os.path.relpath(example), vector="embedding", group="topic", model="model", permutations=0).run()
    return result.to_html()


# ---------------------------------------------------------------- Sphinx roles in docstrings

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|obj|data|exc):<code>([\w.]+)</code>")


def _role_to_link(match: re.Match[str]) -> str:
    name = match.group(1).removeprefix("embsql.")
    code = f"<code>{match.group(1)}</code>"
    if name.split(".")[0] not in embsql.__all__:
        return code
    return f'<autoref identifier="embsql.{name}" optional>{code}</autoref>'


def sphinx_roles_to_links(html: str) -> str:
    """A docstring's ``:func:`embsql.anova``` (a Sphinx role, which mkdocstrings shows as written) becomes
    a link to that name's reference entry (mkdocs-autorefs resolves it), or plain code for a name that
    is not public."""
    return _ROLE.sub(_role_to_link, html)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """A guide quotes a measured figure by its key, ``{{figure KEY}}`` (embsql.calibration): filled in here."""
    return calibration.render(markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Sphinx roles become links; the figures a docstring quotes (read by mkdocstrings from the source, so
    still as ``{{figure KEY}}``) are filled in."""
    return calibration.render(sphinx_roles_to_links(html))


# ---------------------------------------------------------------- the notebook page

NOTEBOOK_GUIDE = Path(__file__).resolve().parent / "guides" / "notebook.md"
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>\s*", re.IGNORECASE | re.DOTALL)
_LINK = re.compile(r"<link\b[^>]*>\s*", re.IGNORECASE)


def notebook_cells() -> list[str]:
    """The notebook guide's Python blocks, in order: one cell each."""
    return [code.rstrip("\n") for code in _PYTHON_BLOCK.findall(NOTEBOOK_GUIDE.read_text(encoding="utf-8"))]


def example_notebook() -> Any:
    """The notebook guide's cells run on a real IPython kernel (nbclient) from the checkout's root,
    where they read examples/embeddings.parquet; the kernel imports the embsql this build imports."""
    import nbclient
    import nbformat

    root = Path(__file__).resolve().parent.parent
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_markdown_cell(
        "# embsql in a notebook\n\n"
        "The cells of the guide *In a notebook*, run on the bundled example "
        "(`examples/embeddings.parquet`) on an IPython kernel when this site was built. "
        "[Back to the guide](guides/notebook/)")]
    notebook.cells += [nbformat.v4.new_code_cell(code) for code in notebook_cells()]
    here = str(Path(embsql.__file__).resolve().parent.parent)
    previous = os.environ.copy()
    os.environ["PYTHONPATH"] = os.pathsep.join([here, *filter(None, previous.get("PYTHONPATH", "").split(os.pathsep))])
    try:        # the kernel inherits this environment; allow_errors=False: a failing cell fails the build
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(root)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(previous)
    return notebook


def notebook_html(notebook: Any) -> str:
    """The executed notebook as one HTML page (nbconvert's lab template, CSS inline), without its
    <script> and <link> tags: they fetch require.js, MathJax and mermaid from a CDN, and the page
    needs none of them (the site loads nothing from other hosts)."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    return _LINK.sub("", _SCRIPT.sub("", body))


NOTEBOOK_TOOLS = ("nbclient", "nbconvert", "nbformat", "ipykernel")


def notebook_files() -> dict[str, str]:
    """notebook.html and notebook.ipynb: the notebook guide run on a kernel.  Without the notebook tools
    (the test extra has them; the docs extra alone does not) the build still passes, with a page that
    shows the cells unexecuted and says what to install; tests/docs/test_docs_site.py holds CI's page executed."""
    import html
    import importlib.util
    import json

    missing = [name for name in NOTEBOOK_TOOLS if importlib.util.find_spec(name) is None]
    if not missing:
        import nbformat

        notebook = example_notebook()
        return {"notebook.html": notebook_html(notebook), "notebook.ipynb": nbformat.writes(notebook)}
    cells = notebook_cells()
    install = "pip install " + " ".join(missing)
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>embsql in a notebook</title></head><body>"
            "<h1>embsql in a notebook</h1><p>This build of the site did not run the notebook: "
            f"<code>{html.escape(install)}</code>, then build again. Its cells:</p>"
            + "".join(f"<pre><code>{html.escape(code)}</code></pre>" for code in cells)
            + "<p><a href='guides/notebook/'>Back to the guide</a></p></body></html>")
    unexecuted = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                  "cells": [{"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "execution_count": None,
                             "outputs": [], "source": code} for i, code in enumerate(cells)]}
    return {"notebook.html": page, "notebook.ipynb": json.dumps(unexecuted, indent=1)}


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    files.append(File.generated(config, "report.html", content=example_report_html()))
    for path, text in notebook_files().items():
        files.append(File.generated(config, path, content=text))
    return files
