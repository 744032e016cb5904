"""The report builder: describe a report once, then print its SQL (any dialect) or run it.

A report is stage 1 (embsql.io.portable_sums: cheap probes of the vector lengths and the group-sums aggregate,
both sqlglot ASTs, so the same query is written for DuckDB, Spark, Postgres, Trino, BigQuery or
Snowflake; on DuckDB itself the rows are streamed through embsql.anova's one-pass accumulator
instead, embsql.io.duckdb_sums, which is several times faster) followed by stage 2 in Python on
the O(G * d) sums, the same code whatever engine ran stage 1: the decomposition
(embsql.core.decomposition), the cluster jackknife and bootstrap and the paired model comparison
(embsql.core.resampling).  The permutation and dispersion tests need the rows
themselves, so those two sections run on DuckDB only (embsql.core.row_tests, on rows read once).
The sections are data (embsql.reporting.sections.REGISTRY): one builder and one caution each.

>>> import embsql
>>> r = embsql.report("emb.parquet", vector="embedding", group="topic", model="model")  # doctest: +SKIP
>>> print(r.sql(dialect="spark"))                                                     # doctest: +SKIP
>>> result = r.run()                                                                  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import KW_ONLY, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import ErrorLevel, exp
from sqlglot.errors import SqlglotError

from embsql.core import decomposition, resampling
from embsql.core.arguments import (
    MAX_PERMUTATIONS,
    REPORT_STOP_AFTER,
    check_level,
    check_permutations,
    check_replicates,
    check_seed,
    check_stop_after,
)
from embsql.core.model_comparison import canonical
from embsql.core.sums import GroupSums
from embsql.engines import dialects, spark
from embsql.engines.connections import fetch_arrow
from embsql.errors import (
    BadLabelError,
    BadVectorError,
    ColumnNotFoundError,
    DesignError,
    EmbsqlError,
    EngineError,
    InputError,
)
from embsql.io import duckdb_sums, portable_sums
from embsql.io.registration import connect
from embsql.io.retrieval_tables import REPORT_OPTIONS, report_tables
from embsql.io.sources import describe, is_file, is_frame, local_source, resolve, shown_name, source_expression
from embsql.io.sql import run_sql
from embsql.io.table_stream import Skipped, skip_note
from embsql.progress import run_progress
from embsql.reporting import rank_sets
from embsql.reporting.evaluation import evaluation_sections
from embsql.reporting.labels import CLASSIFICATION_SETTINGS, SIMILARITY_SETTINGS, classification_sections, similarity_sections
from embsql.reporting.rank_sets import Blocks
from embsql.reporting.report_result import ReportResult, Section
from embsql.reporting.sections import REGISTRY, Run, progress_plan, retrieval_layers, whose
from embsql.result_table import ResultTable, model_label

Fetch = Callable[[str], pa.Table]   # runs one SQL statement on the engine, returns its rows as Arrow

SECTIONS = tuple(REGISTRY)
ROW_SECTIONS = tuple(name for name, entry in REGISTRY.items() if entry.off_duckdb == "drop")  # the tests: DuckDB only
DEFAULT_SECTIONS = tuple(name for name, entry in REGISTRY.items() if entry.off_duckdb == "run")
# r2_corrected, the bias-corrected R² the interval is built around, stands just before r2_ci_low/r2_ci_high
SUMMARY_COLUMNS = ("model", "n", "groups", "r2", "r2_se", "r2_adj", "r2_corrected", "r2_ci_low", "r2_ci_high",
                   "calibrated", "f", "p_value", "v", "w_bar", "dispersion_p")
# the [report.retrieval] settings: the retrieval layers' column names and options, and the qrels' relevance column
RETRIEVAL_SETTINGS = REPORT_OPTIONS


ROWS_VIEW = "__emb_report_rows"   # the filtered rows (where=), as a temporary view for the sections that read rows


@dataclass(frozen=True)
class Report:
    """What to compute, on which table.  Build with embsql.report(...) or Report.from_file(path);
    the settings are those of :func:`report`, everything after the source by name.

    Parameters
    ----------
    source, vector, group, model, sections, permutations, seed, stop_after, replicates, level
        As in :func:`embsql.report`, which builds a Report.
    queries, docs, retrieval, qrels, title, table, where, item, pairs, similarity, label, classification, bad_rows
        As in :func:`embsql.report`.

    Examples
    --------
    >>> import embsql
    >>> r = embsql.Report("examples/embeddings.parquet", vector="embedding", group="topic", permutations=0)
    >>> r.replace(model="model").model
    'model'
    >>> print(r.sql(dialect="duckdb", dims=384).splitlines()[0])
    -- stage 1: n_g and coordinate sums of the unit vectors per (model, group)
    """

    source: Any                    # a name or file (str), or a DataFrame or Arrow object
    _: KW_ONLY
    vector: str
    group: str
    model: str | None = None
    sections: Sequence[str] = ()
    permutations: int = 999
    seed: int = 42
    stop_after: int | None = REPORT_STOP_AFTER   # Besag and Clifford's sequential stop (None or 0: all permutations)
    replicates: int = 2000
    level: float = 0.95
    queries: Any = None            # the retrieval tables, as the source: names, files or in-memory tables
    docs: Any = None
    retrieval: dict[str, Any] = field(default_factory=dict)
    qrels: Any = None              # relevance judgements: adds the evaluation sections (with queries and docs)
    title: str | None = None
    table: str | None = None
    where: str | None = None
    item: str | None = None        # the item column: with model, it turns on the models section (reporting.geometry)
    pairs: Any = None              # gold similarity judgements of pairs of items: adds the similarity sections
    similarity: dict[str, Any] = field(default_factory=dict)       # the pairs' column names (reporting.labels)
    label: str | None = None       # a class-label column of the source: adds the classification sections
    classification: dict[str, Any] = field(default_factory=dict)   # its options: k
    bad_rows: str = "error"        # "skip": rows with a NULL, zero or non-finite vector are left out and counted

    def __post_init__(self) -> None:
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
            check_stop_after(self.stop_after, MAX_PERMUTATIONS, allow_zero=True)
            check_replicates(self.replicates)
            check_level(self.level)
            Skipped.asked(self.bad_rows)
        except InputError as error:     # the same class and kind, the message prefixed
            raise type(error)(f"report: {error}", kind=error.kind) from None
        if self.model is not None and self.model == self.group:
            raise InputError(f"report: model column {self.model!r} is the group column; pass a different column")
        if self.where is not None:
            self.condition()  # parse now: a bad filter is an error before anything runs
        if (self.queries is None) != (self.docs is None):
            raise InputError("report: the retrieval layers need both queries and docs")
        if not isinstance(self.retrieval, Mapping):
            raise InputError(f"report: retrieval must be a table of settings ({', '.join(RETRIEVAL_SETTINGS)}), "
                             f"not a {type(self.retrieval).__name__}")
        for key in self.retrieval:
            _check_setting(key, RETRIEVAL_SETTINGS, "the report's retrieval settings")
        object.__setattr__(self, "retrieval", dict(self.retrieval))
        for name, allowed in (("similarity", SIMILARITY_SETTINGS), ("classification", CLASSIFICATION_SETTINGS)):
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise InputError(f"report: {name} must be a table of settings ({', '.join(allowed)}), "
                                 f"not a {type(value).__name__}")
            for key in value:
                _check_setting(key, allowed, f"the report's {name} settings")
            object.__setattr__(self, name, dict(value))
        if self.label is not None and (not isinstance(self.label, str) or not self.label):
            raise InputError(f"report: label must be a column name (a non-empty string), not {self.label!r}")

    # -- description ------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Report:
        """A report from a dict (the [report] table of a TOML file); a key that is not a setting is
        an error naming the settings."""
        return cls._from_table(values, "the report's settings")

    @classmethod
    def _from_table(cls, values: Mapping[str, Any], origin: str, hint: str = "") -> Report:
        for key in values:
            _check_setting(key, SETTINGS, origin)
        lacking = [name for name in ("source", "vector", "group") if name not in values]
        if lacking:
            raise InputError(f"{origin} lacks {', '.join(lacking)}: a report needs source, vector and group{hint}")
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path, **changes: Any) -> Report:
        """Read a report description from a TOML file with a [report] table; ``changes`` (None: not
        given) override its settings, and may give those it lacks (the command line's DATA, --vector
        and --group)."""
        values = {**report_table(path), **{k: v for k, v in changes.items() if v is not None}}
        return cls._from_table(values, f"the [report] table of {str(path)!r}",
                               " (there, or as DATA, --vector and --group on the command line)")

    def replace(self, **changes: Any) -> Report:
        """This report with the given settings changed (None leaves a setting as it is)."""
        for key in changes:
            _check_setting(key, SETTINGS, "Report.replace()")
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def chosen_sections(self) -> tuple[str, ...]:
        """The sections asked for, or the defaults (plus the tests when permutations > 0, plus
        retrieval when query and document tables are given)."""
        if self.sections:
            return tuple(self.sections)
        return tuple(name for name, entry in REGISTRY.items() if entry.default(self))

    def sections_on(self, rows: bool) -> tuple[str, ...]:
        """The sections that run: off DuckDB (``rows=False``) the tests, which read the rows, are
        dropped unless they were asked for by name (then _check_engine_sections refuses)."""
        if rows or self.sections:
            return self.chosen_sections
        return tuple(s for s in self.chosen_sections if s not in ROW_SECTIONS)

    @contextmanager
    def on(self, con: duckdb.DuckDBPyConnection) -> Iterator[Report]:
        """This report with its sources as names on ``con``: DataFrames and Arrow objects registered
        (unregistered on exit), FILE.duckdb:TABLE attached; the title and meta keep the user's names."""
        with ExitStack() as stack:
            names = {key: stack.enter_context(local_source(con, getattr(self, key)))
                     for key in ("source", "queries", "docs", "qrels", "pairs")}
            yield dataclasses.replace(self, **names, title=self.title or f"embsql report: {describe(self.source)}")

    # -- SQL ----------------------------------------------------------------------------------
    def _table(self, dialect: str) -> exp.Expression:
        if dialects.engine(dialect).reads_local:  # table names the source on the other engines only
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

    def check_columns(self, con: duckdb.DuckDBPyConnection) -> None:
        """Every named column must exist in the source (checked before any query runs)."""
        source = resolve(con, self.source)
        source.vector_dimension(self.vector)
        source.require(self.group, "group")
        if self.model:
            source.require(self.model, "model")
        if self.label:
            source.require(self.label, "label")
        for column in (self.condition() or exp.null()).find_all(exp.Column):
            source.require(column.name, "where")

    def rows_source(self, con: duckdb.DuckDBPyConnection) -> str:
        """A name for the (filtered) rows, for the sections that read the rows (embsql.reporting.sections)."""
        if self.where is None:
            return self.source
        view = ROWS_VIEW
        con.execute(f"CREATE OR REPLACE TEMP VIEW {exp.to_identifier(view, quoted=True).sql('duckdb')} AS "
                    f"{exp.select('*').from_(self._relation('duckdb')).sql('duckdb')}")
        return view

    def _rows_named(self, error: EmbsqlError) -> EmbsqlError:
        """``error`` with the view of the filtered rows (rows_source) named as the user wrote them:
        the source and the where condition, as the stage-1 errors name them."""
        shown = f"{describe(self.source)} where {self.where}"
        text = (str(error).replace(repr(ROWS_VIEW), repr(shown))
                .replace(f'"{ROWS_VIEW}"', '"' + shown.replace('"', '""') + '"').replace(ROWS_VIEW, shown))
        return type(error)(text, kind=error.kind)

    def probes(self, fetch: Fetch, dialect: str, pgvector: bool = False
               ) -> tuple[portable_sums.Dimensions, list[tuple[str, exp.Expression]]]:
        """d of each model from cheap probes run through ``fetch`` (the distinct by values, then one
        vector of each); returns the dimensions and the probe queries that ran."""
        table = self._relation(dialect)
        values = fetch(write(portable_sums.models_query(table, self.model), dialect)).column(portable_sums.B).to_pylist() \
            if self.model else [None]
        ran = self.probe_queries(dialect, values, pgvector)
        lengths = {value: fetch(write(query, dialect)) for value, (_, query) in zip(values, ran[-len(values):])}
        return portable_sums.dimensions_from_lengths(lengths, self.vector, self.model), ran

    def probe_queries(self, dialect: str, values: list[Any], pgvector: bool = False) -> list[tuple[str, exp.Expression]]:
        """The probe queries on this dialect's table: the models, then one vector length per model."""
        table = self._relation(dialect)
        queries: list[tuple[str, exp.Expression]] = []
        if self.model:
            queries.append(("probe: the models", portable_sums.models_query(table, self.model)))
        return queries + [(f"probe: the vector length{'' if value is None and not self.model else f' of {value!r}'}",
                           portable_sums.length_query(table, self.vector, self.model, value, pgvector)) for value in values]

    def aggregate_query(self, dialect: str, dims: portable_sums.Dimensions) -> exp.Select:
        """Stage 1: n_g, checks and the coordinate sums of the unit vectors per (model, group)."""
        return portable_sums.group_sums_query(self._relation(dialect), self.group, self.vector, dims, self.model,
                                       fence=dialects.engine(dialect).fence)

    def sql(self, dialect: str = "duckdb", con: duckdb.DuckDBPyConnection | None = None,
            dims: dict[Any, int] | int | None = None) -> str:
        """The SQL this report runs for stage 1, written for ``dialect``.

        The vector lengths come from ``dims`` ({model: d} or one d; then only the aggregate is
        printed), or else from running the probes on ``con`` (or on an in-memory DuckDB for a file
        source); names are checked the same way.  Every printed statement reads the dialect's
        table (``table=``), never a local file, so the output runs on that engine as it is.  On
        Spark, run_on sums the rows in Python workers instead of running the printed aggregate:
        the output starts with comment lines saying so, with the rows query it runs there."""
        dialects.engine(dialect)      # a dialect embsql writes, or an InputError listing them
        if dims is not None:
            found = portable_sums.Dimensions(dims if isinstance(dims, dict) else {None: int(dims)})
            return self._on_engine(dialect) + _script([(AGGREGATE, self.aggregate_query(dialect, found))], dialect)
        con = con or _file_connection(self.source)
        with self.on(con) as local:
            local.check_columns(con)
            found, _ = local.probes(lambda sql: run_sql(con, sql), "duckdb")
            self._table(dialect)      # another engine needs the name of its table before anything is printed
            shown = local if dialects.engine(dialect).reads_local else self   # DuckDB reads the attached file; others their table
            printed = shown.probe_queries(dialect, list(found.by_value)) + \
                [(AGGREGATE, shown.aggregate_query(dialect, found))]
            return self._on_engine(dialect) + _script(printed, dialect)

    def _on_engine(self, dialect: str) -> str:
        """Comment lines before the printed SQL where run_on runs stage 1 another way (Spark)."""
        return dialects.engine(dialect).note(self._relation(dialect), self.group, self.vector, self.model)

    # -- running ------------------------------------------------------------------------------
    def run(self, con: duckdb.DuckDBPyConnection | None = None, *, progress: bool | None = None) -> ReportResult:
        """Run on DuckDB (``con``, or an in-memory connection for a file source)."""
        con = con or connect()
        with self.on(con) as local:
            local.check_columns(con)
            try:
                result = local.run_stage1(lambda sql: run_sql(con, sql), "duckdb", con=con, progress=progress)
            except EmbsqlError as error:
                if ROWS_VIEW not in str(error):
                    raise
                raise self._rows_named(error) from None
        return dataclasses.replace(result, meta={**result.meta, "source": describe(self.source)})

    def run_stage1(self, fetch: Fetch, dialect: str, *, con: duckdb.DuckDBPyConnection | None = None,
                   progress: bool | None = None,
                   summarize: Callable[[exp.Expression, portable_sums.Dimensions], pa.Table] | None = None
                   ) -> ReportResult:
        """Run stage 1 through ``fetch(sql) -> Arrow`` on any engine, then stage 2 here.  On DuckDB
        (``con`` given) stage 1 streams the rows instead (embsql.io.duckdb_sums), without probes.

        ``summarize(relation, dims) -> Arrow`` (Spark, from run_on: embsql.engines.spark.group_sums)
        returns the group sums in the wide aggregate's columns, computed another way."""
        form, name = portable_sums.VectorForm(), self.table or self.source
        if con is None:  # another engine: check the sections and the names there before the probes run
            self._check_engine_sections()
            try:
                columns = fetch(write(exp.select("*").from_(self._table(dialect)).limit(0), dialect)).column_names
            except EngineError as error:   # no such table, no access: say which table
                raise EngineError(f"{dialect}: cannot read table {name!r}: {str(error).split(': ', 1)[-1]}") from None
            for column, role in ((self.vector, "vector"), (self.group, "group"), (self.model, "model")):
                if column is not None and column not in columns:
                    raise ColumnNotFoundError(f"{role} column {column!r} not found in {name!r} "
                                              f"on {dialect}; its columns are: {', '.join(columns)}")
            form = portable_sums.vector_form(fetch, self._relation(dialect), self.vector, dialects.engine(dialect), name)
        if con is not None:   # DuckDB: the rows streamed through embsql.anova's one-pass accumulator
            skipped = Skipped.asked(self.bad_rows)
            streamed = duckdb_sums.streamed_sums(con, self.source, self._relation(dialect), self.group, self.vector,
                                                 self.model, self.where, skip=skipped)
            meta = self._meta(dialect, form, streamed.dims, streamed.sql, streamed.nbytes, rows=True)
            if skipped is not None:    # the rows left out, per model and reason: in the JSON, and one note
                counts = skipped.table(self.model).to_dicts()
                meta["skipped"] = {model_label(row.get(self.model) if self.model else None):
                                   {k: v for k, v in row.items() if k.startswith("skipped_")} for row in counts}
                note = skip_note(skipped.table(self.model), self.model)
                return self.finish(streamed.parts, con=con, progress=progress, meta=meta, notes=[note] if note else [])
            return self.finish(streamed.parts, con=con, progress=progress, meta=meta)
        dims, _ = self.probes(fetch, dialect, form.pgvector)
        if summarize is not None:
            sql = spark.rows_query(self._relation(dialect), self.group, self.vector, self.model)
            returned = result = summarize(self._relation(dialect), dims)
        else:       # the engine's aggregate (pgvector: its own mean unit vector per group), read back its way
            query = dialects.engine(dialect).stage1_sql(self._relation(dialect), self.group, self.vector, dims, self.model, form)
            sql = query if isinstance(query, str) else write(query, dialect)
            returned = fetch(sql)
            result = dialects.engine(dialect).stage1_result(returned, dims, form)
        try:
            parts = portable_sums.group_sums_from_result(result, self.group, self.vector, dims, self.model)
        except (BadLabelError, BadVectorError) as error:
            raise type(error)(f"{dialect}: {error}") from None
        return self.finish(parts, meta=self._meta(dialect, form, dims, sql, returned.nbytes, rows=False),
                           progress=progress)

    def _meta(self, dialect: str, form: portable_sums.VectorForm, dims: portable_sums.Dimensions, sql: str,
              nbytes: int, rows: bool) -> dict:
        """What a report records about its stage 1: the engine, the settings, d, the SQL that ran
        and the bytes of group sums it handed to stage 2."""
        engine = {"engine": dialect, "vector_type": form.type_name, "pgvector_version": form.pgvector_version}
        return {"source": self.source, "vector": self.vector, "group": self.group, "model": self.model,
                "dialect": dialect, **{k: v for k, v in engine.items() if v is not None},
                "sections": list(self.sections_on(rows)),
                "permutations": self.permutations, "stop_after": self.stop_after,
                "seed": self.seed, "replicates": self.replicates, "level": self.level,
                "dimensions": {model_label(k): v for k, v in dims.by_value.items()},
                "stage1_bytes": int(nbytes), "sql": sql, **_versions()}

    def finish(self, parts: list[tuple[object, GroupSums]], *, con: duckdb.DuckDBPyConnection | None = None,
               meta: Mapping[str, Any] | None = None, progress: bool | None = None,
               notes: Sequence[str] = ()) -> ReportResult:
        """Stage 2: every section from the per-model group sums (and, for the tests, the rows);
        ``notes`` come first among the report's notes."""
        wanted = self.sections_on(con is not None)
        if con is None:
            self._check_engine_sections()
        meta = dict(meta or {})
        notes = list(notes)
        if set(self.chosen_sections) - set(wanted):
            notes.append("no PERMANOVA or dispersion test: they read the rows, which only DuckDB does "
                         "(run the report on DuckDB for their p-values)")
        summary: dict[Any, dict[str, Any]] = {value: {"model": value} for value, _ in parts}
        for value, sums in parts:
            row = decomposition.anova_row(sums, value)
            summary[value].update({k: row[k] for k in ("n", "groups", "r2", "f", "v", "w_bar")})
        ordered = [(value, canonical(sums)) for value, sums in parts]
        for value, sums in ordered:  # the adjusted R², about 0 when the groups have no structure
            summary[value]["r2_adj"] = float(resampling.statistic("r2_adj", resampling.full_totals(sums))[0])
        # the jackknife, the intervals and the comparison leave one group out: too few groups, no interval
        for value, sums in ordered:
            if len(sums.counts) < resampling.MIN_GROUPS:
                asked = [s for s in ("jackknife", "bootstrap", "compare") if s in self.sections]
                if asked:
                    raise DesignError(f"the {asked[0]} section needs at least {resampling.MIN_GROUPS} groups; "
                                      f"{whose(value)} {len(sums.counts)}")
                summary[value]["calibrated"] = False
                notes.append(f"no jackknife, interval or comparison for {whose(value, verb=False)}: it has "
                             f"{len(sums.counts)} groups, and they need at least {resampling.MIN_GROUPS}")
        run = Run(self, parts, [(value, sums) for value, sums in ordered if len(sums.counts) >= resampling.MIN_GROUPS],
                  summary, con=con, progress=progress, notes=notes, wanted=tuple(wanted))
        ranks = run.ranks if "ranking" in wanted else None
        sections: list[Section] = []
        # one progress bar for every section, each with its share of the estimated work (progress_plan)
        with run_progress("report", progress_plan(self, parts, wanted), progress) as run.bar:
            for on_sums in (True, False):   # the sections on the group sums, then those that read rows
                for name, entry in REGISTRY.items():
                    if name in wanted and (entry.off_duckdb == "run") == on_sums:
                        with run.bar.part(name):   # the tests' parts are per model, inside their builders
                            sections += entry.build(entry, run)
                if on_sums:
                    notes.extend(run.interval_notes)
        if self.qrels is not None and con is not None:   # retrieval evaluation (embsql.reporting.evaluation)
            if self.queries is None or self.docs is None:
                raise InputError("report: the evaluation with qrels needs the queries and docs tables")
            tables = report_tables(self.queries, self.docs, self.qrels, self.retrieval)
            assert tables.qrels is not None
            sections.extend(evaluation_sections(con, queries=tables.queries, docs=tables.docs, qrels=tables.qrels,
                                                model=self.model, replicates=self.replicates, seed=self.seed,
                                                level=self.level, permutations=self.permutations, notes=notes,
                                                ranks=ranks, skip=Skipped.asked(self.bad_rows)))
        if con is not None:   # human judgements and labels (embsql.reporting.labels)
            sections += self._label_sections(con, notes, meta, ranks)
        if ranks is not None:   # every family's block, right after the verdict (embsql.reporting.rank_sets)
            sections = rank_sets.first(sections, ranks)
        if notes:
            meta["notes"] = notes
        title = self.title or f"embsql report: {self.source}"
        summary_table = ResultTable.from_dicts(
            "summary", SUMMARY_COLUMNS, [{c: row.get(c) for c in SUMMARY_COLUMNS} for row in summary.values()])
        return ReportResult(title, summary_table, tuple(sections), meta)

    def _label_sections(self, con: duckdb.DuckDBPyConnection, notes: list[str], meta: dict[str, Any],
                        ranks: Blocks | None = None) -> list[Section]:
        """The similarity sections (with ``pairs``) and the classification sections (with ``label``);
        their ranking blocks go to ``ranks``."""
        sections: list[Section] = []
        if self.pairs is not None:
            meta["pairs"] = shown_name(self.pairs)
            sections += similarity_sections(con, self.pairs, self.rows_source(con), model=self.model, item=self.item,
                                            vector=self.vector, settings=self.similarity, level=self.level,
                                            ranks=ranks, replicates=self.replicates, seed=self.seed,
                                            bad_rows=self.bad_rows, notes=notes)
        if self.label is not None:
            meta["label"] = self.label
            found, said = classification_sections(con, self.rows_source(con), label=self.label, model=self.model,
                                                  item=self.item, group=self.group, vector=self.vector,
                                                  settings=self.classification, level=self.level,
                                                  permutations=self.permutations, seed=self.seed,
                                                  bad_rows=self.bad_rows, ranks=ranks, replicates=self.replicates)
            sections += found
            notes += said
        return sections

    def _check_engine_sections(self) -> None:
        """Off DuckDB only the group sums arrive, so the sections that read rows cannot run (nor can
        bad rows be skipped: the engine's aggregate refuses them)."""
        if self.bad_rows == "skip":
            raise InputError("skipping bad rows (bad_rows='skip', --skip-bad-rows) needs the rows themselves, which "
                             "only the DuckDB path reads; run the report on DuckDB, or filter those rows out with where")
        for name, value in (("similarity", self.pairs), ("classification", self.label)):
            if value is not None:
                raise InputError(f"the {name} section needs the rows themselves, which only the DuckDB path reads; "
                                 f"run it on DuckDB, or leave out {'pairs' if name == 'similarity' else 'label'}")
        row_only = [s for s in self.sections_on(False) if REGISTRY[s].off_duckdb != "run"]
        if row_only:
            raise InputError(f"the {row_only[0]} section needs the rows themselves, which only the DuckDB path reads; "
                             "run it on DuckDB, or leave it out (sections=...)")


