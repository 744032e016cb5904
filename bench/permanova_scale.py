"""Benchmark: PERMANOVA's permutations at 10^5 rows against the limit of the coordinates route.

    nice python bench/permanova_scale.py [--n 100000] [--permutations 999]

The limit is the B.n.d adds that regrouping the vectors costs, run in full as a plain numpy/scipy
scatter-add of the same adds: for each permutation a sparse G x n indicator times the n x d float32
rows (one pass over the rows per permutation).  embsql's kernel is core.permutation.permanova_vectors
on the same unit vectors, timed in full (999 permutations, the observed F included), warm (each is run
once on a small case first).  Designs: n rows, d = 384, in groups of 4 (n/4 groups) and of 50.
Printed: both times, the ratio embsql / limit (issue 31 asks at most 2), and the machine's load.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy import sparse

from embsql.core.permutation import design, permanova_vectors

D = 384


def rows(n: int, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) // size
    x = rng.standard_normal((n, D), dtype=np.float32) + 0.3 * rng.standard_normal((n // size, D), dtype=np.float32)[labels]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float64), labels


def limit(x: np.ndarray, labels: np.ndarray, permutations: int, seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    x32 = x.astype(np.float32)
    n, groups = len(labels), int(labels.max()) + 1
    ones = np.ones(n, np.float32)
    start = time.perf_counter()
    for _ in range(permutations):
        sums = sparse.csr_matrix((ones, (labels, rng.permutation(n))), shape=(groups, n)) @ x32
        float(np.einsum("gk,gk->", sums, sums))
    return time.perf_counter() - start


def ours(x: np.ndarray, labels: np.ndarray, permutations: int) -> float:
    start = time.perf_counter()
    permanova_vectors(x, design(labels), permutations=permutations, seed=1, method="coordinates")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--permutations", type=int, default=999)
    args = parser.parse_args()
    warm_x, warm_labels = rows(4_000, 4)
    ours(warm_x, warm_labels, 9), limit(warm_x, warm_labels, 9)
    print(f"n = {args.n:,}, d = {D}, {args.permutations} permutations; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f} at the start")
    for size in (4, 50):
        x, labels = rows(args.n, size)
        t_limit = limit(x, labels, args.permutations)
        t_ours = ours(x, labels, args.permutations)
        print(f"groups of {size:>2} ({args.n // size:,} groups): limit {t_limit:7.1f} s, embsql {t_ours:7.1f} s, "
              f"ratio {t_ours / t_limit:.2f} (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
