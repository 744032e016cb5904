"""Identities and invariances (SPEC S3, S5, S6, S7) on random configurations (hypothesis).

Each example draws a design (n, d, group sizes) and a seed for the vectors; the vectors are
Gaussian and then normalised, so no example is degenerate by construction.
"""

import numpy as np
import pyarrow as pa
import pytest
from helpers import distance_table, vectors_table
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql

RATIOS = ("r2",)
SETTINGS = settings(max_examples=25, deadline=None)


@st.composite
def designs(draw):
    sizes = draw(st.lists(st.integers(1, 6), min_size=2, max_size=6))
    if sum(sizes) == len(sizes):          # n = G leaves SS_W undefined: make one group a pair
        sizes[0] = 2
    dim = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    shift = rng.standard_normal((len(sizes), dim))          # some group structure
    z = shift[labels] + rng.standard_normal((len(labels), dim))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return z, labels, rng


def sql_anova(con, table):
    con.register("data", table)
    return con.sql("SELECT * FROM emb_anova('data', 'g', 'v')").to_arrow_table().to_pylist()[0]


def dist_anova(con, points, labels):
    con.register("dist", distance_table(points))
    con.register("lab", pa.table({"id": np.arange(len(labels)), "g": labels}))
    return embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").to_dicts()[0]


def orthonormal(rng, rows, cols):
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))


@SETTINGS
@given(designs())
def test_vector_route_equals_distance_route(module_con, design):
    z, labels, _ = design
    con = module_con   # one connection for every example
    vector = sql_anova(con, vectors_table(z, labels))
    python = embsql.anova(con, "data", group="g", vector="v").to_dicts()[0]
    distance = dist_anova(con, z, labels)
    for key in ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f"):
        assert vector[key] == pytest.approx(distance[key], rel=1e-9, abs=1e-12), key
        assert python[key] == pytest.approx(vector[key], rel=1e-9, abs=1e-12), key
    for key in ("v", "mean_resultant_length", "w_bar"):
        assert python[key] == pytest.approx(vector[key], rel=1e-9, abs=1e-12), key


@SETTINGS
@given(designs(), st.floats(0.05, 20.0), st.integers(0, 4))
def test_similarity_transform_leaves_ratios_unchanged(module_con, design, scale, extra_dims):
    """y = a Q z + b on the distance route: R2 and SS_W/SS_T stay, SS_T scales by a^2."""
    z, labels, rng = design
    q = orthonormal(rng, z.shape[1] + extra_dims, z.shape[1])
    y = scale * z @ q.T + rng.standard_normal(z.shape[1] + extra_dims)
    con = module_con   # one connection for every example
    before = dist_anova(con, z, labels)
    after = dist_anova(con, y, labels)
    assert after["r2"] == pytest.approx(before["r2"], rel=1e-9)
    assert after["ss_w"] / after["ss_t"] == pytest.approx(before["ss_w"] / before["ss_t"], rel=1e-9)
    assert after["f"] == pytest.approx(before["f"], rel=1e-9)
    assert after["ss_t"] == pytest.approx(scale**2 * before["ss_t"], rel=1e-9)


@SETTINGS
@given(designs(), st.integers(0, 4))
def test_isometry_of_unit_vectors_changes_nothing(module_con, design, extra_dims):
    """Rotation and embedding into more dimensions keep unit vectors unit: every figure stays,
    V included; rescaling rows by positive factors is undone by the normalisation (S1)."""
    z, labels, rng = design
    q = orthonormal(rng, z.shape[1] + extra_dims, z.shape[1])
    rotated = z @ q.T
    rescaled = z * rng.uniform(0.1, 10.0, size=(len(z), 1))
    con = module_con   # one connection for every example
    base = sql_anova(con, vectors_table(z, labels))
    for moved in (rotated, rescaled):
        after = sql_anova(con, vectors_table(moved, labels))
        assert after == pytest.approx(base, rel=1e-9, abs=1e-12)


