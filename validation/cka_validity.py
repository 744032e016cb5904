"""Is the CKA interval true?  Coverage of the population CKA, and the paired comparison's level.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_validity.py [--reps 400] [--quick] > validation/cka_validity.txt

Items are z_i = c_g + w_i in a k-dimensional latent space with a decaying spectrum (c_g the group's
centre, w_i its own part; no w for independent items), and the two models embed them as
x_i = normalise(z_i A + e_i), y_i = normalise(z_i B + f_i): A (k x p) and B (k x q) fixed random
maps, e and f isotropic noise whose scale sets the CKA level.  The population CKA is the debiased
CKA of 60,000 independent items of the same marginal distribution (its own Monte Carlo SD about
0.002, an order below the intervals' half-widths).  Per design, ``--reps`` samples; for each:

* embsql's interval (ci_low, ci_high of embsql.core.geometry.cka_interval; the same for the biased
  and the debiased CKA),
* the naive cka +- 1.96 se of the biased and of the debiased CKA (what a user would form),

and the share that cover the population value, with its Monte Carlo error sqrt(c (1 - c) / reps).
Then the paired comparison (compare_cka): A and B with the same map, B's space rotated and its
noise drawn afresh (so CKA(A, R) = CKA(B, R) exactly in the population): the rejection rate at 5%;
and A less noisy than B: the coverage of the population difference.  Last, Procrustes'
jackknife interval in two designs (why it is not calibrated).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one BLAS thread per process: several times faster on a shared machine

import numpy as np

from embsql.core import geometry

LATENT = {16: 8, 384: 16}
NOISE_RATIO = {16: 0.3, 384: 1.0}   # x's noise is this times y's
POPULATION = 60_000


def unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def maps(rng, k: int, p: int, q: int):
    return rng.standard_normal((k, p)) / np.sqrt(k), rng.standard_normal((k, q)) / np.sqrt(k)


def latent(rng, sizes: np.ndarray, k: int, grouped: bool) -> tuple[np.ndarray, np.ndarray]:
    codes = np.repeat(np.arange(len(sizes)), sizes)
    centre, own = (1.0, 0.7) if grouped else (np.hypot(1.0, 0.7), 0.0)
    z = (centre * rng.standard_normal((len(sizes), k)))[codes] + own * rng.standard_normal((len(codes), k))
    return z / np.sqrt(np.arange(1, k + 1)), codes


def embed(rng, z: np.ndarray, m: np.ndarray, noise: float, rotation: np.ndarray | None = None) -> np.ndarray:
    out = z @ m + noise * rng.standard_normal((len(z), m.shape[1]))
    return unit(out if rotation is None else out @ rotation)


def population(x: np.ndarray, y: np.ndarray) -> float:
    """The debiased CKA of a very large sample, from its cross products."""
    n = len(x)
    mx, my, xx, yy, xy = geometry.products(x, y)
    a, b = geometry.centred_square_norms(x, mx), geometry.centred_square_norms(y, my)
    h = lambda m, s, t: float(np.vdot(m, m)) - s @ t + s.sum() * t.sum() / ((n - 1) * (n - 2)) - 2 * (s @ t) / (n - 2)
    return h(xy, a, b) / np.sqrt(h(xx, a, a) * h(yy, b, b))


def sizes_of(rng, structure: str, units: int) -> np.ndarray:
    if structure == "items":
        return np.ones(units, dtype=int)
    if structure == "equal":
        return np.full(units, 5)
    return rng.integers(1, 16, units)   # unequal: 1 to 15 items per group


def coverage(hits: list[bool]) -> str:
    c = float(np.mean(hits))
    return f"{100 * c:5.1f} ± {100 * np.sqrt(c * (1 - c) / len(hits)):3.1f}"


def cka_designs(reps: int, quick: bool) -> None:
    print("## Coverage of the population CKA by 95% intervals (%, ± Monte Carlo SE)")
    print(f"{'dims':>8} {'structure':>16} {'units':>5} {'pop':>6} {'biased':>7} {'debiased':>8}  "
          f"{'embsql interval':>15} {'naive biased':>13} {'naive debiased':>15} {'width':>6}")
    dims = ((16, 384), (384, 768))
    noises = {16: (0.4, 1.6, 3.5), 384: (0.8, 1.6, 2.6)}
    structures = (("items", 40), ("equal groups of 5", 40), ("groups of 1-15", 30))
    for p, q in dims:
        k = LATENT[p]
        for noise in noises[p][:1] if quick else noises[p]:
            rng = np.random.default_rng(p * 1000 + int(noise * 100))
            a, b = maps(rng, k, p, q)
            z, _ = latent(rng, np.ones(POPULATION, dtype=int), k, False)
            truth = population(embed(rng, z, a, noise * NOISE_RATIO[p]), embed(rng, z, b, noise))
            for structure, units in structures:
                hits: dict[str, list[bool]] = {"ours": [], "biased": [], "debiased": []}
                est, width = [], []
                start = time.perf_counter()
                for _ in range(reps):
                    z, codes = latent(rng, sizes_of(rng, structure, units), k, structure != "items")
                    x, y = embed(rng, z, a, noise * NOISE_RATIO[p]), embed(rng, z, b, noise)
                    pair = geometry.pair_values(x, y, None if structure == "items" else codes,
                                                0 if structure == "items" else units)
                    low, high, _ = geometry.cka_interval(pair.debiased)
                    hits["ours"].append(low <= truth <= high)
                    width.append(high - low)
                    for name, values in (("biased", pair.biased), ("debiased", pair.debiased)):
                        se = geometry.jackknife_se(values[1:])
                        hits[name].append(abs(values[0] - truth) <= 1.96 * se)
                    est.append((pair.biased[0], pair.debiased[0]))
                mean = np.mean(est, axis=0)
                print(f"{p:>3}/{q:<4} {structure:>16} {units:>5} {truth:6.3f} {mean[0]:7.3f} {mean[1]:8.3f}  "
                      f"{coverage(hits['ours']):>15} {coverage(hits['biased']):>13} {coverage(hits['debiased']):>15} "
                      f"{np.mean(width):6.3f}   ({time.perf_counter() - start:.0f} s)", flush=True)


def rotation(rng, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def compare_designs(reps: int, quick: bool, only: str = "") -> None:
    print("\n## Paired comparison CKA(A, R) - CKA(B, R) (A, B of d = 384, R of d = 768)")
    print(f"{'design':>26} {'units':>5} {'pop diff':>9} {'reject at 5%':>13} {'coverage':>13}")
    p, q, k = 384, 768, LATENT[384]
    for label, noise_a, noise_b, structure, units in (
            ("H0, groups of 1-15", 1.6, 1.6, "groups of 1-15", 30),
            ("H0, equal groups of 5", 1.0, 1.0, "equal groups of 5", 40),
            ("H0, items", 1.6, 1.6, "items", 40),
            ("A closer, groups of 1-15", 1.0, 1.8, "groups of 1-15", 30),
            ("A closer, items", 0.8, 1.6, "items", 60)):
        if (quick and "H0" not in label) or only not in label:
            continue
        rng = np.random.default_rng(int(noise_a * 10 + noise_b * 100) + units)
        a, r_map = maps(rng, k, p, q)
        turn = rotation(rng, p)
        z, _ = latent(rng, np.ones(POPULATION, dtype=int), k, False)
        ref = embed(rng, z, r_map, 1.6)
        truth = population(embed(rng, z, a, noise_a), ref) - population(embed(rng, z, a, noise_b, turn), ref)
        if noise_a == noise_b:
            truth = 0.0     # exactly, by rotation invariance
        reject, cover = [], []
        for _ in range(reps):
            z, codes = latent(rng, sizes_of(rng, structure, units), k, structure != "items")
            xa, xb, xr = embed(rng, z, a, noise_a), embed(rng, z, a, noise_b, turn), embed(rng, z, r_map, 1.6)
            c, g = (None, 0) if structure == "items" else (codes, units)
            pa, pb = geometry.pair_values(xa, xr, c, g), geometry.pair_values(xb, xr, c, g)
            _, low, high, p_value = geometry.paired_difference(pa.debiased, pb.debiased)
            reject.append(p_value <= 0.05)
            cover.append(low <= truth <= high)
        print(f"{label:>26} {units:>5} {truth:9.4f} {coverage(reject):>13} {coverage(cover):>13}", flush=True)


def procrustes_designs(reps: int) -> None:
    print("\n## Procrustes r: the bias-corrected jackknife t interval (atanh) is NOT calibrated")
    print(f"{'dims':>8} {'structure':>16} {'units':>5} {'pop r':>6} {'mean r':>7} {'coverage':>13}")
    for p, q, noise in ((16, 384, 1.6), (16, 384, 0.4)):
        k = LATENT[p]
        rng = np.random.default_rng(7 + int(10 * noise))
        a, b = maps(rng, k, p, q)
        z, _ = latent(rng, np.ones(POPULATION, dtype=int), k, False)
        x, y = embed(rng, z, a, noise * NOISE_RATIO[p]), embed(rng, z, b, noise)
        truth = geometry.procrustes_pair(x, y, permutations=0)["r"]
        hits, est = [], []
        for _ in range(reps):
            z, codes = latent(rng, sizes_of(rng, "equal", 40), k, True)
            x, y = embed(rng, z, a, noise * NOISE_RATIO[p]), embed(rng, z, b, noise)
            row = geometry.procrustes_pair(x, y, groups=codes, permutations=0)
            hits.append(row["ci_low"] <= truth <= row["ci_high"])
            est.append(row["r"])
        print(f"{p:>3}/{q:<4} {'equal groups of 5':>16} {40:>5} {truth:6.3f} {np.mean(est):7.3f} {coverage(hits):>13}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="one CKA level per dimension pair, H0 only")
    parser.add_argument("--part", choices=("all", "cka", "compare", "procrustes"), default="all")
    parser.add_argument("--only", default="", help="run only the comparison designs whose label contains this")
    args = parser.parse_args()
    print(f"# validation/cka_validity.py --reps {args.reps}{' --quick' if args.quick else ''} (numpy {np.__version__})\n")
    start = time.perf_counter()
    if args.part in ("all", "cka"):
        cka_designs(args.reps, args.quick)
    if args.part in ("all", "compare"):
        compare_designs(args.reps, args.quick, args.only)
    if args.part in ("all", "procrustes"):
        procrustes_designs(max(args.reps // 4, 50))
    print(f"\n# {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
