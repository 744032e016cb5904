"""The documentation site builds strictly, and its reference covers every public name.

- ``mkdocs build --strict`` (mkdocs.yml): a warning, a broken link or anchor, a docstring
  mkdocstrings cannot read, or a cross-reference that does not resolve fails the build.
- The reference pages are generated at build time (docs/hooks.py): every name of embsql.__all__ is
  on exactly one Python page, every SQL function the connection registers on the SQL page (with
  whether the stock CLI runs it), every command and flag on the CLI page, every catalogue kind on
  the errors page with what to do.
- The public faces' docstrings are numpydoc: Parameters (every parameter), Returns, Raises and
  Examples for a function; Parameters or Attributes (every field) and Examples for a class
  (numpydoc's own validator, plus the sections it does not check).
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

import embsql
from embsql import vocabulary
from embsql.errors import CATALOGUE, EmbsqlError

pytestmark = pytest.mark.skipif(bool(os.environ.get("EMBSQL_LOWEST_BOUNDS")),
                                reason="the docs tools are not in the lowest-bounds venv")


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


# ---------------------------------------------------------------- the build

def build_site(out: Path) -> Path:
    """``mkdocs build --strict`` into ``out``; fails the test on any warning."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install '.[docs]'")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    print(f"site built in {seconds:.1f} s")
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def _ids(page: Path) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))


@pytest.mark.slow
def test_every_public_name_has_its_reference_entry(site):
    ids = set()
    for page in (site / "reference" / "python").glob("*/index.html"):
        ids |= _ids(page)
    missing = [name for name in embsql.__all__ if f"embsql.{name}" not in ids]
    assert missing == []


@pytest.mark.slow
def test_every_sql_function_has_its_section_and_says_where_it_runs(site):
    from embsql import sql_reference

    page = (site / "reference" / "sql" / "index.html").read_text(encoding="utf-8")
    con = embsql.connect()
    registered = {name for (name,) in con.sql("SELECT DISTINCT function_name FROM duckdb_functions() "
                                               "WHERE function_name LIKE 'emb\\_%' ESCAPE '\\'").fetchall()
                  if not name.startswith("emb__")}
    documented = {f.name for f in sql_reference.functions()}
    assert registered == documented
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for function in sql_reference.functions():
        section = text[text.index(function.signature):]
        where = "Needs Python" if function.needs_python else "Runs in the stock DuckDB CLI"
        assert section[:3000].find(where) != -1, function.name
    assert len(re.findall(r"Needs Python:", text)) == sum(f.needs_python for f in sql_reference.functions())


@pytest.mark.slow
def test_the_site_has_every_page_of_the_nav(site):
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    expected = {"index.html", "reference/cli/index.html", "reference/errors/index.html", "reference/sql/index.html"}
    expected |= {f"guides/{p.stem}/index.html" for p in (ROOT / "docs" / "guides").glob("*.md")}
    expected |= {path.removesuffix(".md") + "/index.html" for path in hooks.python_pages()}
    assert expected <= set(pages)
    print(f"{len(pages)} pages")


# ---------------------------------------------------------------- the generated pages

def test_every_public_name_is_on_exactly_one_python_page():
    shown = [m for text in hooks.python_pages().values() for m in re.findall(r"^::: embsql\.(\w+)$", text, re.M)]
    assert sorted(shown) == sorted(embsql.__all__)


def test_a_name_from_a_new_module_gets_a_page_of_its_own(monkeypatch):
    def classify(con, source, *, k: int = 5):   # what another helper's new face would look like
        """Classify."""

    classify.__module__ = "embsql.api.classification"
    monkeypatch.setattr(embsql, "classify", classify, raising=False)
    monkeypatch.setattr(embsql, "__all__", [*embsql.__all__, "classify"])
    pages = hooks.python_pages()
    assert "::: embsql.classify" in pages["reference/python/classification.md"]


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return hooks._commands(parser)


def test_the_cli_page_has_every_command_and_flag():
    from embsql.cli import build_parser

    page = hooks.cli_page()
    commands = _commands(build_parser())
    assert {"report", "sql", "demo"} <= set(commands)
    for name, command in commands.items():
        assert f"## embsql {name}\n" in page
        for action in command._actions:
            if action.help != argparse.SUPPRESS and not isinstance(action, argparse._HelpAction):
                for option in action.option_strings:
                    assert f"`{option}`" in page, (name, option)


