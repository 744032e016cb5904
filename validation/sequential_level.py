"""Simulation: the level of sequential Monte Carlo p-values (Besag and Clifford 1991) beside the full test.

    nice python validation/sequential_level.py [--runs 2000] [--stop-after 10] [--out validation/sequential_level.json]

For each design, --runs null data sets (unit vectors, labels independent of the vectors); on each, the
same seeded permutation stream gives the full test's p (B = 999) and the sequential one's (stop once h
permuted statistics reach the observed one; p = h / L, else (b + 1) / (B + 1)).  Printed and written
(JSON, one record per design and test): the share of p <= 0.05 and <= 0.01 with Monte Carlo standard
errors, the mean and median permutations the sequential run used, and the share of runs where the two
decisions at 5% differ.  Under an alternative (last design) the share of rejections (power) of both.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from embsql.core.dispersion import dispersion_test
from embsql.core.permutation import design, permanova_vectors

B = 999
DESIGNS = {   # name: (group sizes, dimension, shift of the group means: 0 is the null)
    "3 x 6, d 3": ((6, 6, 6), 3, 0.0),
    "4 x 10, d 16": ((10,) * 4, 16, 0.0),
    "5, 10, 20, 40, d 8": ((5, 10, 20, 40), 8, 0.0),
    "10 x 8, d 64": ((8,) * 10, 64, 0.0),
    "4 x 10, d 16, shifted (power)": ((10,) * 4, 16, 0.8),
}


def data(sizes, dim, shift, rng):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.standard_normal((len(labels), dim)) + shift * np.eye(dim)[labels % dim]
    return x / np.linalg.norm(x, axis=1, keepdims=True), labels


def share(flags):
    p = float(np.mean(flags))
    return round(100 * p, 2), round(100 * np.sqrt(max(p * (1 - p), 1e-12) / len(flags)), 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--stop-after", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("sequential_level.json"))
    args = parser.parse_args()
    h, records, start = args.stop_after, [], time.time()
    print(f"{args.runs} data sets per design, B = {B}, h = {h}; % of p <= alpha +- Monte Carlo SE")
    print("| design | test | full p<=.05 | sequential p<=.05 | full p<=.01 | sequential p<=.01 | decisions differ "
          "| permutations used (mean, median) |")
    for name, (sizes, dim, shift) in DESIGNS.items():
        rng = np.random.default_rng(2026)
        for test in ("permanova", "dispersion"):
            full, seq, used = [], [], []
            for run in range(args.runs):
                z, labels = data(sizes, dim, shift, rng)
                d = design(labels)
                if test == "permanova":
                    a = permanova_vectors(z, d, permutations=B, seed=run)
                    b = permanova_vectors(z, d, permutations=B, seed=run, stop_after=h)
                else:
                    a = dispersion_test(z, d, permutations=B, seed=run).test
                    b = dispersion_test(z, d, permutations=B, seed=run, stop_after=h).test
                full.append(a.p_value)
                seq.append(b.p_value)
                used.append(b.permutations)
            full, seq, used = np.array(full), np.array(seq), np.array(used)
            assert 0 < seq.min() and seq.max() <= 1
            record = {"design": name, "test": test, "runs": args.runs, "B": B, "stop_after": h,
                      "null": shift == 0.0,
                      "full_05": share(full <= 0.05), "sequential_05": share(seq <= 0.05),
                      "full_01": share(full <= 0.01), "sequential_01": share(seq <= 0.01),
                      "decisions_differ_05": share((full <= 0.05) != (seq <= 0.05)),
                      "permutations_mean": round(float(used.mean()), 1), "permutations_median": float(np.median(used))}
            records.append(record)
            cells = [f"{v[0]:.1f} +- {v[1]:.1f}" for v in (record["full_05"], record["sequential_05"],
                                                          record["full_01"], record["sequential_01"],
                                                          record["decisions_differ_05"])]
            print(f"| {name} | {test} | " + " | ".join(cells) +
                  f" | {record['permutations_mean']:.0f}, {record['permutations_median']:.0f} |", flush=True)
    args.out.write_text(json.dumps({"generated_by": "validation/sequential_level.py", "records": records}, indent=1) + "\n")
    print(f"\n{time.time() - start:.0f} s; written to {args.out}")


if __name__ == "__main__":
    main()
