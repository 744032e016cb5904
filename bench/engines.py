"""Benchmark: the same report with stage 1 on DuckDB, local Spark, PostgreSQL (double precision[])
and PostgreSQL with pgvector (vector), over the same table.

    python bench/engines.py                          # 1,000,000 x 384, 2 models, 5,000 groups
    python bench/engines.py --n 100000               # a quick run
    python bench/engines.py --engines duckdb,postgres,pgvector

A report (sections decomposition, jackknife, bootstrap, compare: the ones that need only the group
sums) runs through ``embsql.run_on(connection, report)``: stage 1 (a length probe and one wide
aggregate; on Spark, Python workers; on DuckDB, which runs in this process, the rows streamed
through embsql.anova's one-pass accumulator) on the engine, stage 2 here.  "duckdb-sql" is DuckDB
with the wide aggregate the other engines run, for the ratio of the two routes.  Printed per engine:
the load time (not part of the report time), the report time (best of --repeats; one run when the
first takes longer than --slow seconds), its ratio to DuckDB, the bytes stage 1 returned (O(G d): compared with n d 4, the rows
themselves), the RSS of this process, and the largest relative difference of every figure from
DuckDB's (it must be <= 1e-9: the engines only add in another order; for pgvector, which stores and
multiplies in float32, the decomposition within its derived float32 bound, 6 * 2^-23 / min(R² V, W̄),
see tests/engines/test_pgvector.py).  The peak RSS of the engine's own processes (the PostgreSQL server
and its backends, Spark's JVM) is sampled while the report runs.  Stage 2 alone is timed once
on DuckDB's sums, so each engine's stage-1 share is its time minus that.

PostgreSQL (Debian's), Spark (tests/engine_fixtures.py) and PostgreSQL 16 with pgvector 0.6.2 (pgserver,
tests/pgvector_fixtures.py) are started here; every file goes into one
temporary directory (--tmp, default the system's), removed at the end.  Exit status 1 if an
engine disagrees with DuckDB or stage 1 returned more than O(G d) bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pyarrow as pa
from sqlglot import exp

import embsql
from embsql.core.sums import HUGE_SQUARED, TINY_SQUARED
from embsql.engines.connections import fetch_arrow, load_table
from embsql.io import duckdb_sums
from embsql.io.columns import B, G
from embsql.io.portable_sums import BAD, LEN_MAX, LEN_MIN, NULLS, SUM_PREFIX, WITHIN, N
from embsql.io.sources import source_expression
from embsql.io.sql import run_sql

# bench/ (the script's directory) is first on sys.path; the engine fixtures live in tests/
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from anova import RssSampler, peak_rss_mb
from engine_fixtures import postgres_server, spark_session
from pgvector_fixtures import pgvector_server

SECTIONS = ["decomposition", "jackknife", "bootstrap", "compare"]
TOL = 1e-9
CHUNK = 100_000
# the figures the acceptance check names, as (section, column)
NAMED = {"R²": ("decomposition", "r2"), "SS_W": ("decomposition", "ss_w"), "F": ("decomposition", "f"),
         "jackknife SE": ("jackknife", "se"), "bootstrap CI": ("bootstrap", "ci_low|ci_high"),
         "paired difference": ("compare", "difference|se|ci_low|ci_high")}


def make_table(n: int, d: int, groups: int, seed: int) -> pa.Table:
    """n rows: 2 models x n/2 items, the same items (and group labels) in both, float32 vectors.

    Group sizes are multinomial (about n / (2 groups) each); each model places the group centres
    with its own strength, so the models differ in R²."""
    rng = np.random.default_rng(seed)
    items = n // 2
    labels = rng.integers(0, groups, items)
    names = np.array([f"t{g:05d}" for g in range(groups)], dtype=object)
    batches = []
    for model, strength in (("m1", 0.6), ("m2", 0.9)):
        centres = rng.standard_normal((groups, d)).astype(np.float32)
        for low in range(0, items, CHUNK):
            g = labels[low:low + CHUNK]
            x = strength * centres[g] + rng.standard_normal((len(g), d), dtype=np.float32) + np.float32(0.3)
            vectors = pa.ListArray.from_arrays(pa.array(np.arange(0, len(g) * d + 1, d, dtype=np.int32)),
                                               pa.array(x.ravel()))
            batches.append(pa.record_batch({"model": pa.array([model] * len(g)), "topic": pa.array(names[g]),
                                            "vec": vectors}))
    return pa.Table.from_batches(batches)


def figures(result) -> dict:
    """Every float of the report's sections, keyed by (section, row, column)."""
    out = {}
    for name in SECTIONS:
        for i, row in enumerate(result[name].to_dicts()):
            for column, value in row.items():
                if isinstance(value, float):
                    out[(name, i, column)] = value
    return out


