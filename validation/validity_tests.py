"""Type-I error of the permutation tests in unbalanced designs: rejection rates at nominal 5%.

    python validation/validity_tests.py [--short] [--runs R] [--only dispersion|permanova]

Table 1, the dispersion test on null data (groups equal in spread), three schemes:
  old      unadjusted distances to the fitted centroids, permuted among groups (embsql before; as
           scikit-bio's permdisp)
  vegan    distances bias-adjusted by sqrt(n_g / (n_g - 1)), their residuals permuted (vegan's
           betadisper(bias.adjust = TRUE) + permutest)
  embsql   adjusted distances, residual *vectors* permuted, groups under 4 items left out
           (embsql.dispersion, the scheme now used)
Table 1b, the same on null data built from examples/embeddings.parquet (R / 5 data sets).
Table 2, PERMANOVA: pseudo-F, and the Welch-type W*_d (statistic='welch') with its p-value from label
permutation, from the group-wise wild bootstrap on every group, and by the default (the wild bootstrap
on the groups of 6 items or more; smaller groups left out, and no test when fewer than two groups are
left), on null data and with a shift (power).

Each cell: the share of R seeded data sets with p <= 0.05 (199 permutations each) and its Monte
Carlo standard error sqrt(r (1 - r) / R).  --short: R = 200 (a minute or two); default R = 1000.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from embsql.core.dispersion import MIN_GROUP, anova_f, bias_factors, centroid_distances, dispersion_test
from embsql.core.permutation import MIN_BOOTSTRAP_GROUP, design, permanova_distances, permanova_vectors, shuffles

B = 199
DIM = 16


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def null_data(rng, sizes, scenario, noise):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    base = np.eye(DIM)[0]
    centres = np.tile(base, (len(sizes), 1)) if scenario == "iid" else unit(base + rng.standard_normal((len(sizes), DIM)))
    return unit(centres[codes] + noise * rng.standard_normal((len(codes), DIM))), codes


def p_from(observed, permuted):
    return (np.sum(permuted >= observed - 1e-9 * max(1.0, observed)) + 1) / (len(permuted) + 1)


def old_p(z, d, seed):
    distances = centroid_distances(z, d.codes)
    permuted = [anova_f(distances[p], d.codes, d.groups) for p in shuffles(d, B, seed)]
    return p_from(anova_f(distances, d.codes, d.groups), np.array(permuted))


def vegan_p(z, d, seed):
    sizes = np.bincount(d.codes)
    distances = centroid_distances(z, d.codes) * bias_factors(sizes)[d.codes]
    residuals = distances - (np.bincount(d.codes, weights=distances) / sizes)[d.codes]
    permuted = [anova_f(residuals[p], d.codes, d.groups) for p in shuffles(d, B, seed)]
    return p_from(anova_f(distances, d.codes, d.groups), np.array(permuted))


def cell(hits, runs):
    r = hits / runs
    return f"{100 * r:5.1f}% ± {100 * np.sqrt(r * (1 - r) / runs):.1f}"


def dispersion_table(runs):
    designs = [("2,3,5,10,20", (2, 3, 5, 10, 20)), ("3,5,12,40", (3, 5, 12, 40)), ("10 x 5 (balanced)", (10,) * 5)]
    scenarios = [("iid, wide (noise 0.6)", "iid", 0.6), ("locations differ, wide (0.6)", "locations", 0.6),
                 ("locations differ, tight (0.1)", "locations", 0.1)]
    print(f"\nTable 1. Dispersion test, null data (equal spread), d = {DIM}, {runs} data sets x {B} permutations;"
          f" share with p <= 0.05 ± MC SE")
    print("| sizes | data | old | vegan-style | embsql (new) | left out by embsql |")
    print("|---|---|---|---|---|---|")
    for label, sizes in designs:
        for name, scenario, noise in scenarios:
            rng = np.random.default_rng([len(label), len(name), sum(sizes), int(10 * noise)])
            hits = {"old": 0, "vegan": 0, "new": 0}
            for rep in range(runs):
                z, codes = null_data(rng, sizes, scenario, noise)
                d = design(codes)
                hits["old"] += old_p(z, d, rep) <= 0.05
                hits["vegan"] += vegan_p(z, d, rep) <= 0.05
                result = dispersion_test(z, d, permutations=B, seed=rep)
                hits["new"] += result.test.p_value <= 0.05
            small = [s for s in sizes if s < MIN_GROUP]
            print(f"| {label} | {name} | {cell(hits['old'], runs)} | {cell(hits['vegan'], runs)} | "
                  f"{cell(hits['new'], runs)} | {len(small)} groups, {sum(small)} items |", flush=True)


def real_table(runs, model="mini-384"):
    """Null data built from examples/embeddings.parquet (600 items, 30 topics of 4 to 56 items): the
    topic labels shuffled at random (no group structure).  (A "real centroids + shuffled residuals"
    null is not one on the unit sphere: a group's spread is tied to its centroid's norm, since the
    mean squared distance to the centroid is 1 - ||mu||^2, and real topics differ in that norm.)"""
    from pathlib import Path

    import duckdb

    path = Path(__file__).resolve().parents[1] / "examples" / "embeddings.parquet"
    table = duckdb.sql(f"SELECT topic, embedding FROM '{path}' WHERE model = '{model}' ORDER BY item").fetchnumpy()
    z = unit(np.vstack(table["embedding"]).astype(np.float64))
    topics, codes = np.unique(table["topic"], return_inverse=True)
    sizes = np.bincount(codes)
    print(f"\nTable 1b. Dispersion test on null data from examples/embeddings.parquet ({model}: n = {len(z)}, "
          f"{len(topics)} topics of {sizes.min()} to {sizes.max()} items), {runs} data sets x {B} permutations")
    print("| data | old | vegan-style | embsql (new) |")
    print("|---|---|---|---|")
    order = np.argsort(codes, kind="stable")
    d = design(codes[order])
    for name in ("topic labels shuffled",):
        rng = np.random.default_rng(len(name))
        hits = {"old": 0, "vegan": 0, "new": 0}
        for rep in range(runs):
            data = z[rng.permutation(len(z))][order]
            hits["old"] += old_p(data, d, rep) <= 0.05
            hits["vegan"] += vegan_p(data, d, rep) <= 0.05
            hits["new"] += dispersion_test(data, d, permutations=B, seed=rep).test.p_value <= 0.05
        print(f"| {name} | {cell(hits['old'], runs)} | {cell(hits['vegan'], runs)} | {cell(hits['new'], runs)} |",
              flush=True)


def anisotropic(rng, n_small, n_large, rank=2, radius=0.5):
    """Unit vectors with equal centres and equal spread: every item is m + r u, u a unit vector
    orthogonal to m, so every norm is sqrt(1 + r^2); the small group's u lie in a rank-2 subspace
    (anisotropic), the large group's in all d - 1 directions."""
    def directions(n, k):
        e = np.zeros((n, DIM))
        g = rng.standard_normal((n, k))
        e[:, 1:1 + k] = g / np.linalg.norm(g, axis=1, keepdims=True)
        return e
    m = np.eye(DIM)[0]
    x = np.vstack([m + radius * directions(n_small, rank), m + radius * directions(n_large, DIM - 1)])
    return unit(x), np.repeat([0, 1], [n_small, n_large])