def retrieval_report(con: duckdb.DuckDBPyConnection, *, queries: Any, docs: Any, qrels: Any = None,
                     model: str | None = None, retrieval: Mapping[str, Any] | None = None, permutations: int = 999,
                     seed: int = 42, replicates: int = 2000, level: float = 0.95,
                     title: str | None = None, bad_rows: str = "error") -> ReportResult:
    """A report on the retrieval tables alone (``embsql report --queries Q --docs D [--qrels R]``, no
    embedding table, vector or group column): the retrieval layers when the queries carry their
    relevant document (the ``positive`` column), the evaluation sections with ``qrels``.  A part that
    cannot run is left out with a note that says why."""
    try:
        check_permutations(permutations, allow_zero=True)
        check_seed(seed)
        check_replicates(replicates)
        check_level(level)
    except InputError as error:
        raise InputError(f"report: {error}") from None
    settings = dict(retrieval or {})
    for key in settings:
        _check_setting(key, RETRIEVAL_SETTINGS, "the report's retrieval settings")
    tables = report_tables(queries, docs, qrels, settings)
    sections: list[Section] = []
    notes: list[str] = []
    positive = tables.queries.positive
    if positive in resolve(con, str(tables.queries.source)).columns:
        found, said = retrieval_layers(con, queries, docs, settings, model=model, permutations=permutations, seed=seed,
                                       bad_rows=bad_rows)
        sections += found
        notes += said
    else:
        notes.append(f"no retrieval layers (alignment, rank, pairing): queries {shown_name(queries)!r} has no column "
                     f"{positive!r}, the relevant document of each query"
                     + ("; the evaluation below reads the qrels instead" if qrels is not None else ""))
    ranks = Blocks()
    if qrels is not None:
        assert tables.qrels is not None
        sections += evaluation_sections(con, queries=tables.queries, docs=tables.docs, qrels=tables.qrels, model=model,
                                        replicates=replicates, seed=seed, level=level, permutations=permutations,
                                        notes=notes, ranks=ranks, skip=Skipped.asked(bad_rows))
    elif not sections:
        raise InputError(f"report: nothing to report on the retrieval tables alone: queries {shown_name(queries)!r} "
                         f"has no column {positive!r} and no qrels were given (--qrels)")
    meta: dict[str, Any] = {"queries": shown_name(queries), "docs": shown_name(docs), "model": model,
                            **({"qrels": shown_name(qrels)} if qrels is not None else {}),
                            "permutations": permutations, "seed": seed, "replicates": replicates, "level": level,
                            **_versions()}
    if notes:
        meta["notes"] = notes
    summary = ResultTable.from_dicts("summary", SUMMARY_COLUMNS, [])
    return ReportResult(title or f"embsql retrieval report: {shown_name(queries)}", summary,
                        tuple(rank_sets.first(sections, ranks)), meta)


