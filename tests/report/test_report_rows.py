"""The report reads one model's rows at a time (reporting.sections.Run.test_rows, io.table_stream.model_unit_rows):
the same figures as numpy computes from all the rows at once, float32 rows only where the spread allows,
and memory bounded by one model's rows."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql.core import resampling
from embsql.core.permutation import canonical_order
from embsql.core.precision import F32_SS_ERROR, ROWS_F64_BYTES, row_dtype
from embsql.core.row_tests import REORDER_COLUMNS, ordered
from embsql.core.sums import GroupSums
from embsql.io.sources import resolve
from embsql.io.table_stream import UNIT_CHUNK, model_unit_rows


def _table(n: int, dim: int, groups: int, seed: int = 0) -> tuple[pa.Table, dict[str, tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(seed)
    raw, kept = [], {}
    for model, shift in (("a", 0.3), ("b", 0.8)):
        labels = rng.integers(0, groups, n)
        x = (rng.normal(size=(n, dim)) + shift * rng.normal(size=(groups, dim))[labels]).astype(np.float32)
        kept[model] = (labels, x)
        raw.append(pa.table({"model": [model] * n, "topic": [f"t{g:03d}" for g in labels], "v": list(x)}))
    return pa.concat_tables(raw), kept


def _numpy_anova(labels: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """F and R² from all the rows, plain numpy."""
    u = x.astype(np.float64)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    ss_t = float(np.sum((u - u.mean(axis=0)) ** 2))
    ss_w = sum(float(np.sum((u[labels == g] - u[labels == g].mean(axis=0)) ** 2)) for g in np.unique(labels))
    groups, n = len(np.unique(labels)), len(u)
    return ((ss_t - ss_w) / (groups - 1)) / (ss_w / (n - groups)), (ss_t - ss_w) / ss_t


def _numpy_spread_f(labels: np.ndarray, x: np.ndarray) -> float:
    """The dispersion statistic of core.dispersion's docstring, from each group's whole Gram matrix."""
    u = x.astype(np.float64)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    sizes, spreads, q = [], [], []
    for g in np.unique(labels):
        c = u[labels == g] @ u[labels == g].T
        m = len(c)
        np.fill_diagonal(c, 0.0)
        s1, rows, f2 = c.sum(), c.sum(axis=1), np.sum(c * c)
        r2 = float(rows @ rows)
        q2, q3 = f2 / (m * (m - 1)), (r2 - f2) / (m * (m - 1) * (m - 2))
        q4 = (s1 * s1 - 4 * r2 + 2 * f2) / (m * (m - 1) * (m - 2) * (m - 3))
        sizes.append(m)
        spreads.append(1 - s1 / (m * (m - 1)))
        q.append((q3 - q4, q2 - 2 * q3 + q4))
    n = np.array(sizes, float)
    w = n / n.sum()
    a = max(float(w @ np.array([x[0] for x in q])), 0.0)
    b = max(float(w @ np.array([x[1] for x in q])), 0.0)
    variance = 4 * a / n + 2 * b / (n * (n - 1))
    spread = np.array(spreads)
    centre = np.sum(spread / variance) / np.sum(1 / variance)
    return float(np.sum((spread - centre) ** 2 / variance) / (len(n) - 1))


def test_the_report_reads_each_model_alone_and_its_tests_match_numpy(con):
    table, kept = _table(600, 16, 12)
    con.register("emb", table)
    result = embsql.report("emb", vector="v", group="topic", model="model", permutations=19,
                           sections=("permanova", "dispersion")).run(con, progress=False)
    for row, disp in zip(result["permanova"].to_dicts(), result["dispersion"].to_dicts()):
        labels, x = kept[row["model"]]
        f, r2 = _numpy_anova(labels, x)
        assert row["f"] == pytest.approx(f, rel=1e-9) and row["r2"] == pytest.approx(r2, rel=1e-9)
        assert disp["f"] == pytest.approx(_numpy_spread_f(labels, x), rel=1e-8)


def test_float32_rows_keep_ss_w_within_their_bound(con):
    table, kept = _table(3000, 32, 20, seed=1)
    con.register("emb", table)
    labels, x = kept["b"]
    source = resolve(con, "emb")
    wide = model_unit_rows(con, source, "topic", "v", "model", "b", len(labels), np.float64)
    narrow = model_unit_rows(con, source, "topic", "v", "model", "b", len(labels), np.float32)
    assert wide.unit.dtype == np.float64 and narrow.unit.dtype == np.float32
    u = x.astype(np.float64)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    np.testing.assert_allclose(wide.unit, u, rtol=1e-13, atol=1e-15)
    exact = GroupSums.from_rows(wide.labels, wide.unit).within_ss().sum()
    from_f32 = GroupSums.from_rows(narrow.labels, narrow.unit).within_ss().sum()
    assert abs(from_f32 - exact) / exact < F32_SS_ERROR
    # the rule: float64 up to 1 GiB, then float32 only above the spread floor
    dim = 384
    small, large = ROWS_F64_BYTES // (8 * dim), ROWS_F64_BYTES // (8 * dim) + 1
    assert row_dtype(small, dim, 0.5 * small) is np.float64
    assert row_dtype(large, dim, 0.5 * large) is np.float32
    assert row_dtype(large, dim, 1e-6 * large) is np.float64          # too tight a spread for float32


def test_reading_and_ordering_a_model_holds_about_one_copy_of_its_rows(con):
    n, dim = 60_000, 128          # (the old read held the Arrow rows, the array and its reordered copy: over 2.5x)
    table, kept = _table(n, dim, 500, seed=2)
    con.register("emb", table)
    source = resolve(con, "emb")
    rows_bytes = n * dim * 8
    gc.collect()
    tracemalloc.start()
    try:
        part = model_unit_rows(con, source, "topic", "v", "model", "a", n, np.float64)
        rows = ordered(part, "topic", in_place=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows.unit is part.unit
    # one n x d array, its columns moved REORDER_COLUMNS at a time, one float64 chunk of a batch, the labels
    allowed = rows_bytes * (1 + REORDER_COLUMNS / dim) + 2 * UNIT_CHUNK * dim * 8 + 200 * n
    assert peak < allowed < 0.75 * 2.5 * rows_bytes, (peak / rows_bytes, allowed / rows_bytes)
    labels, x = kept["a"]
    order = canonical_order(np.array([f"t{g:03d}" for g in labels], dtype=object), None, None)
    u = x[order].astype(np.float64)
    assert np.allclose(np.sort(rows.unit[:, 0]), np.sort(u[:, 0] / np.linalg.norm(u, axis=1)))


def test_dispersion_steps_on_rows_take_no_n_by_d_float64_temporary():
    from embsql.core.dispersion import ROW_CHUNK, aligned_vectors, centroid_distances
    from embsql.core.precision import unit_spread
    rng = np.random.default_rng(3)
    n, dim = 160_000, 64
    codes = np.sort(rng.integers(0, 1600, n))
    unit = rng.normal(size=(n, dim)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    tracemalloc.start()
    try:
        unit_spread(unit, codes)
        centroid_distances(unit, codes)
        _, spread_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        aligned = aligned_vectors(unit, codes, share=0.5)
        _, align_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    chunk = ROW_CHUNK * dim * 8      # one float64 temporary of ROW_CHUNK rows; all the rows in float64: 2 unit.nbytes
    assert spread_peak < 6 * chunk < 0.7 * unit.nbytes and aligned.dtype == np.float32
    assert align_peak < unit.nbytes + 8 * chunk < 2 * unit.nbytes      # its output (unit's dtype) and row chunks
    expected = aligned_vectors(unit.astype(np.float64), codes, share=0.5)
    np.testing.assert_allclose(aligned, expected, atol=1e-6)


def test_resampling_parts_are_computed_once_per_group_sums(monkeypatch):
    rng = np.random.default_rng(4)
    sums = GroupSums(np.arange(30), np.full(30, 5), rng.normal(size=(30, 8)), np.full(30, 3.0))
    calls = []
    real = resampling.between_ss
    monkeypatch.setattr(resampling, "between_ss", lambda *a: calls.append(1) or real(*a))
    for _ in range(3):
        resampling.jackknife(sums, "r2")
    resampling.bootstrap(sums, "r2", replicates=50, seed=1, level=0.95)
    assert len(calls) == 1
    other = GroupSums(sums.labels, sums.counts, sums.sums * 0.5, sums.within)   # another object: its own parts
    resampling.jackknife(other, "r2")
    assert len(calls) == 2
    key = id(other)
    del other
    gc.collect()
    assert key not in resampling._PARTS
