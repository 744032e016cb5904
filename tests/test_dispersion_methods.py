"""The dispersion test's two kernels: the Gram route and the coordinates route give the permuted F of
the original formula (regroup the scaled residual vectors, centroid_distances, anova_f), also for a
near-degenerate design, and the cost rule's choice is pinned to the cases measured (bench/README.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql.core.dispersion as dispersion
import embsql.core.permutation as permutation
from embsql.core.dispersion import (
    ResidualPermutations,
    anova_f,
    bias_factors,
    centroid_distances,
    choose_dispersion_method,
    dispersion_test,
    group_means,
)
from embsql.core.permutation import Design, design, shuffles
from embsql.errors import InputError


def reference_f(unit: np.ndarray, codes: np.ndarray, perms) -> np.ndarray:
    """The formula as first written: regroup all residual vectors, argsort and sum them per permutation."""
    groups = int(codes.max()) + 1
    factor = bias_factors(np.bincount(codes))[codes]
    residuals = (unit - group_means(unit, codes)[codes]) * factor[:, None]
    return np.array([anova_f(centroid_distances(residuals[p], codes) * factor, codes, groups) for p in perms])


def kernel_f(unit, codes, perms, method) -> np.ndarray:
    kernel = ResidualPermutations(unit, codes, int(codes.max()) + 1, method, len(perms))
    assert kernel.method == method
    return kernel.batch(list(perms))


@st.composite
def designs(draw):
    """Unequal groups (4 to 12 items), strata for the permutations, and maybe one near-degenerate group
    (its items 1e-7 apart)."""
    seed = draw(st.integers(0, 2**32 - 1))
    sizes = draw(st.lists(st.integers(4, 12), min_size=2, max_size=6))
    dim = draw(st.integers(2, 24))
    strata_count = draw(st.integers(1, 3))
    tight = draw(st.booleans())
    rng = np.random.default_rng(seed)
    codes = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    x = rng.standard_normal((len(sizes), dim))[codes] * rng.uniform(0, 2) + rng.standard_normal((len(codes), dim))
    if tight:
        x[codes == 0] = x[np.flatnonzero(codes == 0)[0]] + 1e-7 * rng.standard_normal((sizes[0], dim))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    strata = np.sort(rng.integers(0, strata_count, len(codes)))
    return unit, codes.astype(np.int64), Design(codes.astype(np.int64), strata, len(sizes)), seed


@settings(max_examples=60, deadline=None)
@given(designs())
def test_gram_and_coordinates_give_the_original_permuted_f(case):
    unit, codes, d, seed = case
    perms = list(shuffles(d, 40, seed)) + [np.arange(len(codes))]
    expected = reference_f(unit, codes, perms)
    np.testing.assert_allclose(kernel_f(unit, codes, perms, "coordinates"), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(kernel_f(unit, codes, perms, "gram"), expected, rtol=1e-9, atol=0)


def shared_offset_design(rng, groups=6, dim=8, spread=1e-7):
    """Each group: one outlier and three items 1e-7 apart, the outliers all the same way off.  The three
    close items of every group then have almost the same residual (-offset / 4), so a permuted group of
    such items has distances ~1e-7 beside residuals of length ~1: the Gram form's cancellation case."""
    offset = np.zeros(dim)
    offset[0] = 2.0
    rows, codes = [], []
    for g in range(groups):
        centre = rng.standard_normal(dim)
        rows += [centre + offset + spread * rng.standard_normal(dim)]
        rows += [centre + spread * rng.standard_normal(dim) for _ in range(3)]
        codes += [g] * 4
    return np.array(rows), np.array(codes, dtype=np.int64)


