"""The invariance claims of embsql.reporting.cautions (and the READMEs), held on the vector route users call.

Every input vector is normalised first, so a change of the RAW vectors leaves a figure exactly
unchanged only when, after normalisation, it is a similarity of the unit vectors:
    exact        rotation, uniform scaling, embedding into more dimensions (raw vectors), and the
                 exact lift (sqrt(lam) x, sqrt(1 - lam)) of the unit vectors;
    approximate  a shared direction added before normalisation, a translation of the raw vectors.
Levels: V and W̄ are isometry-level (the lift scales them by lam); R², adjusted R², F and ICC are
similarity-level (the lift leaves them).
"""

import numpy as np
import pyarrow.compute as pc
import pytest
from helpers import vectors_table
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql
from embsql.core import resampling
from embsql.core.sums import GroupSums

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

SETTINGS = settings(max_examples=20, deadline=None)
SIMILARITY_LEVEL = ("r2", "r2_adj", "f", "icc")
ISOMETRY_LEVEL = ("v", "w_bar")


@st.composite
def raw_designs(draw):
    """Raw (unnormalised) vectors with some group structure, at least one group of two or more."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=3, max_size=7))
    if sum(sizes) == len(sizes):
        sizes[0] = 2
    dim = draw(st.integers(2, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.standard_normal((len(sizes), dim))[labels] + rng.standard_normal((len(labels), dim))
    return x * rng.uniform(0.2, 5.0, size=(len(x), 1)), labels, rng


def figures(con, x, labels) -> dict:
    """Every figure of the public functions on raw vectors x (embsql normalises them)."""
    con.register("data", vectors_table(x, labels))
    row = embsql.anova(con, "data", group="g", vector="v").to_dicts()[0]
    n, g, sizes = row["n"], row["groups"], np.bincount(labels)
    ms_b, ms_w = row["ss_b"] / (g - 1), row["ss_w"] / (n - g)
    n0 = (n - np.sum(sizes ** 2) / n) / (g - 1)
    return {**{k: row[k] for k in ("r2", "f", "v", "w_bar")}, "r2_adj": 1 - ms_w / (row["ss_t"] / (n - 1)),
            "icc": (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)}


def orthonormal(rng, rows, cols):
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return q * np.sign(np.diag(r))


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@SETTINGS
@given(raw_designs(), st.floats(0.01, 100.0), st.integers(0, 5))
def test_rotation_scaling_and_more_dimensions_are_exact(module_con, design, scale, extra_dims):
    """y = a Q x for raw x (a > 0, Q with orthonormal columns, d' >= d): every figure, V included."""
    x, labels, rng = design
    q = orthonormal(rng, x.shape[1] + extra_dims, x.shape[1])
    con = module_con   # one connection for every example
    base = figures(con, x, labels)
    for moved in (x @ q.T, scale * x, scale * x @ q.T):
        assert figures(con, moved, labels) == pytest.approx(base, rel=1e-9, abs=1e-12)


@SETTINGS
@given(raw_designs(), st.floats(0.01, 0.99))
def test_exact_lift_keeps_similarity_level_and_scales_isometry_level(module_con, design, lam):
    """(sqrt(lam) u, sqrt(1 - lam)) of the unit vectors u is a similarity of them: R², adjusted R²,
    F and ICC stay; V and W̄ (isometry level only) scale by lam."""
    x, labels, _ = design
    u = unit(x)
    lifted = np.hstack([np.sqrt(lam) * u, np.full((len(u), 1), np.sqrt(1 - lam))])
    con = module_con   # one connection for every example
    base, after = figures(con, x, labels), figures(con, lifted, labels)
    for stat in SIMILARITY_LEVEL:
        assert after[stat] == pytest.approx(base[stat], rel=1e-9, abs=1e-12), stat
    for stat in ISOMETRY_LEVEL:
        assert after[stat] == pytest.approx(lam * base[stat], rel=1e-9, abs=1e-12), stat


@SETTINGS
@given(raw_designs(), st.floats(0.5, 5.0))
def test_shared_direction_and_translation_are_only_approximate(module_con, design, c):
    """A shared direction c*w added to the unit vectors and renormalised, or the same shift of the
    raw vectors, is not a similarity of the unit vectors: R² and F move (for generic data by far
    more than rounding), however exact the other claims are."""
    x, labels, rng = design
    w = unit(rng.standard_normal((1, x.shape[1])))[0]
    con = module_con   # one connection for every example
    base = figures(con, x, labels)
    for moved in (unit(x) + c * w, x + c * w * np.linalg.norm(x, axis=1).mean()):
        after = figures(con, moved, labels)
        assert abs(after["r2"] - base["r2"]) > 1e-7
        assert abs(after["f"] - base["f"]) > 1e-7 * base["f"]


def test_bundled_example_shared_direction_moves_r2(con):
    """The figure the cautions quote: base-768 on examples/embeddings.parquet, a shared direction of
    length 2 along the first principal axis (either sign), renormalised: R² 0.4006 -> about 0.39."""
    table = con.sql("SELECT topic, embedding FROM 'examples/embeddings.parquet' WHERE model = 'base-768'"
                    ).to_arrow_table()
    u = unit(np.asarray(table["embedding"].to_pylist(), dtype=float))
    labels = np.asarray(table["topic"].to_pylist(), dtype=object)
    axis = np.linalg.svd(u - u.mean(axis=0), full_matrices=False)[2][0]

    def r2(x):
        return float(resampling.statistic("r2", resampling.full_totals(GroupSums.from_rows(labels, unit(x))))[0])

    assert r2(u) == pytest.approx(0.40063, abs=5e-5)
    for sign in (1, -1):
        assert 0.385 < r2(u + sign * 2 * axis) < 0.395
    assert pc.count_distinct(table["topic"]).as_py() == 30


def test_cautions_cite_no_spec_sections():
    from embsql.reporting import cautions

    texts = {name: value for name, value in vars(cautions).items() if name.isupper() and isinstance(value, str)}
    assert len(texts) >= 10
    for name, text in texts.items():
        assert "SPEC" not in text and not any(f"S{k}" in text.split() for k in range(1, 40)), name
    assert "SPEC" not in (cautions.__doc__ or "")