def test_the_errors_page_has_every_kind_with_what_to_do():
    page = hooks.errors_page()
    for kind, check in CATALOGUE.items():
        row = next((line for line in page.splitlines() if line.startswith(f"| `{kind}` |")), None)
        assert row is not None, kind
        assert f"`{check.error.__name__}`" in row, kind
        assert hooks.advice(kind), f"docs/hooks.py ADVICE has nothing for the family of {kind}"
        assert f"### {kind.split('.')[0]}\n\n**What to do:** {hooks.advice(kind)}" in page
    for name in embsql.__all__:
        value = getattr(embsql, name)
        if isinstance(value, type) and issubclass(value, EmbsqlError):
            assert f"[`{name}`][embsql.{name}]" in page


# ---------------------------------------------------------------- numpydoc

def _public():
    for name in embsql.__all__:
        yield name, getattr(embsql, name)


def lint(name: str, value) -> list[str]:
    """What the numpydoc docstring of a public name lacks (empty: nothing)."""
    from numpydoc.docscrape import ClassDoc, FunctionDoc
    from numpydoc.validate import validate

    checked = validate(f"embsql.{name}")
    found = [f"{code} {message}" for code, message in checked["errors"] if code in ("GL08", "PR02", "PR06", "SS01")]
    if isinstance(value, type) and issubclass(value, BaseException):
        return found            # an exception: its summary says when it is raised
    doc = ClassDoc(value) if isinstance(value, type) else FunctionDoc(value)
    documented = {n.strip("*") for section in ("Parameters", "Other Parameters", "Attributes")
                  for p in doc[section] for n in p.name.split(", ")}
    target = value.__init__ if isinstance(value, type) else value
    wanted = {p for p, parameter in inspect.signature(target).parameters.items()
              if p != "self" and parameter.kind is not parameter.VAR_KEYWORD}
    if wanted - documented:
        found.append(f"parameters not documented: {sorted(wanted - documented)}")
    needed = ("Examples",) if isinstance(value, type) else ("Returns", "Raises", "Examples")
    found += [f"no {section} section" for section in needed if not doc[section]]
    return found


def test_every_public_docstring_is_numpydoc():
    pytest.importorskip("numpydoc", reason="the docs extra: pip install '.[docs]'")
    problems = {name: lint(name, value) for name, value in _public()}
    problems = {name: found for name, found in problems.items() if found}
    assert problems == {}, "\n".join(f"embsql.{name}: {'; '.join(found)}" for name, found in problems.items())


def test_the_linter_finds_a_missing_section():
    pytest.importorskip("numpydoc")

    def bare(con, source, *, group: str):
        """Do something.

        Parameters
        ----------
        con : object
            A connection.
        """

    bare.__module__ = "embsql"
    embsql.bare = bare
    try:
        found = lint("bare", bare)
    finally:
        del embsql.bare
    assert "parameters not documented: ['group', 'source']" in found
    assert {"no Returns section", "no Raises section", "no Examples section"} <= set(found)


# ---------------------------------------------------------------- the reference's examples run

@pytest.mark.slow
def test_every_public_example_runs(monkeypatch):
    """The Examples of every public name (what the Python reference shows), run as doctests from the
    checkout's root (they read examples/embeddings.parquet)."""
    import doctest
    import warnings

    monkeypatch.chdir(ROOT)
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    ran, without = 0, []
    for name, value in _public():
        tests = [t for t in finder.find(value, f"embsql.{name}", globs={}) if t.examples]
        if not tests and not (isinstance(value, type) and issubclass(value, BaseException)):
            without.append(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)     # permanova's spread warning, on purpose in one example
            for test in tests:
                runner.run(test)
                ran += len(test.examples)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and without == []
    print(f"{ran} examples of {len(embsql.__all__)} public names ran")


def test_the_vocabulary_page_lists_every_name():
    """Issue 21: the vocabulary is written down once, in the reference, from embsql.vocabulary."""
    page = hooks.pages()["reference/vocabulary.md"]
    assert {"reference/vocabulary.md": "Vocabulary"} in [entry for entry in _reference_nav()]
    for name in vocabulary.TABLES | vocabulary.COLUMNS | vocabulary.OPTIONS | vocabulary.CLI:
        assert f"| `{name}` |" in page, name
    assert "keeps the input column's name" in page


def _reference_nav() -> list[dict]:
    config = hooks.on_config({"nav": [{"Reference": []}]})
    return [{path: title} for section in config["nav"][0]["Reference"] for title, path in section.items()
            if isinstance(path, str)]


