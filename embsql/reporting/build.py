"""The report builder: describe a report once, then print its SQL (any dialect) or run it.

A report is stage 1 (embsql.io.stage1: cheap probes of the vector lengths and the group-sums aggregate,
both sqlglot ASTs, so the same query is written for DuckDB, Spark, Postgres, Trino, BigQuery or
Snowflake) followed by stage 2 in Python on the O(G * d) sums, the same code whatever engine ran
stage 1: the decomposition (embsql.core.decomposition), the cluster jackknife and bootstrap and the
paired model comparison (embsql.core.resampling).  The permutation and dispersion tests need the rows
themselves, so those two sections run on DuckDB only (embsql.api.permutation).

>>> import embsql
>>> r = embsql.report("emb.parquet", vector="embedding", group="topic", by="model")  # doctest: +SKIP
>>> print(r.sql(dialect="spark"))                                                     # doctest: +SKIP
>>> result = r.run()                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import duckdb
import numpy as np
import sqlglot
from sqlglot import ErrorLevel, exp
from sqlglot.errors import SqlglotError

from embsql.core import decomposition, resampling
from embsql.core.arguments import check_level, check_permutations, check_replicates, check_seed
from embsql.core.paired import BOOTSTRAP_COLUMNS, COMPARE_COLUMNS, bootstrap_row, canonical, compare_row, same_groups_problem
from embsql.core.sums import GroupSums
from embsql.errors import ColumnNotFoundError, DesignError, InputError
from embsql.io import stage1
from embsql.io.sources import describe, is_file, is_frame, local_source, resolve, source_expression
from embsql.io.sql import run_sql
from embsql.reporting import cautions
from embsql.reporting.result import ReportResult, Section
from embsql.results import ResultTable, model_label

DEFAULT_SECTIONS = ("decomposition", "groups", "jackknife", "bootstrap", "compare")
ROW_SECTIONS = ("permanova", "dispersion")     # need the rows: DuckDB only
SECTIONS = DEFAULT_SECTIONS + ROW_SECTIONS + ("retrieval", "models")
DIALECTS = ("duckdb", "spark", "postgres", "trino", "bigquery", "snowflake")
SUMMARY_COLUMNS = ("model", "n", "groups", "r2", "r2_se", "r2_ci_low", "r2_ci_high", "f", "p_value", "v", "w_bar",
                   "dispersion_p", "r2_bc", "r2_adj", "calibrated")
JACKKNIFE_STATS = ("r2", "f", "w_bar")


@dataclass(frozen=True)
class Report:
    """What to compute, on which table.  Build with embsql.report(...) or Report.from_file(path)."""

    source: str
    vector: str
    group: str
    by: str | None = None
    sections: tuple[str, ...] = ()
    permutations: int = 999
    seed: int = 42
    replicates: int = 2000
    level: float = 0.95
    queries: str | None = None
    docs: str | None = None
    retrieval: dict = field(default_factory=dict)
    title: str | None = None
    table: str | None = None
    where: str | None = None
    item: str | None = None     # the item column: with by, it turns on the models section (reporting.geometry)

    def __post_init__(self):
        for name in ("source", "vector", "group"):
            value = getattr(self, name)
            if name == "source" and is_frame(value):
                continue        # a DataFrame or Arrow object, registered on the connection when the report runs
            if not isinstance(value, str) or not value:
                shown = repr(value) if isinstance(value, (str, int, float, type(None))) else f"a {type(value).__name__}"
                raise InputError(f"report: {name} must be a non-empty string{' or a DataFrame' if name == 'source' else ''}"
                                 f", not {shown}")
        object.__setattr__(self, "sections", tuple(self.sections))
        unknown = [s for s in self.sections if s not in SECTIONS]
        if unknown:
            raise InputError(f"report: unknown section {unknown[0]!r}; the sections are: {', '.join(SECTIONS)}")
        try:   # the rules every face shares (embsql.core.arguments); 0 permutations skips the tests
            check_permutations(self.permutations, allow_zero=True)
            check_seed(self.seed)
            check_replicates(self.replicates)
            check_level(self.level)
        except InputError as error:
            raise InputError(f"report: {error}") from None
        if self.by is not None and self.by == self.group:
            raise InputError(f"report: by column {self.by!r} is the group column; pass a different column (e.g. the model)")
        if self.where is not None:
            self.condition()  # parse now: a bad filter is an error before anything runs
        if (self.queries is None) != (self.docs is None):
            raise InputError("report: the retrieval layers need both queries and docs")

    # -- description ------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, values: dict) -> Report:
        """A report from a dict (the [report] table of a TOML file); unknown keys are errors."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InputError(f"report: unknown setting {unknown[0]!r}; the settings are: {', '.join(sorted(names))}")
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path) -> Report:
        """Read a report description from a TOML file with a [report] table."""
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib
        try:
            with open(path, "rb") as f:
                document = tomllib.load(f)
        except FileNotFoundError:
            raise InputError(f"report file {str(path)!r} does not exist") from None
        except tomllib.TOMLDecodeError as error:
            raise InputError(f"report file {str(path)!r} is not valid TOML: {error}") from None
        if "report" not in document:
            raise InputError(f"report file {str(path)!r} has no [report] table")
        return cls.from_mapping(document["report"])

    def replace(self, **changes) -> Report:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def chosen_sections(self) -> tuple[str, ...]:
        """The sections asked for, or the defaults (plus the tests when permutations > 0, plus
        retrieval when query and document tables are given)."""
        if self.sections:
            return self.sections
        chosen = DEFAULT_SECTIONS + (ROW_SECTIONS if self.permutations else ())
        chosen += ("models",) if self.item is not None and self.by is not None else ()
        return chosen + (("retrieval",) if self.queries is not None else ())

    def sections_on(self, rows: bool) -> tuple[str, ...]:
        """The sections that run: off DuckDB (``rows=False``) the tests, which read the rows, are
        dropped unless they were asked for by name (then _check_engine_sections refuses)."""
        if rows or self.sections:
            return self.chosen_sections
        return tuple(s for s in self.chosen_sections if s not in ROW_SECTIONS)

    @contextmanager
    def on(self, con: duckdb.DuckDBPyConnection):
        """This report with its sources as names on ``con``: DataFrames and Arrow objects registered
        (unregistered on exit), FILE.duckdb:TABLE attached; the title and meta keep the user's names."""
        with ExitStack() as stack:
            names = {key: stack.enter_context(local_source(con, getattr(self, key)))
                     for key in ("source", "queries", "docs")}
            yield dataclasses.replace(self, **names, title=self.title or f"embsql report: {describe(self.source)}")

    # -- SQL ----------------------------------------------------------------------------------
    def _table(self, dialect: str) -> exp.Expression:
        if dialect == "duckdb":  # table names the source on the other engines only
            return source_expression(self.source)
        if self.table:
            return source_expression(self.table)
        if not isinstance(self.source, str):
            raise InputError(f"the source is a {describe(self.source)}, which only DuckDB reads; name the table that "
                             f"holds it on the {dialect} engine (table=..., or --table on the command line)")
        if is_file(self.source):
            raise InputError(f"{self.source!r} is a file, which only DuckDB reads; name the table that holds it on "
                             f"the {dialect} engine (table=..., or --table on the command line)")
        return source_expression(self.source)

    def condition(self) -> exp.Expression | None:
        """The row filter, parsed as DuckDB SQL (an expression, never spliced as text)."""
        if self.where is None:
            return None
        try:
            parsed = sqlglot.parse_one(f"SELECT 1 WHERE {self.where}", read="duckdb")
        except SqlglotError as error:
            raise InputError(f"report: where {self.where!r} is not a SQL condition: {str(error).splitlines()[0]}") from None
        if not isinstance(parsed, exp.Select) or parsed.args.get("where") is None or \
                len(parsed.args) and any(parsed.args.get(k) for k in ("from", "group", "limit", "order")):
            raise InputError(f"report: where {self.where!r} must be one condition, e.g. \"split = 'test'\"")
        condition = parsed.args["where"].this
        for identifier in condition.find_all(exp.Identifier):
            identifier.set("quoted", True)  # names stay names in every dialect, as the other columns do
        return condition

    def _relation(self, dialect: str) -> exp.Expression:
        """The rows the report reads: the source, filtered by ``where``."""
        table = self._table(dialect)
        condition = self.condition()
        if condition is None:
            return table
        return exp.select("*").from_(table).where(condition.copy()).subquery("__emb_source", copy=False)

    def _check_columns(self, con: duckdb.DuckDBPyConnection) -> None:
        """Every named column must exist in the source (checked before any query runs)."""
        source = resolve(con, self.source)
        source.vector_dimension(self.vector)
        source.require(self.group, "group")
        if self.by:
            source.require(self.by, "by")
        for column in (self.condition() or exp.null()).find_all(exp.Column):
            source.require(column.name, "where")

    def _rows_source(self, con: duckdb.DuckDBPyConnection) -> str:
        """A name for the (filtered) rows, for the sections that read rows through embsql.api.permutation."""
        if self.where is None:
            return self.source
        view = "__emb_report_rows"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {exp.to_identifier(view, quoted=True).sql('duckdb')} AS "
                    f"{exp.select('*').from_(self._relation('duckdb')).sql('duckdb')}")
        return view

    def probes(self, fetch, dialect: str) -> tuple[stage1.Dimensions, list[tuple[str, exp.Expression]]]:
        """d of each model from cheap probes run through ``fetch`` (the distinct by values, then one
        vector of each); returns the dimensions and the probe queries that ran."""
        table = self._relation(dialect)
        values = fetch(write(stage1.models_query(table, self.by), dialect)).column(stage1.B).to_pylist() \
            if self.by else [None]
        ran = self.probe_queries(dialect, values)
        lengths = {value: fetch(write(query, dialect)) for value, (_, query) in zip(values, ran[-len(values):])}
        return stage1.dimensions_from_lengths(lengths, self.vector, self.by), ran

    def probe_queries(self, dialect: str, values: list) -> list[tuple[str, exp.Expression]]:
        """The probe queries on this dialect's table: the models, then one vector length per model."""
        table = self._relation(dialect)
        queries = [("probe: the models", stage1.models_query(table, self.by))] if self.by else []
        return queries + [(f"probe: the vector length{'' if value is None and not self.by else f' of {value!r}'}",
                           stage1.length_query(table, self.vector, self.by, value)) for value in values]

    def aggregate_query(self, dialect: str, dims: stage1.Dimensions) -> exp.Select:
        """Stage 1: n_g, checks and the coordinate sums of the unit vectors per (model, group)."""
        return stage1.group_sums_query(self._relation(dialect), self.group, self.vector, dims, self.by,
                                       fence=dialect == "postgres")

    def sql(self, dialect: str = "duckdb", con: duckdb.DuckDBPyConnection | None = None,
            dims: dict | int | None = None) -> str:
        """The SQL this report runs for stage 1, written for ``dialect``.

        The vector lengths come from ``dims`` ({model: d} or one d; then only the aggregate is
        printed), or else from running the probes on ``con`` (or on an in-memory DuckDB for a file
        source); names are checked the same way.  Every printed statement reads the dialect's
        table (``table=``), never a local file, so the output runs on that engine as it is."""
        if dialect not in DIALECTS:
            raise InputError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
        if dims is not None:
            found = stage1.Dimensions(dims if isinstance(dims, dict) else {None: int(dims)})
            return _script([(AGGREGATE, self.aggregate_query(dialect, found))], dialect)
        con = con or _file_connection(self.source)
        with self.on(con) as local:
            local._check_columns(con)
            found, _ = local.probes(lambda sql: run_sql(con, sql), "duckdb")
            self._table(dialect)      # another engine needs the name of its table before anything is printed
            shown = local if dialect == "duckdb" else self     # DuckDB reads the attached file; others their table
            printed = shown.probe_queries(dialect, list(found.by_value)) + \
                [(AGGREGATE, shown.aggregate_query(dialect, found))]
            return _script(printed, dialect)

    # -- running ------------------------------------------------------------------------------
    def run(self, con: duckdb.DuckDBPyConnection | None = None, *, progress: bool | None = None) -> ReportResult:
        """Run on DuckDB (``con``, or an in-memory connection for a file source)."""
        from embsql.io.registration import connect

        con = con or connect()
        with self.on(con) as local:
            local._check_columns(con)
            result = local.run_stage1(lambda sql: run_sql(con, sql), "duckdb", con=con, progress=progress)
        return dataclasses.replace(result, meta={**result.meta, "source": describe(self.source)})

    def run_stage1(self, fetch, dialect: str, *, con=None, progress=None) -> ReportResult:
        """Run stage 1 through ``fetch(sql) -> Arrow`` on any engine, then stage 2 here."""
        if con is None:  # another engine: check the sections and the names there before the probes run
            self._check_engine_sections()
            columns = fetch(write(exp.select("*").from_(self._table(dialect)).limit(0), dialect)).column_names
            for column, role in ((self.vector, "vector"), (self.group, "group"), (self.by, "by")):
                if column is not None and column not in columns:
                    raise ColumnNotFoundError(f"{role} column {column!r} not found in {self.table or self.source!r} "
                                              f"on {dialect}; its columns are: {', '.join(columns)}")
        dims, _ = self.probes(fetch, dialect)
        sql = write(self.aggregate_query(dialect, dims), dialect)
        result = fetch(sql)
        parts = stage1.group_sums_from_result(result, self.group, self.vector, dims, self.by)
        meta = {"source": self.source, "vector": self.vector, "group": self.group, "by": self.by,
                "dialect": dialect, "sections": list(self.sections_on(con is not None)),
                "permutations": self.permutations,
                "seed": self.seed, "replicates": self.replicates, "level": self.level,
                "dimensions": {model_label(k): v for k, v in dims.by_value.items()},
                "stage1_bytes": int(result.nbytes), "sql": sql, **_versions()}
        return self.finish(parts, con=con, meta=meta, progress=progress)

    def finish(self, parts: list[tuple[object, GroupSums]], *, con=None, meta=None, progress=None) -> ReportResult:
        """Stage 2: every section from the per-model group sums (and, for the tests, the rows)."""
        wanted = self.sections_on(con is not None)
        if con is None:
            self._check_engine_sections()
        meta = dict(meta or {})
        notes = []
        if set(self.chosen_sections) - set(wanted):
            notes.append("no PERMANOVA or dispersion test: they read the rows, which only DuckDB does "
                         "(run the report on DuckDB for their p-values)")
        summary = {value: {"model": value} for value, _ in parts}
        sections = []

        decomposition_rows = []
        for value, sums in parts:
            row = decomposition.anova_row(sums, value)
            decomposition_rows.append({"model": value, **row})
            summary[value].update({k: row[k] for k in ("n", "groups", "r2", "f", "v", "w_bar")})
        if "decomposition" in wanted:
            sections.append(_section("decomposition", "Sum-of-squares decomposition", cautions.DECOMPOSITION,
                                     ("model",) + decomposition.ANOVA_COLUMNS, decomposition_rows))
        if "groups" in wanted:
            rows = [{"model": value, **row} for value, sums in parts for row in decomposition.group_rows(sums)]
            sections.append(_section("groups", "Per-group spread W̃_g", cautions.GROUPS,
                                     ("model",) + decomposition.GROUP_COLUMNS, rows))
        ordered = [(value, canonical(sums)) for value, sums in parts]
        for value, sums in ordered:  # the adjusted R², about 0 when the groups have no structure
            summary[value]["r2_adj"] = float(resampling.statistic("r2_adj", resampling.full_totals(sums))[0])
        # the jackknife, the intervals and the comparison leave one group out: too few groups, no interval
        resampled = [(value, sums) for value, sums in ordered if len(sums.counts) >= resampling.MIN_GROUPS]
        for value, sums in ordered:
            if len(sums.counts) < resampling.MIN_GROUPS:
                asked = [s for s in ("jackknife", "bootstrap", "compare") if s in self.sections]
                if asked:
                    raise DesignError(f"the {asked[0]} section needs at least {resampling.MIN_GROUPS} groups; "
                                      f"{_whose(value)} {len(sums.counts)}")
                summary[value]["calibrated"] = False
                notes.append(f"no jackknife, interval or comparison for {_whose(value, verb=False)}: it has "
                             f"{len(sums.counts)} groups, and they need at least {resampling.MIN_GROUPS}")
        if "jackknife" in wanted:
            rows = []
            for value, sums in resampled:
                for stat in JACKKNIFE_STATS:
                    result = resampling.jackknife(sums, stat)
                    rows.append({"model": value, "stat": stat, "estimate": result.estimate, "se": result.se,
                                 "groups": len(sums.counts)})
                    if stat == "r2":
                        summary[value]["r2_se"] = result.se
            sections.append(_section("jackknife", "Cluster jackknife (leave one group out)", cautions.JACKKNIFE,
                                     ("model", "stat", "estimate", "se", "groups"), rows))
        few_groups = []  # noted after the comparison's own note
        if "bootstrap" in wanted:
            rows = []
            for value, sums in resampled:
                result = resampling.bootstrap(sums, "r2", replicates=self.replicates, seed=self.seed, level=self.level)
                rows.append({"model": value, **bootstrap_row("r2", result, self.level, self.replicates,
                                                             len(sums.counts))})
                summary[value].update(r2_ci_low=result.ci_low, r2_ci_high=result.ci_high, r2_bc=result.estimate_bc,
                                      calibrated=result.calibrated)
                if not result.calibrated:
                    few_groups.append(f"{_whose(value)} {len(sums.counts)} groups: {cautions.FEW_GROUPS}")
            sections.append(_section("bootstrap", "Cluster bootstrap of R²", cautions.BOOTSTRAP,
                                     ("model",) + BOOTSTRAP_COLUMNS, rows))
        if "compare" in wanted and len(resampled) >= 2:
            rows, why_not = self._compare(resampled)
            if why_not and "compare" in self.sections:
                raise DesignError(why_not)
            if why_not:
                notes.append(f"no paired comparison: {why_not}")
            else:
                sections.append(_section("compare", "Paired comparison of R² across models", cautions.COMPARE,
                                         COMPARE_COLUMNS, rows))
        notes.extend(few_groups)
        if "permanova" in wanted:
            sections.append(self._permanova(con, summary, progress))
        if "dispersion" in wanted:
            sections.append(self._dispersion(con, summary, progress))
        if "models" in wanted:
            from embsql.reporting.geometry import models_section

            models, note = models_section(con, self._rows_source(con) if con is not None else self.source,
                                          item=self.item, by=self.by, group=self.group, vector=self.vector,
                                          permutations=self.permutations, seed=self.seed,
                                          asked="models" in self.sections)
            sections += [models] if models is not None else []
            notes += [note] if note else []
        if "retrieval" in wanted:
            layers = self._retrieval(con)
            sections.extend(layers.sections)
            notes += layers.meta.get("notes", [])
        if notes:
            meta["notes"] = notes
        title = self.title or f"embsql report: {self.source}"
        summary_table = ResultTable.from_dicts(
            "summary", SUMMARY_COLUMNS, [{c: row.get(c) for c in SUMMARY_COLUMNS} for row in summary.values()])
        return ReportResult(title, summary_table, tuple(sections), meta)

    def _check_engine_sections(self) -> None:
        """Off DuckDB only the group sums arrive, so the sections that read rows cannot run."""
        row_only = [s for s in self.sections_on(False) if s in ROW_SECTIONS + ("retrieval",)]
        if row_only:
            raise InputError(f"the {row_only[0]} section needs the rows themselves, which only the DuckDB path reads; "
                             "run it on DuckDB, or leave it out (sections=...)")

    def _compare(self, ordered) -> tuple[list[dict], str | None]:
        """Paired jackknife SE and studentized bootstrap interval of R²_a − R²_b for every pair of
        models, paired by group label (the rule embsql.compare uses).  The report sees only the group
        sums, so it cannot tell whether the items are the same: same_items is false when some group's
        size differs, else blank, and shared_items is blank."""
        rows = []
        for (a, sums_a), (b, sums_b) in combinations(ordered, 2):
            problem = same_groups_problem(a, sums_a, b, sums_b)
            if problem:
                return [], problem
            estimate_a, estimate_b, diff = resampling.paired(sums_a, sums_b, "r2", replicates=self.replicates,
                                                             seed=self.seed, level=self.level)
            same_sizes = bool(np.array_equal(sums_a.counts, sums_b.counts))
            rows.append(compare_row(a, b, estimate_a, estimate_b, diff,
                                    items=int(sums_a.counts.sum()) if same_sizes else None,
                                    same_items=None if same_sizes else False, shared_items=None))
        return rows, None

    def _permanova(self, con, summary, progress) -> Section:
        from embsql.api.permutation import permanova

        if not self.permutations:
            raise InputError("the permanova section needs permutations > 0")
        table = permanova(con, self._rows_source(con), self.group, self.vector, by=self.by, permutations=self.permutations,
                          seed=self.seed, progress=progress, check_dispersion=False)
        rows = [{"model": row.get(self.by) if self.by else None, **row} for row in table.to_dicts()]
        for row in rows:
            summary[row["model"]]["p_value"] = row["p_value"]
        return _section("permanova", "PERMANOVA permutation test", cautions.PERMANOVA,
                        ("model", "f", "r2", "p_value", "permutations"), rows)

    def _dispersion(self, con, summary, progress) -> Section:
        from embsql.api.permutation import dispersion

        if not self.permutations:
            raise InputError("the dispersion section needs permutations > 0")
        tests, _ = dispersion(con, self._rows_source(con), self.group, self.vector, by=self.by, permutations=self.permutations,
                              seed=self.seed, progress=progress)
        rows = [{"model": row.get(self.by) if self.by else None, **row} for row in tests.to_dicts()]
        for row in rows:
            summary[row["model"]]["dispersion_p"] = row["p_value"]
        return _section("dispersion", "Dispersion test (spread about the group centroids)", cautions.DISPERSION,
                        ("model", "groups", "f", "p_value", "permutations", "groups_left_out", "items_left_out",
                         "note"), rows)

    def _retrieval(self, con) -> ReportResult:
        from embsql.api import retrieval

        if self.queries is None:
            raise InputError("the retrieval section needs query and document tables (queries=..., docs=...)")
        options = {"model": self.by, "permutations": self.permutations, "seed": self.seed, **self.retrieval}
        return retrieval.retrieval_layers(con, self.queries, self.docs, **options)


