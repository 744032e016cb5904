"""The dispersion test's statistic and its two kernels.

* W~_g, the pooled variance components a and b and F equal an independent computation: R's vegan
  betadisper distances and explicit loops over index tuples (tests/reference/vegan/dispersion_spread.R),
  and a numpy enumeration of every distinct index tuple;
* Var(W~_g) = 4a/n + 2b/(n(n-1)) and the estimators of a and b are unbiased: exact expectations over
  every sample of n draws from a small discrete distribution on the sphere;
* the aligned vectors keep |z| = 1 and put each item's leave-one-out group centroid on one axis;
* the Gram route and the coordinates route give the permuted F of the formula, and the cost rule's choice
  is pinned to the cases measured (validation/README.md);
* the coordinates kernel's sums of every permuted group equal a loop over its pairs (groups of 2 to 8 items:
  pair products and block products; larger groups; float32 rows), and each permuted F the definition by
  distinct index tuples.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from helpers import TESTS
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql.core.dispersion as dispersion
import embsql.core.permutation as permutation
from embsql.core.dispersion import (
    AlignedPermutations,
    aligned_vectors,
    choose_dispersion_method,
    dispersion_test,
    location_share,
    pair_sums,
    spread_components,
    spread_f,
)
from embsql.core.permutation import Design, design, shuffles
from embsql.errors import InputError

REFERENCE = TESTS / "reference" / "vegan"
SPREAD = json.loads((REFERENCE / "dispersion_spread.json").read_text())


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def reference_data(name):
    """data/<name>.csv (the vegan references' input) on the groups of 4 or more items, as R orders them."""
    rows = np.genfromtxt(REFERENCE / "data" / f"{name}.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
    labels = rows["group"].astype(str)
    x = np.column_stack([rows[c] for c in rows.dtype.names if c.startswith("x")]).astype(float)
    kept = np.isin(labels, SPREAD[name]["groups"])
    return x[kept], np.unique(labels[kept], return_inverse=True)[1]


@pytest.mark.parametrize("name", ["unit_balanced", "unit_unbalanced"])
def test_spread_statistic_equals_the_r_reference(name):
    """W~_g is the mean squared betadisper(bias.adjust = TRUE) distance; Q2-Q4, a, b and F equal R's loops
    over index tuples (15 significant digits stored: 1e-9)."""
    ref = SPREAD[name]
    x, codes = reference_data(name)
    sums = pair_sums(x, codes, len(ref["groups"]))
    spread, a, b = spread_components(sums)
    assert spread == pytest.approx(ref["spread_betadisper"], rel=1e-9, abs=0)
    assert spread == pytest.approx(ref["spread_pairs"], rel=1e-9, abs=0)
    assert (float(a), float(b)) == pytest.approx((ref["a"], ref["b"]), rel=1e-9, abs=1e-15)
    assert float(spread_f(sums)) == pytest.approx(ref["f"], rel=1e-9, abs=0)


def tuple_means(z):
    """Q2, Q3, Q4 by enumerating every ordered tuple of distinct indices (the definitions)."""
    c = z @ z.T
    n = len(z)
    q2 = np.mean([c[i, j] ** 2 for i, j in itertools.permutations(range(n), 2)])
    q3 = np.mean([c[i, j] * c[j, k] for i, j, k in itertools.permutations(range(n), 3)])
    q4 = np.mean([c[i, j] * c[k, m] for i, j, k, m in itertools.permutations(range(n), 4)])
    return q2, q3, q4


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(4, 7), min_size=1, max_size=3), st.integers(2, 9))
def test_pair_sums_give_the_tuple_means(seed, sizes, dim):
    rng = np.random.default_rng(seed)
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    z = unit(rng.standard_normal((len(codes), dim)) + rng.standard_normal(dim))
    sums = pair_sums(z, codes, len(sizes))
    n = sums.sizes.astype(float)
    for g in range(len(sizes)):
        q2, q3, q4 = tuple_means(z[codes == g])
        assert sums.f2[g] / (n[g] * (n[g] - 1)) == pytest.approx(q2, rel=1e-10, abs=1e-12)
        assert (sums.r2[g] - sums.f2[g]) / (n[g] * (n[g] - 1) * (n[g] - 2)) == pytest.approx(q3, rel=1e-10, abs=1e-12)
        assert ((sums.s1[g] ** 2 - 4 * sums.r2[g] + 2 * sums.f2[g]) / (n[g] * (n[g] - 1) * (n[g] - 2) * (n[g] - 3))
                == pytest.approx(q4, rel=1e-9, abs=1e-12))


