"""The embsql command line (thin: parse, build a Report, run or print it, render).

Exit codes: 0 ok; 1 a finding the user asked to fail on (--fail-if-dispersion, --min-r2);
2 bad input or arguments (one line on stderr, no traceback unless --debug); 130 interrupted
(Ctrl-C: the one line ``embsql: interrupted``).  A bare ``embsql`` prints the help on stdout and
exits 0; ``embsql --version`` prints the version.
NO_COLOR is honoured (rich reads it).

A flag is a name of the one vocabulary (embsql.vocabulary) with - for _ (``--doc-id``); an unknown
flag is exit 2 and one line.  This module imports the rest of embsql inside the commands, so that
``embsql --help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from embsql.errors import EmbsqlError, InputError, spoken_in

if TYPE_CHECKING:
    import duckdb

    from embsql.reporting.build import Report
    from embsql.reporting.report_result import ReportResult

EXIT_OK, EXIT_FINDING, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
FORMATS = ("table", "text", "json", "markdown", "html")   # text: another name for table

REPORT_EXAMPLE = """example:
  embsql report examples/embeddings.parquet --vector embedding --group topic --model model
  embsql report data.duckdb:emb --vector v --group topic --format html --out report.html
  embsql report data.parquet --vector v --group topic --permutations 0    (no tests: faster)
  embsql report data.parquet --vector v --group topic --model model --item doc_id    (models compared)
  embsql report data.parquet --vector v --group topic --model model --pairs sts.parquet --label topic
  embsql report --config report.toml --format json
  embsql report --queries q.parquet --docs d.parquet --qrels qrels.csv --model model    (retrieval only)"""
SQL_EXAMPLE = """example:
  embsql sql examples/embeddings.parquet --vector embedding --group topic --model model --dialect spark --table emb
  embsql sql --table lake.emb --vector embedding --group topic --model model --dims mini-384=384,base-768=768 \\
      --dialect spark"""
SQL_PATH_EXAMPLE = """example:
  duckdb -c ".read $(embsql sql-path)" -c "SELECT * FROM emb_anova('emb.parquet', 'topic', 'embedding')"
"""
DEMO_EXAMPLE = """example:
  embsql demo
  embsql demo --out demo.html"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2 (argparse prints the usage too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"embsql: error: {message} (see {self.prog} --help)\n")


def flag(name: str) -> str:
    """The command-line flag of a vocabulary name: ``doc_id`` -> ``--doc-id``."""
    return "--" + name.replace("_", "-")


def _open(data: str | None) -> tuple[duckdb.DuckDBPyConnection, str | None]:
    """DATA is a Parquet/CSV file, a directory of Parquet files, a Lance dataset (lance://PATH, a
    *.lance directory, lance://DIR?table=T), a saved Hugging Face dataset directory, or
    FILE.duckdb:TABLE (attached read-only when the report runs, see embsql.io.sources); returns
    (connection, source name)."""
    from embsql.io.registration import connect
    from embsql.io.sources import duckdb_table, is_lance

    con = connect()
    # DuckDB draws its own bar on stdout once a query has run 2 s (a long stream included), which
    # would land inside the report on stdout; embsql's bars go to stderr
    con.execute("SET enable_progress_bar = false")
    if data is None:
        return con, None
    if duckdb_table(data) is None and not Path(data).exists() and not is_lance(data):
        raise InputError(f"data file {data!r} does not exist")
    return con, data