@SETTINGS
@given(designs(), st.floats(0.01, 1.0))
def test_exact_lift_scales_v_and_keeps_r2(module_con, design, lam):
    """S7: y = (sqrt(lam) z, sqrt(1 - lam)) is a similarity: V_y = lam V_z, R2 unchanged."""
    z, labels, _ = design
    lifted = np.hstack([np.sqrt(lam) * z, np.full((len(z), 1), np.sqrt(1 - lam))])
    con = module_con   # one connection for every example
    base = sql_anova(con, vectors_table(z, labels))
    after = sql_anova(con, vectors_table(lifted, labels, fixed=True))
    python = embsql.anova(con, "data", group="g", vector="v").to_dicts()[0]
    for got in (after, python):
        assert got["r2"] == pytest.approx(base["r2"], rel=1e-10, abs=1e-12)
        assert got["ss_w"] / got["ss_t"] == pytest.approx(base["ss_w"] / base["ss_t"], rel=1e-10, abs=1e-12)
        assert got["v"] == pytest.approx(lam * base["v"], rel=1e-10, abs=1e-13)


@SETTINGS
@given(designs())
def test_statistics_are_in_range(module_con, design):
    """Read as a statistician: R2 in [0, 1], F >= 0, W~ only for groups of two or more."""
    z, labels, _ = design
    con = module_con   # one connection for every example
    row = sql_anova(con, vectors_table(z, labels))
    groups = embsql.groups(con, "data", group="g", vector="v").to_dicts()
    assert 0.0 <= row["r2"] <= 1.0 + 1e-12
    assert row["f"] >= 0 and 0 <= row["v"] <= 1 + 1e-12
    assert row["ss_t"] == pytest.approx(row["ss_w"] + row["ss_b"], rel=1e-9)
    sizes = np.bincount(labels)
    for group in groups:
        assert group["n_g"] == sizes[group["group"]]
        assert (group["w_tilde"] is None) == (group["n_g"] == 1)
        assert 0.0 <= group["w"] <= 1.0


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from([-7, -6, -5, -4, -3, -2, -1, 0]),
       st.booleans())
def test_within_sums_merged_across_blocks_equal_two_pass(module_con, segment, seed, log_spread, raw):
    """The per-group within-group sum of squares, accumulated block by block (each block's runs
    merged by Chan et al.'s update), equals a two-pass over each whole group, whatever the block
    size and the row order, for spreads 1e-7..1 (below that float64's own two-pass is no reference); from unit rows
    (GroupSums.from_rows) and from raw
    rows the accumulator scales itself (the streaming route)."""
    from embsql.core import sums as core_sums
    from embsql.io import table_stream

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 4, 300)
    z = rng.standard_normal(5) + 10.0 ** log_spread * (rng.standard_normal((4, 5))[codes] + rng.standard_normal((300, 5)))
    unit = z / np.linalg.norm(z, axis=1, keepdims=True)
    saved = core_sums.SEGMENT_ROWS, table_stream.BATCH_ROWS
    core_sums.SEGMENT_ROWS, table_stream.BATCH_ROWS = segment, 4 * segment + 3   # blocks and batches both split groups
    try:
        if raw:
            con = module_con   # one connection for every example
            con.register("t", vectors_table(3.0 * z, codes))
            within = {r["group"]: r["w"] * r["n_g"] for r in embsql.groups(con, "t", group="g", vector="v").to_dicts()}
        else:
            sums = core_sums.GroupSums.from_rows(codes.tolist(), unit)
            within = dict(zip(sums.labels, sums.within))
            for g, label in enumerate(sums.labels):
                assert sums.sums[g] == pytest.approx(unit[codes == label].sum(axis=0), rel=1e-12, abs=1e-12)
    finally:
        core_sums.SEGMENT_ROWS, table_stream.BATCH_ROWS = saved
    assert sorted(within) == sorted(set(codes.tolist()))
    for label, value in within.items():
        rows = unit[codes == label]
        assert value == pytest.approx(((rows - rows.mean(axis=0)) ** 2).sum(), rel=1e-7, abs=0)