def test_a_group_larger_than_the_dimension_takes_the_d_by_d_route():
    """n_g > d: f2 from Z'Z (d x d), the same numbers as the n_g x n_g blocks."""
    rng = np.random.default_rng(3)
    z = unit(rng.standard_normal((40, 5)) + 1.0)
    codes = np.repeat([0, 1], 20)
    wide = pair_sums(np.hstack([z, np.zeros((40, 40))]), codes, 2)      # d = 45 > 20: blocks
    tall = pair_sums(z, codes, 2)                                        # d = 5 < 20: Z'Z
    for k in ("s1", "r2", "f2"):
        np.testing.assert_allclose(getattr(tall, k), getattr(wide, k), rtol=1e-12)


def test_variance_formula_and_unbiased_components_by_exact_enumeration():
    """Every ordered sample of n = 5 draws from 4 unit vectors with unequal weights (4^5 samples): the
    exact E[W~], Var(W~), E[a_hat], E[b_hat] against sigma^2 = 1 - |m|^2, 4a/n + 2b/(n(n-1)), a = m'Sm and
    b = tr(S^2) of that distribution (with repeated draws allowed, as iid sampling has)."""
    rng = np.random.default_rng(8)
    atoms = unit(rng.standard_normal((4, 3)) + np.array([1.0, 0.0, 0.0]))
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    m = weights @ atoms
    cov = (atoms - m).T @ np.diag(weights) @ (atoms - m)
    a, b, n = m @ cov @ m, np.trace(cov @ cov), 5
    values, probs = [], []
    for draw in itertools.product(range(4), repeat=n):
        spread, a_hat, b_hat = spread_components(pair_sums(atoms[list(draw)], np.zeros(n, dtype=np.int64), 1))
        values.append((spread[0], spread[0] ** 2, *(float(v) for v in (a_hat, b_hat))))
        probs.append(np.prod(weights[list(draw)]))
    e = np.array(probs) @ np.array(values)
    assert e[0] == pytest.approx(1 - m @ m, rel=1e-12)
    assert e[1] - e[0] ** 2 == pytest.approx(4 * a / n + 2 * b / (n * (n - 1)), rel=1e-10)
    # the clipped estimators: exact means with the clipping undone are a and b; clipping at 0 only raises them
    assert e[2] >= a - 1e-12 and e[3] >= b - 1e-12


def test_unclipped_components_are_unbiased_by_exact_enumeration():
    rng = np.random.default_rng(9)
    atoms = unit(rng.standard_normal((3, 4)) + 0.5)
    weights = np.array([0.5, 0.3, 0.2])
    m = weights @ atoms
    cov = (atoms - m).T @ np.diag(weights) @ (atoms - m)
    n, total = 4, np.zeros(2)
    for draw in itertools.product(range(3), repeat=n):
        s = pair_sums(atoms[list(draw)], np.zeros(n, dtype=np.int64), 1)
        q2 = s.f2[0] / (n * (n - 1))
        q3 = (s.r2[0] - s.f2[0]) / (n * (n - 1) * (n - 2))
        q4 = (s.s1[0] ** 2 - 4 * s.r2[0] + 2 * s.f2[0]) / (n * (n - 1) * (n - 2) * (n - 3))
        total += np.prod(weights[list(draw)]) * np.array([q3 - q4, q2 - 2 * q3 + q4])
    assert total == pytest.approx([m @ cov @ m, np.trace(cov @ cov)], rel=1e-10, abs=1e-14)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(4, 9), min_size=2, max_size=5), st.integers(2, 20))