# ---------------------------------------------------------------- the notebook page

@pytest.mark.slow
def test_the_notebook_page_is_the_guide_executed(site):
    """notebook.html is the notebook guide's cells run on a kernel at build time: every cell ran and
    shows something, none failed, the report and a figure are on the page, and nothing on it loads
    from another host; the guide links it."""
    import nbformat

    notebook = nbformat.read(site / "notebook.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.source for cell in code] == hooks.notebook_cells() and len(code) >= 4
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    for cell in code:
        assert cell.outputs, cell.source
        assert all(output.output_type != "error" for output in cell.outputs), cell.source
    shown = [key for cell in code for output in cell.outputs for key in output.get("data", {})]
    assert "image/png" in shown and shown.count("text/html") >= len(code)
    page = (site / "notebook.html").read_text(encoding="utf-8")
    assert "base-768 separates the topic groups more than mini-384" in page
    assert page.count('src="data:image/png;base64,') >= 2      # the report's figures and result.plot()'s
    assert not re.search(r"<script|<link|src=\"https?:|@import", page, re.IGNORECASE)
    guide = (site / "guides" / "notebook" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../notebook.html"' in guide and 'href="../../notebook.ipynb"' in guide


def test_the_notebook_page_keeps_no_script_or_link_tag():
    pytest.importorskip("nbconvert")
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("$x^2$ and a [link](https://example.org)")]
    page = hooks.notebook_html(notebook)
    assert "<script" not in page.lower() and "<link" not in page.lower() and "cdnjs" not in page
    assert 'href="https://example.org"' in page and "jp-Notebook" in page   # the content and its inline CSS stay


@pytest.mark.slow
def test_a_failing_notebook_cell_fails_the_build(monkeypatch):
    pytest.importorskip("nbclient")
    import nbclient

    monkeypatch.setattr(hooks, "notebook_cells", lambda: ["import embsql", "embsql.anova(None, 'no_such_table')"])
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        hooks.example_notebook()


# ---------------------------------------------------------------- bench/README.md and its lab notes

BENCH = ROOT / "bench"


def _links(markdown: Path) -> list[tuple[str, str]]:
    """(target, anchor) of every relative link of a Markdown file."""
    found = re.findall(r"\]\(([^)\s]*)\)", markdown.read_text(encoding="utf-8"))
    return [tuple((link.split("#", 1) + [""])[:2]) for link in found if not re.match(r"\w+:", link)]


def _github_slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_bench_readme_links_every_lab_note_and_every_link_resolves():
    readme = BENCH / "README.md"
    notes = sorted((BENCH / "notes").glob("*.md"))
    assert len(notes) >= 5
    linked = {(readme.parent / target).resolve() for target, _ in _links(readme) if target}
    assert set(notes) <= linked, "a lab note bench/README.md does not link"
    slugs = {_github_slug(h) for h in re.findall(r"^#+ (.+)$", readme.read_text(encoding="utf-8"), re.M)}
    for page in [readme, *notes]:
        for target, anchor in _links(page):
            assert (page.parent / target).exists(), f"{page.name}: {target}"
            if not target and anchor:
                assert anchor in slugs, f"{page.name}: #{anchor}"
    for note in notes:                  # a note says where the current figures are
        assert "[bench/README.md](../README.md)" in note.read_text(encoding="utf-8"), note.name


def test_the_validation_readme_links_resolve():
    """validation/README.md (the coverage and level simulations) links its notes and its sections."""
    readme = ROOT / "validation" / "README.md"
    slugs = {_github_slug(h) for h in re.findall(r"^#+ (.+)$", readme.read_text(encoding="utf-8"), re.M)}
    links = _links(readme)
    assert len(links) >= 8
    for target, anchor in links:
        assert (readme.parent / target).exists(), target
        if not target and anchor:
            assert anchor in slugs, f"#{anchor}"


def test_every_command_of_the_performance_page_has_its_section_in_the_bench_readme():
    """The performance guide's ratios are the bench README's tables: each command it gives is a
    script that exists, run in a section of bench/README.md that holds the figure it quotes."""
    page = (ROOT / "docs" / "guides" / "performance.md").read_text(encoding="utf-8")
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ") and "python bench/" in line]
    assert len(rows) >= 8
    for row in rows:
        script = re.search(r"python (bench/\w+\.py)", row).group(1)
        assert (ROOT / script).is_file(), script
        assert f"python {script}" in readme, script
        figures = re.findall(r"(\d+(?:\.\d+)?)×", row)
        for figure in figures:
            assert re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", readme), (script, figure)


def test_sphinx_roles_become_links_or_plain_code():
    html = ("as for :func:<code>embsql.anova</code>, :func:<code>knn_classify</code>, :meth:<code>Report.run</code>"
            " and :class:<code>Table</code>")
    out = hooks.sphinx_roles_to_links(html)
    assert '<autoref identifier="embsql.anova" optional><code>embsql.anova</code></autoref>' in out
    assert '<autoref identifier="embsql.knn_classify" optional><code>knn_classify</code></autoref>' in out
    assert "and <code>Table</code>" in out and ":func:" not in out and ":meth:" not in out and ":class:" not in out


@pytest.mark.slow
def test_no_page_shows_a_sphinx_role(site):
    shown = {p.relative_to(site).as_posix(): re.findall(r":(?:func|class|meth|mod|attr):<code>", p.read_text("utf-8"))
             for p in site.rglob("*.html")}
    assert {page: found for page, found in shown.items() if found} == {}
    page = (site / "reference" / "python" / "decomposition" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<a [^>]*href="#embsql\.anova"[^>]*><code>embsql\.anova</code></a>', page), \
        "a role to embsql.anova is a link to its entry"


@pytest.mark.slow
def test_no_reference_page_shows_a_keyword_catch_all(site):
    pages = {p.parent.name: p.read_text(encoding="utf-8") for p in (site / "reference" / "python").glob("*/index.html")}
    assert [name for name, text in pages.items() if "removed</span>" in text or "**removed" in text] == []
    assert "group</span>" in pages["decomposition"]     # the signatures are there


def test_without_the_notebook_tools_the_page_shows_the_cells_and_what_to_install(monkeypatch):
    """`pip install '.[docs]'` alone has no kernel: the build passes, and the page says so (CI's page is
    the executed one: test_the_notebook_page_is_the_guide_executed)."""
    import importlib.util as util
    import json

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *a: None if name == "ipykernel" else real(name, *a))
    files = hooks.notebook_files()
    assert "did not run the notebook: <code>pip install ipykernel</code>" in files["notebook.html"]
    assert all(html.escape(code) in files["notebook.html"] for code in hooks.notebook_cells())
    assert [cell["source"] for cell in json.loads(files["notebook.ipynb"])["cells"]] == hooks.notebook_cells()
    assert "<script" not in files["notebook.html"]


def _documented_default(text: str) -> str | None:
    found = re.search(r"(?:^|, )default (.+)$", text)
    return found[1] if found else None


def test_every_parameter_has_its_own_entry_with_the_signatures_default():
    """``permutations, seed : int`` rendered wrongly on the reference pages (seed showed 999 where it
    is 42, issue 32): every parameter of a public function has an entry of its own, and a default the
    entry names is the signature's."""
    pytest.importorskip("numpydoc", reason="the docs extra: pip install '.[docs]'")
    from numpydoc.docscrape import FunctionDoc

    checked = 0
    for name in embsql.__all__:
        function = getattr(embsql, name)
        if not inspect.isfunction(function):
            continue
        signature = inspect.signature(function).parameters
        for entry in FunctionDoc(function)["Parameters"]:
            assert "," not in entry.name, f"{name}: {entry.name!r} documents several parameters in one entry"
            named = _documented_default(entry.type)
            parameter = signature.get(entry.name)
            if named is None or parameter is None or parameter.default is inspect.Parameter.empty:
                continue
            expected = parameter.default
            assert named.replace('"', "'") == repr(expected) or named == str(expected), \
                f"{name}({entry.name}): the docstring says default {named}, the signature {expected!r}"
            checked += 1
    assert checked >= 40


def test_jackknife_and_bootstrap_document_the_columns_they_return():
    con = embsql.connect()
    table = "examples/embeddings.parquet"
    for function, extra in ((embsql.jackknife, {}), (embsql.bootstrap, {"replicates": 20})):
        returned = function(con, str(ROOT / table), group="topic", vector="embedding", model="model", **extra).columns
        doc = inspect.getdoc(function)
        returns = doc[doc.index("Returns\n-------"):doc.index("Raises\n------")]
        named = set(re.findall(r"``(\w+)``", returns))
        assert set(returned) - {"model"} <= named and "stat" not in named, (function.__name__, set(returned) - named)
