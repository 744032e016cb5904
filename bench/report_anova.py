"""Benchmark: the report on DuckDB against embsql.anova on the same table (issue 22, item 12).

    python bench/report_anova.py [--n 200000] [--d 384] [--groups 5000] [--rounds 5] [--baseline PATH]

The table is bench/engines.py's (2 models of n/2 items with the same topics, float32 vectors,
seeded), loaded into an in-memory DuckDB table as engines.py loads it.  Three things are timed,
warm (each once untimed first) and in full, in alternating rounds (best of --rounds):

    anova     embsql.anova(con, "emb", group="topic", vector="vec", model="model")
    decomp    embsql.report("emb", ..., sections=["decomposition"]).run(con)
    report    the same report with engines.py's sections: decomposition, jackknife, bootstrap
              (2000 replicates) and compare

Each checkout runs in a worker process of its own (PYTHONPATH = the checkout), which builds the
table once and then times what it is told, one measurement at a time: with --baseline PATH
(another checkout, e.g. the commit before a change) the workers take turns within each round, so
before and after are measured side by side under the same load.  Printed: every time, the ratios
report / anova per checkout (target: decomp <= 1.3 x anova), after / before, and the largest
relative difference of every figure between the checkouts (it must be rounding: <= 1e-9).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.3        # the report on DuckDB at most this times embsql.anova
FIGURES_TOLERANCE = 1e-9
SECTIONS = ["decomposition", "jackknife", "bootstrap", "compare"]
KINDS = ("anova", "decomp", "report")


# ---------------------------------------------------------------------------------------------
# The worker: one checkout, one table, one measurement per command line on stdin
# ---------------------------------------------------------------------------------------------
def worker(n: int, d: int, groups: int, seed: int) -> None:
    import embsql
    from embsql.engines.connections import load_table

    sys.path.insert(0, str(Path.cwd() / "bench"))   # the checkout's own engines.py (it imports its embsql)
    from engines import make_table

    con = embsql.connect()
    load_table(con, "emb", make_table(n, d, groups, seed))
    jobs = {
        "anova": lambda: embsql.anova(con, "emb", group="topic", vector="vec", model="model"),
        "decomp": lambda: embsql.report("emb", vector="vec", group="topic", model="model",
                                        sections=["decomposition"]).run(con),
        "report": lambda: embsql.report("emb", vector="vec", group="topic", model="model", sections=SECTIONS,
                                        replicates=2000, seed=5).run(con),
    }
    print(json.dumps({"ready": embsql.__file__}), flush=True)
    for line in sys.stdin:
        kind = line.strip()
        start = time.perf_counter()
        result = jobs[kind]()
        elapsed = time.perf_counter() - start
        print(json.dumps({"time": elapsed, "figures": figures(result)}), flush=True)


def figures(result) -> dict:
    """Every float of a result (the anova table, or every section of a report), keyed by position."""
    tables = {"anova": result} if hasattr(result, "to_dicts") else {s.name: s.table for s in result.sections}
    return {f"{name}|{i}|{column}": value for name, table in tables.items()
            for i, row in enumerate(table.to_dicts()) for column, value in row.items() if isinstance(value, float)}


class Worker:
    def __init__(self, checkout: Path, args):
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.checkout = checkout
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(args.n),
                                      str(args.d), str(args.groups), str(args.seed)], env=env, cwd=checkout,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._read()
        self.module = ready["ready"]

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the worker for {self.checkout} stopped (exit {self.proc.wait()})")
        return json.loads(line)

    def run(self, kind: str) -> dict:
        self.proc.stdin.write(kind + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200_000, help="rows (two models of n/2 items)")
    p.add_argument("--d", type=int, default=384)
    p.add_argument("--groups", type=int, default=5000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--baseline", type=Path, help="another checkout, timed in turn with this one")
    p.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0

    print(f"report_anova n={args.n:,} d={args.d} G={args.groups} (2 models); {os.cpu_count()} cores, "
          f"load average {load()} at the start", flush=True)
    checkouts = {"after": ROOT} | ({"before": args.baseline.resolve()} if args.baseline else {})
    t0 = time.perf_counter()
    workers = {name: Worker(path, args) for name, path in checkouts.items()}
    print(f"workers ready in {time.perf_counter() - t0:.1f} s: "
          + ", ".join(f"{name} {w.module}" for name, w in workers.items()), flush=True)
    figs = {}
    for name, w in workers.items():          # warm: every kind once, untimed
        for kind in KINDS:
            figs[name, kind] = w.run(kind)["figures"]
    times = {(name, kind): [] for name in workers for kind in KINDS}
    for round_ in range(args.rounds):
        order = list(workers) if round_ % 2 == 0 else list(workers)[::-1]
        for kind in KINDS:
            for name in order:
                times[name, kind].append(workers[name].run(kind)["time"])
        print(f"round {round_ + 1} (load {load()}): " + "; ".join(
            f"{name} " + " ".join(f"{kind} {times[name, kind][-1]:.2f}" for kind in KINDS) for name in order), flush=True)
    for w in workers.values():
        w.close()

    best = {key: min(value) for key, value in times.items()}
    ok = True
    print(f"\nbest of {args.rounds} rounds (s); load average at the end {load()}")
    print(f"  {'checkout':8} {'anova':>7} {'decomp':>7} {'report':>7} {'decomp/anova':>13} {'report/anova':>13}")
    for name in workers:
        a, dec, rep = (best[name, kind] for kind in KINDS)
        print(f"  {name:8} {a:7.2f} {dec:7.2f} {rep:7.2f} {dec / a:13.2f} {rep / a:13.2f}")
        rounds = [x / y for x, y in zip(times[name, "decomp"], times[name, "anova"])]
        print(f"  {'':8} decomp/anova within each round: {', '.join(f'{x:.2f}' for x in rounds)}")
    dec_ratio = best["after", "decomp"] / best["after", "anova"]
    ok &= dec_ratio <= TARGET
    print(f"  the decomposition-only report / embsql.anova: {dec_ratio:.2f} (target <= {TARGET}: "
          f"{'met' if dec_ratio <= TARGET else 'NOT met'})")
    if "before" in workers:
        for kind in KINDS:
            print(f"  {kind:7} after / before: {best['after', kind] / best['before', kind]:.2f}")
        for kind in KINDS:
            new, old = figs["after", kind], figs["before", kind]
            if new.keys() != old.keys():
                print(f"  {kind}: the checkouts' figures differ in kind: {sorted(set(new) ^ set(old))[:4]}")
                ok = False
                continue
            worst = max((abs(new[k] - v) / max(abs(v), 1e-300) for k, v in old.items() if new[k] != v), default=0.0)
            ok &= worst <= FIGURES_TOLERANCE
            print(f"  {kind:7} figures after vs before: {len(old)} figures, largest relative difference {worst:.1e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
