"""Level of the a:b interaction test by permute='residuals' (Freedman-Lane, an interaction's residuals
permuted within the levels of its first factor), beside 'residuals_free' (free Freedman-Lane) and 'rows'
(adonis2), on validation/terms_validity.py's interaction design (a 3 x b 2, unequal cells, n = 120, b null:
y depends on a only) across the strength of a, isotropic and anisotropic noise, four draws of a's
centres, 'b main' (a and b effects on orthogonal axes) and d = 384; and on a design whose levels of a
differ much in spread and size (tests/core/test_permanova_terms.py's: centres of norm 0.2, 1, 3 before
normalising, 24/36/60 items, b's split 20/50/80% by level of a).

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity_interaction.py [--reps R] \
        > validation/terms_validity_interaction.txt

Each cell: the share of R data sets with p <= 0.05 (B = 199 permutations) and its Monte Carlo SE.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from terms_validity import Cell, describe, run_cell

from embsql.core.permanova_terms import permanova_terms, plan
from embsql.core.terms import parse_terms, variable

SCHEMES = (("residuals", None), ("residuals_free", None), ("rows", None))


def spread_design(reps: int, seed: int = 31) -> str:
    """The design of unequal spreads and sizes (as tests/core/test_permanova_terms.py), ``reps`` data sets."""
    rng = np.random.default_rng(seed)
    n, d = 120, 16
    a = np.repeat([0, 1, 2], [24, 36, 60])
    b = (rng.random(n) < np.array([0.2, 0.5, 0.8])[a]).astype(int)
    variables = {"a": variable("a", [f"a{k}" for k in a]), "b": variable("b", [f"b{k}" for k in b])}
    plan_ = plan(parse_terms(["a*b"]), variables, "sequential")
    u = rng.standard_normal((3, d))
    centres = np.array([0.2, 1.0, 3.0])[:, None] * u / np.linalg.norm(u, axis=1, keepdims=True)
    rejected = dict.fromkeys((p for p, _ in SCHEMES), 0)
    for k in range(reps):
        y = centres[a] + rng.standard_normal((n, d)) / np.sqrt(d)
        y /= np.linalg.norm(y, axis=1, keepdims=True)
        for permute in rejected:
            rejected[permute] += permanova_terms(plan_, None, unit=y, permutations=199, seed=k,
                                                 permute=permute).terms[2].p_value <= 0.05
    parts = [f"seq a:b {p}: {100 * c / reps:5.1f} +- {100 * np.sqrt(c / reps * (1 - c / reps) / reps):.1f}%"
             for p, c in rejected.items()]
    return f"spreads 0.2/1/3, sizes 24/36/60, b split 20/50/80% d=16 R={reps}\n    " + "\n    ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    print(f"B = 199, n = 120, alpha = 0.05; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    started = time.process_time()
    inter = dict(terms=("a*b",), tests=(("sequential", "a:b"),), nuisance="a", schemes=SCHEMES, reps=args.reps)
    conds = [dict(noise=noise, r2=r2, centres_seed=c, label=f"b null, centres {c}")
             for noise in ("isotropic", "anisotropic") for r2 in (0.2, 0.54, 0.8) for c in (0, 1, 2, 3)]
    conds += [dict(r2=r2, exact_sphere=True, effects=(("b", 0.5),), label="b main") for r2 in (0.54, 0.8)]
    conds += [dict(r2=0.54, d=384, label="b null, d = 384")]
    for k, cond in enumerate(conds):
        print(describe(run_cell(Cell("interaction", **inter, **cond, seed=5000 + k))), flush=True)
    print(spread_design(args.reps), flush=True)
    print(f"\n{time.process_time() - started:.0f} s CPU")


if __name__ == "__main__":
    main()