def test_aligned_vectors_are_unit_and_put_the_others_centroid_on_the_axis(seed, sizes, dim):
    """|y_i| = 1, and (unshrunk, share 1) y_i . t = z_i . u_(-i) for the axis t (the data's mean direction) and
    u_(-i) the direction of the centroid of the other items of i's group: the reflection maps u_(-i) onto t
    (H symmetric, H t = u).  At share 0 every reflection is the identity."""
    rng = np.random.default_rng(seed)
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    z = unit(rng.standard_normal((len(codes), dim)) * 0.5 + rng.standard_normal((len(sizes), dim))[codes])
    y = aligned_vectors(z, codes, 1.0)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(aligned_vectors(z, codes, 0.0), z, rtol=0, atol=1e-12)
    axis = z.sum(axis=0) / np.linalg.norm(z.sum(axis=0))
    for i in range(len(z)):
        others = z[(codes == codes[i]) & (np.arange(len(z)) != i)].sum(axis=0)
        assert y[i] @ axis == pytest.approx(z[i] @ others / np.linalg.norm(others), abs=1e-10)
    # each item has its own reflection, so the inner products change (unlike a reflection per group)
    assert not np.allclose(y @ y.T, z @ z.T)


def test_location_share_is_near_zero_for_equal_locations_and_near_one_for_distinct_ones():
    """kappa = max(0, 1 - sum_g (1 - n_g/n) W~_g / SS_B): SS_B's expectation under equal locations is that sum,
    so exchangeable items give kappa near 0 (mean over data sets within 0.05), and groups 30 sigma apart near 1;
    computed here from its definition by explicit loops, not the module's sums."""
    rng = np.random.default_rng(5)
    codes = np.repeat(np.arange(12), 6)

    def by_definition(z):
        n = len(z)
        grand = z.mean(axis=0)
        between = expected = 0.0
        for g in range(12):
            zg = z[codes == g]
            k = len(zg)
            between += k * np.sum((zg.mean(axis=0) - grand) ** 2)
            pairs = [1 - zg[i] @ zg[j] for i in range(k) for j in range(k) if i != j]
            expected += (1 - k / n) * np.mean(pairs)
        return max(0.0, 1 - expected / between)

    equal = [location_share(z, codes) for z in (unit(rng.standard_normal((72, 32))) for _ in range(50))]
    z = unit(rng.standard_normal((72, 32)))
    assert location_share(z, codes) == pytest.approx(by_definition(z), rel=1e-10, abs=1e-12)
    assert 0.0 <= np.mean(equal) <= 0.05 and min(equal) == 0.0
    apart = unit(3.0 * rng.standard_normal((12, 32))[codes] + 0.1 * rng.standard_normal((72, 32)))
    assert location_share(apart, codes) == pytest.approx(by_definition(apart), rel=1e-10)
    assert location_share(apart, codes) > 0.95


def test_observed_f_is_invariant_to_each_group_s_own_rotation():
    rng = np.random.default_rng(12)
    codes = np.repeat(np.arange(4), [4, 6, 9, 12])
    z = unit(rng.standard_normal((31, 6)) + 1.0)
    turned = z.copy()
    for g in range(4):
        q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
        turned[codes == g] = z[codes == g] @ q
    assert float(spread_f(pair_sums(turned, codes, 4))) == pytest.approx(float(spread_f(pair_sums(z, codes, 4))),
                                                                         rel=1e-10)
    assert dispersion_test(turned, design(codes), permutations=9).test.statistic == pytest.approx(
        dispersion_test(z, design(codes), permutations=9).test.statistic, rel=1e-10)


