"""The dispersion test's level and power on unit vectors: the rejection rate at nominal 5%, per design.

    nice -n 10 python validation/dispersion_validity.py [--runs R] [--power-runs P] [--vegan-runs V] [--only NAME]
        [--schemes new,chi2,...] [--seed S]       (another --seed draws other data sets: a second look)
    nice -n 10 python validation/dispersion_validity.py --cost     (the test's time beside PERMANOVA's, both routes)
    nice -n 10 python validation/dispersion_validity.py --tables power --power-runs 100 --vegan-runs 50   (power only)

Schemes, all on the groups of 4 or more items (smaller ones are left out, as embsql does):
  new       embsql.dispersion now: the groups' spreads W~_g (mean squared bias-adjusted distance to the
            centroid) compared by F = sum_g (W~_g - W_bar)^2 / V_g / (G - 1), V_g from the pooled
            unbiased variance components of unit vectors; p from permuted labels of the vectors after
            each item is reflected so that its group's location (the centroid of the other items of
            its group, shrunk towards the grand mean by the share of SS_B the locations explain)
            points along one axis (embsql/core/dispersion.py)
  pairs     the same F, p from the same permuted aligned vectors, with a and b re-estimated from each
            permuted grouping's inner products (embsql before issue 31: sum_g min(n_g^2 d, n_g d^2)
            multiply-adds per permutation, where "new" holds a and b at their expectation over the
            permutations and recomputes only the spreads, from the permuted groups' sums: n d adds)
  chi2      the same F against chi-square(G - 1) / (G - 1), no permutations (the asymptotic reference)
  own       the same F, p from permuted vectors after each GROUP is reflected by its own centroid (the
            first draft: it keeps every within-group inner product but lines up the centroids' lean)
  old       embsql before: betadisper's adjusted distances, their ANOVA F, and the residual vectors
            z_i - mu_g scaled by sqrt(n_g / (n_g - 1)) permuted (a numpy re-implementation that gives the
            old dispersion_test's p-values with the same permutations)
  vegan     R's vegan: permutest(betadisper(dist(X), group, bias.adjust = TRUE)) (validation/dispersion_vegan.R)

Each cell: the share of R seeded data sets with p <= 0.05 and its Monte Carlo standard error
sqrt(r (1 - r) / R); B = 19 permutations per data set for the level (p <= 0.05 is then b = 0: an exact
5% test for an exact permutation), B = 99 for the power.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
from scipy import stats

from embsql.core.dispersion import (
    MIN_GROUP,
    aligned_vectors,
    anova_f,
    bias_factors,
    centroid_distances,
    dispersion_test,
    pair_sums,
    spread_f,
)
from embsql.core.permutation import Design, design, shuffles

B = 19        # permutations per data set (level; main() sets 99 for the power table)
HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "embeddings.parquet"


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def example(model):
    table = duckdb.sql(f"SELECT topic, embedding FROM '{EXAMPLE}' WHERE model = '{model}' ORDER BY item").fetchnumpy()
    return unit(np.vstack(table["embedding"]).astype(np.float64)), np.unique(table["topic"], return_inverse=True)[1]


MINI, TOPICS = example("mini-384")
BASE, _ = example("base-768")


def codes_of(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


def reorient(rng, x):
    """A random orthogonal map (a full rotation up to d = 64, a signed permutation of coordinates above)."""
    d = x.shape[1]
    if d <= 64:
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        return x @ (q * np.sign(np.diag(r))).T
    return x[:, rng.permutation(d)] * rng.choice([-1.0, 1.0], d)


def spectrum(d, total=0.8):
    s = 1.0 / np.arange(1, d + 1)
    return s * total ** 2 / s.sum()


def anisotropic(rng, n, d, scale=1.0):
    """Unit vectors about e_1 with a 1/k spectrum of noise (total noise length about 0.8 * scale)."""
    return unit(np.eye(d)[0] + scale * rng.standard_normal((n, d)) * np.sqrt(spectrum(d)))


def around(rng, centres, codes, noise):
    """unit(c_g + noise_g * e / sqrt(d)): isotropic noise about each group's centre."""
    d = centres.shape[1]
    noise = np.broadcast_to(noise, (len(centres),))[codes]
    return unit(centres[codes] + noise[:, None] * rng.standard_normal((len(codes), d)) / np.sqrt(d))


