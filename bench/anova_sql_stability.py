"""Benchmark: the stable SQL sums against the previous macros, side by side in one run.

    python bench/anova_sql_stability.py [--n 1000000] [--d 384] [--groups 5000] [--old PATH | --old-rev REV]

1. Time: the table of bench/anova.py (n float32 vectors FLOAT[d], random groups, built in a temporary
   on-disk database under bench/data/), and `SELECT * FROM emb_anova(...)` on two connections to it,
   one with the previous sql/embsql.sql (--old PATH, or the file at git revision --old-rev, default
   main) and one with this checkout's.  Both warm, interleaved, best of --repeats; the figures must
   agree to 1e-9 relative; the ratio new / old is printed (target <= 1.3).
2. Stability: near-duplicate vectors (one base vector plus spread * noise, true R² about 0.07), and
   identical vectors, through both macro sets, against numpy's long-double two-pass sums of the same
   unit vectors.  The previous macros print wrong numbers there; the stable ones agree or refuse.

Result (2026-12-01, 2 cores shared with other jobs; duckdb 2.0.1), n = 1,000,000, d = 384, G = 5000:
previous macros 11.56 s, stable macros 9.62 s, ratio 0.832 (target <= 1.3: met); ss_t, ss_w, r2 and
f agree to 1e-9.  (An earlier run of the stable macros, under a load average of 8: 25.69 s against
24.11 s, ratio 0.938.)  Stability: at spreads 1e-4 .. 3e-8 the
stable macros agree with the long-double reference to 1e-9 or better, where the previous ones gave
R² = 0.0313 for 0.0536, 0 for 0.111, 0.333 for a spread below resolution; below resolution
(spread under 1.5e-8, and identical vectors) the stable macros refuse with the precision error.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from anova import build_table  # noqa: E402  (the same table as bench/anova.py)

NEW_SQL = ROOT / "sql" / "embsql.sql"
TARGET = 1.3


def old_sql_text(path: str | None, rev: str) -> str:
    if path:
        return Path(path).read_text(encoding="utf-8")
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:sql/embsql.sql"], capture_output=True, text=True,
                          check=True).stdout


def macros(con, text: str):
    # the previous file created persistent macros; as TEMP they cannot touch the database file
    con.execute(text.replace("CREATE OR REPLACE MACRO", "CREATE OR REPLACE TEMP MACRO"))
    return con


def anova(con, table: str):
    cur = con.execute(f"SELECT * FROM emb_anova('{table}', 'g', 'v')")
    names = [c[0] for c in cur.description]
    return dict(zip(names, cur.fetchall()[0]))


def time_side_by_side(path: Path, old_text: str, repeats: int) -> None:
    cons = {"old": macros(duckdb.connect(str(path), read_only=True), old_text),
            "new": macros(duckdb.connect(str(path), read_only=True), NEW_SQL.read_text(encoding="utf-8"))}
    best, rows = {k: float("inf") for k in cons}, {}
    for name, con in cons.items():  # warm-up
        rows[name] = anova(con, "emb")
    for _ in range(repeats):
        for name, con in cons.items():
            start = time.perf_counter()
            rows[name] = anova(con, "emb")
            best[name] = min(best[name], time.perf_counter() - start)
    for key in ("ss_t", "ss_w", "r2", "f"):
        a, b = rows["old"][key], rows["new"][key]
        assert abs(a - b) <= 1e-9 * abs(a), (key, a, b)
    ratio = best["new"] / best["old"]
    print(f"  previous macros  {best['old']:8.2f} s")
    print(f"  stable macros    {best['new']:8.2f} s   ratio {ratio:.3f}   (target <= {TARGET}: "
          f"{'met' if ratio <= TARGET else 'NOT met'})")
    print("  ss_t, ss_w, r2, f agree to 1e-9 relative: OK")


def reference(x, labels):
    z = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.longdouble)
    ss_t = ((z - z.mean(axis=0)) ** 2).sum()
    ss_w = sum(((z[labels == g] - z[labels == g].mean(axis=0)) ** 2).sum() for g in np.unique(labels))
    return float(ss_t), (float((ss_t - ss_w) / ss_t) if ss_t > 0 else float("nan"))


def outcome(con, table: str) -> str:
    try:
        row = anova(con, table)
    except duckdb.Error as error:
        message = str(error)
        return "error: " + (message[message.index("embsql:"):][:60] if "embsql:" in message else message[:60])
    return f"R2 = {row['r2']:.10g}, F = {row['f']:.6g}"


def stability(old_text: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cases = []
    for spread in (1e-4, 1e-6, 1e-7, 3e-8, 1e-8, 1e-9, 1e-10):
        labels = rng.integers(0, 6, 600)
        x = rng.standard_normal(8) + spread * (0.3 * rng.standard_normal((6, 8))[labels] + rng.standard_normal((600, 8)))
        cases.append((f"near-duplicates, spread {spread:g}", x, labels))
    cases.append(("60 identical vectors", np.tile([0.6, 0.8, 0.0], (60, 1)), np.repeat(np.arange(3), 20)))
    old = macros(duckdb.connect(), old_text)
    new = macros(duckdb.connect(), NEW_SQL.read_text(encoding="utf-8"))
    print(f"  {'case':34s} {'reference (long double)':30s} {'previous macros':40s} stable macros")
    for name, x, labels in cases:
        table = pa.table({"g": labels, "v": pa.array(list(x), type=pa.list_(pa.float64()))})
        for con in (old, new):
            con.register("t", table)
        ss_t, r2 = reference(x, labels)
        rms = np.sqrt(ss_t / len(labels))
        ref = f"R2 = {r2:.10g} (rms {rms:.1e})" if rms >= 1.49e-8 else f"below resolution (rms {rms:.1e})"
        print(f"  {name:34s} {ref:30s} {outcome(old, 't'):40s} {outcome(new, 't')}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=384)
    p.add_argument("--groups", type=int, default=5000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--old", help="the previous sql/embsql.sql (default: the file at --old-rev)")
    p.add_argument("--old-rev", default="main", help="git revision of the previous macros (default main)")
    p.add_argument("--skip-timing", action="store_true")
    args = p.parse_args(argv)
    old_text = old_sql_text(args.old, args.old_rev)
    print(f"duckdb {duckdb.__version__}, numpy {np.__version__}, {os.cpu_count()} cores")
    print("\n[stability] the same unit vectors through both macro sets")
    stability(old_text, args.seed)
    if args.skip_timing:
        return 0
    data = ROOT / "bench" / "data"
    data.mkdir(parents=True, exist_ok=True)
    path = data / f"anova_sql_stability_{os.getpid()}.duckdb"
    try:
        print(f"\n[time] emb_anova on n={args.n:,} d={args.d} groups={args.groups:,} (best of {args.repeats}, warm)")
        with duckdb.connect(str(path)) as con:
            build_table(con, "emb", args.n, args.d, args.groups, args.seed, 100_000)
        time_side_by_side(path, old_text, args.repeats)
    finally:
        for leftover in (path, Path(f"{path}.wal")):
            leftover.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
