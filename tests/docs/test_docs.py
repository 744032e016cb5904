"""The docs say what the code does.

- sql/README.md: every example runs as written, the SQL ones in the stock DuckDB CLI (the
  duckdb-cli package) after `.read sql/embsql.sql`, the *Python only* ones through
  embsql.connect(); and every example sits under the function it shows (it calls it).
- No "SPEC" and no spec section cite ("S14", "S20-S24") in anything a user reads: the package
  (embsql/, sql/, udfs/), the READMEs and rendered reports.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from helpers import ROOT

SQL_README = ROOT / "sql" / "README.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^## (\S+)(.*)$", re.MULTILINE)


def sections() -> list[tuple[str, bool, list[tuple[str, str]]]]:
    """(function name or "" for the preamble, Python only?, [(language, code), ...]) in order."""
    text = SQL_README.read_text()
    marks = [(m.start(), m.group(1), "Python only" in m.group(2)) for m in HEADING.finditer(text)]
    spans = [(0, "", False)] + marks
    out = []
    for (start, name, python), end in zip(spans, [m[0] for m in marks] + [len(text)]):
        blocks = [(m.group(1), m.group(2)) for m in BLOCK.finditer(text[start:end])]
        out.append((name if name.startswith("emb_") else "", python, blocks))
    return out


def _calls(code: str, names) -> set:
    return {name for name in names if re.search(rf"\b{name}\(", code)}


def test_every_example_is_the_example_of_its_section():
    """An example calls the function of its section and no other documented one; a block that only
    makes data makes a table the section's own example reads."""
    documented = [name for name, _, _ in sections() if name]
    checked = 0
    for name, _, blocks in sections():
        if not name:
            continue
        examples = [code for _, code in blocks if _calls(code, [name])]
        assert examples, f"## {name} has no example that calls {name}"
        for _, code in blocks:
            called = _calls(code, documented)
            if called:
                assert called == {name}, f"the example under ## {name} calls {sorted(called - {name})}:\n{code}"
                checked += 1
                continue
            made = re.findall(r"CREATE (?:OR REPLACE )?TABLE (\w+)", code, re.IGNORECASE)
            assert made and any(re.search(rf"'{table}'", example) for table in made for example in examples), \
                f"the data block under ## {name} is not used by its example:\n{code}"
    assert checked >= 20 and "emb_retrieval_dose" in documented and "emb_knn_agreement" in documented


def _stock_cli() -> Path:
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    return cli


def test_sql_examples_run_in_the_stock_cli():
    script = [".bail on"]
    for name, python, blocks in sections():
        if python:
            continue
        for language, code in blocks:
            if language != "sql":
                continue
            script.append(f"SELECT 'after {name or 'the preamble'}' AS embsql_example;")
            script.append(code)
    script.append("SELECT 'every example ran' AS embsql_example;")
    out = subprocess.run([str(_stock_cli()), ":memory:"], input="\n".join(script), capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    last = re.findall(r"after (\S+)", out.stdout)
    assert out.returncode == 0 and "every example ran" in out.stdout, \
        f"the example under ## {last[-1] if last else '?'} failed in the stock CLI: {out.stderr.strip()}"


def run_python(code: str, namespace: dict) -> None:
    """Run an example statement by statement; a relation left as a statement's value is fetched,
    as a notebook or the REPL would show it (DuckDB relations are lazy)."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), "<example>", "eval"), namespace)
            if isinstance(value, duckdb.DuckDBPyRelation):
                value.fetchall()
        else:
            exec(compile(ast.Module([node], []), "<example>", "exec"), namespace)


def _without_comments(statement: str) -> str:
    """The statement without its whole-line comments (a comment above a statement must not hide it)."""
    return "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()


def test_python_only_examples_run_through_embsql_connect():
    import embsql

    namespace: dict = {"embsql": embsql}
    failures = []
    con = namespace["con"] = embsql.connect()
    for name, _, blocks in sections():          # the example tables (sql/examples.sql, in the preamble)
        if not name:
            for language, code in blocks:
                if language == "sql" and not code.lstrip().startswith("."):     # (not the CLI's .read)
                    con.execute(code)
    for name, python, blocks in sections():
        if not python:
            continue
        for language, code in blocks:
            try:
                if language == "python":
                    run_python(code, namespace)
                else:                             # SQL of a Python-only function: on an embsql connection
                    con = namespace.setdefault("con", embsql.connect())
                    for statement in filter(None, (_without_comments(s) for s in code.split(";"))):
                        con.sql(statement).fetchall() if statement.strip().upper().startswith("SELECT") \
                            else con.execute(statement)
            except Exception as error:  # noqa: BLE001  (report every example that fails, not only the first)
                failures.append(f"## {name}: {type(error).__name__}: {str(error).splitlines()[0]}")
    assert failures == [], "\n".join(failures)


# ---------------------------------------------------------------- no spec cites

CITE = re.compile(r"\bSPEC\b|\bS\d{1,2}(?:\s*[-–,]\s*S?\d{1,2})*\b")


def _cites(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if CITE.search(line)]


def _user_facing_files() -> list[Path]:
    files = [ROOT / "README.md", SQL_README, *(ROOT / "docs").rglob("*.md")]
    for folder in ("embsql", "sql", "udfs"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".sql", ".md") and p.is_file()]
    return sorted(set(files))


def test_no_spec_cites_in_the_package_or_the_docs():
    found = {str(p.relative_to(ROOT)): _cites(p.read_text(encoding="utf-8")) for p in _user_facing_files()}
    found = {path: lines for path, lines in found.items() if lines}
    assert found == {}, "\n".join(f"{path}: {lines[0]}  (+{len(lines) - 1} more)" for path, lines in found.items())


def test_no_spec_cites_in_rendered_reports():
    import report_fixtures
    import retrieval_data

    import embsql
    from embsql.demo import demo_report
    from embsql.render import formats as render

    queries, docs = retrieval_data.make(4, models=("m1", "m2"), levels=2, dose=0.5)
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    real = embsql.report("d", vector="vector", group="group", model="model", queries="q", docs="d", permutations=19,
                         retrieval={"strength": "level"}).run(con)
    for result in (real, demo_report(seeds=2), report_fixtures.fake_report()):
        for text in (render.to_text(result, full=True), render.to_markdown(result, full=True), render.to_json(result),
                     render.to_html(result, plots=False)):
            assert _cites(text) == []
