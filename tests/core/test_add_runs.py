"""core.sums.add_runs and add_rows: sums of rows by run or by code, held to numpy and to an explicit loop."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from embsql.core.sums import add_rows, add_runs


def _loop(x: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
    return np.array([[sum(float(x[i, k]) for i in rows) for k in range(x.shape[1])] for rows in members])


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 300), dim=st.integers(1, 40), seed=st.integers(0, 2**32 - 1), float32=st.booleans())
def test_add_runs_equals_reduceat_and_a_loop(rows: int, dim: int, seed: int, float32: bool) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, dim)).astype(np.float32 if float32 else np.float64)
    cuts = rng.random(rows - 1) < rng.random()           # runs from all of length 1 to one run of all
    starts = np.r_[0, np.flatnonzero(cuts) + 1]
    got = add_runs(x, starts)
    tolerance = 1e-5 if float32 else 1e-12
    assert got.shape == (len(starts), dim) and got.dtype == x.dtype
    members = [np.arange(a, b) for a, b in zip(starts, np.r_[starts[1:], rows])]
    np.testing.assert_allclose(got, _loop(x, members), rtol=tolerance, atol=tolerance * rows)
    np.testing.assert_allclose(got, np.add.reduceat(x.astype(np.float64), starts, axis=0), rtol=tolerance,
                               atol=tolerance * rows)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 300), dim=st.integers(1, 20), groups=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_add_rows_equals_add_at_and_a_loop(rows: int, dim: int, groups: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, dim))
    codes = rng.integers(0, groups, rows)                # unsorted, some codes absent
    got = add_rows(x, codes, groups)
    expected = np.zeros((groups, dim))
    np.add.at(expected, codes, x)
    assert got.shape == (groups, dim) and got.dtype == np.float64
    np.testing.assert_allclose(got, _loop(x, [np.flatnonzero(codes == g) for g in range(groups)]).reshape(groups, dim),
                               rtol=1e-12, atol=1e-12 * rows)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * rows)
