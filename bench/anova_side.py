"""Benchmark: embsql.anova on a DuckDB table against bench/anova.py's numpy_anova on the same rows in memory,
in interleaved rounds (numpy, embsql, numpy, embsql, ...) so both see the same load; best of each.

    PYTHONPATH=. python bench/anova_side.py 1000000 5000 3      # n rows, G groups, rounds; d = 384 float32

The table is built from the numpy array through Arrow (seconds, where bench/anova.py's chunked inserts take
minutes at 10^6 rows); loading is not timed.
"""
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from anova import numpy_anova  # noqa: E402

import embsql  # noqa: E402

n, G, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
d = 384
rng = np.random.default_rng(0)
labels = rng.integers(0, G, n)
x = (rng.standard_normal((G, d))[labels] + 1.5 * rng.standard_normal((n, d)) / np.sqrt(d)).astype(np.float32)
con = embsql.connect()
con.register("t_arrow", pa.table({"g": pa.array(labels.astype(str)),
                                  "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d)}))
con.execute(f"CREATE TABLE emb AS SELECT g, v::FLOAT[{d}] AS v FROM t_arrow")
con.unregister("t_arrow")
print(f"n = {n:,}, d = {d}, G = {G}; DuckDB table FLOAT[{d}] in memory; numpy on the float32 array in memory "
      f"(bench/anova.py's numpy_anova); {os.cpu_count()} cores", flush=True)
best = {"numpy": np.inf, "embsql.anova": np.inf}
for r in range(rounds):
    start = time.perf_counter()
    ref = numpy_anova(labels, x)
    tn = time.perf_counter() - start
    start = time.perf_counter()
    got = embsql.anova(con, "emb", group="g", vector="v").to_dicts()[0]
    te = time.perf_counter() - start
    best["numpy"], best["embsql.anova"] = min(best["numpy"], tn), min(best["embsql.anova"], te)
    print(f"round {r + 1} (load {os.getloadavg()[0]:.1f}): numpy {tn:.2f} s, embsql.anova {te:.2f} s, "
          f"ratio {te / tn:.2f}", flush=True)
assert abs(got["r2"] - ref["r2"]) <= 1e-9 * abs(ref["r2"]), (got, ref)
print(f"best of {rounds}: numpy {best['numpy']:.2f} s, embsql.anova {best['embsql.anova']:.2f} s, "
      f"ratio {best['embsql.anova'] / best['numpy']:.2f} (target <= 1.5); r2 agrees to 1e-9")
