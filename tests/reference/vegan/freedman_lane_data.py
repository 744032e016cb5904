"""Write the inputs of freedman_lane.R (numpy only; fixed seeds; DO NOT EDIT the outputs by hand):

  data/fl_units.csv        id, s, a, b, c, x1..x6: 36 unit vectors, rows sorted by the block s (the
                           order the kernel needs for strata); a strong factor a (3 levels), b (3
                           levels) correlated with a, a covariate c, a small effect of each
  data/fl_dune_order.csv   dune's rows sorted by Moisture (stable): the order both sides use
  data/fl_perms_*.csv      permutation matrices, one row per permutation, 1-based (R's convention):
                           row i of the permuted data is row perm[i] of the data, in both vegan and embsql.
                           *_free: numpy.random.default_rng(SEED).permutation(n) PERMUTATIONS times;
                           *_strata: the same generator, each stratum's block of rows permuted in turn
                           (strata in row order), which is how embsql.core.permutation.shuffles draws
                           them: tests/core/test_permanova_terms.py checks that shuffles gives these matrices.

    python freedman_lane_data.py && Rscript freedman_lane.R > freedman_lane.Rout 2>&1
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PERMUTATIONS = 99
SEED = 2024


def permutations(blocks: np.ndarray, seed: int = SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    segments = np.split(np.arange(len(blocks)), np.flatnonzero(np.diff(blocks)) + 1)
    rows = [np.concatenate([rng.permutation(s) for s in segments]) if len(segments) > 1 else rng.permutation(len(blocks))
            for _ in range(PERMUTATIONS)]
    return np.array(rows) + 1


def write_perms(name: str, perms: np.ndarray) -> None:
    np.savetxt(HERE / "data" / f"fl_perms_{name}.csv", perms, fmt="%d", delimiter=",")


def units() -> np.ndarray:
    rng = np.random.default_rng(11)
    n, d = 36, 6
    s = np.repeat([0, 1], n // 2)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n))
    c = b + rng.standard_normal(n)
    x = (2.0 * rng.standard_normal((3, d))[a] + 0.4 * rng.standard_normal((3, d))[b]
         + 0.2 * np.outer(c, rng.standard_normal(d)) + 0.3 * rng.standard_normal((2, d))[s] + rng.standard_normal((n, d)))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with open(HERE / "data" / "fl_units.csv", "w") as out:
        out.write("id,s,a,b,c," + ",".join(f"x{k + 1}" for k in range(d)) + "\n")
        for i in range(n):
            out.write(f"{i + 1},s{s[i]},a{a[i]},b{b[i]},{c[i]:.17g}," + ",".join(f"{v:.17g}" for v in x[i]) + "\n")
    return s


def dune_order() -> np.ndarray:
    """Moisture of dune's 20 sites (vegan's dune.env, as in data/dune_env.csv), rows sorted by it."""
    rows = (HERE / "data" / "dune_env.csv").read_text().splitlines()[1:]
    moisture = np.array([int(r.split(",")[2].strip('"')) for r in rows])
    order = np.argsort(moisture, kind="stable")
    np.savetxt(HERE / "data" / "fl_dune_order.csv", order + 1, fmt="%d")
    return moisture[order]


if __name__ == "__main__":
    s = units()
    write_perms("units_free", permutations(np.zeros(len(s), dtype=int)))
    write_perms("units_strata", permutations(s))
    moisture = dune_order()
    write_perms("dune_free", permutations(np.zeros(len(moisture), dtype=int)))
    write_perms("dune_strata", permutations(moisture))
