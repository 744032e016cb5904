"""Benchmark: the report with the calibrated intervals against the report before them.

    python bench/report_intervals.py [--base 785fbad] [--repeats 5] [--rounds 3]

The same report (default sections: decomposition, groups, jackknife, bootstrap with 2000
replicates, paired comparison) on examples/embeddings.parquet, run by this checkout and by the
commit ``--base`` (extracted with git archive to a temporary directory).  Each measurement is a
child process that runs the report once (warm-up) and then ``--repeats`` times; the best time is
kept.  The kinds alternate within each of ``--rounds`` rounds, so a change of load on the machine
hits them alike.  Target: new / old <= 1.5.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5
CHILD = """
import json, time
import embsql
from embsql.io import portable_sums
from embsql.api.decomposition import run_sql
from embsql.reporting.build import write

report = embsql.report("examples/embeddings.parquet", vector="embedding", group="topic", model="model")
con = embsql.connect()
dims, _ = report.probes(lambda sql: run_sql(con, sql), "duckdb")
result = run_sql(con, write(report.aggregate_query("duckdb", dims), "duckdb"))
parts = portable_sums.group_sums_from_result(result, report.group, report.vector, dims, report.model)
best = {{"report": None, "stage2": None}}
for k in range({repeats} + 1):
    for kind, work in (("report", lambda: report.run(con)), ("stage2", lambda: report.finish(parts, con=con))):
        started = time.perf_counter()
        work()
        took = time.perf_counter() - started
        if k:
            best[kind] = took if best[kind] is None else min(best[kind], took)
print(json.dumps(best))
"""


def child(checkout: Path, repeats: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD.format(repeats=repeats)], cwd=checkout, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="785fbad", help="the commit before the calibrated intervals")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        times = {"old": [], "new": []}
        for _ in range(args.rounds):
            times["old"].append(child(Path(tmp), args.repeats))
            times["new"].append(child(ROOT, args.repeats))
    print(f"report on examples/embeddings.parquet (1200 rows, 2 models, 30 groups), best of "
          f"{args.rounds} x {args.repeats}, in ms:")
    for kind, what in (("report", "the whole report (stage 1 SQL + stage 2)"),
                       ("stage2", "stage 2 alone (Report.finish on the group sums)")):
        old, new = (min(t[kind] for t in times[which]) for which in ("old", "new"))
        print(f"  {what}: before ({args.base}) {old * 1000:.1f}, now {new * 1000:.1f}, ratio {new / old:.2f}"
              + (f"  (target <= {TARGET}: {'met' if new / old <= TARGET else 'NOT met'})" if kind == "report" else ""))


if __name__ == "__main__":
    main()
