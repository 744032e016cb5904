"""Benchmark: where the default report's time goes, on the example file (examples/embeddings.parquet:
two models, d = 384 and 768, 600 rows each, 30 topics; PERMANOVA and the dispersion test with 999
permutations).

    /work/main/.venv/bin/python bench/report_default.py [--repeats 3] [--no-peer]

1. (run)   embsql.report(FILE, vector=, group=, model=).run(), as a user calls it, timed in full.
2. (split) the same steps one by one: the column check, stage 1 (on DuckDB the rows streamed
           through embsql.anova's accumulator, embsql.io.duckdb_sums), stage 2 (all sections),
           then each section of stage 2 alone.
3. (peer)  stage 1 three ways, timed alternately on one connection: the stream the report runs
           now; the portable aggregate it ran before (a SUM and a VAR_POP per coordinate; what
           Report.sql still prints, and what the other engines run), from the probes to the group
           sums; and that aggregate with its d-term sums as left-deep chains (x1*x1 + x2*x2 + ...,
           their form before they became balanced trees: DuckDB's common-subexpression pass is
           quadratic in the depth of a chain).  The group sums of the three must agree to rounding.
Every measurement is warm (one untimed run first); the best of --repeats rounds is printed, and
the rounds alternate the kinds so a change of load hits them alike.  The target: the default
report under 15 s on 2 cores.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import numpy as np  # noqa: E402
from sqlglot import exp  # noqa: E402

import embsql  # noqa: E402
from embsql.io import duckdb_sums, portable_sums  # noqa: E402
from embsql.io.sources import source_expression  # noqa: E402
from embsql.io.sql import run_sql  # noqa: E402

report_module = importlib.import_module("embsql.reporting.build")  # the module that builds reports
EXAMPLE = ROOT / "examples" / "embeddings.parquet"
TARGET_SECONDS = 15.0


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def default_report():
    return embsql.report(str(EXAMPLE), vector="embedding", group="topic", model="model")


def run_full() -> float:
    return timed(lambda: default_report().run(progress=False))[1]


def run_split() -> dict:
    """The steps of Report.run one by one, then stage 2 once per section."""
    con = embsql.connect()
    rep = default_report()
    steps = {}
    _, steps["check columns"] = timed(lambda: rep.check_columns(con))
    streamed, steps["stage 1 (rows streamed)"] = timed(lambda: stream(con, rep))
    result, steps["stage 2 (all sections)"] = timed(
        lambda: rep.finish(streamed.parts, con=con, meta={}, progress=False))
    sections = {}
    for section in (s.name for s in result.sections):
        alone = rep.replace(sections=(section,))
        _, sections[section] = timed(lambda: alone.finish(streamed.parts, con=con, meta={}, progress=False))  # noqa: B023
    return {"steps": steps, "sections": sections}


def stream(con, rep):
    """Stage 1 as Report.run runs it on DuckDB."""
    return duckdb_sums.streamed_sums(con, rep.source, source_expression(rep.source), rep.group, rep.vector, rep.model)


def _terms(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.Add):
        return _terms(node.this)
    if isinstance(node, exp.Add):
        return _terms(node.this) + _terms(node.expression)
    return [node]


def left_deep(tree: exp.Expression) -> exp.Expression:
    """The same query with every sum of terms as a left-deep chain (((t1 + t2) + t3) + ...)."""
    tree = tree.copy()
    tops = [node for node in tree.find_all(exp.Add)
            if not isinstance(node.parent, exp.Add) and not isinstance(node.parent.parent, exp.Add)]
    for node in tops:
        terms = _terms(node)
        chain = terms[0]
        for term in terms[1:]:
            chain = exp.Add(this=chain, expression=term)
        node.replace(chain)
    return tree


def peer_sqls() -> dict:
    con = embsql.connect()
    rep = default_report()
    dims, _ = rep.probes(lambda q: run_sql(con, q), "duckdb")
    tree = rep.aggregate_query("duckdb", dims)
    return {"aggregate, balanced": report_module.write(tree, "duckdb"),
            "aggregate, left-deep": report_module.write(left_deep(tree), "duckdb")}


def time_peers(sqls: dict, con) -> dict:
    """Each way from the source to the group sums: the probes, the aggregate and its Arrow ->
    GroupSums for the SQL forms (as Report.run_stage1 ran them), the stream for the report's."""
    rep = default_report()

    def aggregate(sql):
        dims, _ = rep.probes(lambda q: run_sql(con, q), "duckdb")
        return portable_sums.group_sums_from_result(run_sql(con, sql), rep.group, rep.vector, dims, rep.model)

    out = {}
    out["sums"], out["stream (now)"] = timed(lambda: stream(con, rep).parts)
    for name, sql in sqls.items():
        out[name + " sums"], out[name] = timed(lambda: aggregate(sql))  # noqa: B023
    return out


def largest_difference(a, b) -> float:
    """The largest absolute difference of a coordinate sum or a within-group sum of squares."""
    return max(float(np.max(np.abs(np.r_[x.sums.ravel(), x.within_ss()] - np.r_[y.sums.ravel(), y.within_ss()])))
               for (_, x), (_, y) in zip(a, b))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-peer", action="store_true", help="skip (peer), the SQL forms of stage 1 (about 10 s a run under load)")
    args = p.parse_args()
    print(f"embsql {embsql.__version__}, duckdb {duckdb.__version__}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; {EXAMPLE.name}", flush=True)

    run_full()                                   # warm: imports, the file in the page cache
    sqls = {} if args.no_peer else peer_sqls()
    con = embsql.connect()
    if sqls:
        time_peers(sqls, con)
    full, splits, peers = [], [], []
    for _ in range(args.repeats):
        full.append(run_full())
        splits.append(run_split())
        if sqls:
            peers.append(time_peers(sqls, con))

    best = min(full)
    print(f"\n(run) the default report, best of {args.repeats}: {best:.2f} s "
          f"(all: {', '.join(f'{t:.2f}' for t in full)}); target < {TARGET_SECONDS:.0f} s: "
          f"{'met' if best < TARGET_SECONDS else 'NOT met'}", flush=True)
    split = min(splits, key=lambda s: sum(s["steps"].values()))
    print(f"\n(split) fastest step-by-step run, {sum(split['steps'].values()):.2f} s in all:")
    for step, t in split["steps"].items():
        print(f"  {step:28s} {t:7.3f} s")
    print("  stage 2, each section alone: " + ", ".join(f"{s} {t:.3f} s" for s, t in split["sections"].items()))
    if peers:
        now = min(p["stream (now)"] for p in peers)
        line = [f"stream (now) {now:.2f} s"]
        for name in sqls:
            best_sql = min(p[name] for p in peers)
            diff = largest_difference(peers[-1]["sums"], peers[-1][name + " sums"])
            line.append(f"{name} {best_sql:.2f} s ({best_sql / now:.1f}x the stream; largest difference of a sum "
                        f"or of a group's SS_W from the stream's {diff:.1e})")
        print(f"\n(peer) stage 1 on DuckDB, source to group sums, best of {args.repeats}: " + "; ".join(line), flush=True)

if __name__ == "__main__":
    main()
