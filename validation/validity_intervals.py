"""Coverage of the intervals of embsql.bootstrap and embsql.compare_structure, by simulation.

    python validation/validity_intervals.py            # the full table: 2000 data sets per cell (about an hour)
    python validation/validity_intervals.py --short    # 200 data sets per cell, G = 10 and 30 (a few minutes)

Superpopulation: G group centres uniform on the sphere in 64 dimensions; an item of group g is
centre + sigma_g * N(0, I/64).  Model A embeds it as itself (d = 64), model B as a fixed random
projection to 32 dimensions plus its own noise (d = 32); both are normalised.  Designs:
    balanced       n_g = 8;  unbalanced  n_g drawn from {2, 3, 5, 10, 20} for each group
    fixed sizes    {2, 3, 5, 10, 20} repeated G/5 times, the same in every data set (a design: the
                   intervals then use the stratified jackknife, embsql.core.resampling.size_strata)
    homogeneous    sigma_g = 0.9;  heterogeneous  sigma_g = 0.9 * U(0.4, 1.6) for each group
    different items  (one extra row) model B sees only 6 of the 8 items of each group
The estimand is the value at G -> infinity for the same design: with that many groups the mean
of the unit vectors is 0, so R² -> E[b_g]/E[n_g], W̄ -> 1 - R², F -> E[b_g] / (E[n_g - b_g]/(E[n_g]-1))
with b_g = ||s_g||²/n_g; the expectations are averaged over 40,000 simulated groups.
Each data set gets 999 bootstrap resamples (seed 42, as a report would), nominal level 95%.

Columns: coverage in % (Monte Carlo SE in brackets, sqrt(p(1-p)/N)) of
    calibrated   what embsql returns (ci_low, ci_high): for one model the jackknife bias-corrected
                 t interval on the logit/log scale, for a difference the studentized bootstrap;
    percentile   the cluster-bootstrap percentile interval embsql returned before;
    jackknife-t  for a difference: the bias-corrected jackknife ± t_{G-1} SE (the alternative).
The target: 95 ± 2.5% from 30 groups on, at least 90% at G = 10 (else the output says
calibrated = false, which embsql does below 30 groups).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from embsql.core import resampling  # noqa: E402
from embsql.core.sums import GroupSums  # noqa: E402

D_A, D_B, SIGMA, REPLICATES, LEVEL = 64, 32, 0.9, 999, 0.95
SIZES = np.array([2, 3, 5, 10, 20])
PROJECTION = np.random.default_rng(999).normal(size=(D_B, D_A)) / np.sqrt(D_A)
STATS = ("r2", "f", "w_bar")
DESIGNS = (("balanced", "homogeneous"), ("balanced", "heterogeneous"), ("unbalanced", "homogeneous"),
           ("unbalanced", "heterogeneous"), ("balanced, different items", "heterogeneous"),
           ("fixed sizes", "homogeneous"), ("fixed sizes", "heterogeneous"))


def sizes_of(rng, groups: int, design: str) -> np.ndarray:
    """Equal groups of 8; sizes drawn from SIZES with each group ("unbalanced"); or SIZES repeated,
    the same in every data set ("fixed sizes": a design, G a multiple of 5)."""
    if design.startswith("balanced"):
        return np.full(groups, 8)
    if design == "fixed sizes":
        return np.tile(SIZES, groups // len(SIZES))
    return SIZES[rng.integers(0, len(SIZES), groups)]


def sample(rng, sizes: np.ndarray, noise: str, design: str) -> tuple[GroupSums, GroupSums]:
    """One data set: the group sums of model A and model B."""
    groups = len(sizes)
    centres = rng.normal(size=(groups, D_A))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    sigma = SIGMA * (rng.uniform(0.4, 1.6, groups) if noise == "heterogeneous" else np.ones(groups))
    codes = np.repeat(np.arange(groups), sizes)
    z = centres[codes] + sigma[codes, None] * rng.normal(size=(len(codes), D_A)) / np.sqrt(D_A)
    b = z @ PROJECTION.T + 0.5 * SIGMA * rng.normal(size=(len(codes), D_B)) / np.sqrt(D_B)
    keep_b = np.ones(len(codes), bool)
    if "different items" in design:  # model B has items 0..5 of each group of 8
        keep_b = np.tile(np.arange(8) < 6, groups)
    return _sums(z, codes, groups), _sums(b[keep_b], codes[keep_b], groups)


def _sums(x: np.ndarray, codes: np.ndarray, groups: int) -> GroupSums:
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    sums = np.add.reduceat(x, np.searchsorted(codes, np.arange(groups)), axis=0)  # codes are sorted, none empty
    return GroupSums(np.array([f"g{k:04d}" for k in range(groups)], dtype=object),
                     np.bincount(codes, minlength=groups).astype(np.int64), sums)


def limits(rng, design: str, noise: str, groups_total: int = 40_000) -> list[dict]:
    """The G -> infinity values of each figure, per model."""
    b_of, n_of = [[], []], [[], []]
    for _ in range(groups_total // 1000):
        pair = sample(rng, sizes_of(rng, 1000, design), noise, design)
        for k, sums in enumerate(pair):
            b_of[k].append(np.einsum("gk,gk->g", sums.sums, sums.sums) / sums.counts)
            n_of[k].append(sums.counts.astype(float))
    out = []
    for k in range(2):
        b, n = np.concatenate(b_of[k]).mean(), np.concatenate(n_of[k]).mean()
        out.append({"r2": b / n, "w_bar": (n - b) / n, "f": b / ((n - b) / (n - 1))})
    return out


def cell(design: str, noise: str, groups: int, datasets: int, seed: int) -> dict:
    """Hits per (figure, method) over ``datasets`` data sets."""
    rng = np.random.default_rng(seed)
    truth = limits(rng, design, noise)
    hits: dict = {}

    def record(key, method, low, high, value):
        hits.setdefault((key, method), []).append(low <= value <= high)

    for _ in range(datasets):
        a, b = sample(rng, sizes_of(rng, groups, design), noise, design)
        for stat in STATS:
            draws, jack = {}, {}
            for name, sums, value in (("A", a, truth[0][stat]), ("B", b, truth[1][stat])):
                # what resampling.bootstrap returns as ci_low/ci_high, without drawing twice
                estimate, jack[name] = resampling.jackknife_replicates(sums, stat)
                _, low, high = resampling.jackknife_t_interval(stat, estimate, jack[name], LEVEL,
                                                               resampling.size_strata(sums))
                record(f"{stat} {name}", "calibrated", low, high, value)
                draws[name] = resampling.bootstrap_draws(sums, stat, REPLICATES, 42)
                old = resampling.percentile_interval(estimate, draws[name][np.isfinite(draws[name])], LEVEL)
                record(f"{stat} {name}", "percentile", old.ci_low, old.ci_high, value)
            value = truth[0][stat] - truth[1][stat]
            _, _, diff = resampling.paired(a, b, stat, replicates=REPLICATES, seed=42, level=LEVEL)
            record(f"{stat} A−B", "calibrated", diff.ci_low, diff.ci_high, value)
            both = draws["A"] - draws["B"]
            old = resampling.percentile_interval(diff.estimate, both[np.isfinite(both)], LEVEL)
            record(f"{stat} A−B", "percentile", old.ci_low, old.ci_high, value)
            _, low, high = resampling.jackknife_t_interval("difference", diff.estimate, jack["A"] - jack["B"], LEVEL)
            record(f"{stat} A−B", "jackknife-t", low, high, value)
    return hits


def format_cell(design, noise, groups, hits, seconds) -> list[str]:
    methods = ("calibrated", "percentile", "jackknife-t")
    lines = [f"{design}, {noise} noise, G = {groups}  ({len(next(iter(hits.values())))} data sets, {seconds:.0f} s)",
             f"  {'figure':10s}" + "".join(f"{m:>16s}" for m in methods)]
    for key in dict.fromkeys(k for k, _ in hits):
        cells = []
        for m in methods:
            h = hits.get((key, m))
            if h is None:
                cells.append(f"{'':>16s}")
                continue
            p = float(np.mean(h))
            cells.append(f"{100 * p:9.1f} ({100 * np.sqrt(p * (1 - p) / len(h)):.1f})")
        lines.append(f"  {key:10s}" + "".join(cells))
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="200 data sets per cell, G = 10 and 30")
    parser.add_argument("--datasets", type=int, help="data sets per cell (default 2000, or 200 with --short)")
    parser.add_argument("--groups", default=None, help="comma-separated G values (default 10,30,100)")
    parser.add_argument("--designs", default=None, help="comma-separated design numbers 1-7 (default all)")
    parser.add_argument("--seed-offset", type=int, default=0, help="fresh data sets (to add to an earlier run)")
    args = parser.parse_args(argv)
    datasets = args.datasets or (200 if args.short else 2000)
    group_counts = [int(g) for g in (args.groups or ("10,30" if args.short else "10,30,100")).split(",")]
    print(f"Coverage of nominal {LEVEL:.0%} intervals of the G -> infinity value, % (Monte Carlo SE)")
    chosen = [DESIGNS[int(k) - 1] for k in args.designs.split(",")] if args.designs else DESIGNS
    for design, noise in chosen:
        for groups in group_counts:
            started = time.time()
            hits = cell(design, noise, groups, datasets,
                        seed=groups * 1000 + DESIGNS.index((design, noise)) + 100_000 * args.seed_offset)
            print("\n".join(format_cell(design, noise, groups, hits, time.time() - started)), flush=True)


if __name__ == "__main__":
    main()