def reference_f(unit_vectors: np.ndarray, codes: np.ndarray, perms) -> np.ndarray:
    """The formula as written: align, regroup every permuted row, and recompute the statistic group by group."""
    groups = int(codes.max()) + 1
    y = aligned_vectors(unit_vectors, codes)
    return np.array([float(spread_f(pair_sums(y[p], codes, groups))) for p in perms])


def kernel_f(unit_vectors, codes, perms, method) -> np.ndarray:
    kernel = AlignedPermutations(unit_vectors, codes, int(codes.max()) + 1, method, len(perms))
    assert kernel.method == method
    return kernel.batch(list(perms))


@st.composite
def designs(draw):
    """Unequal groups (4 to 12 items), strata for the permutations, group locations that differ."""
    seed = draw(st.integers(0, 2**32 - 1))
    sizes = draw(st.lists(st.integers(4, 12), min_size=2, max_size=6))
    dim = draw(st.integers(2, 24))
    strata_count = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    x = rng.standard_normal((len(sizes), dim))[codes] * rng.uniform(0, 2) + rng.standard_normal((len(codes), dim))
    strata = np.sort(rng.integers(0, strata_count, len(codes)))
    return unit(x), codes.astype(np.int64), Design(codes.astype(np.int64), strata, len(sizes)), seed


@settings(max_examples=60, deadline=None)
@given(designs())
def test_gram_and_coordinates_give_the_formula_s_permuted_f(case):
    z, codes, d, seed = case
    perms = list(shuffles(d, 40, seed)) + [np.arange(len(codes))]
    expected = reference_f(z, codes, perms)
    np.testing.assert_allclose(kernel_f(z, codes, perms, "coordinates"), expected, rtol=1e-9, atol=0)
    np.testing.assert_allclose(kernel_f(z, codes, perms, "gram"), expected, rtol=1e-9, atol=0)


def test_the_p_value_is_the_same_by_either_route():
    rng = np.random.default_rng(11)
    labels = np.repeat(np.arange(30), np.r_[np.full(10, 4), np.full(20, 7)])
    x = rng.standard_normal((len(labels), 16)) * np.where(labels < 5, 0.5, 1.0)[:, None] + rng.standard_normal(16)
    z = unit(x)
    d = design(labels)
    by_gram = dispersion_test(z, d, permutations=199, seed=3, method="gram").test
    by_coordinates = dispersion_test(z, d, permutations=199, seed=3, method="coordinates").test
    assert by_gram.exceedances == by_coordinates.exceedances
    assert by_gram.p_value == by_coordinates.p_value
    assert by_gram.statistic == by_coordinates.statistic        # observed F: computed once, outside the kernels


def test_equal_spreads_give_f_zero_and_p_one():
    """Every group the same three-point pattern, rotated: every W~_g equal, so F = 0 and p = 1 (not a NaN)."""
    rng = np.random.default_rng(2)
    pattern = unit(np.array([[1.0, 0.1, 0.0], [1.0, -0.1, 0.0], [1.0, 0.0, 0.1], [1.0, 0.0, -0.1]]))
    z = np.vstack([pattern @ np.linalg.qr(rng.standard_normal((3, 3)))[0] for _ in range(5)])
    result = dispersion_test(z, design(np.repeat(np.arange(5), 4)), permutations=19)
    assert result.test.statistic == 0.0 and result.test.p_value == 1.0


def test_an_unknown_method_is_refused():
    with pytest.raises(InputError, match="method must be"):
        dispersion_test(np.eye(8), design(np.repeat([0, 1], 4)), permutations=9, method="pairs")


