"""Benchmark: the Python faces of two checkouts side by side, to measure the cost of a change.

    python bench/before_after.py --baseline PATH [--n 20000] [--d 384] [--groups 200] [--rounds 3]

Each checkout runs in a worker process of its own (PYTHONPATH = the checkout), which builds the
same seeded table (n float32 vectors of dimension d, random group labels, two models) in an
in-memory DuckDB connection and then times one call per line it reads on stdin.  The calls are
keyword calls that both the current faces and the older ones accept:

    anova       embsql.anova(con, "t", group="g", vector="v", model="m")
    permanova   embsql.permanova(con, "t", group="g", vector="v", model="m", permutations=99, check_dispersion=False)
    jackknife   embsql.jackknife(con, "t", group="g", vector="v", model="m")
    bootstrap   embsql.bootstrap(con, "t", group="g", vector="v", model="m", replicates=200)

Every call is made once untimed first (warm), then timed in full, the two checkouts taking turns
within each round so that a change of load hits both.  Printed: the best time of each call per
checkout, after / before, and the largest relative difference of the figures between the two
(it must be rounding).
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
CALLS = {
    "anova": 'embsql.anova(con, "t", group="g", vector="v", model="m")',
    "permanova": 'embsql.permanova(con, "t", group="g", vector="v", model="m", permutations=99, check_dispersion=False)',
    "jackknife": 'embsql.jackknife(con, "t", group="g", vector="v", model="m")',
    "bootstrap": 'embsql.bootstrap(con, "t", group="g", vector="v", model="m", replicates=200)',
}


def worker(n: int, d: int, groups: int) -> None:
    """Build the table, then answer each call name on stdin with one JSON line: its time and figures."""
    import warnings

    import numpy as np
    import pyarrow as pa

    import embsql

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d)).astype(np.float32)
    labels = rng.integers(0, groups, n)
    x += 0.5 * rng.standard_normal((groups, d)).astype(np.float32)[labels]
    table = pa.table({"m": np.repeat(["a", "b"], [n // 2, n - n // 2]), "g": labels.astype(str),
                      "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d)})
    con = embsql.connect()
    con.register("t", table)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        call = CALLS[line.strip()]
        start = time.perf_counter()
        rows = eval(call).to_dicts()                     # noqa: S307 (the calls above, nothing else)
        seconds = time.perf_counter() - start
        figures = [v for row in rows for v in row.values() if isinstance(v, float)]
        print(json.dumps({"seconds": seconds, "figures": figures}), flush=True)


def start(checkout: Path, args: argparse.Namespace) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--n", str(args.n), "--d", str(args.d),
               "--groups", str(args.groups)]
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert json.loads(process.stdout.readline())["ready"]
    return process


def ask(process: subprocess.Popen, name: str) -> dict:
    process.stdin.write(name + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def relative_difference(a: list[float], b: list[float]) -> float:
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) / max(abs(x), abs(y), 1e-300) for x, y in zip(a, b, strict=True) if x != y), default=0.0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--baseline", type=Path, help="the other checkout (before the change)")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--d", type=int, default=384)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.n, args.d, args.groups)
        return 0
    if args.baseline is None:
        p.error("--baseline PATH is required")
    workers = {"after": start(ROOT, args), "before": start(args.baseline.resolve(), args)}
    print(f"before_after n={args.n:,} d={args.d} G={args.groups} (2 models); load {os.getloadavg()[0]:.2f} at the start")
    best: dict[tuple[str, str], float] = {}
    figures: dict[tuple[str, str], list[float]] = {}
    for name in CALLS:
        for who, process in workers.items():
            figures[who, name] = ask(process, name)["figures"]          # warm: once untimed
    for round_ in range(args.rounds):
        order = list(workers) if round_ % 2 == 0 else list(reversed(workers))
        for name in CALLS:
            for who in order:
                seconds = ask(workers[who], name)["seconds"]
                best[who, name] = min(best.get((who, name), float("inf")), seconds)
    for process in workers.values():
        process.stdin.close()
        process.wait()
    print(f"best of {args.rounds} rounds (s); load {os.getloadavg()[0]:.2f} at the end")
    print(f"  {'call':<10} {'before':>8} {'after':>8} {'after/before':>13} {'figures differ by':>18}")
    for name in CALLS:
        before, after = best["before", name], best["after", name]
        difference = relative_difference(figures["before", name], figures["after", name])
        print(f"  {name:<10} {before:8.2f} {after:8.2f} {after / before:13.2f} {difference:18.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
