"""Benchmark: PERMANOVA's permutations against the limit, the B.n.d adds of the permuted group sums (issue 31).

    nice python bench/permanova_limit.py [N] [PERMUTATIONS] [BEFORE]    # defaults 100000 999

BEFORE, optional: the path of another copy of embsql/core/permutation.py (say main's, from
``git show main:embsql/core/permutation.py > /tmp/before.py``), whose permanova_vectors is timed beside.

n float32 unit vectors, d = 384, in two designs: groups of 4 (n/4 groups) and of 50 (n/50 groups).
Side by side in one run, each warm (run once on a small case first) and timed in full, twice (the second
round in reverse order; the best of the two is compared, both are printed):

  * the limit: for each permutation the group sums of the permuted rows and SS_W from them, in plain
    numpy.  The fastest plain-numpy way found (bench/README.md): gather the permuted rows 2,048 at a time
    (so the copy stays in cache) and sum each group by a reshape, ``x[rows].reshape(-1, size, d).sum(1)``
    (np.add.reduceat on axis 0 was 4-10x slower, np.add.at about 10x).  numpy runs it on one thread; the
    limit is the faster of that and the same loop with the permutations shared between 2 threads
    (ThreadPoolExecutor; the gathers and sums release the GIL).  The permutations are drawn before
    the clock starts (embsql's own time includes drawing them), the same ones embsql draws.
  * embsql: core.permutation.permanova_vectors (the kernel the face uses), method 'auto' (printed),
    999 permutations, the observed F included.

A third figure tests whether reading the rows from memory is what costs (if it were, blocking the
permutations so that each row is read once per block would pay): the limit's loop on one thread with
every row index taken modulo 2,000, so the same adds read only the first 2,000 rows (3 MB, in cache).

Printed: the times, the ratio embsql / limit (issue 31 asks at most 2), the p-values (the same
permutations, so they must agree), and the load average at the start and after each design.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from embsql.core.permutation import Design, choose_method, permanova_vectors, pseudo_f, reaches, shuffles

D = 384
CHUNK = 2048
CACHED_ROWS = 2000


def rows(n: int, size: int, seed: int = 0) -> tuple[np.ndarray, Design]:
    """Unit vectors in groups of ``size``, in canonical (sorted label) order; no group effect, so p is
    uniform and the two p-values' agreement means something."""
    rng = np.random.default_rng(seed)
    codes = np.arange(n) // size
    x = rng.standard_normal((n, D), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, Design(codes.astype(np.int64), np.zeros(n, np.int64), n // size)


def ss_within(x: np.ndarray, perm: np.ndarray, size: int) -> float:
    """SS_W of the rows regrouped by ``perm`` (item perm[i] takes row i's label): n - sum_g ||s_g||^2 / n_g."""
    step = CHUNK // size * size
    between = 0.0
    for low in range(0, len(perm), step):
        sums = x[perm[low:low + step]].reshape(-1, size, x.shape[1]).sum(axis=1)
        between += float(np.vdot(sums, sums))
    return len(perm) - between / size


def limit(x: np.ndarray, perms: list[np.ndarray], size: int, threads: int) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    if threads == 1:
        ss_w = [ss_within(x, p, size) for p in perms]
    else:
        with ThreadPoolExecutor(threads) as pool:
            ss_w = list(pool.map(lambda p: ss_within(x, p, size), perms))
    return time.perf_counter() - start, np.array(ss_w)


def timed(kernel: Callable[..., Any], x: np.ndarray, d: Design, permutations: int) -> tuple[float, Any]:
    start = time.perf_counter()
    out = kernel(x, d, permutations=permutations, seed=42)
    return time.perf_counter() - start, out


def before_kernel(path: str) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location("permutation_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.permanova_vectors


def shown(times: list[float]) -> str:
    return f"{min(times):.1f} s (" + " and ".join(f"{t:.1f}" for t in times) + ")"


def design_line(n: int, size: int, permutations: int, before: Callable[..., Any] | None) -> str:
    """Each run twice, the second round in reverse order; the best of each is compared."""
    x, d = rows(n, size)
    perms = list(shuffles(d, permutations, 42))
    runs: dict[str, Callable[[], tuple[float, Any]]] = {
        "1 thread": lambda: limit(x, perms, size, 1), "2 threads": lambda: limit(x, perms, size, 2),
        "embsql": lambda: timed(permanova_vectors, x, d, permutations)}
    if before is not None:
        runs["before"] = lambda: timed(before, x, d, permutations)
    times: dict[str, list[float]] = {name: [] for name in runs}
    out: dict[str, Any] = {}
    for order in (list(runs), list(runs)[::-1]):
        for name in order:
            seconds, out[name] = runs[name]()
            times[name].append(seconds)
    best = min(times["1 thread"] + times["2 threads"])
    cached, _ = limit(x, [p % CACHED_ROWS for p in perms], size, 1)
    total = x.sum(axis=0, dtype=np.float64)
    ss_t = n - float(total @ total) / n
    f = pseudo_f(ss_t, np.r_[ss_within(x, np.arange(n), size), out["1 thread"]], n, d.groups)
    p_limit = (int(reaches(f[0], f[1:]).sum()) + 1) / (permutations + 1)
    side = (f"; before {shown(times['before'])}, ratio {min(times['before']) / best:.2f}, "
            f"p {out['before'].p_value:.3f}" if before is not None else "")
    return (f"groups of {size} ({d.groups:,}; auto method {choose_method(n, D, d.codes, permutations)}): "
            f"limit {best:.1f} s (1 thread {shown(times['1 thread'])}, 2 threads {shown(times['2 threads'])}; "
            f"1 thread from {CACHED_ROWS:,} rows in cache {cached:.1f} s), embsql {shown(times['embsql'])} "
            f"({out['embsql'].method}), ratio {min(times['embsql']) / best:.2f}, p {out['embsql'].p_value:.3f} "
            f"(limit's {p_limit:.3f}){side}; load {os.getloadavg()[0]:.1f}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    permutations = int(sys.argv[2]) if len(sys.argv) > 2 else 999
    before = before_kernel(sys.argv[3]) if len(sys.argv) > 3 else None
    load = os.getloadavg()
    print(f"n = {n:,}, d = {D} float32, {permutations} permutations, {len(os.sched_getaffinity(0))} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}")
    warm_x, warm_d = rows(4000, 4)
    permanova_vectors(warm_x, warm_d, permutations=9)
    if before is not None:
        before(warm_x, warm_d, permutations=9)
    limit(warm_x, list(shuffles(warm_d, 9, 1)), 4, 2)
    for size in (4, 50):
        print(design_line(n, size, permutations, before))

if __name__ == "__main__":
    main()
