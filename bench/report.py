"""Benchmark: an embsql report against the emb_anova SQL alone, on one Parquet file.

    /work/venv/bin/python bench/report.py [--n 1000000] [--d 384] [--groups 5000] [--repeats 2] [--cli]
                                          [--baseline PATH]

The acceptance check: the report (stage 1 on DuckDB, stage 2 in Python: decomposition, per-group
spread, cluster jackknife, cluster bootstrap with 2000 replicates, paired model comparison; no
permutations) on a 1,000,000-row Parquet file with d = 384, 2 models and 5,000 groups finishes
within 2x of the time of `SELECT * FROM emb_anova(file, 'topic', 'embedding', model := 'model')` on a
plain duckdb connection, with peak memory under 4 GB.

1. Data: a seeded Parquet file (columns item BIGINT, model VARCHAR, topic VARCHAR, embedding
   FLOAT[]), written in chunks by a child process to --data (default under /work/tmp/) and reused
   if it is already there.  The two models embed the same items (same topics, same group sizes),
   so the paired comparison runs.
2. Each measurement runs in a FRESH child process, so its peak RSS (os.wait4's ru_maxrss) is its
   own; the kinds of measurement alternate within each of --repeats rounds, so a change of load
   on the machine hits them alike.  Reported: the time inside the child (the work alone) and the
   child's whole wall time (interpreter start, imports, registration included).
   (a) sql    the pure SQL macros (sql/embsql.sql on a plain duckdb connection) and one
              SELECT * FROM emb_anova(...), every column fetched;
   (d) anova  embsql.anova(con, file, ...) on a connection from embsql.connect(): the package's
              one-pass route, which the report's stage 1 on DuckDB shares;
   (c) run    embsql.report(...).run(con) on a connection from embsql.connect();
   (c0) before with --baseline PATH (another checkout): (c) with that checkout's embsql, in the
              same rounds, so before and after a change are measured side by side;
   (c') split the same steps one by one (column check, stage 1: the rows streamed through the
              accumulator, stage 2), then stage 2 once per section;
   (b) cli    with --cli: `embsql report FILE ... --format json --out /dev/null --no-progress`
              (needs embsql/render/); without --cli or without render: `embsql sql FILE ...`
              (command-line start, probe and SQL writing only), and the script says so.
3. A summary: best times, the ratio report / emb_anova (target <= 2), report / embsql.anova,
   after / before with --baseline, the peak RSS of each (target < 4 GB), and R2 of the report
   against emb_anova's (1e-9).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anova import NOISE, ROOT, SQL_FILE, human_bytes, verdict  # bench/ is not a package

TARGET_RATIO, TARGET_RSS = 2.0, 4 * 2**30
R2_TOLERANCE = 1e-9
VECTOR, GROUP, BY = "embedding", "topic", "model"
MODEL_NOISE = {"model_a": NOISE, "model_b": 1.2 * NOISE}  # two models of different quality
EMBSQL = Path(sys.executable).with_name("embsql")


# ---------------------------------------------------------------------------------------------
# Data (run in a child process, so the parent stays small: a forked child's ru_maxrss can
# include its parent's pages at the time of the fork)
# ---------------------------------------------------------------------------------------------
def write_parquet(path: Path, n: int, d: int, groups: int, seed: int, chunk: int) -> None:
    """n rows: n / 2 items, each embedded by both models; one topic per item; the rows of model_a
    first.  Per model each topic has a random unit centre and a vector is centre + noise * N(0, I/d),
    normalised in float32 (anova.generate's model, with fixed labels shared by the models)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    items = n // len(MODEL_NOISE)
    labels = rng.integers(0, groups, items, dtype=np.int32)
    names = np.array([f"topic_{g:05d}" for g in range(groups)], dtype=object)
    schema = pa.schema([("item", pa.int64()), ("model", pa.string()), ("topic", pa.string()),
                        ("embedding", pa.list_(pa.float32()))])
    tmp = path.with_name(path.name + ".partial")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for model, noise in MODEL_NOISE.items():
            centres = rng.standard_normal((groups, d), dtype=np.float32)
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
            scale = np.float32(noise / np.sqrt(d))
            for start in range(0, items, chunk):
                rows = min(chunk, items - start)
                own = labels[start:start + rows]
                x = rng.standard_normal((rows, d), dtype=np.float32)
                x *= scale
                x += centres[own]
                x /= np.linalg.norm(x, axis=1, keepdims=True)
                writer.write_table(pa.table({
                    "item": pa.array(np.arange(start, start + rows, dtype=np.int64)),
                    "model": pa.array([model] * rows, pa.string()),
                    "topic": pa.array(names[own], pa.string()),
                    "embedding": pa.ListArray.from_arrays(
                        pa.array(np.arange(0, (rows + 1) * d, d, dtype=np.int32)), pa.array(x.reshape(-1))),
                }, schema=schema), row_group_size=chunk)
    tmp.rename(path)


# ---------------------------------------------------------------------------------------------
# The children: each prints one JSON line (its own timings and results) as its last output
# ---------------------------------------------------------------------------------------------
def child_sql(path: str) -> dict:
    """(a) The pure SQL macros on a plain duckdb connection."""
    import duckdb

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute(SQL_FILE.read_text(encoding="utf-8"))
    t1 = time.perf_counter()
    cur = con.execute(f"SELECT * FROM emb_anova('{path}', '{GROUP}', '{VECTOR}', model := '{BY}')")
    names = [c[0] for c in cur.description]
    rows = [dict(zip(names, row)) for row in cur.fetchall()]
    t2 = time.perf_counter()
    return {"t_setup": t1 - t0, "t_work": t2 - t1, "r2": {row[BY]: row["r2"] for row in rows}}


def _report(path: str):
    import embsql

    return embsql.report(path, vector=VECTOR, group=GROUP, model=BY, permutations=0)


def child_run(path: str) -> dict:
    """(c) embsql.report(...).run(con), as a user calls it."""
    import embsql

    t0 = time.perf_counter()
    con = embsql.connect()
    t1 = time.perf_counter()
    result = _report(path).run(con, progress=False)
    t2 = time.perf_counter()
    return {"t_setup": t1 - t0, "t_work": t2 - t1, "r2": {row["model"]: row["r2"] for row in result.summary.to_dicts()}}


def child_anova(path: str) -> dict:
    """(d) embsql.anova(con, file, ...), the package's one-pass route."""
    import embsql

    t0 = time.perf_counter()
    con = embsql.connect()
    t1 = time.perf_counter()
    rows = embsql.anova(con, path, group=GROUP, vector=VECTOR, model=BY).to_dicts()
    t2 = time.perf_counter()
    return {"t_setup": t1 - t0, "t_work": t2 - t1, "r2": {row[BY]: row["r2"] for row in rows}}


def child_split(path: str) -> dict:
    """(c') The steps of Report.run one by one (as run and run_stage1 do them), then stage 2 per section."""
    import importlib

    import embsql
    from embsql.io import duckdb_sums
    from embsql.io.sources import source_expression

    report_module = importlib.import_module("embsql.reporting.build")  # the module that builds reports

    def timed(fn):
        t = time.perf_counter()
        value = fn()
        return value, time.perf_counter() - t

    t0 = time.perf_counter()
    con = embsql.connect()
    rep = _report(path)
    t_setup = time.perf_counter() - t0
    steps = {}
    _, steps["check columns"] = timed(lambda: rep.check_columns(con))
    streamed, steps["stage 1 (rows streamed)"] = timed(lambda: duckdb_sums.streamed_sums(
        con, rep.source, source_expression(rep.source), rep.group, rep.vector, rep.model))
    parts = streamed.parts
    result, steps["stage 2 (all sections)"] = timed(lambda: rep.finish(parts, con=con, meta={}, progress=False))
    sections = {}
    for section in report_module.DEFAULT_SECTIONS:
        alone = rep.replace(sections=(section,))
        _, sections[section] = timed(lambda: alone.finish(parts, con=con, meta={}, progress=False))  # noqa: B023
    return {"t_setup": t_setup, "t_work": sum(steps.values()), "steps": steps, "sections": sections,
            "rows": sum(len(sums.counts) for _, sums in parts),
            "r2": {row["model"]: row["r2"] for row in result.summary.to_dicts()}}


def child_generate(path: str, n: int, d: int, groups: int, seed: int, chunk: int) -> dict:
    t0 = time.perf_counter()
    write_parquet(Path(path), n, d, groups, seed, chunk)
    return {"t_work": time.perf_counter() - t0}


CHILDREN = {"sql": child_sql, "anova": child_anova, "run": child_run, "split": child_split}


# ---------------------------------------------------------------------------------------------
# Running a child: wall time and its own peak RSS
# ---------------------------------------------------------------------------------------------
def spawn(argv: list[str], checkout: Path = ROOT) -> dict:
    """Run argv to completion with ``checkout``'s embsql; return wall time, peak RSS (bytes, os.wait4)
    and its JSON line (if any)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=checkout)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode}:\n{stderr[-3000:]}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    info = json.loads(lines[-1]) if lines else {}
    return {**info, "wall": wall, "rss": usage.ru_maxrss * 1024}


def child_argv(kind: str, path: Path, render: bool) -> tuple[list[str], str]:
    """The command of one measurement, and its label."""
    if kind == "cli":
        common = [str(path), "--vector", VECTOR, "--group", GROUP, "--model", BY]
        if render:
            return ([str(EMBSQL), "report", *common, "--permutations", "0", "--format", "json", "--out", "/dev/null",
                     "--no-progress"], "(b) embsql report (command line)")
        return [str(EMBSQL), "sql", *common], "(b) embsql sql (command line)"
    labels = {"sql": "(a) emb_anova SQL", "anova": "(d) embsql.anova(con)", "run": "(c) report.run(con)",
              "before": "(c0) report.run(con), --baseline", "split": "(c') report steps one by one"}
    child = "run" if kind == "before" else kind     # the same child, with the baseline's embsql
    return [sys.executable, str(Path(__file__).resolve()), "--child", child, str(path)], labels[kind]


def has_render() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import embsql.render.formats"], cwd=ROOT, capture_output=True, check=False,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    return probe.returncode == 0


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000, help="rows (both models together; default 1,000,000)")
    p.add_argument("--d", type=int, default=384, help="vector dimension (default 384)")
    p.add_argument("--groups", type=int, default=5000, help="topics (default 5000)")
    p.add_argument("--repeats", type=int, default=2, help="rounds of measurements; best of these (default 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the data (default 0)")
    p.add_argument("--chunk", type=int, default=100_000, help="rows per generated chunk and row group")
    p.add_argument("--data", type=Path, help="the Parquet file (default /work/tmp/bench_report_<n>_<d>_<groups>_<seed>"
                                             ".parquet); generated if missing, else reused")
    p.add_argument("--cli", action="store_true", help="also run (b) `embsql report` on the command line "
                                                      "(needs embsql/render/; else `embsql sql` is timed)")
    p.add_argument("--no-split", action="store_true", help="skip (c'), the step-by-step profile")
    p.add_argument("--baseline", type=Path, help="another checkout: its report.run is timed in the same rounds (c0)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        if kind == "generate":
            info = child_generate(rest[0], *map(int, rest[1:]))
        else:
            info = CHILDREN[kind](rest[0])
        print(json.dumps(info, default=str))
        return 0

    path = args.data or Path("/work/tmp") / f"bench_report_{args.n}_{args.d}_{args.groups}_{args.seed}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        print(f"data: reusing {path} ({human_bytes(path.stat().st_size)})", flush=True)
    else:
        print(f"data: writing {path} (n={args.n:,} d={args.d} groups={args.groups} seed={args.seed}) ...", flush=True)
        info = spawn([sys.executable, str(Path(__file__).resolve()), "--child", "generate", str(path),
                      str(args.n), str(args.d), str(args.groups), str(args.seed), str(args.chunk)])
        print(f"      written in {info['t_work']:.1f} s, {human_bytes(path.stat().st_size)}", flush=True)

    render = has_render()
    kinds = ["sql", "anova", "run"] + (["before"] if args.baseline else []) + ([] if args.no_split else ["split"]) + ["cli"]
    note = ""
    if args.cli and not render:
        note = ("embsql.render.formats is not importable here, so (b) times `embsql sql` (probe + SQL writing), "
                "not `embsql report`")
    elif not args.cli:
        note = "(b) without --cli times `embsql sql` (probe + SQL writing); pass --cli for `embsql report`"
    use_report_cli = args.cli and render
    import duckdb

    import embsql

    print(f"embsql {embsql.__version__}, duckdb {duckdb.__version__}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores; {args.repeats} rounds of fresh child processes", flush=True)
    if note:
        print(f"note: {note}", flush=True)
    runs = {kind: [] for kind in kinds}
    for round_ in range(args.repeats):
        print(f"\nround {round_ + 1} (load average {load()})", flush=True)
        for kind in kinds:
            argv_, label = child_argv(kind, path, use_report_cli)
            info = spawn(argv_, args.baseline.resolve() if kind == "before" else ROOT)
            runs[kind].append(info)
            work = f"work {info['t_work']:7.2f} s + setup {info['t_setup']:.2f} s, " if "t_work" in info else ""
            print(f"  {label:<36} {work}process {info['wall']:7.2f} s, peak RSS {info['rss'] / 2**20:7,.0f} MB",
                  flush=True)

    best = {kind: min(r, key=lambda info: info.get("t_work", info["wall"])) for kind, r in runs.items()}
    peak = {kind: max(info["rss"] for info in r) for kind, r in runs.items()}
    if "split" in best:
        split = best["split"]
        print(f"\n(c') fastest step-by-step run ({split['rows']:,} stage-1 rows):", flush=True)
        for step, t in split["steps"].items():
            print(f"    {step:<24} {t:8.3f} s", flush=True)
        print("    stage 2 alone per section (each includes the decomposition every call does): "
              + ", ".join(f"{s} {t:.2f} s" for s, t in split["sections"].items()), flush=True)

    print("\nR2 per model:", flush=True)
    ok = True
    for model, r2 in best["sql"]["r2"].items():
        others = {kind: best[kind]["r2"].get(model) for kind in ("anova", "run", "before", "split") if kind in best}
        worst = max(abs(r2 - v) for v in others.values())
        ok &= worst <= R2_TOLERANCE
        print(f"    {model}: emb_anova {r2:.15f}; report " + ", ".join(f"{k} {v:.15f}" for k, v in others.items())
              + f"  max |difference| {worst:.1e} -> {'OK' if worst <= R2_TOLERANCE else 'MISMATCH'}"
              f" (tolerance {R2_TOLERANCE:g})", flush=True)

    t_sql, t_run = best["sql"]["t_work"], best["run"]["t_work"]
    w_sql, w_run, w_cli = best["sql"]["wall"], best["run"]["wall"], best["cli"]["wall"]
    ratio, ratio_process = t_run / t_sql, w_run / w_sql
    worst_rss = max(peak.values())
    print("\n" + "=" * 100)
    print(f"report n={args.n:,} d={args.d} G={args.groups} models={len(MODEL_NOISE)} (best of {args.repeats}; "
          f"load average at the end {load()})")
    print(f"  (a) emb_anova SQL          {t_sql:8.2f} s  (process {w_sql:6.2f} s)  peak RSS {peak['sql'] / 2**20:7,.0f} MB")
    print(f"  (d) embsql.anova(con)      {best['anova']['t_work']:8.2f} s  (process {best['anova']['wall']:6.2f} s)  "
          f"peak RSS {peak['anova'] / 2**20:7,.0f} MB")
    print(f"  (c) report.run(con)        {t_run:8.2f} s  (process {w_run:6.2f} s)  peak RSS {peak['run'] / 2**20:7,.0f} MB")
    if "before" in best:
        print(f"  (c0) report.run, baseline  {best['before']['t_work']:8.2f} s  (process {best['before']['wall']:6.2f} s)  "
              f"peak RSS {peak['before'] / 2**20:7,.0f} MB")
    cli_label = "embsql report" if use_report_cli else "embsql sql"
    print(f"  (b) {cli_label:<22}            (process {w_cli:6.2f} s)  peak RSS {peak['cli'] / 2**20:7,.0f} MB")
    print(f"  ratio report / emb_anova: {ratio:.2f} (work), {ratio_process:.2f} (whole processes) "
          f"{verdict(ratio, TARGET_RATIO, True)}")
    rounds = [r["t_work"] / s["t_work"] for r, s in zip(runs["run"], runs["sql"])]
    print(f"  the same ratio within each round (side by side): {', '.join(f'{x:.2f}' for x in rounds)}")
    print(f"  ratio report / embsql.anova: {t_run / best['anova']['t_work']:.2f} (work; the report adds the groups, "
          "jackknife, bootstrap and compare sections to the decomposition)")
    if "before" in best:
        paired = [r["t_work"] / b["t_work"] for r, b in zip(runs["run"], runs["before"])]
        print(f"  ratio report after / before (--baseline): {t_run / best['before']['t_work']:.2f} (work); within each "
              f"round: {', '.join(f'{x:.2f}' for x in paired)}")
    if use_report_cli:
        print(f"  ratio embsql report (command line) / emb_anova process: {w_cli / w_sql:.2f} "
              f"{verdict(w_cli / w_sql, TARGET_RATIO, True)}")
    print(f"  peak RSS, largest of all children: {worst_rss / 2**20:,.0f} MB "
          f"{'(target < 4 GB: met)' if worst_rss < TARGET_RSS else '(target < 4 GB: NOT met)'}")
    print(f"  R2 report vs emb_anova: {'OK' if ok else 'MISMATCH'} (1e-9)")
    if note:
        print(f"  note: {note}")
    print("=" * 100, flush=True)
    return 0 if ok and ratio <= TARGET_RATIO and worst_rss < TARGET_RSS else 1


if __name__ == "__main__":
    sys.exit(main())