def labels_of(n: int, size: int) -> np.ndarray:
    return np.repeat(np.arange(n // size), size)


# (n, group size, permutations, route).  Measured with bench/dispersion_routes.py (BLAS on one thread, d = 384,
# load 4-8; ms per permutation, and the Gram matrix's build): n = 5,000 groups of 4: coordinates 72.7, gram 5.5 + 3.4 s;
# 10,000 groups of 50: coordinates 210, gram 249 + 12.7 s; 4,000 groups of 200: coordinates 158, gram 306 + 3.4 s.
# (2,000 groups of 50: coordinates 43.7, gram 38.9 + 0.6 s, within the noise: either route.)  The other rows
# follow from the rule (the Gram budget past n = 23,000; 9 permutations do not pay for building the matrix).
MEASURED = [(5_000, 4, 999, "gram"), (10_000, 50, 999, "coordinates"), (4_000, 200, 999, "coordinates"),
            (4_000, 1_000, 999, "coordinates"), (20_000, 4, 999, "gram"), (30_000, 4, 999, "coordinates"),
            (5_000, 4, 9, "coordinates")]


@pytest.mark.parametrize(("n", "size", "permutations", "method"), MEASURED)
def test_choose_dispersion_method_matches_the_measured_faster_route(n, size, permutations, method):
    assert choose_dispersion_method(n, 384, labels_of(n, size), permutations) == method


def test_threaded_gathers_give_the_one_thread_f(monkeypatch):
    rng = np.random.default_rng(5)
    codes = rng.permutation(np.repeat(np.arange(12), rng.integers(4, 9, 12)))
    z = unit(rng.standard_normal((len(codes), 10)))
    perms = list(shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), 12), 16, 2))
    monkeypatch.setattr(permutation, "MIN_THREADED_READS", 0)        # the threads are permutation.over_threads
    monkeypatch.setattr(permutation, "gather_threads", lambda: 3)     # whatever the machine's cores
    np.testing.assert_allclose(kernel_f(z, codes, perms, "gram"), reference_f(z, codes, perms), rtol=1e-9, atol=0)


def loop_pair_sums(z: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """s1, r2 and f2 of every group, one group's Gram matrix at a time, by their definitions."""
    out = np.zeros((3, groups))
    for g in range(groups):
        c = z[codes == g] @ z[codes == g].T
        np.fill_diagonal(c, 0.0)
        out[:, g] = c.sum(), np.sum(c.sum(axis=1) ** 2), np.sum(c * c)
    return out


def test_the_coordinates_route_in_threads_and_chunks_gives_each_permutation_s_pair_sums(monkeypatch):
    """The threads share a batch's permutations and each permuted group's block is gathered a few groups at a
    time: the sums are those of the regrouped rows, computed group by group, and the same bits whatever the
    threads and chunks (groups of 4 to 9 items and one of 15, more than d = 10: the d x d route)."""
    rng = np.random.default_rng(11)
    codes = rng.permutation(np.r_[np.repeat(np.arange(12), rng.integers(4, 10, 12)), np.full(15, 12)])
    z = unit(rng.standard_normal((len(codes), 10)) + rng.standard_normal((13, 10))[codes])
    perms = np.stack(list(shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), 13), 7, 3)))
    plain = dispersion.CoordinateSums(z, codes, 13).batch(perms)
    monkeypatch.setattr(dispersion, "CHUNK_BYTES", 1)                 # one group per block product
    monkeypatch.setattr(dispersion, "gather_threads", lambda: 3)      # whatever the machine's cores
    threaded = dispersion.CoordinateSums(z, codes, 13).batch(perms)
    for k, perm in enumerate(perms):
        expected = loop_pair_sums(z[perm], codes, 13)
        for row, name in enumerate(("s1", "r2", "f2")):
            np.testing.assert_allclose(getattr(threaded, name)[k], expected[row], rtol=1e-12, atol=1e-12)
            assert np.array_equal(getattr(threaded, name)[k], getattr(plain, name)[k])
    assert np.array_equal(threaded.sizes, np.bincount(codes))