def mixture_items(rng, n, d, clusters=6, noise=0.7):
    centres = unit(rng.standard_normal((clusters, d)))
    return around(rng, centres, rng.integers(0, clusters, n), noise)


def sizes_3_8(rng):
    return rng.integers(3, 9, 60)


# name -> (rng -> (z, codes)).  Level designs: groups equal in spread.
LEVEL = {
    "60 groups of 3-8, uniform, d = 384": lambda rng: (lambda c: (unit(rng.standard_normal((len(c), 384))), c))(
        codes_of(sizes_3_8(rng))),
    "60 groups of 3-8 drawn from mini-384": lambda rng: (lambda c: (MINI[rng.choice(600, len(c), replace=False)], c))(
        codes_of(sizes_3_8(rng))),
    "mini-384, topic labels shuffled (30 groups of 4-56)": lambda rng: (MINI[rng.permutation(600)], TOPICS),
    "base-768, topic labels shuffled (30 groups of 4-56)": lambda rng: (BASE[rng.permutation(600)], TOPICS),
    "sizes 2,3,5,10,20, d = 16, one centre, noise 0.6": lambda rng: (
        unit(np.eye(16)[0] + 0.6 * rng.standard_normal((40, 16))), codes_of((2, 3, 5, 10, 20))),
    "sizes 2,3,5,10,20, d = 16, own centres, noise 0.1": lambda rng: (lambda c: (
        unit(unit(np.eye(16)[0] + rng.standard_normal((5, 16)))[c] + 0.1 * rng.standard_normal((40, 16))), c))(
        codes_of((2, 3, 5, 10, 20))),
    "10 x 5, uniform, d = 16 (balanced)": lambda rng: (unit(rng.standard_normal((50, 16))), codes_of((5,) * 10)),
    "sizes 4,8,16,32,64, uniform, d = 768": lambda rng: (unit(rng.standard_normal((124, 768))),
                                                          codes_of((4, 8, 16, 32, 64))),
    "40 groups of 4-12, 6-cluster mixture, d = 128": lambda rng: (lambda c: (mixture_items(rng, len(c), 128), c))(
        codes_of(rng.integers(4, 13, 40))),
    "sizes 4,6,8,10,15,20, anisotropic, each group rotated, d = 16": lambda rng: (lambda s: (
        np.vstack([reorient(rng, anisotropic(rng, k, 16)) for k in s]), codes_of(s)))((4, 6, 8, 10, 15, 20)),
    "3 x 200, anisotropic, each group rotated, d = 64": lambda rng: (
        np.vstack([reorient(rng, anisotropic(rng, 200, 64)) for _ in range(3)]), codes_of((200,) * 3)),
    "sizes 4,20,200, mixture, each group reoriented, d = 384": lambda rng: (lambda s: (
        np.vstack([reorient(rng, mixture_items(rng, k, 384, clusters=4)) for k in s]), codes_of(s)))((4, 20, 200)),
    "20 x 5 from mini-384, each group reoriented": lambda rng: (lambda c: (
        np.vstack([reorient(rng, MINI[i]) for i in np.split(rng.choice(600, len(c), replace=False), 20)]), c))(
        codes_of((5,) * 20)),
    # locations that differ weakly to clearly (the shrinkage of the estimated locations in between 0 and 1)
    "60 groups of 3-8, own centres, weak (noise 2.0), d = 384": lambda rng: (lambda c: (around(
        rng, unit(rng.standard_normal((60, 384))), c, 2.0), c))(codes_of(sizes_3_8(rng))),
    "40 groups of 4-12, own centres, moderate (noise 1.0), d = 128": lambda rng: (lambda c: (around(
        rng, unit(rng.standard_normal((40, 128))), c, 1.0), c))(codes_of(rng.integers(4, 13, 40))),
    "8 groups of 10-60, own centres near one axis, d = 64": lambda rng: (lambda c: (around(
        rng, unit(np.eye(64)[0] + 0.3 * rng.standard_normal((8, 64))), c, 1.5), c))(codes_of(rng.integers(10, 61, 8))),
}

