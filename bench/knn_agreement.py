"""Benchmark: cross-model agreement (SPEC S25) against plain numpy and scikit-bio, side by side.

    python bench/knn_agreement.py [--n 20000] [--dims 384,768] [--k 10]
                                  [--mantel-n 2000] [--permutations 999] [--skip-mantel] [--skip-knn]
    python bench/knn_agreement.py --calibration      # the jackknife SE against simulation only

k-NN agreement (issue target: within 2x of a numpy blocked brute force).  The reference holds
both models' unit vectors in memory as float32 and, per block of rows, takes one Gram product
and np.argpartition for the k largest similarities; the overlap is then counted with one
vectorised comparison.  Its block size is the faster of 512 and 2048 rows.  It computes the
overlap only, no jackknife and no tie rule.  Against it:
  * the embsql kernel on the same vectors in memory (embsql.core.agreement.knn_rows: neighbours, tie
    rule, per-item overlaps, jackknife SE);
  * embsql.knn_agreement on a DuckDB table (reading, checking and normalising the vectors too);
  * SQL emb_knn_agreement on the same table.
Mantel at --mantel-n items: embsql.mantel on the table against scikit-bio's mantel (Spearman,
one-sided), whose distance matrices are built here in blocks; r is also checked with scipy.

--calibration: how the delete-one-item jackknife SE of the overlap (and, for contrast, the SE
with neighbour sets held fixed, sd(per-item overlap) / sqrt(n)) compares with the actual spread
of the overlap over 150 independent data sets of n = 300 items from one population.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

import embsql
from embsql.core import agreement


def timed(function):
    start = time.perf_counter()
    value = function()
    return time.perf_counter() - start, value


def make_models(n: int, dims: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    """Clustered items (200 topics); each model a random linear map of a shared 64-dim latent
    vector plus its own noise, so the models agree partly, as real ones do."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((200, 64))[rng.integers(0, 200, n)] + rng.standard_normal((n, 64))
    return [(latent @ rng.standard_normal((64, d)) / 8 + rng.standard_normal((n, d))).astype(np.float32)
            for d in dims]


def load(con, name: str, models: list[np.ndarray]) -> None:
    n = len(models[0])
    con.execute(f"CREATE OR REPLACE TABLE {name} (item VARCHAR, model VARCHAR, v FLOAT[])")
    for m, x in enumerate(models):
        for low in range(0, n, 5000):
            block = x[low:low + 5000]
            chunk = pa.table({  # noqa: F841  (read by DuckDB below)
                "item": [f"item{j:06d}" for j in range(low, low + len(block))],
                "model": [f"m{m}_d{x.shape[1]}"] * len(block),
                "v": pa.ListArray.from_arrays(pa.array(np.arange(0, block.size + 1, x.shape[1], dtype=np.int32)),
                                              pa.array(block.ravel()))})
            con.execute(f"INSERT INTO {name} SELECT * FROM chunk")


def numpy_top_k(z: np.ndarray, k: int, rows: int) -> np.ndarray:
    """The reference: blocked float32 Gram products and argpartition (unordered top k)."""
    n = len(z)
    out = np.empty((n, k), dtype=np.int64)
    for low in range(0, n, rows):
        sims = z[low:low + rows] @ z.T
        sims[np.arange(len(sims)), np.arange(low, low + len(sims))] = -np.inf
        out[low:low + rows] = np.argpartition(sims, n - k, axis=1)[:, n - k:]
    return out


def numpy_overlap(units32: list[np.ndarray], k: int, rows: int) -> float:
    a, b = (numpy_top_k(z, k, rows) for z in units32)
    return float((a[:, :, None] == b[:, None, :]).any(axis=2).sum() / a.size)


def knn_section(con, models, k: int) -> None:
    n = len(models[0])
    units = [x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True) for x in models]
    units32 = [u.astype(np.float32) for u in units]
    ids = np.array([f"item{j:06d}" for j in range(n)], dtype=object)
    names = [f"m{m}_d{x.shape[1]}" for m, x in enumerate(models)]
    print(f"k-NN agreement: n = {n:,}, dims = {[x.shape[1] for x in models]}, k = {k}", flush=True)
    t = {}
    for rows in (512, 2048):
        t[f"numpy brute force, blocks of {rows}"], reference = timed(lambda rows=rows: numpy_overlap(units32, k, rows))
        print(f"  {'numpy brute force, blocks of ' + str(rows):42} {t[f'numpy brute force, blocks of {rows}']:7.1f} s",
              flush=True)
    t["embsql kernel (in memory)"], kernel = timed(
        lambda: agreement.knn_rows({m: (ids, u) for m, u in zip(names, units)}, k)[0][0])
    t["embsql.knn_agreement (DuckDB table)"], python = timed(
        lambda: embsql.knn_agreement(con, "emb", item="item", model="model", vector="v", k=k).to_dicts()[0])
    t["SQL emb_knn_agreement"], sql = timed(
        lambda: con.sql(f"SELECT * FROM emb_knn_agreement('emb', 'item', 'model', 'v', k := {k})").fetchall()[0])
    for name in list(t)[2:]:
        print(f"  {name:42} {t[name]:7.1f} s", flush=True)
    base = min(t[f"numpy brute force, blocks of {rows}"] for rows in (512, 2048))
    print("  ratios to the faster numpy brute force (target <= 2):")
    for name in list(t)[2:]:
        print(f"    {name:40} {t[name] / base:5.2f}  ({'met' if t[name] / base <= 2 else 'NOT met'})")
    print(f"  overlap: numpy {reference:.6f}, kernel {kernel['overlap']:.6f}, python {python['overlap']:.6f}, "
          f"sql {sql[3]:.6f}; se {python['se']:.6f}, chance {python['chance']:.6f}")


