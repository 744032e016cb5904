"""Stable sums: the decomposition keeps its digits when the vectors are close together, at any
magnitude, on the Python route (embsql.anova / embsql.groups), the report's stage 1 (portable SQL
on DuckDB) and the resampling kernels; below what float64 can resolve it is a clear error.

The reference is mpmath at 50 digits on the same float64 raw vectors (each read exactly, normalised
and summed in high precision), so it owes nothing to embsql's algorithms.
"""

import subprocess
import sys

import mpmath
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql
from embsql.core import precision, resampling
from embsql.core.sums import GroupSums

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

RTOL = 1e-6
mpmath.mp.dps = 50


def table(x: np.ndarray, labels) -> pa.Table:
    return pa.table({"g": pa.array(list(labels)), "v": pa.array(list(np.asarray(x, dtype=np.float64)),
                                                               type=pa.list_(pa.float64()))})


def reference(x: np.ndarray, labels) -> dict:
    """SS_T, SS_W, SS_B, R² and W_g of the unit vectors of the raw rows ``x``, in 50-digit arithmetic."""
    unit = []
    for row in x:
        v = [mpmath.mpf(float(c)) for c in row]
        norm = mpmath.sqrt(mpmath.fsum(c * c for c in v))
        unit.append([c / norm for c in v])
    labels = list(labels)
    d = len(unit[0])

    def mean(rows):
        return [mpmath.fsum(r[k] for r in rows) / len(rows) for k in range(d)]

    def ss(rows, centre):
        return mpmath.fsum(mpmath.fsum((r[k] - centre[k]) ** 2 for k in range(d)) for r in rows)

    ss_t = ss(unit, mean(unit))
    w, ss_w = {}, mpmath.mpf(0)
    for g in sorted(set(labels)):
        rows = [u for u, label in zip(unit, labels) if label == g]
        within = ss(rows, mean(rows))
        w[g], ss_w = float(within / len(rows)), ss_w + within
    return {"ss_t": float(ss_t), "ss_w": float(ss_w), "ss_b": float(ss_t - ss_w), "r2": float((ss_t - ss_w) / ss_t),
            "w": w, "rms_t": float(mpmath.sqrt(ss_t / len(unit))), "rms_w": float(mpmath.sqrt(ss_w / len(unit)))}


@st.composite
def clustered(draw):
    """A common point of norm ``magnitude`` plus spread * (group offset + noise), in float64."""
    sizes = draw(st.lists(st.integers(2, 7), min_size=2, max_size=5))
    d = draw(st.integers(2, 6))
    magnitude = 10.0 ** draw(st.floats(-150, 150))
    spread = 10.0 ** draw(st.floats(-12, 0))
    between = draw(st.floats(0.0, 2.0))          # group structure from none to strong
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = np.repeat([f"g{i}" for i in range(len(sizes))], sizes)
    point = rng.standard_normal(d)
    point /= np.linalg.norm(point)
    offsets = between * rng.standard_normal((len(sizes), d))
    codes = np.repeat(np.arange(len(sizes)), sizes)
    x = magnitude * (point + spread * (offsets[codes] + rng.standard_normal((len(labels), d))) / np.sqrt(d))
    return x, labels


def check_against_reference(row: dict, ref: dict):
    for key in ("r2", "ss_t", "ss_w", "ss_b"):
        value = row[key]
        assert not np.isnan(value), key
    assert 0.0 <= row["r2"] <= 1.0
    assert row["ss_w"] <= row["ss_t"]
    for key in ("r2", "ss_t", "ss_w"):   # abs=0: pytest's default 1e-12 would pass any tiny sum of squares
        assert row[key] == pytest.approx(ref[key], rel=RTOL, abs=0), key


def check_refusal(error: embsql.DesignError, ref: dict):
    """A refusal must be right: the reference spread is at (or within rounding of) float64 resolution."""
    assert "identical to within floating-point precision" in str(error)
    assert min(ref["rms_t"], ref["rms_w"]) < 1.01 * precision.RESOLUTION, (str(error), ref)


def check_route(con, data, run):
    """``run(con)`` -> (the decomposition row, the groups rows) on table t: right, or rightly refused."""
    x, labels = data
    ref = reference(x, labels)
    con.register("t", table(x, labels))     # replaces the previous example's table
    try:
        row, groups = run(con)
    except embsql.DesignError as error:
        check_refusal(error, ref)
        return
    check_against_reference(row, ref)
    for group in groups:
        assert group["w"] >= 0
        assert group["w"] == pytest.approx(ref["w"][group["group"]], rel=RTOL, abs=RTOL * ref["ss_w"] / len(x))


@settings(max_examples=60, deadline=None)
@given(clustered())
def test_python_route_against_mpmath(module_con, data):   # one connection for every example
    check_route(module_con, data, lambda con: (embsql.anova(con, "t", group="g", vector="v").to_dicts()[0],
                                   embsql.groups(con, "t", group="g", vector="v").to_dicts()))


