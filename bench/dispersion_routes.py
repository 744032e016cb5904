"""Measure the dispersion test's two routes (core.dispersion: coordinates and gram) to set its cost constants.

    nice python bench/dispersion_routes.py [--sizes 2000 10000] [--group 50] [--permutations 48]

For each n (one model, d = 384 unit vectors, groups of --group), BLAS held to one thread as the kernels hold it:
the time per permutation of each route's batch, and the time to build the gram route's float64 Gram matrix.
Printed per unit of dispersion_costs: ns per block-product multiply-add (coordinates), per Gram-build
multiply-add and per random read of the Gram matrix, and the last two over the first: DISPERSION_MAC and
DISPERSION_READ.  Say the machine's load beside the figures.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from embsql.core.dispersion import POLL_EVERY, CoordinateSums, GramSums, aligned_vectors
from embsql.core.permutation import one_blas_thread

DIM = 384


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--group", type=int, default=50)
    parser.add_argument("--permutations", type=int, default=3 * POLL_EVERY)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}; d = {DIM}, groups of {args.group}, {args.permutations} permutations")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        codes = np.repeat(np.arange(n // args.group), args.group)
        unit = rng.normal(size=(len(codes), DIM)) + rng.normal(size=(n // args.group, DIM))[codes]
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        vectors = aligned_vectors(unit, codes)
        groups = int(codes.max()) + 1
        perms = np.stack([rng.permutation(len(codes)) for _ in range(args.permutations)])
        sizes = np.bincount(codes).astype(float)
        units = float(np.sum(np.minimum(sizes * sizes * DIM, sizes * DIM * DIM)))
        coordinates = CoordinateSums(vectors, codes, groups)
        start = time.perf_counter()
        for low in range(0, len(perms), POLL_EVERY):
            coordinates.batch(perms[low:low + POLL_EVERY])
        per_coordinate = (time.perf_counter() - start) / len(perms)
        with one_blas_thread():
            start = time.perf_counter()
            gram = GramSums(vectors, codes, groups)
            build = time.perf_counter() - start
        start = time.perf_counter()
        for low in range(0, len(perms), POLL_EVERY):
            gram.batch(perms[low:low + POLL_EVERY])
        per_gram = (time.perf_counter() - start) / len(perms)
        unit_ns = per_coordinate / units * 1e9
        mac_ns = build / (len(codes) ** 2 * DIM / 2) * 1e9
        read_ns = per_gram / float(np.sum(sizes ** 2)) * 1e9
        print(f"n {len(codes)}: coordinates {per_coordinate * 1e3:.1f} ms/perm ({unit_ns:.3f} ns/unit); "
              f"gram build {build:.2f} s ({mac_ns:.3f} ns/MAC), {per_gram * 1e3:.1f} ms/perm ({read_ns:.2f} ns/read); "
              f"DISPERSION_MAC {mac_ns / unit_ns:.2f}, DISPERSION_READ {read_ns / unit_ns:.1f}")


if __name__ == "__main__":
    main()