def pair_loop_sums(y: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """s1, r2 and f2 of every group by an explicit loop over its ordered pairs i != j, one inner product each."""
    out = np.zeros((3, groups))
    for g in range(groups):
        items = np.flatnonzero(codes == g)
        rows = {i: 0.0 for i in items}
        for i, j in itertools.permutations(items, 2):
            c = float(np.dot(y[i].astype(np.float64), y[j].astype(np.float64)))
            out[0, g] += c
            out[2, g] += c * c
            rows[i] += c
        out[1, g] = sum(r * r for r in rows.values())
    return out


def distinct_tuple_f(y: np.ndarray, codes: np.ndarray, groups: int) -> float:
    """F as the module docstring writes it, each group's Q2, Q3 and Q4 as means over its ordered tuples of
    distinct indices (boolean masks over every index tuple), W~_g as the mean of 1 - c_ij over its pairs."""
    spread, q, weights = np.zeros(groups), np.zeros((groups, 3)), np.zeros(groups)
    for g in range(groups):
        z = y[codes == g].astype(np.float64)
        n = len(z)
        c = z @ z.T
        i, j, k, m = np.ogrid[:n, :n, :n, :n]
        two = (i != j)[:, :, 0, 0]
        three = ((i != j) & (j != k) & (i != k))[:, :, :, 0]
        four = (i != j) & (i != k) & (i != m) & (j != k) & (j != m) & (k != m)
        spread[g] = np.mean(1.0 - c[two])
        q[g] = (np.mean((c * c)[two]), np.mean((c[:, :, None] * c[None, :, :])[three]),
                np.mean((c[:, :, None, None] * c[None, None, :, :])[four]))
        weights[g] = n
    sizes = weights.copy()
    weights /= weights.sum()
    a = max(0.0, float(weights @ (q[:, 1] - q[:, 2])))
    b = max(0.0, float(weights @ (q[:, 0] - 2 * q[:, 1] + q[:, 2])))
    variance = 4 * a / sizes + 2 * b / (sizes * (sizes - 1))
    centre = np.sum(spread / variance) / np.sum(1 / variance)
    return float(np.sum((spread - centre) ** 2 / variance) / (groups - 1))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_permutation_s_pair_sums_equal_a_loop_over_pairs(seed, dtype):
    """The coordinates kernel's s1, r2, f2 of every permuted group (groups of 2 to 8 items: the pair products
    up to PAIR_SIZE, the block products above; and of 9, 15 and 30 items, 30 more than d = 24: the d x d route)
    equal an explicit loop over the group's pairs, float32 rows summed in float64."""
    rng = np.random.default_rng(seed)
    sizes = np.r_[rng.permutation(np.repeat(np.arange(2, 9), 2)), 9, 15, 30]
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    z = unit(rng.standard_normal((len(codes), 24)) + 2 * rng.standard_normal(24)).astype(dtype)
    perms = np.stack(list(shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), len(sizes)), 4, seed)))
    sums = dispersion.CoordinateSums(z, codes, len(sizes)).batch(perms)
    for k, perm in enumerate(perms):
        expected = pair_loop_sums(z[perm], codes, len(sizes))
        for row, name in enumerate(("s1", "r2", "f2")):
            np.testing.assert_allclose(getattr(sums, name)[k], expected[row], rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("seed", [3, 4])
def test_each_permuted_f_equals_the_distinct_tuple_definition(seed):
    """Each permuted F of the aligned vectors (groups of 4 to 8 items and of 12 and 20, unequal; d = 16, the
    vectors sharing a strong direction, where b is a small difference of large terms) equals F computed from
    the means over distinct index tuples of each permuted group."""
    rng = np.random.default_rng(seed)
    sizes = np.r_[rng.permutation(np.arange(4, 9)), 12, 20]
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    z = unit(6 * rng.standard_normal(16) + rng.standard_normal((len(sizes), 16))[codes]
             + 0.5 * rng.standard_normal((len(codes), 16)))
    perms = list(shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), len(sizes)), 6, seed))
    y = aligned_vectors(z, codes)
    expected = [distinct_tuple_f(y[p], codes, len(sizes)) for p in perms]
    np.testing.assert_allclose(kernel_f(z, codes, perms, "coordinates"), expected, rtol=1e-8, atol=0)