def anisotropic_groups(rng, sizes, rank=2, radius=0.5):
    """As anisotropic, for any sizes: the first group's directions in a rank-2 subspace, the others' in all."""
    m, parts = np.eye(DIM)[0], []
    for k, n in enumerate(sizes):
        r = rank if k == 0 else DIM - 1
        e = np.zeros((n, DIM))
        g = rng.standard_normal((n, r))
        e[:, 1:1 + r] = g / np.linalg.norm(g, axis=1, keepdims=True)
        parts.append(m + radius * e)
    return unit(np.vstack(parts))


def shifted(rng, sizes, shift, noise=0.6):
    """Unit vectors whose first group's centre is moved by ``shift`` (a real location effect)."""
    codes = np.repeat(np.arange(len(sizes)), sizes)
    centres = np.tile(np.eye(DIM)[0], (len(sizes), 1))
    centres[0, 1] = shift
    return unit(centres[codes] + noise * rng.standard_normal((len(codes), DIM))), codes


def permanova_cases():
    """(row label, sizes, make(rng) -> (data, is_distance)) for Table 2."""
    def gaussian(sd):
        def make(rng):
            x = np.vstack([sd * rng.standard_normal((6, 8)), rng.standard_normal((40, 8))])
            return ((x[:, None] - x[None]) ** 2).sum(-1), True
        return make
    cases = [(f"unit vectors, {small} vs 40, small group anisotropic (rank {rank}), equal centres and spread",
              (small, 40), lambda rng, rank=rank, small=small: (anisotropic(rng, small, 40, rank=rank)[0], False))
             for small, rank in ((6, 2), (6, 8), (5, 2), (4, 2))]
    cases += [(f"unit vectors, sizes {','.join(map(str, sizes))}, first group anisotropic (rank 2), equal centres "
               "and spread", sizes, lambda rng, sizes=sizes: (anisotropic_groups(rng, sizes), False))
              for sizes in ((4, 10, 20), (5, 10, 20), (4, 5, 10, 20), (6, 10, 20, 40), (10, 20), (5, 5, 5))]
    cases += [("Euclidean (distance route), 6 vs 40, small group sd 2, large sd 1, d = 8", (6, 40), gaussian(2.0)),
              ("Euclidean (distance route), 6 vs 40, equal sd", (6, 40), gaussian(1.0))]
    for sizes in [(2,) * 5, (3,) * 5, (5,) * 5, (6,) * 5, (8,) * 5, (10,) * 5, (20,) * 5, (2, 3, 5, 10, 20),
                  (3, 5, 10, 20), (6, 10, 20, 40)]:
        cases.append((f"iid unit vectors (noise 0.6), sizes {','.join(map(str, sizes))}", sizes,
                      lambda rng, sizes=sizes: (null_data(rng, sizes, "iid", 0.6)[0], False)))
    return cases