def report_table(path: str | Path) -> dict[str, Any]:
    """The [report] table of a TOML report file (its settings, unchecked)."""
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except FileNotFoundError:
        raise InputError(f"report file {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"report file {str(path)!r} is not valid TOML: {error}") from None
    if "report" not in document:
        raise InputError(f"report file {str(path)!r} has no [report] table")
    return dict(document["report"])


# the names of a report's settings, in order: the fields of Report, the keys of a [report] table
SETTINGS = tuple(f.name for f in dataclasses.fields(Report) if f.name != "_")


def _check_setting(key: str, allowed: tuple[str, ...], origin: str) -> None:
    """Refuse a setting that is not one, naming the settings there are."""
    if key in allowed:
        return
    raise InputError(f"report: unknown setting {key!r} in {origin}; the settings are: {', '.join(allowed)}")


AGGREGATE = "stage 1: n_g and coordinate sums of the unit vectors per (model, group)"


def _script(queries: list[tuple[str, exp.Expression]], dialect: str) -> str:
    return ";\n\n".join(f"-- {purpose}\n{write(tree, dialect)}" for purpose, tree in queries) + ";\n"


def write(tree: exp.Expression, dialect: str) -> str:
    """``tree`` as ``dialect`` SQL; anything the dialect cannot express is an error, not silent SQL."""
    functions = {node.name for node in tree.find_all(exp.Anonymous)}
    if functions and not dialects.engine(dialect).duckdb_functions:
        raise InputError(f"function {sorted(functions)[0]}() has no equivalent in {dialect}; "
                         "this query can only run on DuckDB")
    try:
        return tree.sql(dialect=dialect, pretty=True, unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as error:
        raise InputError(f"this query cannot be written for {dialect}: {error}") from None


def _file_connection(source: Any) -> duckdb.DuckDBPyConnection:
    if is_frame(source) or (isinstance(source, str) and ":" in source and not is_file(source)):
        return duckdb.connect()      # registered, or FILE.duckdb:TABLE attached, by Report.on
    if not is_file(source):
        raise InputError(f"to write the SQL for table {source!r}, pass the connection that has it (con=...) or "
                         "the vector lengths (dims=...)")
    return duckdb.connect()


def _versions() -> dict[str, str]:
    return {"embsql_version": version("embsql"), "duckdb_version": duckdb.__version__}


def report(source: Any, *, vector: str, group: str, model: str | None = None, sections: Sequence[str] = (),
           permutations: int = 999, seed: int = 42, stop_after: int | None = REPORT_STOP_AFTER, replicates: int = 2000,
           level: float = 0.95, queries: Any = None, docs: Any = None, retrieval: dict[str, Any] | None = None, qrels: Any = None,
           title: str | None = None, table: str | None = None, where: str | None = None, item: str | None = None,
           pairs: Any = None, similarity: dict[str, Any] | None = None, label: str | None = None,
           classification: dict[str, Any] | None = None, bad_rows: str = "error") -> Report:
    """Describe a report on ``source``; nothing runs until ``.sql()`` or ``.run()``.

    Parameters
    ----------
    source : str or DataFrame
        A table or view name, a Parquet/CSV/JSON file or directory, FILE.duckdb:TABLE, a Lance or
        saved Hugging Face dataset, or a pandas/polars/Arrow object.
    vector : str
        The vector column.
    group : str
        The group column.
    model : str, optional
        The model column: one set of figures per value.  The report's tables name it ``model``
        whatever the input calls it (see embsql.ReportResult); ``meta["model"]`` keeps its name.
    sections : tuple of str
        Which sections to run: decomposition, groups, jackknife, bootstrap, compare, permanova,
        dispersion, models, retrieval, ranking.  Default: the first five, the two tests when
        ``permutations > 0``, models with ``item`` and ``model``, retrieval with ``queries``, and
        ranking: the models' simultaneous rank confidence sets (embsql.rank_models), one block per
        evaluation family the report ran (R²; nDCG@10 with ``qrels``; Spearman with ``pairs``;
        k-NN accuracy with ``label``), in a section of columns metric, model and those of
        rank_models, which comes first (right after the verdict) when there are two or more models.
    permutations : int, default 999
        The permutation tests' permutations (0 skips them).
    seed : int, default 42
        The random seed (0 or more).
    stop_after : int, default 10
        Stop each permutation test once this many permuted statistics reach the observed one
        (Besag and Clifford's sequential rule; see :func:`embsql.permanova`): a large p-value then
        costs about stop_after / p permutations instead of all of them, and a p-value under
        stop_after / permutations is the full test's.  In simulation {{figure sequential.level}}
        (validation/calibration.json).
        None or 0 runs every permutation.
    replicates : int
        Bootstrap replicates.
    level : float
        The confidence level of the intervals.
    queries : str or DataFrame, optional
        The retrieval queries table: with docs, it adds the retrieval layers
        (embsql.retrieval_layers).
    docs : str or DataFrame, optional
        The retrieval documents table (with queries).
    retrieval : dict, optional
        Their column names and options: qid, group, strength, positive, vector, doc_id,
        doc_group, doc_vector, relevance, scope, alpha (the [report.retrieval] table of a file).
    qrels : str or DataFrame, optional
        Relevance judgements: with queries and docs, they add the retrieval evaluation.
    title : str, optional
        The report's title.
    table : str, optional
        The source's table name on another engine (for ``sql(dialect=...)`` and ``run_on``).
    where : str, optional
        A SQL condition on the source's rows, e.g. ``"split = 'test'"``.
    item : str, optional
        The item column: with ``model``, it adds the models compared section.  The similarity and
        classification sections name items by it (or by a column ``item`` when it is not given).
    pairs : str or DataFrame, optional
        Gold similarity judgements of pairs of the source's items (item_a, item_b, score): they add
        the similarity sections (as embsql.similarity_eval and embsql.compare_similarity, with a
        scatter of cosine against score).  Runs on DuckDB.
    similarity : dict, optional
        The pairs table's column names and option: a, b, score, missing (the [report.similarity]
        table of a file).
    label : str, optional
        A class-label column of the source: adds the classification sections (leave-one-out k-NN
        and nearest-centroid accuracy and macro-F1, as embsql.knn_classify and
        embsql.centroid_classify, and the paired comparison of embsql.compare_classification,
        clustered by ``group`` unless ``group`` is the label).  Runs on DuckDB.
    classification : dict, optional
        Its option: k, the neighbours of k-NN (default 10; the [report.classification] table).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite vector of the source does: ``"error"`` (the default) refuses
        it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out of every
        section that reads the source and counts the rows per model and reason: one note, and
        ``meta["skipped"]`` (``--skip-bad-rows`` on the command line).  DuckDB only.

    Returns
    -------
    Report
        The description; ``.run()`` gives a ReportResult (summary columns: model, n, groups, r2,
        r2_se, r2_adj, r2_corrected, r2_ci_low, r2_ci_high, calibrated, f, p_value, v, w_bar, dispersion_p;
        r2 is the sample R²; r2_corrected is the jackknife bias-corrected R², computed on the logit scale,
        which the interval r2_ci_low to r2_ci_high is built around).

    Raises
    ------
    InputError
        For a bad setting (an unknown section, a negative seed, a bad ``where`` ...).

    Examples
    --------
    >>> import embsql
    >>> r = embsql.report("examples/embeddings.parquet", vector="embedding", group="topic", model="model",
    ...                   permutations=0)
    >>> r.chosen_sections
    ('decomposition', 'groups', 'jackknife', 'bootstrap', 'compare', 'ranking')
    """
    return Report(source, vector=vector, group=group, model=model, sections=tuple(sections), permutations=permutations,
                  seed=seed, stop_after=stop_after, replicates=replicates, level=level, queries=queries, docs=docs,
                  retrieval=dict(retrieval or {}), qrels=qrels, title=title, table=table, where=where, item=item,
                  pairs=pairs, similarity=dict(similarity or {}), label=label, classification=dict(classification or {}),
                  bad_rows=bad_rows)


def run_on(connection: Any, report: Report, *, progress: bool | None = None) -> ReportResult:
    """Run ``report`` with stage 1 on ``connection`` (DuckDB, a SparkSession or a psycopg
    connection) and stage 2 here.  Only the O(G * d) group sums cross from the engine.

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection, pyspark.sql.SparkSession or psycopg.Connection
        Where stage 1 (the per-group sums) runs, on the report's ``table`` (or its source).
    report : Report
        The report to run (:func:`embsql.report`).
    progress : bool, optional
        Show a progress bar (default: when there is a terminal or a notebook).

    Returns
    -------
    ReportResult
        The report; ``meta`` says which engine ran stage 1 and how many bytes came back.

    Raises
    ------
    EngineError
        The engine rejected a query (the message names the dialect and gives the engine's first line).
    InputError
        As :meth:`Report.run`: a missing column, a bad vector, a design that leaves a figure undefined.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> result = embsql.run_on(con, embsql.report("examples/embeddings.parquet", vector="embedding",
    ...                                           group="topic", model="model", permutations=0))
    >>> round(result.summary.to_dicts()[0]["r2"], 2)
    0.4
    """
    if isinstance(connection, duckdb.DuckDBPyConnection):
        return report.run(connection, progress=progress)
    on = dialects.engine_of(connection)
    return report.run_stage1(lambda sql: fetch_arrow(connection, sql), on.name, progress=progress,
                             summarize=on.summarizer(connection, report.group, report.vector, report.model))