def test_near_degenerate_permutations_are_redone_by_coordinates(monkeypatch):
    rng = np.random.default_rng(7)
    x, codes = shared_offset_design(rng)
    close = np.flatnonzero(np.arange(len(codes)) % 4 != 0)
    # permutations that gather close items of different groups into one group (and a few random ones)
    perms = []
    for _ in range(20):
        perm = rng.permutation(len(codes))
        picked = rng.choice(close, 4, replace=False)
        rest = np.setdiff1d(perm, picked, assume_unique=True)
        perms.append(np.r_[picked, rest])
    expected = reference_f(x, codes, perms)
    np.testing.assert_allclose(kernel_f(x, codes, perms, "gram"), expected, rtol=1e-9, atol=0)
    # the distances themselves (~1e-7 for the gathered close items) agree with the coordinates' to 1e-9 ...
    coordinates = ResidualPermutations(x, codes, 6, "coordinates", 20).kernel.batch(np.stack(perms))
    gram = ResidualPermutations(x, codes, 6, "gram", 20).kernel.batch(np.stack(perms))
    np.testing.assert_allclose(np.sqrt(gram), np.sqrt(coordinates), rtol=1e-9, atol=0)
    # ... and the redo is what does it: without, the Gram form's close distances are off by percents
    monkeypatch.setattr(dispersion, "NEAR_DEGENERATE", -np.inf)
    raw = ResidualPermutations(x, codes, 6, "gram", 20).kernel.batch(np.stack(perms))
    assert np.nanmax(np.abs(np.sqrt(np.maximum(raw, 0)) - np.sqrt(coordinates)) / np.sqrt(coordinates)) > 1e-3


def test_the_p_value_is_the_same_by_either_route():
    rng = np.random.default_rng(11)
    labels = np.repeat(np.arange(30), np.r_[np.full(10, 4), np.full(20, 7)])
    x = rng.standard_normal((len(labels), 16)) * np.where(labels < 5, 0.5, 1.0)[:, None] + rng.standard_normal(16)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = design(labels)
    by_gram = dispersion_test(unit, d, permutations=199, seed=3, method="gram").test
    by_coordinates = dispersion_test(unit, d, permutations=199, seed=3, method="coordinates").test
    assert by_gram.exceedances == by_coordinates.exceedances
    assert by_gram.p_value == by_coordinates.p_value
    assert by_gram.statistic == by_coordinates.statistic        # observed F: computed once, outside the kernels


def test_an_unknown_method_is_refused():
    unit = np.eye(8)
    with pytest.raises(InputError, match="method must be"):
        dispersion_test(unit, design(np.repeat([0, 1], 4)), permutations=9, method="pairs")


def labels_of(n: int, size: int) -> np.ndarray:
    return np.repeat(np.arange(n // size), size)


# (n, group size, permutations, route): measured at d = 384 (CPU per permutation, bench/README.md):
# n = 5,000 groups of 4: gram 1.9 ms (+0.6 s to build R), coordinates 9 ms; n = 2,000 groups of 20:
# gram 1.7 ms, coordinates 2.0 ms; groups of 50: gram 3.4 ms, coordinates 2.3 ms; n = 4,000 groups of
# 200: gram 30 ms, coordinates 4.8 ms; n = 20,000 groups of 4, the whole test: gram 6.8 s (R is 1.6 GB),
# coordinates 39.9 s.  At n = 30,000 R is past PERMANOVA's 2 GB budget; with 9 permutations it does not pay.
MEASURED = [(5_000, 4, 999, "gram"), (2_000, 4, 999, "gram"), (2_000, 20, 999, "gram"),
            (2_000, 50, 999, "coordinates"), (4_000, 200, 999, "coordinates"),
            (20_000, 4, 999, "gram"), (30_000, 4, 999, "coordinates"), (5_000, 4, 9, "coordinates")]


@pytest.mark.parametrize(("n", "size", "permutations", "method"), MEASURED)
def test_choose_dispersion_method_matches_the_measured_faster_route(n, size, permutations, method):
    assert choose_dispersion_method(n, 384, labels_of(n, size), permutations) == method


def test_threaded_gathers_give_the_one_thread_f(monkeypatch):
    rng = np.random.default_rng(5)
    codes = rng.permutation(np.repeat(np.arange(12), rng.integers(4, 9, 12)))
    x = rng.standard_normal((len(codes), 10))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    perms = list(shuffles(Design(codes, np.zeros(len(codes), dtype=np.int64), 12), 16, 2))
    monkeypatch.setattr(permutation, "MIN_THREADED_READS", 0)        # the threads are permutation.over_threads
    monkeypatch.setattr(permutation, "gather_threads", lambda: 3)     # whatever the machine's cores
    threaded = kernel_f(unit, codes, perms, "gram")
    np.testing.assert_allclose(threaded, reference_f(unit, codes, perms), rtol=1e-9, atol=0)