def relative_differences(got: dict, expected: dict) -> dict:
    if got.keys() != expected.keys():
        raise SystemExit(f"the engines' reports have different figures: {sorted(set(got) ^ set(expected))[:5]}")
    return {key: abs(got[key] - value) / max(abs(value), 1e-300) if got[key] != value else 0.0
            for key, value in expected.items()}


@contextlib.contextmanager
def duckdb_engine(_args):
    con = embsql.connect()
    try:
        yield con
    finally:
        con.close()


@contextlib.contextmanager
def postgres_engine(args):
    import psycopg

    with postgres_server() as params, psycopg.connect(dbname="postgres", autocommit=True, **params) as con:
        if args.timeout:  # the server cancels a slower query (EngineError): reported, not waited for
            con.execute(f"SET statement_timeout = {int(args.timeout * 1000)}")
        yield con


@contextlib.contextmanager
def pgvector_engine(args):
    import psycopg

    with pgvector_server() as uri, psycopg.connect(uri, autocommit=True) as con:
        con.execute("CREATE EXTENSION vector")
        if args.timeout:
            con.execute(f"SET statement_timeout = {int(args.timeout * 1000)}")
        yield con


@contextlib.contextmanager
def spark_engine(args):
    with spark_session(quick_start=False, memory=args.spark_memory, java_options=args.spark_java_options) as session:
        yield session


ENGINES = {"duckdb": duckdb_engine, "duckdb-sql": duckdb_engine, "postgres": postgres_engine, "pgvector": pgvector_engine,
           "spark": spark_engine, "spark-wide": spark_engine, "spark-summarizer": spark_engine}
LOAD_OPTIONS = {"pgvector": {"vector_type": "vector"}}
EPS32 = 2.0 ** -23


def engine_processes(name: str, con) -> list[psutil.Process]:
    """The engine's own processes: the PostgreSQL postmaster (its backends are its children), or
    Spark's JVM (a child of this process); none for DuckDB, which runs in this one."""
    if name in ("postgres", "pgvector"):
        backend = psutil.Process(int(fetch_arrow(con, "SELECT pg_backend_pid() AS pid").column("pid")[0].as_py()))
        return [backend.parent()]
    if name.startswith("spark"):
        return [p for p in psutil.Process().children(recursive=True) if "java" in p.name()]
    return []


def tree_cpu(roots: list[psutil.Process]) -> float:
    """CPU seconds (user + system) used so far by ``roots`` and all their children, including the
    children that have ended (children_user/system): a figure the other jobs on the machine do not
    inflate, unlike the wall time."""
    total = 0.0
    seen = set()
    for root in roots:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for p in tree:
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            total += t.user + t.system + t.children_user + t.children_system
    return total


class TreeRssSampler(RssSampler):
    """The peak of the summed RSS of some processes and all their children."""

    def __init__(self, roots: list[psutil.Process], interval: float = 0.05):
        super().__init__(interval)
        self.roots = roots

    def _tree_rss(self) -> int:
        total = 0
        for root in self.roots:
            try:
                total += sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
            except psutil.Error:
                pass
        return total

    def __enter__(self):
        self.start = self.peak = self._tree_rss()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._tree_rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------- Spark's earlier stage 1, for "spark-summarizer"

UNIT = "__emb_u"


