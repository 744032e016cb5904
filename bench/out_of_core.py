"""Benchmark: the streaming statistics on an on-disk table larger than DuckDB's memory limit.

    python bench/out_of_core.py [--db /work/ooc.duckdb] [--rows-per-model 1000000] [--memory-limit 1GB]

Issue target ("Beyond one machine"): with SET memory_limit = '1GB' and an on-disk table of about
3 GB of vectors (2 models x 1,000,000 rows x FLOAT[384], 5000 groups), emb_anova, emb_groups and
emb_jackknife (SQL) and embsql.anova and embsql.jackknife (Python) complete, because each is one
streaming pass that keeps O(G d) sums, never a group's rows.  (emb_permanova, emb_dispersion and
emb_icc are not on this path: permutations need every row in memory; see bench/README.md.)

The table is built once, in chunks, and kept at --db (outside the repository; --rebuild forces it).
Each function then runs in a fresh child process, so the peak RSS (ru_maxrss from os.wait4) is that
function's alone.  The child attaches the database read-only to an in-memory DuckDB with the memory
limit, threads and an on-disk temp_directory set, runs the function once, reads every output cell,
and reports its wall time.  Times are also printed as ratios to emb_anova (SQL) from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CHUNK_ROWS = 100_000
TABLE = "ooc.emb"   # the database is attached as "ooc": macros live in the in-memory catalog

# name -> what the child runs; "by" is the model column, so each call covers all 2M rows.
FUNCTIONS = {
    "baseline": "noop",   # import, register, attach and nothing else: the fixed Python + DuckDB overhead
    "sql emb_anova": "SELECT * FROM emb_anova('ooc.emb', 'g', 'v', model := 'model')",
    "sql emb_groups": "SELECT * FROM emb_groups('ooc.emb', 'g', 'v', model := 'model')",
    "sql emb_jackknife": "SELECT * FROM emb_jackknife('ooc.emb', 'g', 'v', model := 'model')",
    "python anova": "anova",
    "python jackknife": "jackknife",
    "python report": "report",
    # not required out of core, measured for the record: the trace ICC of a vector column is
    # emb__anova's SS_B and SS_W plus a per-row window over (by, group) for the checks
    "sql emb_icc": "SELECT * FROM emb_icc('ooc.emb', 'g', 'v', model := 'model')",
}


# ---------------------------------------------------------------------------- data

def build(path: Path, rows_per_model: int, models: int, d: int, groups: int, seed: int) -> None:
    """Write emb(model, item, g, v FLOAT[d]) in chunks of CHUNK_ROWS: never the whole table in memory.

    Item i has the same group in every model; each model has its own group centres and noise
    level, so R2 differs between the models (about 0.3 and 0.2).
    """
    import duckdb
    import numpy as np
    import pyarrow as pa

    partial = path.with_suffix(".building")
    partial.unlink(missing_ok=True)
    _spec_file(path).unlink(missing_ok=True)
    con = duckdb.connect(str(partial), config={"memory_limit": "2GB", "threads": 2})
    con.execute(f"CREATE TABLE emb (model VARCHAR, item INTEGER, g INTEGER, v FLOAT[{d}])")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, groups, rows_per_model).astype(np.int32)
    for m in range(models):
        centres = rng.standard_normal((groups, d)).astype(np.float32)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        noise = 1.5 + 0.5 * m
        for low in range(0, rows_per_model, CHUNK_ROWS):
            high = min(rows_per_model, low + CHUNK_ROWS)
            x = centres[labels[low:high]] + rng.standard_normal((high - low, d), dtype=np.float32) * (noise / np.sqrt(d))
            chunk = pa.table({  # noqa: F841  (read by DuckDB's replacement scan)
                "model": pa.array([f"model_{m}"] * (high - low)),
                "item": pa.array(np.arange(low, high, dtype=np.int32)),
                "g": pa.array(labels[low:high]),
                "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d),
            })
            con.execute("INSERT INTO emb SELECT * FROM chunk")
            print(f"\r  building {path}: model {m + 1}/{models}, {high:,}/{rows_per_model:,} rows", end="",
                  file=sys.stderr, flush=True)
    con.execute("CHECKPOINT")
    con.close()
    print(file=sys.stderr)
    partial.rename(path)
    _spec_file(path).write_text(json.dumps(_spec(rows_per_model, models, d, groups, seed)))


def _spec(rows_per_model, models, d, groups, seed) -> dict:
    return {"rows_per_model": rows_per_model, "models": models, "d": d, "groups": groups, "seed": seed}


def _spec_file(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def cached(path: Path, spec: dict) -> bool:
    """True when ``path`` holds the table this spec describes (recorded beside it after a build)."""
    try:
        return path.exists() and json.loads(_spec_file(path).read_text()) == spec
    except (OSError, json.JSONDecodeError):
        return False


# ---------------------------------------------------------------------------- child

def child(name: str, db: str, memory_limit: str, threads: int, temp: str) -> None:
    """Run one function once on a memory-limited connection; print one JSON line."""
    import duckdb

    import embsql

    con = embsql.register(duckdb.connect(config={"memory_limit": memory_limit, "threads": threads,
                                                 "temp_directory": temp}))
    con.execute(f"ATTACH '{db}' AS ooc (READ_ONLY)")
    # DuckDB's own account of the last query: bytes spilled to temp_directory, and the Arrow
    # batches a streaming result held (memory outside the buffer manager's memory_limit)
    profile = Path(temp) / f"profile_{os.getpid()}.json"
    con.execute("PRAGMA enable_profiling = 'json'")
    con.execute(f"PRAGMA profiling_output = '{profile}'")
    start = time.perf_counter()
    what = FUNCTIONS[name]
    if what.startswith("SELECT"):
        cursor = con.execute(what)
        columns = [c[0] for c in cursor.description]
        table = [dict(zip(columns, row)) for row in cursor.fetchall()]
    elif what == "noop":
        table = [{"count": con.sql(f"SELECT count(*) FROM {TABLE}").fetchall()[0][0]}]
    elif what == "report":
        table = _report(con)
        if table is None:
            print(json.dumps({"skipped": True}))
            return
    else:
        table = getattr(embsql, what)(con, TABLE, "g", "v", model="model").to_dicts()
    seconds = time.perf_counter() - start
    cells = sum(len(row) for row in table)
    first = {k: table[0][k] for k in ("model", "r2", "estimate", "se", "n", "count") if table and k in table[0]}
    con.execute("PRAGMA disable_profiling")
    system = json.loads(profile.read_text()).get("system", {}) if profile.exists() else {}
    profile.unlink(missing_ok=True)
    print(json.dumps({"seconds": seconds, "rows": len(table), "cells": cells, "first": first,
                      "spilled_mb": system.get("total_bytes_spilled", 0) / 2**20,
                      "stream_mb": system.get("peak_streaming_buffer_size", 0) / 2**20}, default=str))


def _report(con):
    """embsql.report, if this version has it, called as guessed: embsql.report(source, vector=...,
    group=..., by=...).run(con).  None (printed as skipped) when it is missing or its interface
    differs; the signatures are checked before anything runs, so an error inside it still fails."""
    import inspect

    import embsql

    if not hasattr(embsql, "report"):
        return None
    try:
        inspect.signature(embsql.report).bind(TABLE, vector="v", group="g", model="model")
        report = embsql.report(TABLE, vector="v", group="g", model="model")
        inspect.signature(report.run).bind(con)
    except (TypeError, AttributeError, ValueError) as error:
        print(f"embsql.report differs from the guessed interface: {error}", file=sys.stderr)
        return None
    result = report.run(con)
    # every table of the result: a summary and sections (embsql/reporting/report_result.py), or one table
    tables = [getattr(result, "summary", None)] + [getattr(s, "table", None) for s in getattr(result, "sections", ())]
    tables = [t for t in tables if hasattr(t, "to_dicts")] or ([result] if hasattr(result, "to_dicts") else [])
    return [row for t in tables for row in t.to_dicts()] or [{}]


# ---------------------------------------------------------------------------- parent

def measure(name: str, args) -> dict:
    """Run ``name`` in a fresh process; os.wait4 gives that child's own peak RSS (ru_maxrss)."""
    command = [sys.executable, __file__, "--child", name, "--db", str(args.db), "--memory-limit", args.memory_limit,
               "--threads", str(args.threads), "--temp", str(args.temp)]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        timer = threading.Timer(args.timeout, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        result, message = _parse(out.read()), err.read()
    result["wall"] = time.perf_counter() - started
    result["rss_mb"] = usage.ru_maxrss / 1024  # KiB on Linux
    if process.returncode != 0 or not ("seconds" in result or result.get("skipped")):
        lines = [line for line in message.strip().splitlines() if line.strip()] or [f"exit status {process.returncode}"]
        result["error"] = next((line for line in lines if "Error" in line), lines[-1])[:300]
    return result


def _parse(out: str) -> dict:
    for line in reversed(out.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            continue
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("/work/ooc.duckdb"))
    parser.add_argument("--temp", type=Path, default=None, help="DuckDB temp_directory (default: <db>.tmp)")
    parser.add_argument("--rows-per-model", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--only", nargs="*", choices=list(FUNCTIONS), help="run only these functions")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--child", choices=list(FUNCTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.db = args.db.resolve()
    args.temp = (args.temp or args.db.with_suffix(".tmp")).resolve()
    if args.child:
        child(args.child, str(args.db), args.memory_limit, args.threads, str(args.temp))
        return
    repo = Path(__file__).resolve().parent.parent
    if args.db.is_relative_to(repo) or args.temp.is_relative_to(repo):
        parser.error(f"--db and --temp must be outside the repository ({repo}): the table is gigabytes")
    spec = _spec(args.rows_per_model, args.models, args.d, args.groups, args.seed)
    if args.build:
        build(args.db, **spec)
        return
    if args.rebuild or not cached(args.db, spec):
        # in a child too: Linux carries a parent's peak RSS into the children it forks afterwards
        start = time.perf_counter()
        subprocess.run([sys.executable, __file__, *[a for a in sys.argv[1:] if a != "--rebuild"], "--build"],
                       check=True)
        print(f"built {args.db} in {time.perf_counter() - start:.0f} s")
    args.temp.mkdir(parents=True, exist_ok=True)

    n = args.rows_per_model * args.models
    raw = n * args.d * 4
    print(f"out-of-core: {args.models} models x {args.rows_per_model:,} rows x FLOAT[{args.d}], G={args.groups}; "
          f"memory_limit={args.memory_limit}, threads={args.threads}")
    print(f"  table on disk: {args.db.stat().st_size / 1e9:.2f} GB ({raw / 1e9:.2f} GB of raw float32 vectors)")
    results = {}
    for name in args.only or FUNCTIONS:
        results[name] = r = measure(name, args)
        if r.get("skipped"):
            print(f"  {name:20} skipped (embsql.report missing or its interface differs from the guess)")
        elif "error" in r:
            print(f"  {name:20} FAILED after {r['wall']:.1f} s, peak RSS {r.get('rss_mb') or 0:,.0f} MB: {r['error']}")
        else:
            print(f"  {name:20} {r['seconds']:7.1f} s   peak RSS {r['rss_mb']:6,.0f} MB   "
                  f"spilled {r['spilled_mb']:6,.0f} MB   Arrow stream {r['stream_mb']:4,.0f} MB   "
                  f"{r['rows']} rows, {r['cells']} cells; first: {r['first']}", flush=True)
    base = results.get("sql emb_anova", {}).get("seconds")
    if base:
        print("  time / sql emb_anova: " + ", ".join(
            f"{name} {r['seconds'] / base:.2f}" for name, r in results.items() if "seconds" in r and name != "baseline"))
    failed = [name for name, r in results.items() if "error" in r]
    print(f"  {'all completed' if not failed else 'FAILED: ' + ', '.join(failed)}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