def skbio_mantel(models, permutations: int):
    from skbio import DistanceMatrix
    from skbio.stats.distance import mantel

    matrices = []
    for x in models:
        z = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
        d = np.empty((len(z), len(z)))
        for low in range(0, len(z), 512):
            d[low:low + 512] = 1.0 - z[low:low + 512] @ z.T
        d = (d + d.T) / 2
        np.fill_diagonal(d, 0.0)
        matrices.append(DistanceMatrix(d, validate=False))
    r, p, _ = mantel(*matrices, method="spearman", permutations=permutations, alternative="greater", seed=1)
    return r, p, matrices


def mantel_section(models, permutations: int) -> None:
    from scipy.stats import spearmanr

    n = len(models[0])
    con = embsql.connect()
    load(con, "small", models)
    print(f"Mantel: n = {n:,} items ({n * (n - 1) // 2:,} pairs), {permutations} permutations", flush=True)
    t_embsql, ours = timed(lambda: embsql.mantel(con, "small", item="item", model="model", vector="v",
                                                 permutations=permutations, progress=False).to_dicts()[0])
    units = [x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True) for x in models]
    t_ranks, _ = timed(lambda: [agreement.pair_ranks(u, m) for m, u in enumerate(units)])
    t_zero, _ = timed(lambda: agreement.mantel_test(*units, permutations=1))
    try:
        t_skbio, (r_skbio, p_skbio, matrices) = timed(lambda: skbio_mantel(models, permutations))
    except ImportError:
        t_skbio = r_skbio = p_skbio = matrices = None
    print(f"  embsql.mantel (DuckDB table)  {t_embsql:7.1f} s   r = {ours['r']:.6f}  p = {ours['p_value']:.4f}")
    per_perm = (t_embsql - t_zero) / (permutations - 1)
    print(f"    of which ranks of both models {t_ranks:5.2f} s; one permutation {1e3 * per_perm:6.2f} ms "
          f"({1e9 * per_perm / (n * (n - 1) / 2):.2f} ns per pair)")
    if t_skbio is not None:
        print(f"  scikit-bio mantel (spearman)  {t_skbio:7.1f} s   r = {r_skbio:.6f}  p = {p_skbio:.4f}")
        print(f"  ratio embsql / scikit-bio: {t_embsql / t_skbio:5.2f}")
        r_scipy = spearmanr(matrices[0].condensed_form(), matrices[1].condensed_form()).statistic
        print(f"  r check: |embsql - scipy.stats.spearmanr| = {abs(ours['r'] - r_scipy):.2e}")


def calibration(repeats: int = 150, n: int = 300) -> None:
    rng = np.random.default_rng(5)
    centres, mixing = rng.standard_normal((10, 16)), rng.standard_normal((16, 12))
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)

    def draw(kind):
        if kind == "close (same space, noise 0.3)":
            x = rng.standard_normal((n, 16))
            return x, x + 0.3 * rng.standard_normal((n, 16))
        if kind == "partial (5 of 8 dims, noise 0.8)":
            x = rng.standard_normal((n, 8))
            return x, x[:, :5] + 0.8 * rng.standard_normal((n, 5))
        if kind == "10 clusters, linear map + noise":
            x = centres[rng.integers(0, 10, n)] + 0.6 * rng.standard_normal((n, 16))
            return x, x @ mixing + 1.5 * rng.standard_normal((n, 12))
        return rng.standard_normal((n, 8)), rng.standard_normal((n, 8))

    print(f"jackknife calibration: {repeats} data sets of n = {n} per line; SE / actual sd of the overlap")
    print(f"  {'population':34} {'k':>3} {'overlap':>8} {'jackknife':>10} {'fixed sets':>11}")
    for kind in ("close (same space, noise 0.3)", "partial (5 of 8 dims, noise 0.8)",
                 "10 clusters, linear map + noise", "independent models"):
        for k in (5, 20):
            estimates, jack, fixed = [], [], []
            for _ in range(repeats):
                x, y = draw(kind)
                per_item, estimate, se = agreement.overlap_jackknife(agreement.neighbours(unit(x), k + 1),
                                                                     agreement.neighbours(unit(y), k + 1), k)
                estimates.append(estimate)
                jack.append(se)
                fixed.append(per_item.std(ddof=1) / np.sqrt(n))
            sd = np.std(estimates, ddof=1)
            print(f"  {kind:34} {k:3} {np.mean(estimates):8.3f} {np.mean(jack) / sd:10.2f} {np.mean(fixed) / sd:11.2f}",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--dims", default="384,768")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--mantel-n", type=int, default=2000)
    parser.add_argument("--permutations", type=int, default=999)
    parser.add_argument("--skip-mantel", action="store_true")
    parser.add_argument("--skip-knn", action="store_true")
    parser.add_argument("--calibration", action="store_true")
    args = parser.parse_args()
    if args.calibration:
        calibration()
        return
    dims = tuple(int(d) for d in args.dims.split(","))
    models = make_models(args.n, dims)
    if not args.skip_knn:
        con = embsql.connect()
        load(con, "emb", models)
        knn_section(con, models, args.k)
    if not args.skip_mantel:
        mantel_section([x[:args.mantel_n] for x in models], args.permutations)


if __name__ == "__main__":
    main()