def summarizer_unit_rows_query(table, group: str, vector: str, dims, by: str | None = None) -> str:
    """The previous Spark stage 1 (kept here for "spark-summarizer", a side-by-side ratio): per row
    the keys, the checks and the unit vector as one array of dims.high doubles.

    group_sums_query's wide form has about 4 d aggregate buffers (SUM and VAR_POP per coordinate),
    far over Spark's whole-stage codegen limit (spark.sql.codegen.maxFields, 100), so Spark
    interprets ~1500 buffer updates per row: 15x DuckDB at 100k x 384.  Here the unit vector is
    built with higher-order functions (the same inv as group_sums_query: 1/sqrt(ss), or through
    the peak where ss under- or overflows) and summarizer_sums sums it per group with one
    array-valued aggregate, whose state is O(d) per group.  The array always has dims.high
    entries (zero past a shorter vector, or for a row counted as NULL or bad), so the aggregate
    never meets two lengths; the length check of stage 2 names the odd vector instead."""
    v = exp.column(vector, quoted=True).sql("spark")
    high = dims.high
    xs = f"transform({v}, x -> CAST(x AS DOUBLE))"
    ss = "aggregate(`__emb_xs`, CAST(0 AS DOUBLE), (a, x) -> a + x * x)"
    peak = "array_max(transform(`__emb_xs`, x -> abs(x)))"
    scaled = "aggregate(`__emb_xs`, CAST(0 AS DOUBLE), (a, x) -> a + (x / `peak`) * (x / `peak`))"
    plain = f"`ss` > {TINY_SQUARED!r} AND `ss` < {HUGE_SQUARED!r}"
    inv = (f"CASE WHEN {plain} THEN 1 / SQRT(`ss`) "
           f"WHEN `peak` > 0 THEN 1 / (`peak` * SQRT({scaled})) END")
    unit = (f"CASE WHEN `inv` IS NULL THEN array_repeat(CAST(0 AS DOUBLE), {high}) ELSE "
            f"transform(sequence(0, {high - 1}), i -> CASE WHEN i < size(`__emb_xs`) "
            f"THEN `__emb_xs`[i] * `inv` ELSE CAST(0 AS DOUBLE) END) END")
    by_sql = exp.column(by, quoted=True).sql("spark") if by else "NULL"
    return (f"SELECT `{B}`, `{G}`, `is_null`, `len`, `inv`, {unit} AS `{UNIT}`\n"
            f"FROM (SELECT *, {inv} AS `inv`\n"
            f"  FROM (SELECT *, CASE WHEN {plain} THEN 1 ELSE {peak} END AS `peak`\n"
            f"    FROM (SELECT *, {ss} AS `ss`\n"
            f"      FROM (SELECT {by_sql} AS `{B}`, {exp.column(group, quoted=True).sql('spark')} AS `{G}`,\n"
            f"          CASE WHEN {v} IS NULL THEN 1 ELSE 0 END AS `is_null`, size({v}) AS `len`,\n"
            f"          {xs} AS `__emb_xs`\n"
            f"        FROM {table.sql('spark')}) AS `__emb_x`) AS `__emb_ss`) AS `__emb_peak`) AS `__emb_unit_rows`")


def summarizer_sums(session, sql: str, dims) -> pa.Table:
    """summarizer_unit_rows_query's rows summed per (by, group) in group_sums_query's columns.

    pyspark.ml's Summarizer over array_to_vector is the array-valued aggregate (an imperative
    aggregate: a loop over a double[] per row, O(d) state per group).  Its sum and its variance
    come from Welford-type updates of the mean and of M2, so within = (n_g - 1) * sum_k var_k =
    sum_k M2_k, the within-group sum of squares, as stably as VAR_POP (n_g = 1: 0)."""
    from pyspark.ml.functions import array_to_vector, vector_to_array
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    metrics = Summarizer.metrics("sum", "variance")
    rows = session.sql(sql).withColumn(UNIT, array_to_vector(F.col(UNIT)))
    grouped = rows.groupBy(B, G).agg(
        F.count(F.lit(1)).alias(N), F.sum("is_null").alias(NULLS), F.min("len").alias(LEN_MIN),
        F.max("len").alias(LEN_MAX), F.sum(F.when(F.col("inv").isNull(), 1).otherwise(0)).alias(BAD),
        metrics.summary(F.col(UNIT)).alias("__emb_summary"))
    variance_sum = F.aggregate(vector_to_array(F.col("__emb_summary.variance")), F.lit(0.0), lambda a, x: a + x)
    out = grouped.select(B, G, N, NULLS, LEN_MIN, LEN_MAX, BAD, ((F.col(N) - 1) * variance_sum).alias(WITHIN),
                         vector_to_array(F.col("__emb_summary.sum")).alias("__emb_sums"))
    table = out.toArrow() if hasattr(out, "toArrow") else pa.Table.from_pandas(out.toPandas(), preserve_index=False)
    sums = np.asarray(table.column("__emb_sums").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                      dtype=np.float64).reshape(len(table), dims.high)
    columns = {name: table.column(name) for name in (B, G, N, NULLS, LEN_MIN, LEN_MAX, BAD, WITHIN)}
    columns.update({f"{SUM_PREFIX}{k}": pa.array(sums[:, k - 1]) for k in range(1, dims.high + 1)})
    return pa.table(columns)


