"""Benchmark: embsql's PERMANOVA (999 permutations) against scikit-bio and vegan, side by side.

    python bench/permanova.py [--cases small,large,topics,huge] [--skbio-permutations 999]

Cases (d = 384, unit vectors with group structure, seeded):
  vegan   n = 1,000, groups of 4        embsql vs vegan adonis2 (timed with --vegan-permutations, scaled)
  small   n = 5,000, groups of 4        embsql vs scikit-bio (every engine it has)
  large   n = 20,000, groups of 4       embsql vs scikit-bio's best engine
  topics  n = 5,000, 10 groups of 500   embsql vs scikit-bio's best engine
  huge    n = 100,000, groups of 4      embsql only (scikit-bio would need an 80 GB matrix); peak memory
Every time includes building whatever each tool needs (embsql: reading the table from DuckDB and
the Gram matrix if it uses one; scikit-bio: the distance matrix; vegan: dist()).  Each tool's
pseudo-F must equal embsql's; the ratio printed is tool time / embsql time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import embsql
from embsql.core.permutation import choose_method

CASES = {"vegan": (1_000, 4), "small": (5_000, 4), "large": (20_000, 4), "topics": (5_000, 500),
         "huge": (100_000, 4)}
D, PERMUTATIONS = 384, 999


def data(n: int, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n // size), size)
    centres = rng.standard_normal((n // size, D))
    x = centres[labels] + 1.5 * rng.standard_normal((n, D))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), labels


def run_embsql(x, labels):
    con = embsql.connect()
    con.register("emb", pa.table({"g": labels, "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), D)}))
    start = time.perf_counter()
    result = embsql.permanova(con, "emb", "g", "v", permutations=PERMUTATIONS, seed=1, check_dispersion=False,
                              progress=False)
    return time.perf_counter() - start, result.f, result.p_value


def distance_matrix(x):
    """Euclidean distances in row blocks of float64 (one large product has crashed OpenBLAS here)."""
    x = x.astype(np.float64)
    out = np.empty((len(x), len(x)))
    for low in range(0, len(x), 2048):
        block = x[low:low + 2048]
        out[low:low + 2048] = np.sqrt(np.maximum(2.0 - 2.0 * block @ x.T, 0.0))
    np.fill_diagonal(out, 0.0)
    return out


def run_skbio(x, labels, engine, permutations):
    from skbio import DistanceMatrix
    from skbio.stats.distance import permanova

    start = time.perf_counter()
    dm = DistanceMatrix(distance_matrix(x), validate=False)
    result = permanova(dm, labels, permutations=permutations, seed=1, engine=engine)
    elapsed = time.perf_counter() - start
    return elapsed, float(result["test statistic"]), float(result["p-value"])


def run_vegan(x, labels, permutations=PERMUTATIONS):
    with tempfile.TemporaryDirectory() as tmp:
        np.savetxt(f"{tmp}/x.csv", x, delimiter=",")
        np.savetxt(f"{tmp}/g.csv", labels, fmt="%d")
        script = f"""suppressMessages(library(vegan)); x <- as.matrix(read.csv('{tmp}/x.csv', header=FALSE));
g <- factor(scan('{tmp}/g.csv', quiet=TRUE)); set.seed(1); t0 <- Sys.time();
r <- adonis2(dist(x) ~ g, permutations = {permutations}); el <- as.numeric(Sys.time() - t0, units='secs');
cat(el, r$F[1], r[['Pr(>F)']][1], as.character(packageVersion('vegan')), '\\n')"""
        out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), out[3]


def huge_in_subprocess():
    """n = 100,000 in a fresh process, so its peak RSS is its own."""
    code = (f"import sys, resource; sys.path.insert(0, {os.path.dirname(__file__)!r}); import permanova as b; "
            "x, g = b.data(100_000, 4); t, f, p = b.run_embsql(x, g); "
            "print(t, f, p, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), float(out[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="vegan,small,large,topics,huge")
    parser.add_argument("--skbio-permutations", type=int, default=PERMUTATIONS,
                        help="permutations for scikit-bio on 'large' (its time is then scaled to 999)")
    parser.add_argument("--no-vegan", action="store_true")
    parser.add_argument("--vegan-permutations", type=int, default=19)
    args = parser.parse_args()
    summary = []
    for case in args.cases.split(","):
        n, size = CASES[case]
        if case == "huge":
            t, f, p, peak = huge_in_subprocess()
            summary.append(f"{case:6} n={n:>7,} groups of {size}: embsql {t:7.2f} s (p = {p:.3f}), "
                           f"peak RSS {peak:,.0f} MB (target < 4,096 MB)")
            continue
        x, labels = data(n, size)
        method = choose_method(n, D, labels)
        t_ours, f_ours, p_ours = run_embsql(x, labels)
        line = f"{case:6} n={n:>7,} groups of {size:>3}: embsql {t_ours:7.2f} s [{method}] F={f_ours:.4f} p={p_ours:.3f}"
        print(line, flush=True)
        if case == "vegan":
            if args.no_vegan:
                continue
            # adonis2's cost per permutation grows with n^2 times the number of groups: time it with
            # a few permutations and scale the permutation part to 999, as for scikit-bio
            t, f, p, version = run_vegan(x, labels, args.vegan_permutations)
            t0 = run_vegan(x, labels, 0)[0]
            t = t0 + (t - t0) * PERMUTATIONS / args.vegan_permutations
            assert abs(f - f_ours) <= 1e-6 * abs(f_ours), (f, f_ours)
            extra = (f"         vegan {version} adonis2 {t:8.2f} s  p={p:.3f}  ratio {t / t_ours:6.1f}x"
                     f" (timed with {args.vegan_permutations} permutations, scaled to 999)")
            print(extra, flush=True)
            summary.append(line + "\n" + extra)
            continue
        for engine in (["cython", "numba"] if case == "small" else ["numba"]):
            perms = args.skbio_permutations if case == "large" else PERMUTATIONS
            t, f, p = run_skbio(x, labels, engine, perms)
            if perms != PERMUTATIONS:  # scale the permutation part linearly; the matrix is built once
                t0, _, _ = run_skbio(x, labels, engine, 0)
                t = t0 + (t - t0) * PERMUTATIONS / perms
            assert abs(f - f_ours) <= 1e-6 * abs(f_ours), (f, f_ours)
            extra = f"         skbio[{engine}] {t:8.2f} s  p={p:.3f}  ratio {t / t_ours:6.1f}x"
            extra += "" if perms == PERMUTATIONS else f" (timed with {perms} permutations, scaled to 999)"
            print(extra, flush=True)
            line += "\n" + extra
        summary.append(line)
    print("\n".join(["", "permanova, d = 384, 999 permutations; ratio = tool time / embsql time", *summary]))


if __name__ == "__main__":
    main()