POWER_CASES = [("power: unit vectors, 10 vs 30, first centre shifted 1.0", (10, 30), 1.0),
               ("power: unit vectors, 6 vs 40, first centre shifted 1.5", (6, 40), 1.5),
               ("power: unit vectors, 5 x 5, first centre shifted 2.0", (5,) * 5, 2.0),
               ("power: unit vectors, 2,3,5,10,20, first centre shifted 2.0", (2, 3, 5, 10, 20), 2.0)]
COLUMNS = (("pseudo-f", "permutation"), ("welch", "permutation"), ("welch", "wild bootstrap"), ("welch", "auto"))


def _rejections(rng, runs, sizes, make):
    hits = dict.fromkeys(COLUMNS, 0)
    d = design(np.repeat(np.arange(len(sizes)), sizes))
    kept = [s for s in sizes if s >= MIN_BOOTSTRAP_GROUP]
    before = 0
    for rep in range(runs):
        data, is_distance = make(rng)
        test = permanova_distances if is_distance else permanova_vectors
        for statistic, null in COLUMNS:
            if null == "auto" and (len(kept) < 2 or len(kept) == len(sizes)):
                # fewer than two groups left: no test; none left out: the same as the bootstrap column
                hits[statistic, null] += hits["welch", "wild bootstrap"] - before if len(kept) == len(sizes) else 0
                continue
            before = hits["welch", "wild bootstrap"] if null == "wild bootstrap" else before
            hits[statistic, null] += test(data, d, permutations=B, seed=rep, statistic=statistic,
                                          null=null).p_value <= 0.05
    default = "no test" if len(kept) < 2 else cell(hits["welch", "auto"], runs)
    left = "" if len(kept) == len(sizes) else f" ({len(sizes) - len(kept)} left out)"
    return " | ".join(cell(hits[c], runs) for c in COLUMNS[:3]) + f" | {default}{left}"


def permanova_table(runs):
    print(f"\nTable 2. PERMANOVA, {runs} data sets x {B} resamples; share with p <= 0.05 ± MC SE.  Rows above"
          " the power rows are null data (equal centres): the share should be 5%.")
    print("| data | pseudo-F, permutation | W*_d, labels permuted | W*_d, wild bootstrap, every group | "
          "statistic='welch' (default: groups < 6 left out) |")
    print("|---|---|---|---|---|")
    for name, sizes, make in permanova_cases():
        rng = np.random.default_rng([len(name), sum(sizes)])
        print(f"| {name} | {_rejections(rng, runs, sizes, make)} |", flush=True)
    for name, sizes, shift in POWER_CASES:
        rng = np.random.default_rng([len(name), sum(sizes)])
        def make(r, sizes=sizes, shift=shift):
            return shifted(r, sizes, shift)[0], False
        print(f"| {name} | {_rejections(rng, runs, sizes, make)} |",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="200 data sets per cell")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--only", choices=("dispersion", "real", "permanova"))
    args = parser.parse_args()
    runs = args.runs or (200 if args.short else 1000)
    start = time.perf_counter()
    if args.only in (None, "dispersion"):
        dispersion_table(runs)
    if args.only in (None, "real"):
        real_table(max(runs // 5, 40))
    if args.only in (None, "permanova"):
        permanova_table(runs)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