def run_report(name: str, con, report):
    """embsql.run_on; "duckdb-sql" is DuckDB with the portable wide aggregate (one SUM and one VAR_POP
    per coordinate: what the other engines run, and what the report ran on DuckDB before it streamed
    the rows through embsql.anova's accumulator), "spark-wide" Spark with the same aggregate,
    "spark-summarizer" Spark with the previous stage 1 (higher-order functions and pyspark.ml's
    Summarizer), each for a side-by-side ratio with what run_on runs."""
    if name == "duckdb-sql":
        return report.run_stage1(lambda sql: run_sql(con, sql), "duckdb")
    if name == "spark-wide":
        return report.run_stage1(lambda sql: fetch_arrow(con, sql), "spark")
    if name == "spark-summarizer":
        def summarize(relation, dims):
            query = summarizer_unit_rows_query(relation, report.group, report.vector, dims, report.model)
            return summarizer_sums(con, query, dims)
        return report.run_stage1(lambda sql: fetch_arrow(con, sql), "spark", summarize=summarize)
    return embsql.run_on(con, report)


def run_engine(name: str, args, table: pa.Table, report) -> dict:
    """Start the engine, load the table, time the report; the numbers for the summary."""
    print(f"\n{name}", flush=True)
    t0 = time.perf_counter()
    with ENGINES[name](args) as con:
        print(f"  started in {time.perf_counter() - t0:6.1f} s", flush=True)
        t0 = time.perf_counter()
        load_table(con, "emb", table, **LOAD_OPTIONS.get(name, {}))
        load = time.perf_counter() - t0
        server = TreeRssSampler(engine_processes(name, con))
        print(f"  load       {load:7.1f} s  (not part of the report time)", flush=True)
        times, cpus, result, rise = [], [], None, 0
        for _ in range(args.repeats):
            gc.collect()
            with RssSampler() as sampler, server:
                c0 = tree_cpu([psutil.Process(), *server.roots])
                t0 = time.perf_counter()
                try:
                    result = run_report(name, con, report)
                except embsql.EngineError as error:  # e.g. PostgreSQL's statement_timeout
                    print(f"  report     failed after {time.perf_counter() - t0:.1f} s: {error}", flush=True)
                    return {"load": load, "error": str(error), "after": time.perf_counter() - t0}
                times.append(time.perf_counter() - t0)
                cpus.append(tree_cpu([psutil.Process(), *server.roots]) - c0)
            rise = max(rise, sampler.peak_above_start)
            print(f"  report     {times[-1]:7.2f} s  ({cpus[-1]:.1f} CPU s; RSS rise {rise / 2**20:,.0f} MB)", flush=True)
            if times[0] > args.slow:
                break
        stage2 = None
        if name == "duckdb":  # stage 2 alone, on the sums: the same work for every engine
            parts = duckdb_sums.streamed_sums(con, "emb", source_expression("emb"), "topic", "vec", "model").parts
            t0 = time.perf_counter()
            report.finish(parts)
            stage2 = time.perf_counter() - t0
    return {"load": load, "time": min(times), "cpu": min(cpus), "runs": len(times), "result": result, "rss_rise": rise,
            "peak_rss": peak_rss_mb(), "stage2": stage2, "engine_rss": server.peak / 2**20}


def scratch_directory(parent: str | None) -> Path:
    """One directory for every temporary file (the PostgreSQL cluster, Spark's Parquet and spill)."""
    path = Path(tempfile.mkdtemp(prefix="embsql-bench-engines-", dir=parent))
    path.chmod(0o755)  # the PostgreSQL server runs as the postgres user when this runs as root
    tempfile.tempdir = str(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="rows (two models of n/2 items)")
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--engines", default="duckdb,duckdb-sql,pgvector,postgres,spark",
                        help="comma-separated; duckdb always runs first; duckdb-sql: DuckDB with the wide SQL aggregate "
                             "(the report's stage 1 on DuckDB before it streamed the rows); spark-wide: Spark with the "
                             "wide SQL aggregate; spark-summarizer: Spark with the previous (Summarizer) stage 1")
    parser.add_argument("--repeats", type=int, default=2, help="report runs per engine (the best is kept)")
    parser.add_argument("--slow", type=float, default=300.0, help="a first run longer than this is not repeated")
    parser.add_argument("--replicates", type=int, default=2000, help="bootstrap replicates of the report")
    parser.add_argument("--spark-memory", default="6g", help="Spark driver heap (local mode runs the tasks there)")
    parser.add_argument("--spark-java-options", default="",
                        help="added to Spark's JVM options, e.g. -Darrow.enable_unsafe_memory_access=true")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="PostgreSQL statement_timeout in seconds (0: none); a slower report is reported as failed")
    parser.add_argument("--tmp", default=None, help="parent of the temporary directory (default: the system's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    engines = ["duckdb"] + [e for e in args.engines.split(",") if e and e != "duckdb"]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engine {unknown[0]!r}; the engines are {', '.join(ENGINES)}")

    scratch = scratch_directory(args.tmp)
    try:
        load = os.getloadavg()
        print(f"engines n={args.n:,} d={args.d} G={args.groups} (2 models of {args.n // 2:,} items), "
              f"sections {', '.join(SECTIONS)}, {args.replicates} bootstrap replicates")
        print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start")
        t0 = time.perf_counter()
        table = make_table(args.n, args.d, args.groups, args.seed)
        print(f"data: {table.num_rows:,} rows, {table.nbytes / 1e9:.2f} GB of Arrow, made in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        report = embsql.report("emb", vector="vec", group="topic", model="model", sections=SECTIONS,
                               replicates=args.replicates, seed=5)
        runs = {name: run_engine(name, args, table, report) for name in engines}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summarise(args, runs)


