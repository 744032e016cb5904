"""Benchmark: the dispersion test's coordinates kernel of another checkout against this one, side by side.

    git show 9c5e66f:embsql/core/dispersion.py > /tmp/old_dispersion.py
    PYTHONPATH=. python bench/dispersion_kernel_side.py 100000 8 --old /tmp/old_dispersion.py [--group 4] [--float32]

One model of n rows (d = 384, groups of --group (50), bench/report_scale.py's kind of data, float64 unit vectors
or, with --float32, float32 ones as a report stores them);
both kernels' AlignedPermutations(..., "coordinates").batch on the same permutations, alternating, --rounds
rounds: the wall time per permutation (and the best round of each), and whether the permuted F are the same bits.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from embsql.core import dispersion as new  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("permutations", type=int)
    parser.add_argument("--old", type=Path, required=True, help="another checkout's embsql/core/dispersion.py")
    parser.add_argument("--group", type=int, default=50, help="items per group")
    parser.add_argument("--float32", action="store_true", help="float32 unit vectors")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (the best of them is printed last)")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("old_dispersion", args.old)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules["old_dispersion"] = old
    spec.loader.exec_module(old)
    rng = np.random.default_rng(0)
    groups = args.n // args.group
    codes = np.sort(np.arange(args.n) % groups)
    x = 2 * rng.standard_normal(384) + 0.6 * rng.standard_normal((groups, 384))[codes] + rng.standard_normal((args.n, 384))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    if args.float32:
        unit = unit.astype(np.float32)
    print(f"n {args.n}, d 384, groups of {args.group}, {'float32' if args.float32 else 'float64'}", flush=True)
    kernels = {m.__name__: m.AlignedPermutations(unit, codes, groups, "coordinates", 999) for m in (old, new)}
    perms = [rng.permutation(args.n) for _ in range(args.permutations)]
    found, best = {}, dict.fromkeys(kernels, np.inf)
    for round_ in range(args.rounds):
        for name, kernel in kernels.items():
            start = time.perf_counter()
            found[name] = kernel.batch(perms)
            seconds = time.perf_counter() - start
            best[name] = min(best[name], seconds)
            print(f"round {round_} {name}: {1000 * seconds / len(perms):.1f} ms per permutation "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print("best round: " + ", ".join(f"{name} {1000 * s / len(perms):.1f} ms" for name, s in best.items())
          + f"; old / new {best['old_dispersion'] / best[new.__name__]:.2f}", flush=True)
    a, b = found.values()
    print("largest relative difference of the permuted F:", float(np.max(np.abs(a - b) / np.abs(a))),
          "identical:", bool(np.array_equal(a, b)))


if __name__ == "__main__":
    main()