def _build(args: argparse.Namespace, *, source_from_table: bool = False,
           hint: str = "") -> tuple[duckdb.DuckDBPyConnection, Report]:
    from embsql.reporting.build import Report

    con, source = _open(args.data)
    if source is None and source_from_table and args.table and not args.config:
        source = args.table          # embsql sql --table T --dims ...: nothing local is read
    settings = {"source": source, "vector": args.vector, "group": args.group, "model": args.model,
                "permutations": getattr(args, "permutations", None), "seed": getattr(args, "seed", None),
                "stop_after": getattr(args, "stop_after", None),
                "replicates": getattr(args, "replicates", None), "item": getattr(args, "item", None),
                "sections": tuple(args.sections.split(",")) if args.sections else None, "table": args.table,
                "queries": args.queries, "docs": args.docs, "qrels": getattr(args, "qrels", None),
                "pairs": getattr(args, "pairs", None), "label": getattr(args, "label", None),
                "bad_rows": "skip" if getattr(args, "skip_bad_rows", False) else None}
    if args.config:
        report = Report.from_file(args.config, **settings)
    else:
        missing = [f"--{name}" for name in ("vector", "group") if getattr(args, name) is None]
        if source is None:
            missing.insert(0, "DATA")
        if missing:
            retrieval = ", or --queries Q --docs D for a retrieval-only report" if hint == "" else ""
            raise InputError(f"missing {', '.join(missing)} (or give --config FILE{hint}{retrieval})")
        report = Report(**{k: v for k, v in settings.items() if v is not None})
    return con, report


def _config(args: argparse.Namespace) -> dict:
    """The --config file's [report] table ({} without --config)."""
    from embsql.reporting.build import report_table

    return report_table(args.config) if args.config else {}


def _retrieval_only(args: argparse.Namespace) -> bool:
    """``embsql report --queries Q --docs D [--qrels R] [--config FILE]``: the retrieval tables, and no
    DATA, --vector or --group (neither on the command line nor in the --config file's [report])."""
    config = _config(args)
    given = lambda name: getattr(args, name) is not None or name in config
    return (given("queries") and given("docs") and args.engine is None and args.data is None
            and not any(given(name) for name in ("vector", "group")) and "source" not in config)


