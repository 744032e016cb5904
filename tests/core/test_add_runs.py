"""core.sums.add_runs: the sums of runs of rows, held to np.add.reduceat and to an explicit loop."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from embsql.core.sums import add_runs


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 300), dim=st.integers(1, 40), seed=st.integers(0, 2**32 - 1),
       float32=st.booleans())
def test_add_runs_equals_reduceat_and_a_loop(rows: int, dim: int, seed: int, float32: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, dim)).astype(np.float32 if float32 else np.float64)
    cuts = rng.random(rows - 1) < rng.random()           # runs from all of length 1 to one run of all
    starts = np.r_[0, np.flatnonzero(cuts) + 1]
    got = add_runs(x, starts)
    ends = np.r_[starts[1:], rows]
    loop = np.array([[sum(float(x[i, k]) for i in range(a, b)) for k in range(dim)] for a, b in zip(starts, ends)])
    assert got.shape == (len(starts), dim) and got.dtype == np.float64
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12 * rows)
    np.testing.assert_allclose(got, np.add.reduceat(x.astype(np.float64), starts, axis=0), rtol=1e-12, atol=1e-12 * rows)
