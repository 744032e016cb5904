"""The embsql command line, end to end as a subprocess on files it writes itself."""

import json
import os
import re
import subprocess
import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import sqlglot
from test_report import model_table

import embsql

ANSI = "\x1b["


def embsql_cli(*args, env=None, cwd=None):
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "embsql", *map(str, args)], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    table = model_table()
    pq.write_table(table, folder / "emb.parquet")
    flat = table.drop_columns(["emb"]).append_column("x", pa.array([str(v[0]) for v in table["emb"].to_pylist()]))
    pacsv.write_csv(flat, folder / "emb.csv")
    con = duckdb.connect(str(folder / "emb.duckdb"))
    con.register("t", table)
    con.execute("CREATE TABLE emb AS SELECT * FROM t")
    con.close()
    return folder


def expected_r2(files):
    con = embsql.connect()
    return dict(zip(*[embsql.anova(con, str(files / "emb.parquet"), group="topic", vector="emb", model="model").column(c)
                      for c in ("model", "r2")]))


def test_report_json_is_stable_and_matches_the_api(files):
    args = (files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model", "--format", "json")
    first, second = embsql_cli("report", *args), embsql_cli("report", *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    document = json.loads(first.stdout)
    assert document["schema"] == "embsql.report/1"
    columns = document["summary"]["columns"]
    got = {row[columns.index("model")]: row[columns.index("r2")] for row in document["summary"]["rows"]}
    assert got == pytest.approx(expected_r2(files), rel=1e-9)
    # two models: their ranking first, right after the verdict
    assert [s["name"] for s in document["sections"]][:3] == ["ranking", "decomposition", "groups"]
    assert all(s["caution"] for s in document["sections"])


@pytest.mark.parametrize("source", ["emb.duckdb:emb", "emb.parquet"])
def test_report_formats(files, source, tmp_path):
    for fmt in ("table", "text", "markdown"):
        out = embsql_cli("report", files / source, "--vector", "emb", "--group", "topic", "--model", "model",
                         "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert ANSI not in out.stdout
        r2 = expected_r2(files)["a"]
        assert f"{r2:.3g}" in out.stdout      # three significant digits
        assert "not comparable" in out.stdout
    html = tmp_path / "r.html"
    out = embsql_cli("report", files / source, "--vector", "emb", "--group", "topic", "--format", "html", "--model",
                     "model", "--out", html)
    assert out.returncode == 0 and out.stdout == ""
    assert html.read_text().lstrip().lower().startswith("<!doctype html")


def test_permutations_and_a_finding_to_fail_on(files):
    base = (files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model", "--format", "json")
    out = embsql_cli("report", *base, "--permutations", "19", "--seed", "3")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["summary"]
    p = summary["rows"][0][summary["columns"].index("p_value")]
    assert p == pytest.approx(0.05)      # the smallest p with 19 permutations: the topics are strong
    low = embsql_cli("report", *base, "--min-r2", "0.99")
    assert low.returncode == 1
    assert "below --min-r2 0.99" in low.stderr and low.stdout
    missing = embsql_cli("report", *base, "--fail-if-dispersion", "--permutations", "0")
    assert missing.returncode == 2 and "--permutations" in missing.stderr
    assert missing.stdout == "" and missing.stderr.count("\n") == 1      # refused before any work


@pytest.mark.parametrize("args, words", [
    (("--vector", "nope", "--group", "topic"), ["vector column 'nope'", "its columns are: model, topic"]),
    (("--vector", "emb", "--group", "topic", "--model", "nope"), ["'nope'"]),
    (("--vector", "emb"), ["--group"]),
    (("--vector", "emb", "--group", "topic", "--permutations", "x"), ["--permutations", "invalid int"]),
    (("--vector", "emb", "--group", "topic", "--format", "pdf"), ["--format"]),
    (("--vector", "emb", "--group", "topic", "--sections", "nope"), ["unknown section 'nope'"]),
    (("--vector", "emb", "--group", "topic", "--item", "topic"), ["--item", "--model"]),
])
def test_bad_arguments_are_one_line_and_exit_2(files, args, words):
    out = embsql_cli("report", files / "emb.parquet", *args)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    for word in words:
        assert word in out.stderr


def test_missing_files_and_tables(files, tmp_path):
    for data, word in ((tmp_path / "no.parquet", "does not exist"), (tmp_path / "no.duckdb:emb", "does not exist"),
                       (f"{files / 'emb.duckdb'}:nope", "nope")):
        out = embsql_cli("report", data, "--vector", "emb", "--group", "topic")
        assert out.returncode == 2 and word in out.stderr and out.stderr.count("\n") == 1
    debug = embsql_cli("--debug", "report", tmp_path / "no.parquet", "--vector", "emb", "--group", "topic")
    assert "Traceback" in debug.stderr


def test_sql_prints_what_the_report_runs(files):
    out = embsql_cli("sql", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                     "--dialect", "spark", "--table", "lake.emb")
    assert out.returncode == 0, out.stderr
    statements = sqlglot.parse(out.stdout, read="spark")
    assert len(statements) == 4 and "TRY_ELEMENT_AT(`emb`, 7)" in out.stdout      # 3 probes and the aggregate
    duck = embsql_cli("sql", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model")
    aggregate = [s for s in duck.stdout.split(";") if s.strip()][-1]
    assert len(duckdb.sql(aggregate).fetchall()) == 12
    csv = embsql_cli("sql", files / "emb.csv", "--vector", "x", "--group", "topic")
    assert csv.returncode == 2 and "vector column 'x'" in csv.stderr


def test_config_file_and_flags(files, tmp_path):
    config = tmp_path / "report.toml"
    config.write_text(f'[report]\nsource = "{files / "emb.parquet"}"\nvector = "emb"\ngroup = "topic"\nmodel = "model"\n')
    from_config = embsql_cli("report", "--config", config, "--format", "json")
    from_flags = embsql_cli("report", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                            "--format", "json")
    assert from_config.returncode == 0, from_config.stderr
    assert json.loads(from_config.stdout)["summary"] == json.loads(from_flags.stdout)["summary"]


def test_a_config_file_may_leave_data_vector_and_group_to_the_command_line(files, tmp_path):
    """(A [report] table without source was Python's TypeError and a traceback, even with DATA given.)"""
    config = tmp_path / "report.toml"
    config.write_text('[report]\nmodel = "model"\npermutations = 0\n')
    with_data = embsql_cli("report", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--config", config,
                           "--format", "json")
    from_flags = embsql_cli("report", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                            "--permutations", "0", "--format", "json")
    assert with_data.returncode == 0, with_data.stderr
    assert json.loads(with_data.stdout)["summary"] == json.loads(from_flags.stdout)["summary"]
    without = embsql_cli("report", "--config", config)
    assert without.returncode == 2 and without.stderr.count("\n") == 1, without.stderr
    assert "lacks source, vector, group: a report needs source, vector and group (there, or as DATA" in without.stderr


@pytest.mark.parametrize("command", ["report", "sql", "demo"])
def test_every_command_has_help_with_an_example(command):
    out = embsql_cli(command, "--help")
    assert out.returncode == 0 and "example:" in out.stdout and "embsql " + command in out.stdout
    assert "exit codes" in embsql_cli("--help").stdout


def test_demo_writes_a_self_contained_html_report(tmp_path):
    out = embsql_cli("demo", "--seeds", "3", "--out", tmp_path / "demo.html")
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "demo.html").read_text()
    assert "common direction" in page and "within-group shrink" in page and "exact lift" in page
    assert "http://" not in page and "https://" not in page


def test_report_with_retrieval_layers(tmp_path):
    import retrieval_data

    queries, docs = retrieval_data.make(3, models=("m1", "m2"), dims=(8, 12))
    pq.write_table(queries, tmp_path / "q.parquet")
    pq.write_table(docs, tmp_path / "d.parquet")
    out = embsql_cli("report", tmp_path / "d.parquet", "--vector", "vector", "--group", "group", "--model", "model",
                     "--queries", tmp_path / "q.parquet", "--docs", tmp_path / "d.parquet", "--format", "json")
    assert out.returncode == 0, out.stderr
    sections = {s["name"]: s for s in json.loads(out.stdout)["sections"]}
    assert {"query_stability", "document_structure", "alignment", "rank", "pairing"} <= set(sections)
    rank = sections["rank"]
    got = {row[rank["columns"].index("model")]: row[rank["columns"].index("top1")] for row in rank["rows"]}
    con = embsql.connect()
    margins = embsql.margins(con, str(tmp_path / "q.parquet"), str(tmp_path / "d.parquet"), model="model")
    for model in ("m1", "m2"):
        rows = [r for r in margins.to_dicts() if r["model"] == model]
        assert got[model] == pytest.approx(sum(r["top1"] for r in rows) / len(rows), rel=1e-12)


# ---------------------------------------------------------------- sources, flags and SQL for other engines

def test_sql_takes_no_flags_it_would_ignore(files):
    for flag, value in (("--permutations", "9"), ("--seed", "1"), ("--replicates", "10")):
        out = embsql_cli("sql", files / "emb.parquet", "--vector", "emb", "--group", "topic", flag, value)
        assert out.returncode == 2 and f"unrecognized arguments: {flag}" in out.stderr
        assert out.stderr.count("\n") == 1


def test_sql_with_dims_probes_nothing_and_reads_no_file(files):
    out = embsql_cli("sql", "--table", "lake.emb", "--vector", "emb", "--group", "topic", "--model", "model",
                     "--dims", "a=5,b=7", "--dialect", "spark")
    assert out.returncode == 0, out.stderr
    (statement,) = sqlglot.parse(out.stdout, read="spark")
    assert "`lake`.`emb`" in out.stdout and "TRY_ELEMENT_AT(`emb`, 7)" in out.stdout
    for bad in ("a=x", "a", "=5", "a=0"):
        wrong = embsql_cli("sql", "--table", "t", "--vector", "emb", "--group", "topic", "--dims", bad)
        assert wrong.returncode == 2 and "--dims" in wrong.stderr and wrong.stderr.count("\n") == 1


def test_sql_for_another_engine_never_names_the_local_file(files):
    out = embsql_cli("sql", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                     "--dialect", "postgres", "--table", "emb_lake")
    assert out.returncode == 0, out.stderr
    assert str(files) not in out.stdout and "parquet" not in out.stdout
    assert out.stdout.count('"emb_lake"') == 4                 # the models probe, two length probes, the aggregate


@pytest.mark.engines
@pytest.mark.parametrize("engine_name", ["postgres", "spark"])
def test_printed_sql_runs_on_the_engine_as_it_is(files, engine_name, request):
    """The SQL `embsql sql --dialect X --table T` prints, run statement by statement on a live engine,
    gives the same group counts and coordinate sums as the report computes on DuckDB."""
    from embsql.engines.connections import fetch_arrow, load_table

    connection = request.getfixturevalue(engine_name)
    table = model_table()
    load_table(connection, "emb_lake", table)
    dialect = {"postgres": "postgres", "spark": "spark"}[engine_name]
    for extra in ((), ("--dims", "a=5,b=7")):
        out = embsql_cli("sql", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                         "--dialect", dialect, "--table", "emb_lake", *extra)
        assert out.returncode == 0, out.stderr
        statements = [s for s in out.stdout.split(";\n") if s.strip()]
        assert len(statements) == (1 if extra else 4)
        results = [fetch_arrow(connection, statement) for statement in statements]
        sums = results[-1].to_pylist()
        n_column = next(c for c in results[-1].column_names if c.endswith("_n"))
        assert sum(row[n_column] for row in sums) == table.num_rows
        assert len(sums) == 12                                     # 2 models x 6 topics


def test_duckdb_file_tables_for_queries_docs_and_config(tmp_path):
    import retrieval_data

    queries, docs = retrieval_data.make(3, models=("m1", "m2"), dims=(8, 12))
    database = tmp_path / "lake.duckdb"
    con = duckdb.connect(str(database))
    con.register("q", queries)
    con.register("d", docs)
    con.execute("CREATE TABLE queries AS SELECT * FROM q; CREATE TABLE docs AS SELECT * FROM d")
    con.close()
    out = embsql_cli("report", f"{database}:docs", "--vector", "vector", "--group", "group", "--model", "model",
                     "--queries", f"{database}:queries", "--docs", f"{database}:docs", "--format", "json",
                     "--permutations", "0")
    assert out.returncode == 0, out.stderr
    sections = {s["name"] for s in json.loads(out.stdout)["sections"]}
    assert {"decomposition", "alignment", "rank"} <= sections
    config = tmp_path / "report.toml"
    config.write_text(f'[report]\nsource = "{database}:docs"\nvector = "vector"\ngroup = "group"\nmodel = "model"\n'
                      "permutations = 0\n")
    from_config = embsql_cli("report", "--config", config, "--format", "json")
    assert from_config.returncode == 0, from_config.stderr
    assert json.loads(from_config.stdout)["summary"] == json.loads(out.stdout)["summary"]


def test_long_sections_are_shortened_unless_full(files):
    base = (files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model", "--permutations", "0")
    short = embsql_cli("report", *base, "--sections", "groups")
    full = embsql_cli("report", *base, "--sections", "groups", "--full")
    assert short.returncode == full.returncode == 0
    assert full.stdout.count(" t3 ") == 2 and "Quantiles" not in full.stdout      # 12 rows: nothing to cut
    big = tuple(str(x) for x in base[1:])
    many = model_table(topics=30, per_topic=3)
    pq.write_table(many, files / "many.parquet")
    short = embsql_cli("report", files / "many.parquet", *big, "--sections", "groups")
    full = embsql_cli("report", files / "many.parquet", *big, "--sections", "groups", "--full")
    flat = " ".join(short.stdout.split())
    assert "60 rows as quantiles (--full: every row)" in flat and " median " in short.stdout
    assert len(full.stdout.splitlines()) > len(short.stdout.splitlines()) + 20
    as_json = embsql_cli("report", files / "many.parquet", *big, "--sections", "groups", "--format", "json")
    assert len(json.loads(as_json.stdout)["sections"][0]["rows"]) == 60


def test_the_progress_bar_writes_to_stderr_only(files):
    out = embsql_cli("report", files / "emb.parquet", "--vector", "emb", "--group", "topic", "--model", "model",
                     "--permutations", "9", "--format", "json")
    assert out.returncode == 0 and out.stderr == ""          # not a terminal: no bar at all
    document = json.loads(out.stdout)                         # stdout is the report alone
    assert document["summary"]["rows"][0][document["summary"]["columns"].index("p_value")] is not None


def test_on_a_terminal_the_progress_bar_goes_to_stderr(files):
    """stderr a terminal (a pty), stdout a pipe: the bar is drawn on the terminal, stdout is the report."""
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "embsql", "report", str(files / "emb.parquet"), "--vector", "emb", "--group",
             "topic", "--model", "model", "--permutations", "2000", "--format", "json"],
            stdout=subprocess.PIPE, stderr=follower, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"})
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:            # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        stdout, _ = process.communicate(timeout=300)
    finally:
        os.close(leader)
    assert process.returncode == 0
    assert b"permutations" in drawn                      # the bar's label, on the terminal
    assert json.loads(stdout)["schema"] == "embsql.report/1"   # and nothing of it on stdout


def test_model_names_the_model_column_and_by_is_no_flag(files, capsys):
    """--model names the model column; --by, its name before 0.1.0, is no flag: exit 2 and one line."""
    from embsql.cli import main

    base = ["sql", str(files / "emb.parquet"), "--vector", "emb", "--group", "topic"]
    assert main(base + ["--model", "model"]) == 0 and '"model"' in capsys.readouterr().out
    assert main(base) == 0 and '"model"' not in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        main(base + ["--by", "model"])
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == "embsql: error: unrecognized arguments: --by model (see embsql --help)\n" and captured.out == ""


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """Two models embedding the same 40 items (in 5 topics); the second is a noisy linear map of the first."""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(40, 6)) + 0.5
    y = x @ rng.normal(size=(6, 9)) + 0.8 * rng.normal(size=(40, 9))
    items = [f"doc{j:02d}" for j in range(40)]
    table = pa.table({"doc": items * 2, "topic": [f"t{j % 5}" for j in range(40)] * 2,
                      "model": ["a"] * 40 + ["b"] * 40,
                      "emb": pa.array([list(map(float, row)) for row in x]
                                      + [list(map(float, row)) for row in y], pa.list_(pa.float64()))})
    path = tmp_path_factory.mktemp("models") / "two.parquet"
    pq.write_table(table, path)
    return path, x, y


def linear_cka(x, y):
    """Kornblith et al. (2019), eq. 2 on unit vectors centred per model: ||X~'Y~||^2 / (||X~'X~|| ||Y~'Y~||)."""
    x, y = (a / np.linalg.norm(a, axis=1, keepdims=True) for a in (x, y))
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    return np.linalg.norm(x.T @ y) ** 2 / (np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y))


def test_item_adds_the_models_compared_section(two_models):
    path, x, y = two_models
    base = (path, "--vector", "emb", "--group", "topic", "--model", "model", "--permutations", "0", "--format", "json")
    with_item = embsql_cli("report", *base, "--item", "doc")
    assert with_item.returncode == 0, with_item.stderr
    sections = {s["name"]: s for s in json.loads(with_item.stdout)["sections"]}
    columns, rows = sections["models"]["columns"], sections["models"]["rows"]
    found = {row[columns.index("measure")]: row for row in rows}
    cka_row = found["linear CKA"]
    assert cka_row[columns.index("value")] == pytest.approx(linear_cka(x, y), abs=1e-12)
    assert cka_row[columns.index("items")] == 40 and cka_row[columns.index("model_a")] == "a"
    assert {"Procrustes r", "k-NN overlap (k = 10)"} <= set(found)
    without = embsql_cli("report", *base)
    assert without.returncode == 0 and "models" not in {s["name"] for s in json.loads(without.stdout)["sections"]}


def test_a_bad_item_column_is_one_line_and_exit_2(two_models):
    out = embsql_cli("report", two_models[0], "--vector", "emb", "--group", "topic", "--model", "model",
                     "--permutations", "0", "--item", "nope")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr and "'nope'" in out.stderr


def _interrupted_on_a_terminal(command: list[str], ready, poll: float) -> tuple[bool, str, int, bytes]:
    """Run ``command`` with stderr on a terminal (a pty) and send it SIGINT (what Ctrl-C sends) once
    ``ready(what it has drawn)``; (sent, what it drew, its exit status, its stdout)."""
    import pty
    import select
    import signal
    import time

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower,
                                   env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"})
        os.close(follower)
        drawn, sent, deadline = b"", False, time.monotonic() + 240
        while time.monotonic() < deadline:
            if not sent and ready(drawn):
                process.send_signal(signal.SIGINT)
                sent = True
            if not select.select([leader], [], [], poll)[0]:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:            # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        stdout, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    return sent, drawn.decode(errors="replace"), process.returncode, stdout


@pytest.mark.slow
def test_ctrl_c_during_a_permutation_test_is_one_line_and_exit_130(files):
    """SIGINT (what Ctrl-C sends) once the permutation test's bar is on the terminal: the one line
    ``embsql: interrupted``, no traceback, and the shell's status for SIGINT, 130."""
    sent, text, status, stdout = _interrupted_on_a_terminal(
        [sys.executable, "-m", "embsql", "report", str(files / "emb.parquet"), "--vector", "emb", "--group",
         "topic", "--model", "model", "--permutations", "999999", "--format", "json"],
        lambda drawn: b"permutations" in drawn, 0.2)                 # the test is running: interrupt it
    assert sent, text[-2000:]
    assert status == 130, text[-2000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert text.rstrip().splitlines()[-1].split("\r")[-1].strip().endswith("embsql: interrupted")
    assert text.count("embsql: interrupted") == 1 and stdout == b""


@pytest.mark.slow
def test_ctrl_c_while_the_package_imports_is_one_line_and_exit_130(files):
    """SIGINT while ``python -m embsql`` is still importing the package (the first second, before
    main runs): the one line ``embsql: interrupted``, no traceback, and 130.  -X importtime says
    when the import has begun: it prints a line as each module finishes (or fails), so the first
    embsql.* line comes while the package imports; embsql.cli, which main lives in, must never come."""
    sent, text, status, stdout = _interrupted_on_a_terminal(
        [sys.executable, "-X", "importtime", "-m", "embsql", "report", str(files / "emb.parquet"), "--vector", "emb",
         "--group", "topic", "--permutations", "0", "--format", "json"],
        lambda drawn: re.search(rb"\|\s+embsql\.\w", drawn) is not None, 0.005)   # a module of it has loaded
    assert sent, text[-2000:]
    # main's module, imported once the package is, never came: the interrupt cut the package's import
    assert not re.search(r"\|\s+embsql\.(cli|__main__)\s*$", text, re.MULTILINE), "main was running already"
    assert status == 130, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert text.count("embsql: interrupted") == 1 and stdout == b""


def test_an_interrupt_is_left_alone_outside_the_command_line():
    """Importing the package in another program changes nothing: an interrupt while it imports is
    that program's KeyboardInterrupt, with its traceback."""
    from embsql import startup

    out = subprocess.run([sys.executable, "-c", "import sys, embsql; print(sys.excepthook is sys.__excepthook__, "
                          "embsql.startup.from_the_command_line())"], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "False"], out.stderr
    assert startup.from_the_command_line() is False                 # (pytest's own process)


def test_an_interrupted_query_is_one_line_and_exit_130(monkeypatch, capsys):
    """The other ways an interrupt arrives: embsql's kernels end a query with query.interrupted."""
    from embsql import cli
    from embsql.errors import error

    def interrupted(args):
        raise error("query.interrupted", what="the permutation test")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["sql-path"].set_defaults(run=interrupted)
    assert cli.main(["sql-path"]) == 130
    assert capsys.readouterr().err == "embsql: interrupted\n"


def test_version_bare_command_and_the_report_help():
    from importlib.metadata import version

    shown = embsql_cli("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"embsql {version('embsql')}"
    bare = embsql_cli()
    assert bare.returncode == 0 and bare.stderr == ""
    assert bare.stdout.startswith("usage: embsql") and all(c in bare.stdout for c in ("report", "sql-path", "demo"))
    report = embsql_cli("report", "--help", env={"COLUMNS": "200"})
    assert report.returncode == 0
    assert "--dialect" not in report.stdout           # report takes no --dialect (embsql sql does)
    assert "--fail-if-dispersion (default 0.05)" in report.stdout
    sql = embsql_cli("sql", "--help", env={"COLUMNS": "200"})
    assert "--dialect" in sql.stdout


def _r2_reference(labels, vectors):
    """R² = SS_B / SS_T of the unit vectors, by numpy loops."""
    z = np.asarray(vectors, dtype=float)
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    total = ((z - z.mean(axis=0)) ** 2).sum()
    within = sum(((z[labels == g] - z[labels == g].mean(axis=0)) ** 2).sum() for g in np.unique(labels))
    return 1 - within / total


TEXT_SPELLINGS = {
    "json": lambda v: json.dumps(v),                                  # [0.1, 0.2]
    "python": lambda v: str([float(x) for x in v]),                   # [0.1, 0.2] as Python prints a list
    "numpy": lambda v: np.array2string(np.asarray(v), separator=" ", max_line_width=10**6),   # [0.1 0.2]
    "spaces": lambda v: " ".join(repr(float(x)) for x in v),          # 0.1 0.2
}


@pytest.mark.parametrize("spelling", sorted(TEXT_SPELLINGS))
@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_parse_vectors_reads_a_text_vector_column(tmp_path, spelling, suffix):
    rng = np.random.default_rng(7)
    models, labels, vectors = [], [], []
    for model in ("a", "b"):
        centres = rng.normal(size=(5, 6))
        for i in range(40):
            models.append(model)
            labels.append(f"t{i % 5}")
            vectors.append((centres[i % 5] + 0.8 * rng.normal(size=6)).tolist())
    text = [TEXT_SPELLINGS[spelling](v) for v in vectors]
    table = pa.table({"model": models, "topic": labels, "vec": text})
    path = tmp_path / f"emb.{suffix}"
    if suffix == "csv":
        pacsv.write_csv(table, path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()))
    done = embsql_cli("report", path, "--vector", "vec", "--group", "topic", "--model", "model",
                      "--permutations", "0", "--parse-vectors", "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    got = {row[summary["columns"].index("model")]: row[summary["columns"].index("r2")] for row in summary["rows"]}
    labels_, models_ = np.array(labels), np.array(models)
    for model in ("a", "b"):
        rows = models_ == model
        expected = _r2_reference(labels_[rows], np.array(vectors)[rows])
        assert got[model] == pytest.approx(expected, rel=1e-6 if spelling == "numpy" else 1e-12), model


def test_a_text_vector_column_is_refused_with_the_cast_that_works(tmp_path):
    path = tmp_path / "text.csv"
    rows = [("a", f"t{i % 3}", json.dumps([float(i % 3), 1.0, 0.5 * i])) for i in range(12)]
    pacsv.write_csv(pa.table({"model": [r[0] for r in rows], "topic": [r[1] for r in rows],
                              "vec": [r[2] for r in rows]}), path)
    done = embsql_cli("report", path, "--vector", "vec", "--group", "topic", "--permutations", "0")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    cast = "SELECT * REPLACE (vec::DOUBLE[] AS vec)"
    assert cast in done.stderr and "--parse-vectors" in done.stderr
    con = embsql.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{path}')")
    with pytest.raises(duckdb.Error, match=r"embsql: \[column.type\].*" + re.escape(cast)):
        con.sql("SELECT * FROM emb_anova('t', 'topic', 'vec')").fetchall()
    # the cast the message shows does read the column
    con.execute(f"CREATE VIEW fixed AS {cast} FROM t")
    r2 = con.execute("SELECT r2 FROM emb_anova('fixed', 'topic', 'vec')").fetchall()[0][0]
    assert r2 == pytest.approx(_r2_reference(np.array([r[1] for r in rows]),
                                             np.array([json.loads(r[2]) for r in rows])), rel=1e-12)
    from embsql.io.columns import cast_hint

    assert cast_hint("my col", "VARCHAR").startswith('; text like \'[0.1, 0.2]\' becomes a vector with '
                                                      'SELECT * REPLACE ("my col"::DOUBLE[] AS "my col")')


def test_parse_vectors_names_the_row_and_value_it_cannot_read(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('model,topic,vec\na,t0,"[0.1, 0.2]"\na,t1,"[0.3, oops]"\n')
    done = embsql_cli("report", path, "--vector", "vec", "--group", "topic", "--permutations", "0", "--parse-vectors")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert 'vector column "vec"' in done.stderr and "row 2 reads [0.3, oops]" in done.stderr


def test_retrieval_only_report_with_positives_runs_the_layers(tmp_path):
    """--queries/--docs alone (queries with their positive document): the retrieval layers, whose
    top-1 and MRR are a brute-force ranking's (tests/retrieval_data.py)."""
    import retrieval_data as rd
    from test_retrieval_report import reference_summary

    queries, docs = rd.make(11, models=("a", "b"), dims=[10, 14], topics=5, docs_per_topic=4, questions=9)
    pq.write_table(queries, tmp_path / "q.parquet")
    pq.write_table(docs, tmp_path / "d.parquet")
    done = embsql_cli("report", "--queries", tmp_path / "q.parquet", "--docs", tmp_path / "d.parquet", "--model", "model",
                      "--permutations", "0", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    names = [s["name"] for s in document["sections"]]
    assert {"query_stability", "document_structure", "rank", "pairing"} <= set(names)
    rank = next(s for s in document["sections"] if s["name"] == "rank")
    for row in rank["rows"]:
        got = dict(zip(rank["columns"], row))
        expected = reference_summary(queries, docs, got["model"], "corpus")
        assert got["top1"] == pytest.approx(expected["top1"], abs=1e-12)
        assert got["mrr"] == pytest.approx(expected["mrr"], abs=1e-12)
    assert not any("positive" in note for note in document.get("notes", []))


def test_an_error_from_sql_has_one_embsql_prefix(monkeypatch, capsys):
    """An error raised in SQL reads ``embsql: [kind] ...``; on the command line it follows the one
    ``embsql: error:``, not ``embsql: error: embsql: [kind] ...``."""
    from embsql import cli

    def from_sql(args):
        con = embsql.connect()
        con.execute("CREATE TABLE t AS SELECT 'a' AS g, [1.0, 0.0] AS v")
        embsql.run_sql(con, "SELECT * FROM emb_anova('t', 'g', 'v', bad_rows := 'drop')")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["sql-path"].set_defaults(run=from_sql)
    assert cli.main(["sql-path"]) == 2
    assert capsys.readouterr().err == ("embsql: error: [argument.bad_rows] bad_rows must be 'error' or 'skip', "
                                       "not 'drop'\n")


@pytest.mark.parametrize("spelling", ["json", "numpy", "spaces"])
def test_parse_vectors_reads_the_text_vectors_of_queries_and_docs(tmp_path, spelling):
    """--parse-vectors parses --queries and --docs as it parses DATA: the retrieval-only report on
    CSV files with text vectors has a brute-force ranking's top-1 and MRR (tests/retrieval_data.py)."""
    import retrieval_data as rd
    from test_retrieval_report import reference_summary

    queries, docs = rd.make(11, models=("a", "b"), dims=[10, 14], topics=5, docs_per_topic=4, questions=9)
    for table, name in ((queries, "q"), (docs, "d")):
        text = [TEXT_SPELLINGS[spelling](v) for v in table.column("vector").to_pylist()]
        pacsv.write_csv(table.drop_columns(["vector"]).append_column("vector", pa.array(text)), tmp_path / f"{name}.csv")
    refused = embsql_cli("report", "--queries", tmp_path / "q.csv", "--docs", tmp_path / "d.csv", "--model", "model",
                         "--permutations", "0")
    assert refused.returncode == 2 and "--parse-vectors" in refused.stderr, refused.stderr
    done = embsql_cli("report", "--queries", tmp_path / "q.csv", "--docs", tmp_path / "d.csv", "--model", "model",
                      "--permutations", "0", "--format", "json", "--parse-vectors")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    rank = next(s for s in document["sections"] if s["name"] == "rank")
    assert len(rank["rows"]) == 2
    for row in rank["rows"]:
        got = dict(zip(rank["columns"], row))
        expected = reference_summary(queries, docs, got["model"], "corpus")
        assert got["top1"] == pytest.approx(expected["top1"], abs=1e-6 if spelling == "numpy" else 1e-12)
        assert got["mrr"] == pytest.approx(expected["mrr"], abs=1e-6 if spelling == "numpy" else 1e-12)


def test_parse_vectors_names_the_docs_row_it_cannot_read(tmp_path):
    import retrieval_data as rd

    queries, docs = rd.make(3, models=("a",), dims=[4], topics=2, docs_per_topic=2, questions=3)
    for table, name in ((queries, "q"), (docs, "d")):
        text = [json.dumps(v) for v in table.column("vector").to_pylist()]
        if name == "d":
            text[2] = "[0.1, oops]"
        pacsv.write_csv(table.drop_columns(["vector"]).append_column("vector", pa.array(text)), tmp_path / f"{name}.csv")
    done = embsql_cli("report", "--queries", tmp_path / "q.csv", "--docs", tmp_path / "d.csv", "--model", "model",
                      "--permutations", "0", "--parse-vectors")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert 'vector column "vector"' in done.stderr and "row 3 reads [0.1, oops]" in done.stderr, done.stderr