AGGREGATE = "stage 1: n_g and coordinate sums of the unit vectors per (model, group)"


def _script(queries: list[tuple[str, exp.Expression]], dialect: str) -> str:
    return ";\n\n".join(f"-- {purpose}\n{write(tree, dialect)}" for purpose, tree in queries) + ";\n"


def _whose(value, verb: bool = True) -> str:
    """"model 'x' has" (or "the data have" without a model column), for notes."""
    if value is None:
        return "the data have" if verb else "the data"
    return f"model {value!r} has" if verb else f"model {value!r}"


def _section(name, title, caution, columns, rows) -> Section:
    return Section(name, title, ResultTable.from_dicts(name, columns, rows), caution)


def write(tree: exp.Expression, dialect: str) -> str:
    """``tree`` as ``dialect`` SQL; anything the dialect cannot express is an error, not silent SQL."""
    functions = {node.name for node in tree.find_all(exp.Anonymous)}
    if functions and dialect != "duckdb":
        raise InputError(f"function {sorted(functions)[0]}() has no equivalent in {dialect}; "
                         "this query can only run on DuckDB")
    try:
        return tree.sql(dialect=dialect, pretty=True, unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as error:
        raise InputError(f"this query cannot be written for {dialect}: {error}") from None


def _file_connection(source) -> duckdb.DuckDBPyConnection:
    if is_frame(source) or (isinstance(source, str) and ":" in source and not is_file(source)):
        return duckdb.connect()      # registered, or FILE.duckdb:TABLE attached, by Report.on
    if not is_file(source):
        raise InputError(f"to write the SQL for table {source!r}, pass the connection that has it (con=...) or "
                         "the vector lengths (dims=...)")
    return duckdb.connect()


def _versions() -> dict:
    from embsql import __version__

    return {"embsql_version": __version__, "duckdb_version": duckdb.__version__}


def report(source: str, *, vector: str, group: str, by: str | None = None, **settings) -> Report:
    """Describe a report on ``source`` (a table, view or Parquet/CSV file).

    Settings: sections (decomposition, groups, jackknife, bootstrap, compare, permanova,
    dispersion, retrieval), permutations, seed, replicates, level, queries and docs (the
    retrieval tables) with retrieval={column options}, title, and table (the source's name on
    another engine).  Nothing runs until .sql() or .run()."""
    return Report(source=source, vector=vector, group=group, by=by, **settings)


def run_on(connection, report: Report, *, progress: bool | None = None) -> ReportResult:
    """Run ``report`` with stage 1 on ``connection`` (DuckDB, a SparkSession or a psycopg
    connection) and stage 2 here.  Only the O(G * d) group sums cross from the engine."""
    if isinstance(connection, duckdb.DuckDBPyConnection):
        return report.run(connection, progress=progress)
    from embsql.engines.connections import dialect_of, fetch_arrow

    dialect = dialect_of(connection)
    return report.run_stage1(lambda sql: fetch_arrow(connection, sql), dialect, progress=progress)
