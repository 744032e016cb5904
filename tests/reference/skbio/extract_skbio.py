#!/usr/bin/env python3
"""Extract scikit-bio's small PERMANOVA test matrices and record what scikit-bio computes on them.

Run from this directory with a Python that has scikit-bio installed:

    python extract_skbio.py > extract_skbio.out

Writes permanova_matrices.json.  The matrices and groupings are the fixtures of
skbio/stats/distance/tests/test_permanova.py (class PERMANOVATestData.setUp), read from the
installed package, so they are exactly what scikit-bio tests itself with ("All results were
verified with R (vegan::adonis)").  Numbers are written with repr(), the shortest string that
round-trips, which for these matrices is the decimal literal of skbio's source (e.g. 0.5678):
the tests read them with fractions.Fraction for exact arithmetic.

Also recorded, for each matrix:
  * skbio_expected: the statistic and p-value hard-coded in skbio's test file (999 permutations,
    p-values checked there only to +-0.05);
  * skbio_permanova: skbio.stats.distance.permanova(dm, grouping, permutations=9999, seed=42)
    (statistic and p-value) and with permutations=0 (statistic only);
  * skbio_exact_p: the exact permutation p-value from scikit-bio's own pseudo-F: permanova(...,
    permutations=0) on every distinct relabelling of the items (the multiset permutations of the
    grouping), p = share of relabellings whose F >= observed F - 1e-9 * max(1, |F|).  Every
    permutation of n items maps to one relabelling and every relabelling has the same number of
    permutations (prod n_g!), so this is P(F_perm >= F_obs) under a uniformly random permutation.
"""

import inspect
import itertools
import json
import platform
import re
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import scipy
import skbio
from skbio.stats.distance import permanova
from skbio.stats.distance.tests import test_permanova

FIXTURES = [  # (name in the JSON, attribute of the matrix, attribute of the grouping, skbio's expected F, p)
    ("ties", "dm_ties", "grouping_equal", 2.0, 0.68),
    ("no_ties", "dm_no_ties", "grouping_equal", 4.4, 0.345),
    ("unequal", "dm_unequal", "grouping_unequal", 0.578848, 0.655),
]


def distinct_relabellings(grouping):
    return sorted(set(itertools.permutations(grouping)))


def main():
    fixtures = test_permanova.PERMANOVATestData(methodName="setUp")
    fixtures.setUp()
    out = {
        "source": "skbio/stats/distance/tests/test_permanova.py, PERMANOVATestData.setUp",
        "source_file_in_installed_package": inspect.getsourcefile(test_permanova).split("site-packages/")[-1],
        "versions": {"scikit-bio": skbio.__version__, "numpy": np.__version__, "scipy": scipy.__version__,
                     "pandas": pd.__version__, "python": platform.python_version()},
        "matrices": {},
    }
    for name, dm_attr, grouping_attr, f_expected, p_expected in FIXTURES:
        dm = getattr(fixtures, dm_attr)
        grouping = [str(g) for g in getattr(fixtures, grouping_attr)]
        data = np.asarray(dm.data, dtype=float)
        matrix = [[repr(float(v)) for v in row] for row in data]
        # the decimal strings must give back the very doubles skbio holds
        assert all(float(Fraction(s)) == v for row, drow in zip(matrix, data) for s, v in zip(row, drow))
        full = permanova(dm, grouping, permutations=9999, seed=42)
        zero = permanova(dm, grouping, permutations=0)
        f_obs = float(zero["test statistic"])
        relabellings = distinct_relabellings(grouping)
        f_all = [float(permanova(dm, list(r), permutations=0)["test statistic"]) for r in relabellings]
        hits = sum(f >= f_obs - 1e-9 * max(1.0, abs(f_obs)) for f in f_all)
        out["matrices"][name] = {
            "skbio_fixture": {"matrix": dm_attr, "grouping": grouping_attr},
            "ids": list(dm.ids),
            "grouping": grouping,
            "distances": matrix,
            "skbio_expected": {"statistic": f_expected, "p_value": p_expected, "permutations": 999},
            "skbio_permanova": {"statistic": float(full["test statistic"]), "p_value": float(full["p-value"]),
                                "permutations": int(full["number of permutations"]), "seed": 42,
                                "statistic_permutations_0": f_obs},
            "skbio_exact_p": {"relabellings": len(relabellings), "at_least_observed": hits,
                              "p_value": hits / len(relabellings)},
        }
        print(f"== {name}: ids {list(dm.ids)}, grouping {grouping}")
        print(data)
        print(full)
        print(f"exact p from skbio's F over {len(relabellings)} distinct relabellings: {hits}/{len(relabellings)}"
              f" = {hits / len(relabellings):.6f}")
    text = json.dumps(out, indent=1)
    # lists of scalars on one line each (a matrix row per line)
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    with open("permanova_matrices.json", "w") as handle:
        handle.write(text + "\n")
    print("versions:", out["versions"])
    print("python:", sys.version)


if __name__ == "__main__":
    main()