def topic_sample(rng, most):
    """Up to ``most`` items of each of the example's 30 topics, with their topic labels."""
    picks = np.concatenate([rng.choice(np.flatnonzero(TOPICS == t), min(most, int(np.sum(TOPICS == t))), replace=False)
                            for t in range(30)])
    return MINI[picks], TOPICS[picks]


# Power designs: a real spread difference.
POWER = {
    "sizes 5,10,20,40, d = 16, own centres, noise 0.3 (groups 1, 3) vs 0.45": lambda rng: (lambda c: (around(
        rng, unit(rng.standard_normal((4, 16))), c, np.array([0.3, 0.45, 0.3, 0.45]) * 4), c))(codes_of((5, 10, 20, 40))),
    "60 groups of 3-8, d = 384, own centres, noise 1.0 vs 1.2 (half)": lambda rng: (lambda c: (around(
        rng, unit(rng.standard_normal((60, 384))), c, np.where(np.arange(60) % 2 == 0, 1.0, 1.2)), c))(
        codes_of(sizes_3_8(rng))),
    "10 x 20, anisotropic, each group rotated, d = 64, noise x1.25 (half)": lambda rng: (
        np.vstack([reorient(rng, anisotropic(rng, 20, 64, 1.0 + 0.25 * (k % 2))) for k in range(10)]),
        codes_of((20,) * 10)),
    "mini-384 topics, up to 8 items from each of the 30 (their own spreads)": lambda rng: topic_sample(rng, 8),
}


def tested(z, codes):
    """The groups of MIN_GROUP or more items, recoded 0..G-1, rows sorted by group."""
    sizes = np.bincount(codes)
    keep = sizes[codes] >= MIN_GROUP
    order = np.argsort(codes[keep], kind="stable")
    return z[keep][order], (np.cumsum(sizes >= MIN_GROUP) - 1)[codes[keep]][order]


def p_of(observed, permuted):
    return (np.sum(permuted >= observed - 1e-9 * max(1.0, observed)) + 1) / (len(permuted) + 1)


def old_p(z, codes, seed):
    """The scheme this replaced (embsql.core.dispersion before issue 23), on rows sorted by group."""
    groups = int(codes.max()) + 1
    sizes = np.bincount(codes)
    factor = bias_factors(sizes)[codes]
    observed = anova_f(centroid_distances(z, codes) * factor, codes, groups)
    residuals = (z - np.stack([z[codes == g].mean(0) for g in range(groups)])[codes]) * factor[:, None]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    permuted = []
    for perm in shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), groups), B, seed):
        block = residuals[perm]
        block = block - np.repeat(np.add.reduceat(block, starts, axis=0) / sizes[:, None], sizes, axis=0)
        permuted.append(anova_f(np.sqrt(np.einsum("ij,ij->i", block, block)) * factor, codes, groups))
    return p_of(observed, np.array(permuted))


def chi2_p(z, codes):
    groups = int(codes.max()) + 1
    return float(stats.chi2.sf(spread_f(pair_sums(z, codes, groups)) * (groups - 1), groups - 1))


def own_p(z, codes, seed):
    """Each group reflected by its own centroid (every within-group product kept), then permuted."""
    groups = int(codes.max()) + 1
    observed = float(spread_f(pair_sums(z, codes, groups)))
    means = np.stack([z[codes == g].mean(0) for g in range(groups)])
    target = z.sum(0) / np.linalg.norm(z.sum(0))
    v = unit(unit(means) - target)[codes]
    y = z - 2 * np.einsum("ij,ij->i", z, v)[:, None] * v
    d = Design(codes, np.zeros(len(codes), dtype=np.int64), groups)
    return p_of(observed, np.array([float(spread_f(pair_sums(y[p], codes, groups))) for p in shuffles(d, B, seed)]))


