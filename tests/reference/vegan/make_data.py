#!/usr/bin/env python3
"""Generate deterministic input data for the vegan reference numbers.

Writes CSV files into ./data/ (relative to this script). numpy only, fixed seeds.
Floats are written with '%.17g' so they round-trip exactly.
"""
import os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data")


def fmt(v):
    return "%.17g" % float(v)


def write_csv(path, header, rows):
    with open(path, "w", newline="\n") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(r) + "\n")


def unit_rows(rng, labels, sizes, d, spread=1.0, noise=0.6):
    centres = rng.normal(0.0, spread, size=(len(labels), d))
    groups, X = [], []
    for lab, c, n in zip(labels, centres, sizes):
        for _ in range(n):
            v = c + rng.normal(0.0, noise, size=d)
            X.append(v / np.linalg.norm(v))
            groups.append(lab)
    return groups, np.array(X)


def make_unit(name, seed, labels, sizes, d):
    rng = np.random.default_rng(seed)
    groups, X = unit_rows(rng, labels, sizes, d)
    header = ["id", "group"] + ["x%d" % (k + 1) for k in range(d)]
    rows = [[str(i + 1), g] + [fmt(v) for v in x] for i, (g, x) in enumerate(zip(groups, X))]
    write_csv(os.path.join(OUT, name), header, rows)


def make_bray(seed=20240503):
    rng = np.random.default_rng(seed)
    labels, sizes, s = ["A", "B", "C"], [4, 5, 6], 8
    base = rng.uniform(0.5, 6.0, size=s)
    rows, i = [], 0
    for lab, n in zip(labels, sizes):
        mult = rng.uniform(0.2, 3.0, size=s)
        rates = base * mult
        for _ in range(n):
            while True:
                x = rng.poisson(rates)
                if x.sum() > 0:
                    break
            i += 1
            rows.append([str(i), lab] + [str(int(v)) for v in x])
    header = ["id", "group"] + ["s%d" % (k + 1) for k in range(s)]
    write_csv(os.path.join(OUT, "bray.csv"), header, rows)


def make_strata(seed=20240504, d=4):
    rng = np.random.default_rng(seed)
    blocks, groups = ["b1", "b2", "b3"], ["p", "q", "r"]
    block_eff = rng.normal(0.0, 1.0, size=(len(blocks), d))
    group_eff = rng.normal(0.0, 0.3, size=(len(groups), d))  # moderate effect
    rows, i = [], 0
    for b, be in zip(blocks, block_eff):
        for g, ge in zip(groups, group_eff):
            for _ in range(4):
                v = be + ge + rng.normal(0.0, 0.5, size=d)
                v = v / np.linalg.norm(v)
                i += 1
                rows.append([str(i), g, b] + [fmt(x) for x in v])
    header = ["id", "group", "block"] + ["x%d" % (k + 1) for k in range(d)]
    write_csv(os.path.join(OUT, "strata.csv"), header, rows)


def main():
    os.makedirs(OUT, exist_ok=True)
    make_unit("unit_balanced.csv", 20240501, ["g1", "g2", "g3", "g4"], [5, 5, 5, 5], 6)
    make_unit("unit_unbalanced.csv", 20240502, ["a", "b", "c", "d", "e"], [3, 7, 2, 5, 4], 5)
    make_bray()
    make_strata()


if __name__ == "__main__":
    main()