def _report(args: argparse.Namespace) -> int:
    if _retrieval_only(args):
        result = _run_retrieval_only(args)
    else:
        result = _run_report(args)
    from embsql.render import formats as render

    renderers = {"table": lambda r: render.to_text(r, full=args.full, explain=args.explain),
                 "text": lambda r: render.to_text(r, full=args.full, explain=args.explain),
                 "json": render.to_json,
                 "markdown": lambda r: render.to_markdown(r, full=args.full, explain=args.explain), "html": render.to_html}
    text = renderers[args.format](result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return _findings(args, result)


def _run_retrieval_only(args: argparse.Namespace) -> ReportResult:
    """The retrieval tables alone: the flags that describe the embedding table have nothing to read."""
    from embsql.reporting.build import retrieval_report

    needs_data = [name for name, value in (("--sections", args.sections), ("--item", args.item), ("--pairs", args.pairs),
                                           ("--label", args.label), ("--min-r2", args.min_r2),
                                           ("--fail-if-dispersion", args.fail_if_dispersion or None))
                  if value is not None]
    if needs_data:
        raise InputError(f"{needs_data[0]} reads the embedding table: give DATA, --vector and --group too "
                         "(the retrieval tables alone take --queries, --docs, --qrels and --model)")
    # the settings: the command line's, else the --config file's [report] table (its retrieval column names
    # in [report.retrieval]); the settings of the embedding table have nothing to read
    config = _config(args)
    unused = sorted(set(config) - set(RETRIEVAL_ONLY_SETTINGS))
    if unused:
        raise InputError(f"report file {args.config!r}: {unused[0]} reads the embedding table; the retrieval tables "
                         f"alone take {', '.join(RETRIEVAL_ONLY_SETTINGS)}")
    given = {"queries": args.queries, "docs": args.docs, "qrels": args.qrels, "model": args.model,
             "permutations": args.permutations, "seed": args.seed, "replicates": args.replicates,
             "bad_rows": "skip" if args.skip_bad_rows else None}
    settings = {**config, **{k: v for k, v in given.items() if v is not None}}
    for name in ("queries", "docs", "qrels"):
        path = settings.get(name)
        if isinstance(path, str) and not Path(path).exists():
            raise InputError(f"--{name} file {path!r} does not exist")
    con, _ = _open(None)
    if not args.parse_vectors:
        return retrieval_report(con, **settings)
    queries, docs = _parsed_retrieval(con, settings["queries"], settings["docs"], settings.get("retrieval", {}))
    return _parsing(lambda: retrieval_report(con, **{**settings, "queries": queries, "docs": docs,
                                                     "title": settings.get("title")
                                                     or f"embsql retrieval report: {settings['queries']}"}))


# what a --config file's [report] table may hold for a report on the retrieval tables alone (retrieval_report's
# keywords)
RETRIEVAL_ONLY_SETTINGS = ("queries", "docs", "qrels", "model", "retrieval", "permutations", "seed", "replicates",
                           "level", "title", "bad_rows")


def _run_report(args: argparse.Namespace) -> ReportResult:
    con, report = _build(args, source_from_table=args.engine is not None)
    if args.parse_vectors:
        return _run_parsed(args, con, report)
    if args.item is not None and report.model is None and report.pairs is None and report.label is None:
        raise InputError(f"--item {args.item} compares models on the same items: it needs the model column (--model)"
                         ", or --pairs, whose items it names")
    if args.fail_if_dispersion and "dispersion" not in report.chosen_sections:
        raise InputError("--fail-if-dispersion needs the dispersion test, which runs with --permutations N (N > 0)"
                         + (" and the dispersion section in --sections" if report.sections else ""))
    return _run_on_engine(args, con, report)


def _run_parsed(args: argparse.Namespace, con: duckdb.DuckDBPyConnection, report: Report) -> ReportResult:
    """--parse-vectors: the report on a view of DATA whose text vector column is parsed into DOUBLE[]
    (and on such views of the retrieval tables, when given)."""
    import dataclasses

    from embsql.io.text_vectors import parsed_view

    if args.engine is not None:
        raise InputError("--parse-vectors parses a local file; with --engine the table is read there")
    if not isinstance(report.source, str):
        raise InputError("--parse-vectors parses DATA, a CSV, JSON or Parquet file")
    view = parsed_view(con, report.source, report.vector)
    queries, docs = _parsed_retrieval(con, report.queries, report.docs, report.retrieval)
    parsed = report.replace(source=view, title=report.title or f"embsql report: {report.source}",
                            **({"queries": queries, "docs": docs} if queries is not None else {}))
    result = _parsing(lambda: _run_on_engine(args, con, parsed))
    return dataclasses.replace(result, meta={**result.meta, "source": f"{report.source} (vectors parsed from text)"})


def _parsed_retrieval(con: duckdb.DuckDBPyConnection, queries: object, docs: object,
                      settings: dict) -> tuple[str | None, str | None]:
    """--parse-vectors on the retrieval tables: views of the --queries and --docs files with their
    text vector columns (the settings' vector and doc_vector, else "vector") parsed into DOUBLE[];
    (None, None) without them."""
    from embsql.io.text_vectors import parsed_view

    if queries is None or docs is None:
        return None, None
    vector = settings.get("vector") or "vector"
    columns = {"queries": vector, "docs": settings.get("doc_vector") or vector}
    views = []
    for role, path in (("queries", queries), ("docs", docs)):
        if not isinstance(path, str):
            raise InputError(f"--parse-vectors parses --{role}, a CSV, JSON or Parquet file")
        views.append(parsed_view(con, path, columns[role], view=f"embsql_parsed_{role}"))
    return views[0], views[1]


def _parsing(run: Callable[[], ReportResult]) -> ReportResult:
    """``run()``, a value a parsed view cannot read (raised while its rows stream) being embsql's error."""
    import duckdb

    from embsql.errors import from_sql

    try:
        return run()
    except duckdb.Error as raised:
        if "embsql: [" not in str(raised):
            raise
        raise from_sql(str(raised)) from None


# -- --engine: stage 1 on PostgreSQL or Spark, stage 2 here ------------------------------------
ENGINE_EXAMPLE = """
  embsql report --engine postgres --dsn "host=db dbname=rag" --table emb --vector v --group topic --model model
  embsql report --engine spark --table lake.emb --vector v --group topic --model model [--spark-master URL]"""


def _engine_arguments(parser: argparse.ArgumentParser) -> None:
    from embsql.engines.dialects import CONNECTABLE

    parser.add_argument("--engine", choices=CONNECTABLE,
                        help="run stage 1 (the group sums) on this engine, on --table; stage 2 runs here")
    parser.add_argument("--dsn", help="PostgreSQL connection string for --engine postgres (libpq: \"host=... dbname=...\")")
    parser.add_argument("--spark-master", metavar="URL", help="Spark master for --engine spark (default local[*])")
    parser.epilog = (parser.epilog or "") + ENGINE_EXAMPLE


def _run_on_engine(args: argparse.Namespace, con: duckdb.DuckDBPyConnection, report: Report) -> ReportResult:
    progress = False if args.no_progress else None
    if args.engine is None:
        return report.run(con, progress=progress)
    from embsql.engines.connections import connect
    from embsql.reporting.build import run_on

    if not report.table and args.data:
        raise InputError(f"--engine {args.engine} reads a table there: give --table (DATA is a local file)")
    with connect(args.engine, dsn=args.dsn, spark_master=args.spark_master) as engine:
        return run_on(engine, report, progress=progress)


def _findings(args: argparse.Namespace, result: ReportResult) -> int:
    failed = []
    for row in result.summary.to_dicts():
        model = "" if row["model"] is None else f" ({row['model']})"
        if args.min_r2 is not None and row["r2"] < args.min_r2:
            failed.append(f"R² = {row['r2']:.4g} is below --min-r2 {args.min_r2}{model}")
        if args.fail_if_dispersion and row["dispersion_p"] is not None and row["dispersion_p"] <= args.alpha:
            failed.append(f"the dispersion test is significant, p = {row['dispersion_p']:.4g} <= {args.alpha}{model}")
    for line in failed:
        print(f"embsql: finding: {line}", file=sys.stderr)
    return EXIT_FINDING if failed else EXIT_OK


def _sql(args: argparse.Namespace) -> int:
    con, report = _build(args, source_from_table=args.dims is not None, hint=", or --table T with --dims MODEL=D,...")
    sys.stdout.write(report.sql(args.dialect, con=con, dims=args.dims))
    return EXIT_OK


def _dims(text: str) -> int | dict[str, int]:
    """--dims: one d (768) or MODEL=D pairs (mini-384=384,base-768=768)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    dims = {}
    for part in text.split(","):
        model, equals, d = part.strip().rpartition("=")
        if not equals or not model or not d.strip().isdigit() or int(d) < 1:
            raise argparse.ArgumentTypeError(f"{part.strip()!r} is not MODEL=D with D a positive whole number "
                                             "(e.g. --dims mini-384=384,base-768=768, or --dims 768)")
        dims[model.strip()] = int(d)
    return dims


def _sql_path(args: argparse.Namespace) -> int:
    from embsql.io.resources import sql_entry_file

    print(sql_entry_file())
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from embsql.demo import demo_report, demo_verdict, run_demo
    from embsql.io.registration import connect

    if args.out:
        from embsql.render.formats import to_html

        Path(args.out).write_text(to_html(demo_report(seeds=args.seeds, seed=args.seed)), encoding="utf-8")
        print(f"wrote {args.out}")
        return EXIT_OK
    table = run_demo(connect(), seeds=args.seeds, seed=args.seed)
    print(f"The source's experiment: mean over {args.seeds} seeds of 80 unit vectors in 50-d, 20 groups of 4")
    print(f"{'experiment':24} {'param':>6} {'V':>7} {'R2':>7} {'R2_null':>8} {'F':>7}")
    for row in table.to_pylist():
        print(f"{row['experiment']:24} {row['param']:>6.2f} {row['v']:>7.3f} {row['r2']:>7.3f} "
              f"{row['r2_null']:>8.3f} {row['f']:>7.2f}")
    for sentence in demo_verdict(table.to_pylist()):
        print(textwrap.fill(sentence, 100))
    return EXIT_OK


def _report_arguments(parser: argparse.ArgumentParser, *, running: bool) -> None:
    """The flags that describe a report; ``running`` adds those that matter only when it runs."""
    parser.add_argument("data", nargs="?", metavar="DATA",
                        help="a Parquet or CSV file, or FILE.duckdb:TABLE (optional with --config)")
    parser.add_argument("--vector", help="the vector column (FLOAT[] or DOUBLE[])")
    parser.add_argument("--group", help="the group column")
    parser.add_argument("--model", help="the model column: one set of figures per value")
    parser.add_argument("--config", metavar="FILE", help="a TOML file with a [report] table; flags override it")
    parser.add_argument("--sections", help="comma-separated: decomposition,groups,jackknife,bootstrap,compare,"
                                           "permanova,dispersion,models,ranking (default: the first seven, of "
                                           "which permanova and dispersion are the permutation tests; models when "
                                           "--item and --model are given; and ranking, the models' rank confidence "
                                           "sets, shown right after the verdict when there are two or more)")
    if running:
        parser.add_argument("--permutations", type=int, help="permutations for PERMANOVA and the dispersion test "
                                                             "(default 999; 0 skips both tests)")
        parser.add_argument("--seed", type=int, help="random seed (default 42)")
        parser.add_argument("--stop-after", type=int, metavar="H",
                            help="stop each permutation test once H permuted statistics reach the observed one "
                                 "(sequential p-values; default 10; 0 runs them all)")
        parser.add_argument("--replicates", type=int, help="bootstrap replicates (default 2000)")
        parser.add_argument("--pairs", metavar="FILE",
                            help="gold similarity judgements (item_a, item_b, score; other names in the config "
                                 "file's [report.similarity]): adds the similarity sections (Spearman and Pearson of "
                                 "cosine against score per model, the paired comparison, a scatter)")
        parser.add_argument("--label", metavar="COLUMN",
                            help="a class-label column: adds the classification sections (leave-one-out k-NN and "
                                 "nearest-centroid accuracy per model, the paired comparison; k in the config "
                                 "file's [report.classification])")
        parser.add_argument("--parse-vectors", action="store_true",
                            help="the vector columns of DATA, --queries and --docs (CSV or JSON files) are text: "
                                 "parse them, as a JSON or Python list ([0.1, 0.2]), a NumPy print ([0.1 0.2]) or "
                                 "numbers separated by spaces or commas (0.1 0.2)")
        parser.add_argument("--item", metavar="COLUMN",
                            help="the item column (which rows of different models embed the same item): with "
                                 "--model, adds the models compared section (linear CKA, Procrustes r, k-NN "
                                 "agreement, Mantel r on the items every model has)")
    parser.add_argument("--table", help="the source's table name on another engine "
                                        + ("(with --engine)" if running else "(for --dialect)"))
    parser.add_argument("--queries", help="queries table or file: adds the retrieval layers (with --docs; column "
                                          "names other than the defaults go in the config file's [report.retrieval])")
    parser.add_argument("--docs", help="documents table or file (with --queries)")
    parser.add_argument("--qrels", metavar="FILE", help="relevance judgements (qid, doc_id, relevance: a table, "
                        "Parquet/CSV or a TREC qrels file): adds the retrieval evaluation (with --queries and --docs)")


def build_parser() -> argparse.ArgumentParser:
    # allow_abbrev=False: a flag has one spelling (--perm is not --permutations), as a name has on every surface
    parser = _Parser(prog="embsql", description="Statistics of embedding tables that are comparable across models.",
                     epilog="exit codes: 0 ok, 1 a finding you asked to fail on, 2 bad input, 130 interrupted (Ctrl-C)",
                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"embsql {_version()}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)   # none: the help, exit 0

    report = commands.add_parser("report", help="run a report on a file and print it",
                                 description="Run a report: a verdict first, then the decomposition, per-group spread, "
                                             "jackknife and bootstrap intervals, paired model comparison, PERMANOVA "
                                             "and the dispersion test (999 permutations; --permutations 0 skips "
                                             "them).",
                                 epilog=REPORT_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    _report_arguments(report, running=True)
    report.add_argument("--format", choices=FORMATS, default="table", help="output format (default table; text is the same)")
    report.add_argument("--full", action="store_true",
                        help="every row and column of every section in table and Markdown output, wrapped to the "
                             "width (JSON and HTML always have them)")
    report.add_argument("--explain", action="store_true",
                        help="each caution in full under its table, and every run detail (by default each caution "
                             "is one line naming the docs page that explains it)")
    report.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    report.add_argument("--min-r2", type=float, help="exit 1 if any model's R² is below this")
    report.add_argument("--fail-if-dispersion", action="store_true",
                        help="exit 1 if a dispersion test is significant at --alpha (needs --permutations)")
    report.add_argument("--alpha", type=float, default=0.05,
                        help="significance level for --fail-if-dispersion (default 0.05)")
    report.add_argument("--no-progress", action="store_true", help="no progress bar")
    report.add_argument("--skip-bad-rows", action="store_true",
                        help="leave out rows whose vector is NULL, zero or NaN/infinite (counted per model in a note) "
                             "instead of stopping at the first")
    _engine_arguments(report)
    report.set_defaults(run=_report)

    sql = commands.add_parser("sql", help="print the SQL a report runs, for any engine",
                              description="Print the stage-1 SQL of a report (the aggregate that runs on the engine) "
                                          "instead of running it.",
                              epilog=SQL_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    _report_arguments(sql, running=False)
    from embsql.engines.dialects import WRITABLE

    sql.add_argument("--dialect", choices=WRITABLE, default="duckdb", help="SQL dialect (default duckdb)")
    sql.add_argument("--dims", type=_dims, metavar="MODEL=D,...",
                     help="the vector length of each model (or one D): print only the aggregate, probe nothing; "
                          "with --table, DATA may be left out")
    sql.set_defaults(run=_sql)

    sql_path = commands.add_parser("sql-path", help="print the path of the installed embsql.sql, for the DuckDB CLI",
                                   description="Print the path of embsql.sql, the file that defines embsql's SQL "
                                               "functions, wherever pip installed it: the stock DuckDB CLI loads it "
                                               "with .read.",
                                   epilog=SQL_PATH_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter,
                                   allow_abbrev=False)
    sql_path.set_defaults(run=_sql_path)

    demo = commands.add_parser("demo", help="reproduce the source's experiment on an embedded DuckDB",
                               description="Reproduce the source's experiment: a common direction makes "
                                           "V fall while R² stays; shrinking groups moves R², not V.",
                               epilog=DEMO_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    demo.add_argument("--seeds", type=int, default=20, help="number of random configurations to average (default 20)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--out", metavar="FILE", help="write the demo as an HTML report to FILE")
    demo.set_defaults(run=_demo)
    return parser


def _interrupted(error: BaseException) -> bool:
    """Ctrl-C, as Python raises it, as DuckDB does (duckdb.InterruptException) or as embsql's kernels
    end a query (``query.interrupted``)."""
    return (isinstance(error, KeyboardInterrupt) or type(error).__name__ == "InterruptException"
            or getattr(error, "kind", None) == "query.interrupted")


def _message(error: BaseException) -> str:
    """The error's text after the CLI's own ``embsql: error:``: an error that comes from SQL already
    starts with ``embsql: `` (``embsql: [kind] ...``), which is not said twice."""
    text = str(error)
    return text[len("embsql: "):] if text.startswith("embsql: ") else text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("embsql")
    except PackageNotFoundError:   # a checkout on PYTHONPATH, never installed
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:     # (before the package has loaded: embsql.startup)
        print("embsql: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.command is None:   # a bare `embsql`: what it can do, on stdout, and exit 0
        parser.print_help()
        return EXIT_OK
    try:
        with spoken_in("cli"):     # (a message suggests a flag, or a setting of the --config file)
            code: int = args.run(args)
        return code
    except (KeyboardInterrupt, Exception) as error:
        if args.debug or not (_interrupted(error) or isinstance(error, EmbsqlError)):
            raise
        if _interrupted(error):   # one line, and the shell's status for SIGINT (128 + 2)
            print("embsql: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"embsql: error: {_message(error)}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
