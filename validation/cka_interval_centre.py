"""Where to centre CKA's interval: coverage of the population CKA with and without the jackknife bias correction.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_interval_centre.py 16 400 > part16.txt
    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_interval_centre.py 384 400 > part384.txt

The designs, maps and population values of validation/cka_validity.py (its functions), the samples drawn from
another random stream.  Per sample, two 95% intervals from the debiased CKA's jackknife replicates, both
t_{G-1} on Fisher's z scale:
  corrected  centred on the bias-corrected jackknife estimate (embsql's interval before 2026-12-02)
  embsql     embsql.core.geometry.cka_interval now: centred on the debiased CKA itself
Cells: % of samples whose interval covers the population value ± Monte Carlo SE.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import cka_validity as cv
import numpy as np

from embsql.core import geometry
from embsql.core.resampling import jackknife_t_interval


def main() -> None:
    p, reps = int(sys.argv[1]), int(sys.argv[2])
    q = {16: 384, 384: 768}[p]
    noises = {16: (0.4, 1.6, 3.5), 384: (0.8, 1.6, 2.6)}
    structures = (("items", 40), ("equal groups of 5", 40), ("groups of 1-15", 30))
    k = cv.LATENT[p]
    print(f"# validation/cka_interval_centre.py {p} {reps} (numpy {np.__version__})")
    print(f"{'dims':>8} {'structure':>17} {'units':>5} {'pop':>6}  {'corrected':>12}  {'embsql':>12}")
    for noise in noises[p]:
        rng = np.random.default_rng(p * 1000 + int(noise * 100))      # as cka_validity.py: the same population
        a, b = cv.maps(rng, k, p, q)
        z, _ = cv.latent(rng, np.ones(cv.POPULATION, dtype=int), k, False)
        truth = cv.population(cv.embed(rng, z, a, noise * cv.NOISE_RATIO[p]), cv.embed(rng, z, b, noise))
        for structure, units in structures:
            draw = np.random.default_rng([99, p, int(noise * 100), units, len(structure)])
            corrected, ours = [], []
            start = time.perf_counter()
            for _ in range(reps):
                z, codes = cv.latent(draw, cv.sizes_of(draw, structure, units), k, structure != "items")
                x, y = cv.embed(draw, z, a, noise * cv.NOISE_RATIO[p]), cv.embed(draw, z, b, noise)
                grouped = structure != "items"
                d = geometry.pair_values(x, y, codes if grouped else None, units if grouped else 0).debiased
                _, low, high = jackknife_t_interval("cka", float(d[0]), d[1:], 0.95)
                corrected.append(low <= truth <= high)
                low, high, _ = geometry.cka_interval(d)
                ours.append(low <= truth <= high)
            print(f"{p:>3}/{q:<4} {structure:>17} {units:>5} {truth:6.3f}  {cv.coverage(corrected):>12}  "
                  f"{cv.coverage(ours):>12}   ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