def summarise(args, runs: dict) -> int:
    base = runs["duckdb"]
    expected = figures(base["result"])
    cells = 2 * args.groups                            # (model, group) rows stage 1 returns
    rows_bytes = args.n * args.d * 4
    ok = True
    print(f"\nsummary n={args.n:,} d={args.d} G={args.groups}; load average now "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"  stage 2 alone (local, the same for every engine): {base['stage2']:.2f} s")
    print(f"  {'engine':10} {'load s':>7} {'report s':>9} {'ratio':>6} {'stage1 bytes':>13} {'per (m,g)':>9} "
          f"{'RSS rise':>9} {'peak RSS':>9} {'engine RSS':>10} {'max rel diff':>12}")
    for name, run in runs.items():
        if "error" in run:
            ok = False
            print(f"  {name:10} {run['load']:7.1f}   failed after {run['after']:.0f} s: {run['error']}")
            continue
        bytes_ = run["result"].meta["stage1_bytes"]
        diffs = relative_differences(figures(run["result"]), expected)
        worst = max(diffs.values())
        if name == "pgvector":   # float32: the decomposition within its derived bound
            rows = base["result"]["decomposition"].to_dicts()
            bound = 6 * EPS32 / min(min(r["r2"] * r["v"], r["w_bar"]) for r in rows)
            decomposition = max(v for (s, _, _), v in diffs.items() if s == "decomposition")
            print(f"  pgvector: decomposition max rel diff {decomposition:.1e}, float32 bound {bound:.1e}")
            ok &= decomposition <= bound
        else:
            ok &= worst <= TOL
        ok &= bytes_ / cells <= 16 * (args.d + 8)   # O(G d): a few bytes per sum
        best = f"{run['time']:.2f}" + ("" if run["runs"] > 1 else "*")
        print(f"  {name:10} {run['load']:7.1f} {best:>9} {run['time'] / base['time']:6.2f} {bytes_:13,} "
              f"{bytes_ / cells:9,.0f} {run['rss_rise'] / 2**20:7,.0f}MB {run['peak_rss']:7,.0f}MB "
              f"{run['engine_rss']:8,.0f}MB {worst:12.1e}")
    print(f"  (* one run; otherwise best of {args.repeats}.  The rows themselves: n·d·4 = {rows_bytes:,} bytes; "
          f"stage 1 returns {2 * args.groups:,} (model, group) rows of d + 5 values.)")
    print("  peak RSS is this Python process (getrusage; it only rises, and includes DuckDB and the load);"
          " engine RSS: the PostgreSQL server with its backends, or Spark's JVM, sampled during the report")
    for name, run in runs.items():
        if name == "duckdb" or "error" in run:
            continue
        diffs = relative_differences(figures(run["result"]), expected)
        named = []
        for label, (section, columns) in NAMED.items():
            values = [v for (s, _, c), v in diffs.items() if s == section and c in columns.split("|")]
            named.append(f"{label} {max(values):.1e}")
        print(f"  {name} vs duckdb, max relative difference: " + ", ".join(named))
    for name, run in runs.items():
        if name != "duckdb" and "error" not in run:
            print(f"ratio {name}/duckdb: report {run['time'] / base['time']:.2f} (wall, best of {run['runs']} and "
                  f"{base['runs']}), {run['cpu'] / base['cpu']:.2f} (CPU seconds of this process and the "
                  f"engine's: {run['cpu']:.1f} / {base['cpu']:.1f})")
    print(f"check: every figure within {TOL:g} of DuckDB's and stage 1 O(G·d): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