def pairs_p(z, codes, seed):
    """The construction before issue 31: every permuted grouping's a and b re-estimated from its inner products."""
    groups = int(codes.max()) + 1
    observed = float(spread_f(pair_sums(z, codes, groups)))
    y = aligned_vectors(z, codes)
    d = Design(codes, np.zeros(len(codes), dtype=np.int64), groups)
    return p_of(observed, np.array([float(spread_f(pair_sums(y[p], codes, groups))) for p in shuffles(d, B, seed)]))


def sums_p(z, codes, seed):
    """Prototype: a and b re-estimated per permutation from s1 and r2, f2 held at its expectation."""
    from embsql.core.dispersion import PairSums
    groups = int(codes.max()) + 1
    observed = float(spread_f(pair_sums(z, codes, groups)))
    y = aligned_vectors(z, codes)
    whole = pair_sums(y, np.zeros(len(codes), dtype=np.int64), 1)
    q2 = whole.f2[0] / (len(codes) * (len(codes) - 1.0))
    d = Design(codes, np.zeros(len(codes), dtype=np.int64), groups)
    out = []
    for p in shuffles(d, B, seed):
        ps = pair_sums(y[p], codes, groups)
        n = ps.sizes.astype(float)
        out.append(float(spread_f(PairSums(ps.sizes, ps.s1, ps.r2, q2 * n * (n - 1)))))
    return p_of(observed, np.array(out))


def new_p(z, codes, seed):
    return dispersion_test(z, design(codes), permutations=B, seed=seed).test.p_value


def vegan_ps(sets, seed):
    """vegan's p-values for the data sets, by one Rscript call per chunk (the data go through a binary file)."""
    out = []
    for low in range(0, len(sets), 25):
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
            for z, codes in sets[low:low + 25]:
                f.write(np.array(z.shape, "<i4").tobytes() + codes.astype("<i4").tobytes() + z.astype("<f8").tobytes())
        try:
            run = subprocess.run(["Rscript", str(HERE / "dispersion_vegan.R"), f.name, str(B), str(seed + low)],
                                 capture_output=True, text=True, check=True)
        finally:
            os.unlink(f.name)
        out += [float(v) for v in run.stdout.split()]
    return np.array(out)


def cell(p, alpha=0.05):
    r = float(np.mean(np.asarray(p) <= alpha))
    return f"{100 * r:5.1f} ± {100 * np.sqrt(r * (1 - r) / len(p)):.1f}"


def table(title, designs, runs, vegan_runs, schemes, only, part=(0, 1), seed=23):
    print(f"\n{title}\n")
    print("| design | n tested (groups) | " + " | ".join(schemes) + " | seconds |")
    print("|---|---|" + "---|" * len(schemes) + "---|")
    for k, (name, make) in enumerate(designs.items()):
        if (only and only not in name) or k % part[1] != part[0]:
            continue
        start = time.process_time()
        rng = np.random.default_rng([seed, k, len(name)])
        sets = [tested(*make(rng)) for _ in range(runs)]
        ps = {}
        for scheme in schemes:
            if scheme == "vegan":
                ps[scheme] = vegan_ps(sets[:vegan_runs], seed=k)
                continue
            fn = {"new": new_p, "pairs": pairs_p, "sums": sums_p, "old": old_p, "own": own_p,
                  "chi2": lambda z, c, s: chi2_p(z, c)}[scheme]
            ps[scheme] = [fn(z, codes, rep) for rep, (z, codes) in enumerate(sets)]
        n, g = len(sets[0][1]), int(sets[0][1].max()) + 1
        print(f"| {name} | {n} ({g}) | " + " | ".join(cell(ps[s]) for s in schemes)
              + f" | {time.process_time() - start:.0f} |", flush=True)


