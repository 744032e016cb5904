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


# group effects that leave some permuted F above the observed one and some below (25 of 37, 6 of 37)
@pytest.mark.parametrize(("size", "block", "effect"), [(4, 16, 0.1), (4, 7, 0.1), (6, 5, 0.05)])
def test_blocks_of_permutations_give_each_permutation_s_statistic_of_a_numpy_loop(monkeypatch, size, block, effect):
    """Past F64_GRAM_MAX_N items in many equal groups the coordinates route sums in float32, a block of permutations
    at a time (shared between threads, the next block drawn meanwhile).  37 permutations in blocks that do not divide
    37: every permuted SS_W and F equals a float64 loop over the same permutations drawn by numpy (rng.permutation
    per permutation), and so does the count that reaches the observed F."""
    n, seed, permutations = 2_400, 11, 37
    rng = np.random.default_rng(size)
    labels = labels_of(n, size)
    x = rng.standard_normal((n // size, 12))[labels] * effect + rng.standard_normal((n, 12))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    d = design(labels)
    monkeypatch.setattr(permutation, "POLL_BLOCK", block)
    monkeypatch.setattr(permutation, "gather_threads", lambda: 2)     # whatever the machine's cores
    kernel, _ = permutation.within_sums(unit, d, "coordinates")
    assert kernel.unit.dtype == np.float32 and kernel.batch_size == block
    seen: list[np.ndarray] = []
    monkeypatch.setattr(kernel, "batch", lambda perms, batch=kernel.batch: seen.append(batch(perms)) or seen[-1])
    monkeypatch.setattr(permutation, "within_sums", lambda *args, **kwargs: (kernel, "coordinates"))
    test = permanova_vectors(unit, d, permutations=permutations, seed=seed, method="coordinates")

    def between(perm: np.ndarray) -> float:
        regrouped = unit[perm]        # row i's label goes to item perm[i]
        return sum(float(np.sum(regrouped[labels == g].sum(axis=0) ** 2)) for g in range(n // size)) / size

    draws = np.random.default_rng(seed)
    expected = np.array([n - between(draws.permutation(n)) for _ in range(permutations)])
    assert [len(s) for s in seen] == [min(block, permutations - low) for low in range(0, permutations, block)]
    np.testing.assert_allclose(np.concatenate(seen), expected, rtol=1e-6)
    total = unit.sum(axis=0)
    ss_t = n - total @ total / n
    f = ((ss_t - expected) / (n // size - 1)) / (expected / (n - n // size))
    ss_observed = n - between(np.arange(n))
    f_observed = ((ss_t - ss_observed) / (n // size - 1)) / (ss_observed / (n - n // size))
    assert test.statistic == pytest.approx(f_observed, rel=1e-6)
    assert test.exceedances == int(np.sum(f >= f_observed * (1 - 1e-8)))
    assert test.p_value == (test.exceedances + 1) / (permutations + 1)