def _report(con):
    result = embsql.report("t", vector="v", group="g", sections=("decomposition", "groups")).run(con)
    return result["decomposition"].to_dicts()[0], result["groups"].to_dicts()


@settings(max_examples=40, deadline=None)
@given(clustered())
def test_report_route_against_mpmath(module_con, data):
    check_route(module_con, data, _report)


@settings(max_examples=40, deadline=None)
@given(clustered(), st.integers(0, 2**32 - 1))
def test_resampling_replicates_stay_in_range(data, seed):
    """Every jackknife and bootstrap replicate's R² is NaN (refused) or in [0, 1], never SS_W > SS_T."""
    x, labels = data
    scaled = x / np.abs(x).max(axis=1, keepdims=True)          # any magnitude: no under- or overflow
    unit = scaled / np.linalg.norm(scaled, axis=1, keepdims=True)
    sums = GroupSums.from_rows(labels, unit)
    weights = np.random.default_rng(seed).multinomial(len(sums.counts), np.full(len(sums.counts), 1 / len(sums.counts)),
                                                      size=50).astype(float)
    for totals in (resampling.jackknife_totals(sums), resampling.weighted_totals(sums, weights)):
        r2 = resampling.statistic("r2", totals)
        defined = r2[~np.isnan(r2)]
        assert ((defined >= 0) & (defined <= 1)).all()
        assert (totals.ss_w >= 0).all() and (totals.ss_b >= 0).all()


# ---- the measured cases, as regressions --------------------------------------------------------

def near_duplicates(spread=1e-9, seed=0):
    """60 vectors in 6 groups, equal up to ``spread``: the true R² is about 0.07."""
    rng = np.random.default_rng(seed)
    labels = np.repeat([f"g{i}" for i in range(6)], 10)
    offsets = 0.3 * rng.standard_normal((6, 16))
    x = rng.standard_normal(16) + spread * (offsets[np.repeat(np.arange(6), 10)] + rng.standard_normal((60, 16)))
    return x, labels


