"""Benchmark: the default report as the table grows, section by section, with its limit beside it.

    nice python bench/report_scale.py [--sizes 10000 100000 1000000] [--timeout 600] [--permutations 999]

Data: 2 models x n rows each, d = 384 float32, groups of 50 (a shared direction plus a group
direction plus noise), written once per size to a Parquet file under --dir.  For each size:
- each section of the default report alone (`embsql.report(file, ..., sections=(s,)).run()`) and
  then the whole default report, every one in a fresh child process, timed in full with its peak
  memory (the child's maximum resident set); a run past --timeout is stopped and printed as such;
- with --whole, instead: the default report once, in a fresh child process, each section's time
  within it (the first test section also reads the rows) and the permutations each test ran;
- the limit: the adds a permutation test cannot avoid on the coordinates route, B permutations of
  the per-group vector sums of every model (B.n.d adds), run in full as a plain numpy scatter-add
  (a sparse indicator product per block of rows), so the growth of each section is read against it.
Nothing here builds an n x n matrix.  Print the machine's load beside each size: these machines
are noisy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DIM = 384
GROUP_SIZE = 50
CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
import embsql
sections = {sections!r}
start = time.perf_counter()
kwargs = dict(sections=sections) if sections else {{}}
embsql.report({path!r}, vector="v", group="g", model="model", permutations={permutations}, **kwargs).run(progress=False)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


# --whole: the default report once, each section timed inside it (the rows are read by the first test section)
WHOLE = """
import dataclasses, json, resource, sys, time
sys.path.insert(0, {root!r})
import embsql
from embsql.reporting import sections as registry
times = {{}}
for name, entry in list(registry.REGISTRY.items()):
    def timed(e, run, _build=entry.build, _name=name):
        start = time.perf_counter()
        try:
            return _build(e, run)
        finally:
            times[_name] = time.perf_counter() - start
    registry.REGISTRY[name] = dataclasses.replace(entry, build=timed)
start = time.perf_counter()
result = embsql.report({path!r}, vector="v", group="g", model="model", permutations={permutations}).run(progress=False)
total = time.perf_counter() - start
ran = {{s.name: [row.get("permutations") for row in s.table.to_dicts()] for s in result.sections
       if s.name in ("permanova", "dispersion")}}
print(json.dumps({{"total": total, "sections": times, "permutations": ran,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}}))
"""


def run_whole(path: Path, permutations: int, timeout: float) -> list[str]:
    """The default report in one child process, each section's time within it, and stage 1 (the rest)."""
    import json

    code = WHOLE.format(root=str(ROOT), path=str(path), permutations=permutations)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"  {'the default report, all sections':34s} stopped after {timeout:.0f} s"]
    if out.returncode != 0:
        return ["  failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:120]]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    lines = [f"  {'stage 1 and the rest':34s} {found['total'] - sum(found['sections'].values()):9.1f} s"]
    for name, seconds in found["sections"].items():
        ran = found["permutations"].get(name)
        lines.append(f"  {name:34s} {seconds:9.1f} s" + (f"  (permutations run per model: {ran})" if ran else ""))
    lines.append(f"  {'the default report, all sections':34s} {found['total']:9.1f} s, "
                 f"peak {found['peak'] / 2**30:5.2f} GiB")
    return lines


def write_table(path: Path, n: int, seed: int = 0) -> None:
    """2 models x n rows, written in chunks so the generator never holds the whole table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    groups = max(2, n // GROUP_SIZE)
    writer = None
    try:
        for model, signal in (("model_a", 0.6), ("model_b", 0.4)):
            common = rng.standard_normal(DIM).astype(np.float32)
            centres = rng.standard_normal((groups, DIM)).astype(np.float32)
            for start in range(0, n, 50_000):
                rows = np.arange(start, min(n, start + 50_000))
                g = rows % groups
                x = 2.0 * common + signal * centres[g] + rng.standard_normal((len(rows), DIM)).astype(np.float32)
                table = pa.table({
                    "model": pa.array([model] * len(rows)),
                    "g": pa.array([f"g{k:06d}" for k in g]),
                    "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()), DIM).cast(
                        pa.list_(pa.float32())),
                })
                writer = writer or pq.ParquetWriter(path, table.schema)
                writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def run_child(path: Path, sections: tuple[str, ...], permutations: int, timeout: float) -> str:
    code = CHILD.format(root=str(ROOT), sections=sections, path=str(path), permutations=permutations)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"stopped after {timeout:.0f} s"
    if out.returncode != 0:
        return "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:120]
    seconds, peak = out.stdout.split()[-2:]
    return f"{float(seconds):9.1f} s, peak {int(peak) / 2**30:5.2f} GiB"


def limit_seconds(n: int, permutations: int, seed: int = 0) -> float:
    """B permutations of the per-group sums of 2 models of n rows (B.n.d adds per model), in full:
    a sparse G x rows indicator times each block of rows, the rows read once per block of 32
    permutations."""
    from scipy import sparse

    rng = np.random.default_rng(seed)
    groups = max(2, n // GROUP_SIZE)
    labels = np.arange(n) % groups
    start = time.perf_counter()
    for _ in range(2):                           # two models
        x = rng.standard_normal((n, DIM)).astype(np.float32)
        for first in range(0, permutations, 32):
            block = [rng.permutation(labels) for _ in range(min(32, permutations - first))]
            for perm in block:
                indicator = sparse.csr_matrix((np.ones(n, np.float32), (perm, np.arange(n))), shape=(groups, n))
                indicator @ x
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a child may run (default 600)")
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the Parquet files are written")
    parser.add_argument("--no-limit", action="store_true", help="skip the numpy limit (minutes at 10^6 rows)")
    parser.add_argument("--whole", action="store_true",
                        help="run the default report once per size, each section timed inside it (not alone)")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    import embsql
    from embsql.reporting.build import DEFAULT_SECTIONS, ROW_SECTIONS

    sections = DEFAULT_SECTIONS + ROW_SECTIONS[:2]   # the descriptive sections, then PERMANOVA and dispersion
    print(f"embsql {embsql.__version__}, {os.cpu_count()} cores; 2 models x n rows, d = {DIM} float32, "
          f"groups of {GROUP_SIZE}, {args.permutations} permutations; each run a fresh process", flush=True)
    for n in args.sizes:
        path = args.dir / f"embsql_report_scale_{n}.parquet"
        if not path.exists():
            write_table(path, n)
        print(f"\nn = {n:,} per model (load {os.getloadavg()[0]:.1f})", flush=True)
        if not args.no_limit:
            print(f"  {'limit: B.n.d adds in numpy':34s} {limit_seconds(n, args.permutations):9.1f} s", flush=True)
        if args.whole:
            print("\n".join(run_whole(path, args.permutations, args.timeout)), flush=True)
            continue
        for section in sections:
            print(f"  {section:34s} {run_child(path, (section,), args.permutations, args.timeout)}", flush=True)
        print(f"  {'the default report, all sections':34s} {run_child(path, (), args.permutations, args.timeout)}",
              flush=True)


if __name__ == "__main__":
    main()
