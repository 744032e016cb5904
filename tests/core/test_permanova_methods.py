"""The one-factor PERMANOVA's two kernels: which one is chosen (pinned to the cases measured in
bench/permanova.py, bench/README.md), and the pieces of the pairs method against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest

import embsql.core.permutation as permutation
from embsql.core.permutation import PackedGram, choose_method, design, permanova_vectors, within_pairs

D = 384


def labels_of(n: int, size: int) -> np.ndarray:
    return np.repeat(np.arange(n // size), size)


# (n, group size, permutations, method): measured with 999 permutations at d = 384 (bench/README.md):
# pairs is faster for many small groups, coordinates for few large ones; groups of 20 at n = 5,000 took
# 1.7 s of CPU by pairs and 2.8 s by coordinates, groups of 40 took 5.3 s and 2.5 s.
MEASURED = [(5_000, 4, 999, "pairs"), (20_000, 4, 999, "pairs"), (5_000, 500, 999, "coordinates"),
            (5_000, 20, 999, "pairs"), (5_000, 40, 999, "coordinates"),
            # with few permutations building the Gram matrix does not pay
            (20_000, 4, 19, "coordinates")]


@pytest.mark.parametrize(("n", "size", "permutations", "method"), MEASURED)
def test_choose_method_matches_the_measured_faster_kernel(n, size, permutations, method):
    assert choose_method(n, D, labels_of(n, size), permutations) == method


def test_choose_method_refuses_pairs_past_the_memory_budget():
    n = 30_000       # a float32 n x n matrix would exceed the 2 GB budget
    assert choose_method(n, D, labels_of(n, 4), 999) == "coordinates"


def test_within_pairs_lists_every_same_group_pair_once():
    rng = np.random.default_rng(1)
    codes = np.r_[rng.integers(0, 7, 59), 7]       # group 7 has one item: no pair
    i, j, w = within_pairs(codes)
    want = {(a, b) for a in range(60) for b in range(a + 1, 60) if codes[a] == codes[b]}
    got = {(min(a, b), max(a, b)) for a, b in zip(i, j)}
    assert len(i) == len(want) and got == want
    np.testing.assert_array_equal(w, 1.0 / np.bincount(codes)[codes[i]])
    assert np.all(np.diff(codes[i]) >= 0)          # group by group


def test_packed_gram_holds_the_upper_triangle(monkeypatch):
    monkeypatch.setattr(permutation, "BLOCK_ROWS", 16)     # several bands, the last one short
    rng = np.random.default_rng(2)
    z = rng.standard_normal((53, 8))
    packed = PackedGram(z, np.float64)
    a, b = np.triu_indices(53)
    np.testing.assert_allclose(packed.values[packed.base[a] + b], (z @ z.T)[a, b], rtol=1e-12, atol=1e-12)


def test_threaded_gathers_give_the_one_thread_p(monkeypatch):
    rng = np.random.default_rng(3)
    labels = labels_of(400, 4)
    x = rng.standard_normal((100, 16))[labels] * 0.3 + rng.standard_normal((400, 16))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = design(labels)
    monkeypatch.setattr(permutation, "MIN_THREADED_READS", 0)
    monkeypatch.setattr(permutation, "gather_threads", lambda: 3)     # whatever the machine's cores
    threaded = permanova_vectors(unit, d, permutations=199, seed=5, method="pairs")
    monkeypatch.setattr(permutation, "gather_threads", lambda: 1)
    single = permanova_vectors(unit, d, permutations=199, seed=5, method="pairs")
    coordinates = permanova_vectors(unit, d, permutations=199, seed=5, method="coordinates")
    assert threaded.exceedances == single.exceedances == coordinates.exceedances
    assert threaded.statistic == pytest.approx(coordinates.statistic, rel=1e-12)


def test_the_coordinates_route_shares_permutations_between_threads_with_each_one_s_ss_w(monkeypatch):
    """Many groups (past F64_GRAM_MAX_N items: float32 sums): a batch of permutations is shared between threads,
    each permutation's SS_W computed alone, equal to the grouped sums of plain numpy and the same bits as one thread."""
    rng = np.random.default_rng(4)
    labels = np.sort(rng.integers(0, 60, 2_400))
    x = rng.standard_normal((60, 12))[labels] * 0.3 + rng.standard_normal((2_400, 12))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = design(labels)
    perms = [rng.permutation(len(labels)) for _ in range(9)]
    monkeypatch.setattr(permutation, "gather_threads", lambda: 3)     # whatever the machine's cores
    kernel, method = permutation.within_sums(unit, d, "coordinates")
    threaded = kernel.batch(perms)
    monkeypatch.setattr(permutation, "gather_threads", lambda: 1)
    assert np.array_equal(threaded, kernel.batch(perms))
    for perm, ss_w in zip(perms, threaded):
        regrouped = unit[perm]        # row i's label goes to item perm[i]
        sums = np.array([regrouped[labels == g].sum(axis=0) for g in range(60)])
        expected = len(labels) - np.sum(sums * sums, axis=1) @ (1.0 / np.bincount(labels))
        assert ss_w == pytest.approx(expected, rel=1e-6)