def every_route_refuses(con, x, labels, tmp_path):
    con.register("t", table(x, labels))
    match = "identical to within floating-point precision"
    with pytest.raises(embsql.DesignError, match=match):
        embsql.anova(con, "t", group="g", vector="v")
    with pytest.raises(embsql.DesignError, match=match):
        embsql.report("t", vector="v", group="g").run(con)
    with pytest.raises(embsql.DesignError, match=match):
        embsql.jackknife(con, "t", group="g", vector="v", statistic="icc")
    with pytest.raises(embsql.DesignError, match=match):
        embsql.bootstrap(con, "t", group="g", vector="v", statistic="icc", replicates=20)
    path = tmp_path / "t.parquet"
    pq.write_table(table(x, labels), path)
    cli = subprocess.run([sys.executable, "-m", "embsql", "report", str(path), "--vector", "v", "--group", "g"],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 2 and match in cli.stderr and len(cli.stderr.strip().splitlines()) == 1, cli.stderr


@pytest.mark.parametrize("spread", [1e-8, 1e-9, 1e-10])
def test_near_duplicates_are_refused_not_r2_half(con, tmp_path, spread):
    """Was: the Python route R² = 0.5, F = 28.5, the report R² = 0.0 (true R² about 0.07)."""
    x, labels = near_duplicates(spread)
    assert reference(x, labels)["rms_t"] < precision.RESOLUTION
    every_route_refuses(con, x, labels, tmp_path)


def test_near_duplicates_just_above_resolution_keep_their_digits(con):
    """Spread 1e-6: n - ||s||^2/n had about 4 correct digits here; the stable sums have 9."""
    x, labels = near_duplicates(1e-6)
    ref = reference(x, labels)
    con.register("t", table(x, labels))
    check_against_reference(embsql.anova(con, "t", group="g", vector="v").to_dicts()[0], ref)
    check_against_reference(embsql.report("t", vector="v", group="g", sections=("decomposition",)).run(con)
                            ["decomposition"].to_dicts()[0], ref)
    assert 0.03 < ref["r2"] < 0.15


def test_sixty_identical_vectors_are_an_error_not_r2_one(con, tmp_path):
    """Was: R² = 1.0, F = inf, ICC = 1.0."""
    x = np.tile(np.random.default_rng(1).standard_normal(16), (60, 1))
    every_route_refuses(con, x, np.repeat([f"g{i}" for i in range(6)], 10), tmp_path)


def test_200k_identical_32d_vectors_in_python(con):
    """Was: R² = 0.2, F = 49,999.5 (rounding of n - ||s||^2/n at n = 200,000)."""
    rng = np.random.default_rng(2)
    n, d = 200_000, 32
    one = rng.standard_normal(d).astype(np.float32)
    con.register("t", pa.table({"g": rng.integers(0, 5, n),
                                "v": pa.FixedSizeListArray.from_arrays(pa.array(np.tile(one, n)), d)}))
    with pytest.raises(embsql.DesignError, match="identical to within floating-point precision"):
        embsql.anova(con, "t", group="g", vector="v")


@pytest.mark.parametrize("scale", [1e-160, 1e-300, 1e150, 1e200, 1e300])
def test_tiny_and_huge_raw_vectors_give_the_unit_vectors_answer(con, scale):
    """Was: x 1e-160 gave R² 0.0990869 for 0.0990821 (squared norms underflow); x 1e200 was refused as
    infinite.  The decomposition of x and of scale * x is the same (to rounding of the scaled rows)."""
    rng = np.random.default_rng(3)
    labels = np.repeat(["a", "b", "c"], 8)
    x = rng.standard_normal((24, 5)) + 0.4 * rng.standard_normal((3, 5))[np.repeat(np.arange(3), 8)]
    ref = reference(x * scale, labels)
    assert ref["r2"] == pytest.approx(reference(x, labels)["r2"], rel=1e-12, abs=0)
    con.register("t", table(x * scale, labels))
    check_against_reference(embsql.anova(con, "t", group="g", vector="v").to_dicts()[0], ref)
    check_against_reference(embsql.report("t", vector="v", group="g", sections=("decomposition",)).run(con)
                            ["decomposition"].to_dicts()[0], ref)


@pytest.mark.parametrize("bad,word", [([0.0, 0.0], "zero-length"), ([float("nan"), 1.0], "NaN"),
                                      ([float("inf"), 1.0], "infinite"), ([5e-324, float("nan")], "NaN")])
def test_zero_and_non_finite_vectors_still_name_their_row(con, bad, word):
    con.register("t", table(np.array([[1.0, 0.0], [0.6, 0.8], bad, [0.0, 1.0]]), ["a", "a", "b", "b"]))
    with pytest.raises(embsql.BadVectorError, match=rf"has a {word} vector at row 3 \(group 'b'\)"):   # counted from 1
        embsql.anova(con, "t", group="g", vector="v")


# ---- resampling replicates against a direct recomputation from the rows ------------------------

def direct_r2(unit: np.ndarray, codes: np.ndarray, weight: np.ndarray) -> float:
    """R² of the rows of each group g repeated weight[g] times (each copy its own group): two-pass in
    float64 from the rows, no sufficient statistics."""
    copies = [(g, k) for g, w in enumerate(weight) for k in range(int(w))]
    parts = [unit[codes == g] for g, _ in copies]
    rows = np.vstack(parts)
    ss_t = ((rows - rows.mean(axis=0)) ** 2).sum()
    ss_w = sum(((part - part.mean(axis=0)) ** 2).sum() for part in parts)
    return (ss_t - ss_w) / ss_t


def test_replicates_on_near_duplicates_agree_with_the_rows():
    """Spread 1e-6 (resolvable; the old replicate formulas kept about 4 digits): every jackknife and
    bootstrap replicate's R² equals a two-pass recomputation from the replicate's rows to 1e-7."""
    x, labels = near_duplicates(1e-6, seed=4)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    sums = GroupSums.from_rows(labels, unit)
    codes = np.searchsorted(sums.labels.astype(str), labels)
    groups = len(sums.counts)
    jack = resampling.statistic("r2", resampling.jackknife_totals(sums))
    for g in range(groups):
        assert jack[g] == pytest.approx(direct_r2(unit, codes, np.arange(groups) != g), rel=1e-7, abs=0)
    weights = resampling.bootstrap_weights(groups, 40, 11)
    boot = resampling.statistic("r2", resampling.weighted_totals(sums, weights))
    for r in range(len(weights)):
        assert boot[r] == pytest.approx(direct_r2(unit, codes, weights[r]), rel=1e-7, abs=0)
    full = resampling.statistic("r2", resampling.full_totals(sums))[0]
    assert full == pytest.approx(direct_r2(unit, codes, np.ones(groups)), rel=1e-7, abs=0)


# ---- the label rule on the streaming route -------------------------------------------------------

def test_nan_label_is_named_and_signed_zeros_are_one_group(con):
    x = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-0.6, 0.8], [0.8, 0.6], [0.3, 0.9]])
    con.register("t", pa.table({"g": [1.0, 1.0, 0.0, -0.0, float("nan"), 2.0], "v": pa.array(list(x))}))
    with pytest.raises(embsql.BadLabelError, match=r"^group column 'g' has a NaN label at row 5;"):
        embsql.anova(con, "t", group="g", vector="v")
    con.register("t", pa.table({"g": [1.0, 1.0, 0.0, -0.0, 2.0, 2.0], "v": pa.array(list(x))}))
    groups = embsql.groups(con, "t", group="g", vector="v").to_dicts()
    assert [(r["group"], r["n_g"]) for r in groups] == [(0.0, 2), (1.0, 2), (2.0, 2)]