def cost():
    """CPU seconds (process time: what a loaded machine does not distort much) of the default call's two tests at
    n = 5,000 in groups of 4, d = 384, 999 permutations (bench/permanova.py's case), and of each route of the
    dispersion test per permutation at other group sizes, beside choose_dispersion_method's pick."""
    from embsql.core.dispersion import AlignedPermutations, choose_dispersion_method
    from embsql.core.permutation import permanova_vectors

    def cpu(run):
        start = time.process_time()
        run()
        return time.process_time() - start

    def rows(n, size):
        rng = np.random.default_rng(1)
        labels = np.repeat(np.arange(n // size), size)
        return unit(rng.standard_normal((n // size, 384))[labels] + 1.5 * rng.standard_normal((n, 384))), labels

    z, labels = rows(5_000, 4)
    d = design(labels)
    permanova = cpu(lambda: permanova_vectors(z, d, permutations=999, seed=1))
    spread = cpu(lambda: dispersion_test(z, d, permutations=999, seed=1))
    print(f"\nCost at n = 5,000, groups of 4, d = 384, 999 permutations (CPU s): PERMANOVA {permanova:.2f}, dispersion "
          f"test [{choose_dispersion_method(5_000, 384, labels, 999)}] {spread:.2f} ({spread / permanova:.1f}x)")
    print("\nPer permutation (CPU ms, 48 permutations after the setup), d = 384:")
    for n, size in ((5_000, 4), (2_000, 50), (4_000, 200), (4_000, 1_000)):
        z, labels = rows(n, size)
        codes = np.unique(labels, return_inverse=True)[1]
        perms = list(shuffles(design(labels), 48, 1))
        times = {}
        for method in ("gram", "coordinates"):
            kernel = AlignedPermutations(z, codes, int(codes.max()) + 1, method, 999)
            times[method] = 1000 * sum(cpu(lambda k=kernel, batch=perms[low:low + 16]: k.batch(batch))
                                       for low in range(0, 48, 16)) / 48
        print(f"n = {n:,}, groups of {size}: gram {times['gram']:.1f} ms, coordinates {times['coordinates']:.1f} ms; "
              f"choose_dispersion_method -> {choose_dispersion_method(n, 384, labels, 999)}", flush=True)


def main():
    global B
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="data sets per level design")
    parser.add_argument("--power-runs", type=int, default=200, help="data sets per power design")
    parser.add_argument("--vegan-runs", type=int, default=200, help="of those, how many vegan runs (R is slower)")
    parser.add_argument("--only", help="only the designs whose name contains this")
    parser.add_argument("--seed", type=int, default=23, help="another value draws other data sets (a second look)")
    parser.add_argument("--schemes", help="comma-separated subset of the schemes (default: all)")
    parser.add_argument("--cost", action="store_true", help="time the test beside PERMANOVA instead")
    parser.add_argument("--tables", default="level,power", help="which tables: level, power or both (level,power)")
    parser.add_argument("--part", default="0/1", help="I/M: only designs number I, I + M, ... of each table "
                        "(to run M processes side by side; the rows are the same as in one run)")
    args = parser.parse_args()
    part = tuple(int(v) for v in args.part.split("/"))
    if args.cost:
        cost()
        return
    print(f"embsql dispersion test: level (B = 19 permutations per data set) and power (B = 99); cells: % with p <= 0.05 "
          f"± Monte Carlo SE; vegan on the first {args.vegan_runs} data sets of each design; "
          f"python {sys.version.split()[0]}, numpy {np.__version__}")
    tables = args.tables.split(",")

    def pick(schemes):
        return tuple(s for s in schemes if not args.schemes or s in args.schemes.split(","))

    if "level" in tables:
        table(f"Level (groups equal in spread), {args.runs} data sets per design", LEVEL, args.runs,
              min(args.vegan_runs, args.runs), pick(
                  ("new", "pairs", "sums", "chi2", "own", "old", "vegan")), args.only, part, args.seed)
    B = 99
    if "power" in tables:
        table(f"Power (spreads differ), {args.power_runs} data sets per design", POWER, args.power_runs,
              min(args.vegan_runs, args.power_runs), pick(("new", "pairs", "chi2", "old", "vegan")), args.only, part, args.seed)
    print(f"\nCPU seconds in all: {time.process_time():.0f} (this process; R's time not counted)")


if __name__ == "__main__":
    main()
