"""Benchmark: where the default report's time goes, on the example file (examples/embeddings.parquet:
two models, d = 384 and 768, 600 rows each, 30 topics; PERMANOVA and the dispersion test with 999
permutations).

    /work/main/.venv/bin/python bench/report_default.py [--repeats 3] [--no-peer]

1. (run)   embsql.report(FILE, vector=, group=, model=).run(), as a user calls it, timed in full.
2. (split) the same steps one by one: the probes, the sqlglot build of the aggregate, writing its
           SQL, the aggregate on DuckDB, Arrow -> GroupSums, stage 2 (all sections), then each
           section of stage 2 alone.
3. (peer)  the aggregate as it was written before its d-term sums became balanced trees (left-deep
           chains x1*x1 + x2*x2 + ... , the same terms) against the SQL the report writes now, timed
           alternately on one connection: DuckDB's common-subexpression pass is quadratic in the
           depth of a chain, so the ratio is the planning cost the balanced form saves.
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
from sqlglot import exp  # noqa: E402

import embsql  # noqa: E402
from embsql.api.decomposition import run_sql  # noqa: E402
from embsql.io import portable_sums  # noqa: E402

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
    (dims, _), steps["probes"] = timed(lambda: rep.probes(lambda q: run_sql(con, q), "duckdb"))
    tree, steps["build the aggregate tree"] = timed(lambda: rep.aggregate_query("duckdb", dims))
    sql, steps["write its SQL"] = timed(lambda: report_module.write(tree, "duckdb"))
    table, steps["the aggregate on DuckDB"] = timed(lambda: run_sql(con, sql))
    parts, steps["Arrow -> GroupSums"] = timed(
        lambda: portable_sums.group_sums_from_result(table, rep.group, rep.vector, dims, rep.model))
    result, steps["stage 2 (all sections)"] = timed(lambda: rep.finish(parts, con=con, meta={}, progress=False))
    sections = {}
    for section in (s.name for s in result.sections):
        alone = rep.replace(sections=(section,))
        _, sections[section] = timed(lambda: alone.finish(parts, con=con, meta={}, progress=False))  # noqa: B023
    return {"steps": steps, "sections": sections}


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
    return {"balanced (now)": report_module.write(tree, "duckdb"),
            "left-deep (before)": report_module.write(left_deep(tree), "duckdb")}


def time_peers(sqls: dict, con) -> dict:
    out = {}
    for name, sql in sqls.items():
        table, out[name] = timed(lambda: run_sql(con, sql))  # noqa: B023
        out[name + " rows"] = table.sort_by([(portable_sums.B, "ascending"), (portable_sums.G, "ascending")])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-peer", action="store_true", help="skip the left-deep peer (about 10 s a run under load)")
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
        now = min(p["balanced (now)"] for p in peers)
        before = min(p["left-deep (before)"] for p in peers)
        a, b = peers[-1]["balanced (now) rows"], peers[-1]["left-deep (before) rows"]
        summed = [name for name in a.column_names if name.startswith(portable_sums.SUM_PREFIX) or name == portable_sums.WITHIN]
        diff = max(abs(x - y) for name in summed
                   for x, y in zip(a.column(name).to_pylist(), b.column(name).to_pylist()))
        print(f"\n(peer) the aggregate on DuckDB, best of {args.repeats}: balanced sums {now:.2f} s, left-deep "
              f"{before:.2f} s; ratio left-deep / balanced {before / now:.1f}x; largest difference of a sum "
              f"or of SS_W between the two: {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
