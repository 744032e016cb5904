"""Cluster jackknife, cluster bootstrap and the paired model comparison (SPEC S17, S18):
embsql.jackknife / emb_jackknife, embsql.bootstrap / emb_bootstrap, embsql.compare_structure / emb_compare_structure.

The kernels work on per-group sums in closed form; every check here recomputes the replicates the
slow way, from the items: two-pass sums of squares of the unit vectors (numpy) on the table with one
group removed (jackknife) or with the drawn groups copied as new groups (bootstrap), and ICC(1)
from its textbook formula.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers import sql_error, sql_rows, vectors_table
from scipy import stats as scipy_stats

import embsql
from embsql.core.resampling import bootstrap_weights

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

STATS = ("r2", "f", "v", "w_bar", "icc")


# ----------------------------------------------------------------------------------------------
# data and brute force

def clustered(seed, sizes, d=6, effect=0.6, noise=1.0, common=0.0):
    """Unnormalised vectors: random group centres (scale effect) + noise + a common direction
    of length `common` (which shrinks V while keeping the structure, SPEC S7/S8)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, effect, size=(len(sizes), d))
    codes = np.repeat(np.arange(len(sizes)), sizes)
    x = centres[codes] + rng.normal(0.0, noise, size=(len(codes), d)) / np.sqrt(d)
    if common:
        u = rng.normal(size=d)
        x = x / np.linalg.norm(x, axis=1, keepdims=True) + common * u / np.linalg.norm(u)
    return x, np.array([f"q{k:02d}" for k in codes], dtype=object)


def statistics_of(con, table: pa.Table) -> dict:
    """r2, f, v, w_bar from the items by two-pass sums of squares of their unit vectors (numpy, not
    embsql: ``con`` is not used), and ICC(1) from its formula (SPEC S15)."""
    x = np.array(table["v"].to_pylist(), dtype=float)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    _, codes = np.unique(np.array(table["g"].to_pylist(), dtype=str), return_inverse=True)
    ss_t = float(((unit - unit.mean(axis=0)) ** 2).sum())
    ss_w = float(sum(((unit[codes == k] - unit[codes == k].mean(axis=0)) ** 2).sum() for k in range(codes.max() + 1)))
    sizes = np.array(list(pc.value_counts(table["g"]).field("counts").to_pylist()), dtype=float)
    n, groups = sizes.sum(), len(sizes)
    row = {"ss_w": ss_w, "ss_b": ss_t - ss_w, "r2": (ss_t - ss_w) / ss_t, "v": ss_t / n, "w_bar": ss_w / n,
           "f": ((ss_t - ss_w) / (groups - 1)) / (ss_w / (n - groups))}
    ms_b, ms_w = row["ss_b"] / (groups - 1), row["ss_w"] / (n - groups)
    n0 = (n - np.sum(sizes ** 2) / n) / (groups - 1)
    return {**{k: row[k] for k in ("r2", "f", "v", "w_bar")}, "icc": (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)}


def jackknife_by_hand(con, table: pa.Table, with_replicates: bool = False):
    """(full-data statistics, SE = sqrt((G-1)/G sum_g (theta_(-g) - mean)^2)) for every statistic
    (and, with_replicates, the leave-one-group-out values themselves)."""
    labels = sorted(set(table["g"].to_pylist()))
    replicates = [statistics_of(con, table.filter(pc.not_equal(table["g"], label))) for label in labels]
    g = len(labels)
    se = {}
    for stat in STATS:
        theta = np.array([r[stat] for r in replicates])
        se[stat] = float(np.sqrt((g - 1) / g * np.sum((theta - theta.mean()) ** 2)))
    if with_replicates:
        return statistics_of(con, table), se, {stat: np.array([r[stat] for r in replicates]) for stat in STATS}
    return statistics_of(con, table), se


SCALE = {"r2": "logit", "w_bar": "logit", "v": "logit", "f": "log"}


def jackknife_t_by_hand(estimate, replicates, stat, level):
    """Jackknife bias-corrected estimate +- t_{G-1} SE on the logit (R², W̄, V) or log (F) scale,
    mapped back; t from scipy."""
    forward, back = {"logit": (scipy_stats.logistic.ppf, scipy_stats.logistic.cdf), "log": (np.log, np.exp)}.get(
        SCALE.get(stat), (lambda x: x, lambda x: x))
    g = len(replicates)
    r = forward(np.asarray(replicates))
    centre = g * forward(estimate) - (g - 1) * r.mean()
    half = scipy_stats.t.ppf((1 + level) / 2, g - 1) * np.sqrt((g - 1) / g * np.sum((r - r.mean()) ** 2))
    return back(centre), back(centre - half), back(centre + half)


def resample_by_hand(table: pa.Table, weights_row) -> pa.Table:
    """The groups drawn, each copy a group of its own (a group drawn twice counts twice)."""
    labels = sorted(set(table["g"].to_pylist()), key=str)
    parts = []
    for label, count in zip(labels, weights_row):
        rows = table.filter(pc.equal(table["g"], label))
        for copy in range(int(count)):
            parts.append(rows.set_column(rows.schema.get_field_index("g"), "g",
                                         pa.array([f"{label}#{copy}"] * rows.num_rows)))
    return pa.concat_tables(parts)






@pytest.fixture
def groups10(con):
    x, labels = clustered(1, [4, 6, 3, 5, 7, 4, 5, 6, 3, 5])
    table = vectors_table(x, labels)
    con.register("t", table)
    return table


# ----------------------------------------------------------------------------------------------
# 7. jackknife

@pytest.mark.parametrize("common", [0.0, 3.0], ids=["isotropic", "common_direction"])
def test_jackknife_equals_leave_one_group_out(con, common):
    """SE and estimate equal a leave-one-group-out loop over the items to 1e-10 for every statistic
    (also with a strong common direction, V ~ 0.1, where the closed form subtracts large sums)."""
    x, labels = clustered(2, [4, 6, 3, 5, 7, 4, 5, 6, 3], common=common)
    table = vectors_table(x, labels)
    full, se = jackknife_by_hand(con, table)
    con.register("t", table)
    if common:
        assert full["v"] < 0.2
    for stat in STATS:
        got = embsql.jackknife(con, "t", group="g", vector="v", statistic=stat).to_dicts()
        assert len(got) == 1
        assert (got[0]["statistic"], got[0]["groups"]) == (stat, 9)
        assert got[0]["estimate"] == pytest.approx(full[stat], rel=1e-10, abs=1e-13)
        assert got[0]["se"] == pytest.approx(se[stat], rel=1e-10, abs=1e-13)
        assert se[stat] > 0


def test_jackknife_icc_estimate_equals_emb_icc(con, groups10):
    got = embsql.jackknife(con, "t", group="g", vector="v", statistic="icc").to_dicts()[0]
    assert got["estimate"] == pytest.approx(sql_rows(con, "SELECT icc FROM emb_icc('t', 'g', 'v')")[0]["icc"], rel=1e-10)


@pytest.mark.parametrize("stat", STATS)
def test_sql_jackknife_equals_python(con, groups10, stat):
    got_py = embsql.jackknife(con, "t", group="g", vector="v", statistic=stat).to_dicts()
    got_sql = sql_rows(con, f"SELECT * FROM emb_jackknife('t', 'g', 'v', statistic := '{stat}')")
    assert list(got_sql[0]) == ["statistic", "estimate", "se", "groups", "sizes"]
    assert got_sql[0]["statistic"] == got_py[0]["statistic"] == stat
    assert got_sql[0]["groups"] == got_py[0]["groups"] == 10
    assert got_sql[0]["estimate"] == pytest.approx(got_py[0]["estimate"], rel=1e-12)
    assert got_sql[0]["se"] == pytest.approx(got_py[0]["se"], rel=1e-10)


def test_jackknife_by_model(con):
    """`by` gives per model what a call on that model's rows gives (Python and SQL)."""
    x1, labels = clustered(3, [5, 5, 6, 4, 5])
    x2, _ = clustered(4, [5, 5, 6, 4, 5], d=9)
    con.register("t1", vectors_table(x1, labels))
    con.register("t2", vectors_table(x2, labels))
    rows = [{"model": m, "g": g, "v": v.tolist()} for m, xs in (("m1", x1), ("m2", x2)) for g, v in zip(labels, xs)]
    con.register("t", pa.Table.from_pylist(rows))
    alone = [embsql.jackknife(con, name, group="g", vector="v", statistic="f").to_dicts()[0] for name in ("t1", "t2")]
    by_py = embsql.jackknife(con, "t", group="g", vector="v", statistic="f", model="model").to_dicts()
    by_sql = sql_rows(con, "SELECT * FROM emb_jackknife('t', 'g', 'v', statistic := 'f', model := 'model')")
    assert [r["model"] for r in by_py] == [r["model"] for r in by_sql] == ["m1", "m2"]
    for got in (by_py, by_sql):
        for row, reference in zip(got, alone):
            assert row["estimate"] == pytest.approx(reference["estimate"], rel=1e-12)
            assert row["se"] == pytest.approx(reference["se"], rel=1e-10)


# ----------------------------------------------------------------------------------------------
# 8. bootstrap

@pytest.mark.parametrize("stat", STATS)
def test_bootstrap_equals_resampling_by_hand(con, groups10, stat):
    """40 replicates rebuilt from the items: the documented draws (groups in label-as-text order,
    multinomial counts from the seed), each drawn copy its own group; SE = sd (n-1) of the
    replicates, to 1e-10.  The interval and estimate_bc: the jackknife bias-corrected t interval
    from a leave-one-group-out loop over the items (jackknife_t_by_hand), to 1e-9."""
    weights = bootstrap_weights(10, 40, 3)
    assert np.all(weights.sum(axis=1) == 10)
    draws = np.array([statistics_of(con, resample_by_hand(groups10, w))[stat] for w in weights])
    full, _, replicates = jackknife_by_hand(con, groups10, with_replicates=True)
    con.register("t", groups10)
    got = embsql.bootstrap(con, "t", group="g", vector="v", statistic=stat, replicates=40, seed=3, level=0.9).to_dicts()[0]
    assert got["se"] == pytest.approx(float(np.std(draws, ddof=1)), rel=1e-10)
    centre, low, high = jackknife_t_by_hand(full[stat], replicates[stat], stat, 0.9)
    assert (got["estimate_bc"], got["ci_low"], got["ci_high"]) == pytest.approx((centre, low, high), rel=1e-9)
    assert got["estimate"] == pytest.approx(full[stat], rel=1e-10)
    assert (got["statistic"], got["replicates"], got["level"], got["groups"]) == (stat, 40, 0.9, 10)
    assert (got["dropped"], got["calibrated"]) == (0, False)  # 10 groups: below the calibrated range


def test_bootstrap_reproducible_and_seeded(con, groups10):
    first = embsql.bootstrap(con, "t", group="g", vector="v", replicates=500, seed=11).to_dicts()
    assert embsql.bootstrap(con, "t", group="g", vector="v", replicates=500, seed=11).to_dicts() == first
    other = embsql.bootstrap(con, "t", group="g", vector="v", replicates=500, seed=12).to_dicts()
    assert (other[0]["se"], other[0]["ci_low"], other[0]["ci_high"]) != (first[0]["se"], first[0]["ci_low"],
                                                                         first[0]["ci_high"])
    assert other[0]["estimate"] == first[0]["estimate"]


@pytest.mark.parametrize("stat", STATS)
def test_sql_bootstrap_equals_python(con, stat):
    """Integer labels 1..12 (text order 1, 10, 11, 12, 2, ... differs from numeric order) and rows
    in shuffled order: Python and SQL draw the same groups."""
    x, labels = clustered(5, [3, 4, 5, 6, 3, 4, 5, 6, 3, 4, 5, 6])
    codes = [int(s[1:]) + 1 for s in labels]
    table = vectors_table(x, codes)
    con.register("t", table.take(np.random.default_rng(0).permutation(table.num_rows)))
    got_py = embsql.bootstrap(con, "t", group="g", vector="v", statistic=stat, replicates=300, seed=5, level=0.8).to_dicts()[0]
    got_sql = sql_rows(con, f"SELECT * FROM emb_bootstrap('t', 'g', 'v', statistic := '{stat}', replicates := 300, "
                            "seed := 5, level := 0.8)")[0]
    assert list(got_sql) == ["statistic", "estimate", "se", "ci_low", "ci_high", "level", "replicates", "groups",
                             "estimate_bc", "dropped", "calibrated", "sizes"]
    assert (got_sql["dropped"], got_sql["calibrated"]) == (got_py["dropped"], got_py["calibrated"]) == (0, False)
    for key in ("estimate", "se", "ci_low", "ci_high", "estimate_bc"):
        assert got_sql[key] == pytest.approx(got_py[key], rel=1e-10), key
    assert float(got_sql["level"]) == got_py["level"] == 0.8
    assert (got_sql["statistic"], got_sql["replicates"], got_sql["groups"]) == (stat, 300, 12)
    # the same draws as for the table in its original order
    con.register("t0", table)
    ordered = embsql.bootstrap(con, "t0", group="g", vector="v", statistic=stat, replicates=300, seed=5, level=0.8).to_dicts()[0]
    for key in ("estimate", "se", "ci_low", "ci_high"):
        assert ordered[key] == pytest.approx(got_py[key], rel=1e-12), key


def test_bootstrap_interval_contains_estimate_and_widens_with_level(con):
    x, labels = clustered(6, [5] * 30, effect=0.5)
    con.register("t", vectors_table(x, labels))
    intervals = {}
    for level in (0.5, 0.8, 0.95, 0.99):
        got = embsql.bootstrap(con, "t", group="g", vector="v", replicates=2000, seed=42, level=level).to_dicts()[0]
        assert got["ci_low"] < got["estimate_bc"] < got["ci_high"]
        assert got["calibrated"] is True
        intervals[level] = (got["ci_low"], got["ci_high"])
    levels = sorted(intervals)
    for narrow, wide in zip(levels, levels[1:]):
        assert intervals[wide][0] < intervals[narrow][0] and intervals[narrow][1] < intervals[wide][1]
    # the bootstrap SE and the jackknife SE estimate the same thing: same order of magnitude
    boot = embsql.bootstrap(con, "t", group="g", vector="v", replicates=2000, seed=42).to_dicts()[0]["se"]
    jack = embsql.jackknife(con, "t", group="g", vector="v").to_dicts()[0]["se"]
    assert 0.5 < boot / jack < 2


def test_bootstrap_by_model(con):
    x1, labels = clustered(7, [4] * 8)
    x2, _ = clustered(8, [4] * 8)
    rows = [{"model": m, "g": g, "v": v.tolist()} for m, xs in (("m1", x1), ("m2", x2)) for g, v in zip(labels, xs)]
    con.register("t", pa.Table.from_pylist(rows))
    con.register("t2", vectors_table(x2, labels))
    by_py = embsql.bootstrap(con, "t", group="g", vector="v", replicates=200, model="model").to_dicts()
    by_sql = sql_rows(con, "SELECT * FROM emb_bootstrap('t', 'g', 'v', replicates := 200, model := 'model')")
    alone = embsql.bootstrap(con, "t2", group="g", vector="v", replicates=200).to_dicts()[0]
    assert [r["model"] for r in by_py] == [r["model"] for r in by_sql] == ["m1", "m2"]
    for key in ("estimate", "se", "ci_low", "ci_high"):
        assert by_py[1][key] == pytest.approx(alone[key], rel=1e-12)
        assert by_sql[1][key] == pytest.approx(alone[key], rel=1e-10)


# ----------------------------------------------------------------------------------------------
# 9. paired comparison

def two_models(seed=9, groups=12, per=5, d=8, noise_b=0.35, items=None, dim_b=None):
    """Model B = model A's vectors plus independent noise (then optionally a few extra coordinates):
    the two share most of their structure, as two embedding models of the same items do."""
    x, labels = clustered(seed, [per] * groups, d=d)
    rng = np.random.default_rng(seed + 100)
    y = x / np.linalg.norm(x, axis=1, keepdims=True) + noise_b * rng.normal(size=x.shape) / np.sqrt(d)
    if dim_b:
        y = np.hstack([y, 0.2 * rng.normal(size=(len(y), dim_b - d))])
    ids = list(range(len(labels))) if items is None else items
    rows = [{"model": m, "item": i, "g": g, "v": v.tolist()}
            for m, vs in (("A", x), ("B", y)) for i, g, v in zip(ids, labels, vs)]
    return pa.Table.from_pylist(rows), labels, x, y


def studentized_by_hand(con, a, b, stat, weights, estimate, se, level):
    """The studentized paired bootstrap from the items: in each resample (drawn copies as groups)
    the difference, and its jackknife SE over the G drawn copies (each left out of both models)."""
    t = []
    for w in weights:
        ra, rb = resample_by_hand(a, w), resample_by_hand(b, w)
        draws = sorted(set(ra["g"].to_pylist()))
        difference = statistics_of(con, ra)[stat] - statistics_of(con, rb)[stat]
        left = np.array([statistics_of(con, ra.filter(pc.not_equal(ra["g"], x)))[stat]
                         - statistics_of(con, rb.filter(pc.not_equal(rb["g"], x)))[stat] for x in draws])
        g = len(draws)
        t.append((difference - estimate) / np.sqrt((g - 1) / g * np.sum((left - left.mean()) ** 2)))
    low_q, high_q = np.quantile(t, [(1 - level) / 2, (1 + level) / 2])
    return estimate - high_q * se, estimate - low_q * se


@pytest.mark.parametrize("stat", STATS)
def test_compare_equals_paired_resampling_by_hand(con, stat):
    """difference = estimate_a - estimate_b; the SE equals the jackknife of theta_A - theta_B with
    the same group deleted from both (by hand, 1e-10); the interval is the studentized bootstrap
    rebuilt from the items over the same drawn groups (studentized_by_hand, 1e-9)."""
    table, labels, x, y = two_models()
    con.register("t", table)
    got = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", statistic=stat, replicates=6,
                                   seed=4,
                         level=0.9).to_dicts()
    assert len(got) == 1
    got = got[0]
    a, b = vectors_table(x, labels), vectors_table(y, labels)
    assert got["estimate_a"] == pytest.approx(statistics_of(con, a)[stat], rel=1e-10)
    assert got["estimate_b"] == pytest.approx(statistics_of(con, b)[stat], rel=1e-10)
    assert got["difference"] == got["estimate_a"] - got["estimate_b"]
    names = sorted(set(labels))
    jack = np.array([statistics_of(con, a.filter(pc.not_equal(a["g"], n)))[stat]
                     - statistics_of(con, b.filter(pc.not_equal(b["g"], n)))[stat] for n in names])
    g = len(names)
    se = float(np.sqrt((g - 1) / g * np.sum((jack - jack.mean()) ** 2)))
    assert got["se"] == pytest.approx(se, rel=1e-10)
    expected = studentized_by_hand(con, a, b, stat, bootstrap_weights(g, 6, 4), got["difference"], se, 0.9)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(expected, rel=1e-9)
    assert (got["model_a"], got["model_b"], got["items"]) == ("A", "B", len(labels))
    assert (got["same_items"], got["shared_items"], got["dropped"], got["calibrated"]) == (True, len(labels), 0, False)


def test_paired_se_smaller_than_unpaired(con):
    """Two correlated models: the paired SE is well below sqrt(se_A^2 + se_B^2) from separate
    jackknifes, for every statistic (it removes the between-group variation both models share)."""
    table, *_ = two_models(seed=10, groups=20)
    con.register("t", table)
    for stat in STATS:
        paired = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", statistic=stat,
                                replicates=200).to_dicts()[0]["se"]
        separate = embsql.jackknife(con, "t", group="g", vector="v", statistic=stat, model="model").to_dicts()
        unpaired = float(np.hypot(separate[0]["se"], separate[1]["se"]))
        assert 0 < paired < 0.5 * unpaired, (stat, paired, unpaired)


def test_sql_compare_equals_python_and_ignores_row_order(con):
    table, *_ = two_models(seed=12)
    con.register("t", table.take(np.random.default_rng(1).permutation(table.num_rows)))
    got_py = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", statistic="w_bar",
                                      replicates=300,
                            seed=8).to_dicts()
    got_sql = sql_rows(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item', statistic := 'w_bar', "
                            "replicates := 300, seed := 8)")
    assert list(got_sql[0]) == ["model_a", "model_b", "estimate_a", "estimate_b", "difference", "se", "ci_low",
                                "ci_high", "items", "same_items", "shared_items", "dropped", "calibrated", "sizes"]
    assert len(got_py) == len(got_sql) == 1
    for key, value in got_py[0].items():
        assert got_sql[0][key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    con.register("t0", table)
    ordered = embsql.compare_structure(con, "t0", group="g", vector="v", model="model", item="item", statistic="w_bar",
                                       replicates=300,
                             seed=8).to_dicts()[0]
    for key, value in got_py[0].items():
        assert ordered[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key


def test_compare_three_models_gives_every_pair(con):
    table, labels, x, y = two_models(seed=13)
    extra = pa.Table.from_pylist([{"model": "C", "item": i, "g": g, "v": (v + 0.1).tolist()}
                                  for i, g, v in zip(range(len(labels)), labels, x)])
    con.register("t", pa.concat_tables([extra, table]))
    got = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=50).to_dicts()
    assert [(r["model_a"], r["model_b"]) for r in got] == [("A", "B"), ("A", "C"), ("B", "C")]
    estimates = {r["model_a"]: r["estimate_a"] for r in got} | {r["model_b"]: r["estimate_b"] for r in got}
    for r in got:
        assert r["difference"] == estimates[r["model_a"]] - estimates[r["model_b"]]


def test_compare_models_of_different_dimension_python(con):
    table, labels, x, y = two_models(seed=14, dim_b=11)
    con.register("t", table)
    got = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=50).to_dicts()[0]
    assert got["estimate_b"] == pytest.approx(statistics_of(con, vectors_table(y, labels))["r2"], rel=1e-10)


def test_compare_models_of_different_dimension_sql(con):
    table, *_ = two_models(seed=14, dim_b=11)
    con.register("t", table)
    got_py = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=50).to_dicts()[0]
    got_sql = sql_rows(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item', replicates := 50)")[0]
    assert got_sql["difference"] == pytest.approx(got_py["difference"], rel=1e-12)


def test_compare_pairs_by_group_when_items_differ(con):
    """One pairing rule: by group label.  Model B lacks two items: the comparison runs on each
    model's own items (equal to the two models' separate figures), says same_items = false and
    counts the shared items; common=True is the comparison on the shared items only."""
    table, labels, x, y = two_models(seed=15)
    n = len(labels)
    keep = pc.invert(pc.and_(pc.equal(table["model"], "B"), pc.is_in(table["item"], pa.array([3, n - 1]))))
    con.register("t", table.filter(keep))
    got_py = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=100).to_dicts()[0]
    got_sql = sql_rows(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item', replicates := 100)")[0]
    for got in (got_py, got_sql):
        assert (got["items"], got["same_items"], got["shared_items"]) == (n, False, n - 2)
        assert got["difference"] == pytest.approx(got_py["difference"], rel=1e-12)
    mask = np.ones(n, bool)
    mask[[3, n - 1]] = False
    assert got_py["estimate_a"] == pytest.approx(statistics_of(con, vectors_table(x, labels))["r2"], rel=1e-10)
    assert got_py["estimate_b"] == pytest.approx(statistics_of(con, vectors_table(y[mask], labels[mask]))["r2"],
                                                 rel=1e-10)
    common_py = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", common=True,
                               replicates=100).to_dicts()[0]
    common_sql = sql_rows(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item', common := true, "
                               "replicates := 100)")[0]
    assert (common_py["items"], common_py["same_items"], common_py["shared_items"]) == (n - 2, True, n - 2)
    assert common_sql["items"] == n - 2
    assert common_sql["difference"] == pytest.approx(common_py["difference"], rel=1e-12)
    con.register("shared", table.filter(pc.invert(pc.is_in(table["item"], pa.array([3, n - 1])))))
    reference = embsql.compare_structure(con, "shared", group="g", vector="v", model="model", item="item",
                                         replicates=100).to_dicts()[0]
    for key in ("estimate_a", "estimate_b", "difference", "se", "ci_low", "ci_high"):
        assert common_py[key] == pytest.approx(reference[key], rel=1e-12), key


def test_compare_group_missing_from_one_model_is_an_error(con):
    table, labels, *_ = two_models(seed=15)
    missing = labels[0]
    con.register("t", table.filter(pc.invert(pc.and_(pc.equal(table["model"], "B"), pc.equal(table["g"], missing)))))
    message = (f"group '{missing}' has items from model 'A' but none from model 'B' (1 such groups), so the two "
               "models' groups cannot be paired")
    with pytest.raises(embsql.InputError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item")
    assert sql_error(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item')") == "embsql: [input] " + message


def test_compare_item_in_different_groups_is_an_error(con):
    table, labels, *_ = two_models(seed=16)
    moved = table.to_pylist()
    for row in moved:
        if row["model"] == "B" and row["item"] == 7:
            assert row["g"] != labels[0]
            row["g"] = labels[0]
    con.register("t", pa.Table.from_pylist(moved))
    message = (f"item 7 is in group '{labels[7]}' for one model and '{labels[0]}' for model 'B'; "
               "the groups must be the same for every model")
    with pytest.raises(embsql.InputError, match=f"^{message}$"):
        embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item")
    with pytest.raises(embsql.InputError, match=f"^{message}$"):
        embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", common=True)
    assert sql_error(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'model', 'item')") \
        == "embsql: [input] " + message.replace("item 7", "item '7'")


def test_compare_duplicate_item_and_single_model(con):
    table, *_ = two_models(seed=17)
    con.register("dup", pa.concat_tables([table, table.slice(0, 1)]))
    with pytest.raises(embsql.InputError, match=r"^model 'A' has item 0 more than once$"):
        embsql.compare_structure(con, "dup", group="g", vector="v", model="model", item="item")
    assert sql_error(con, "SELECT * FROM emb_compare_structure('dup', 'g', 'v', 'model', 'item')") \
        == "embsql: [input] model 'A' has item '0' more than once"
    con.register("single", table.filter(pc.equal(table["model"], "A")))
    with pytest.raises(embsql.InputError, match=r"^model column 'model' has 1 model\(s\); a comparison needs at least two$"):
        embsql.compare_structure(con, "single", group="g", vector="v", model="model", item="item")
    assert sql_error(con, "SELECT * FROM emb_compare_structure('single', 'g', 'v', 'model', 'item')") \
        == "embsql: [model.too_few] the model column has 1 model(s); a comparison needs at least two"


# ----------------------------------------------------------------------------------------------
# 10. bad input

STAT_MESSAGE = "statistic must be one of r2, f, v, w_bar, icc, r2_adj, not 'mean'"


@pytest.fixture
def pair(con):
    table, *_ = two_models(seed=18)
    con.register("pair", table)
    return con


def test_unknown_stat(con, groups10, pair):
    for call in (lambda: embsql.jackknife(con, "t", group="g", vector="v", statistic="mean"),
                 lambda: embsql.bootstrap(con, "t", group="g", vector="v", statistic="mean"),
                 lambda: embsql.compare_structure(con, "pair", group="g", vector="v", model="model", item="item",
                                                  statistic="mean")):
        with pytest.raises(embsql.InputError, match=f"^{STAT_MESSAGE}$"):
            call()
    for query in ("SELECT * FROM emb_jackknife('t', 'g', 'v', statistic := 'mean')",
                  "SELECT * FROM emb_bootstrap('t', 'g', 'v', statistic := 'mean')",
                  "SELECT * FROM emb_compare_structure('pair', 'g', 'v', 'model', 'item', statistic := 'mean')"):
        assert sql_error(con, query) == f"embsql: [argument.stat] {STAT_MESSAGE}"


@pytest.mark.parametrize("replicates", [1, 0, -3])
def test_too_few_replicates(con, groups10, pair, replicates):
    message = f"replicates must be a whole number from 2 to 1,000,000, not {replicates}"
    with pytest.raises(embsql.InputError, match=f"^{message}$"):
        embsql.bootstrap(con, "t", group="g", vector="v", replicates=replicates)
    with pytest.raises(embsql.InputError, match=f"^{message}$"):
        embsql.compare_structure(con, "pair", group="g", vector="v", model="model", item="item", replicates=replicates)
    assert sql_error(con, f"SELECT * FROM emb_bootstrap('t', 'g', 'v', replicates := {replicates})") \
        == f"embsql: [argument.replicates] {message}"
    assert sql_error(con, f"SELECT * FROM emb_compare_structure('pair', 'g', 'v', 'model', 'item', replicates := {replicates})") \
        == f"embsql: [argument.replicates] {message}"


def test_replicates_not_whole(con, groups10):
    with pytest.raises(embsql.InputError, match=r"^replicates must be a whole number from 2 to 1,000,000, not 2\.5$"):
        embsql.bootstrap(con, "t", group="g", vector="v", replicates=2.5)


def test_seed_none_is_refused(con, groups10, pair):
    message = "^seed must be a whole number \\(0 or more\\), not None"
    with pytest.raises(embsql.InputError, match=message):
        embsql.bootstrap(con, "t", group="g", vector="v", seed=None)
    with pytest.raises(embsql.InputError, match=message):
        embsql.compare_structure(con, "pair", group="g", vector="v", model="model", item="item", seed=None)


@pytest.mark.parametrize("level", [0, 1, -0.1, 1.5])
def test_level_outside_unit_interval(con, groups10, pair, level):
    with pytest.raises(embsql.InputError, match=f"^level must be a number between 0 and 1, not {level}$"):
        embsql.bootstrap(con, "t", group="g", vector="v", level=level)
    with pytest.raises(embsql.InputError, match=f"^level must be a number between 0 and 1, not {level}$"):
        embsql.compare_structure(con, "pair", group="g", vector="v", model="model", item="item", level=level)
    for query in (f"SELECT * FROM emb_bootstrap('t', 'g', 'v', level := {level})",
                  f"SELECT * FROM emb_compare_structure('pair', 'g', 'v', 'model', 'item', level := {level})"):
        assert sql_error(con, query) == f"embsql: [argument.level] level must be a number between 0 and 1, not {float(level)}"


@pytest.mark.parametrize("groups", [1, 2])
def test_jackknife_needs_three_groups(con, groups):
    x, labels = clustered(19, [5] * groups)
    con.register("few", vectors_table(x, labels))
    message = r"the cluster jackknife needs at least 3 groups \(each replicate keeps G - 1 >= 2\)"
    with pytest.raises(embsql.DesignError, match=f"^{message}$"):
        embsql.jackknife(con, "few", group="g", vector="v")
    assert sql_error(con, "SELECT * FROM emb_jackknife('few', 'g', 'v')") == \
        "embsql: [design.min_groups] " + message.replace("\\", "")


def test_compare_needs_three_groups(con):
    table, *_ = two_models(seed=20, groups=2)
    con.register("few", table)
    message = "the paired jackknife needs at least 3 groups (each replicate keeps G - 1 >= 2)"
    with pytest.raises(embsql.DesignError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        embsql.compare_structure(con, "few", group="g", vector="v", model="model", item="item")
    assert sql_error(con, "SELECT * FROM emb_compare_structure('few', 'g', 'v', 'model', 'item')") == \
        "embsql: [design.min_groups] " + message


def test_bootstrap_one_group_is_an_error(con):
    x, _ = clustered(21, [12])
    con.register("one", vectors_table(x, ["only"] * 12))
    with pytest.raises(embsql.InputError):
        embsql.bootstrap(con, "one", group="g", vector="v")
    sql_error(con, "SELECT * FROM emb_bootstrap('one', 'g', 'v')")


def test_bootstrap_undefined_replicates_are_dropped_and_counted(con):
    """F is undefined in a resample that drew only groups of one (n = G).  With 10 singletons among
    20 groups that happens in about 0.5^20 of resamples; with 17 of 20 in 0.85^20 = 3.9%: dropped
    counts them (checked against the draws themselves) and the call succeeds.  Two singleton
    groups: F is undefined in every resample, and the error says how many."""
    rng = np.random.default_rng(23)
    sizes = [1] * 17 + [4, 5, 6]
    x = rng.normal(size=(sum(sizes), 5))
    labels = np.repeat([f"g{k:02d}" for k in range(20)], sizes)
    con.register("singles", vectors_table(x, labels))
    got = embsql.bootstrap(con, "singles", group="g", vector="v", statistic="f", replicates=2000, seed=5).to_dicts()[0]
    only_singletons = np.all(bootstrap_weights(20, 2000, 5)[:, 17:] == 0, axis=1).sum()
    assert got["dropped"] == only_singletons > 40    # 3.9% of 2000 = 78, SD 9
    assert np.isfinite(got["se"]) and got["ci_low"] < got["estimate_bc"] < got["ci_high"]
    sql = sql_rows(con, "SELECT dropped FROM emb_bootstrap('singles', 'g', 'v', statistic := 'f', seed := 5)")[0]
    assert sql["dropped"] == only_singletons
    x, _ = clustered(22, [12])
    con.register("three", vectors_table(x[:4], ["a", "a", "b", "c"]))
    undefined = "1 of 3 jackknife replicates leave the statistic undefined"
    with pytest.raises(embsql.DesignError, match="^" + undefined):
        embsql.bootstrap(con, "three", group="g", vector="v", statistic="f")


def test_too_many_dropped_resamples_is_an_error(con):
    """18 of 20 groups of one: 0.9^20 = 12% of resamples draw only those, above the 10% limit."""
    rng = np.random.default_rng(24)
    sizes = [1] * 18 + [5, 6]
    labels = np.repeat([f"g{k:02d}" for k in range(20)], sizes)
    con.register("singles", vectors_table(rng.normal(size=(sum(sizes), 5)), labels))
    dropped = int(np.all(bootstrap_weights(20, 2000, 42)[:, 18:] == 0, axis=1).sum())
    assert dropped > 200
    message = (f"{dropped} of 2000 bootstrap resamples leave the statistic undefined (more than 10%), so no "
               "interval: too few groups, or too many groups of one item")
    with pytest.raises(embsql.DesignError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        embsql.bootstrap(con, "singles", group="g", vector="v", statistic="f")
    assert sql_error(con, "SELECT * FROM emb_bootstrap('singles', 'g', 'v', statistic := 'f')") == \
        "embsql: [design.dropped_resamples] " + message


def test_missing_columns(con, pair):
    with pytest.raises(embsql.ColumnNotFoundError, match=r"^group column 'nope' not found in 'pair'"):
        embsql.jackknife(con, "pair", group="nope", vector="v")
    with pytest.raises(embsql.ColumnNotFoundError, match=r"^model column 'nope' not found in 'pair'"):
        embsql.bootstrap(con, "pair", group="g", vector="v", model="nope")
    assert sql_error(con, "SELECT * FROM emb_jackknife('pair', 'nope', 'v')") == \
        'embsql: [column.missing] group column "nope" not found in pair'
    assert sql_error(con, "SELECT * FROM emb_compare_structure('pair', 'g', 'v', 'model', 'nope')") \
        == 'embsql: [column.missing] column "nope" not found in pair'


def test_compare_missing_item_column_is_named_as_item(con, pair):
    with pytest.raises(embsql.ColumnNotFoundError, match=r"^item column 'nope' not found in 'pair'"):
        embsql.compare_structure(con, "pair", group="g", vector="v", model="model", item="nope")


# ----------------------------------------------------------------------------------------------
# 11. the report prints the same intervals

def test_report_bootstrap_and_compare_equal_the_functions(con):
    """The report's bootstrap rows, compare rows and summary columns (r2_ci_low/high, r2_corrected, r2_adj,
    calibrated) are what embsql.bootstrap and embsql.compare_structure give on the same table and seed; r2_adj
    is 1 - MS_W/MS_T from emb_anova; 12 groups is below the calibrated range, and a note says so."""
    table, labels, *_ = two_models(seed=30)
    con.register("t", table)
    result = embsql.report("t", vector="v", group="g", model="model", replicates=300, seed=9).run(con)
    sections = {s.name: s.table.to_dicts() for s in result.sections}
    summary = {row["model"]: row for row in result.summary.to_dicts()}
    boot = {row["model"]: row for row in embsql.bootstrap(con, "t", group="g", vector="v", model="model", replicates=300,
                                                          seed=9).to_dicts()}
    anova = {row["model"]: row for row in embsql.anova(con, "t", group="g", vector="v", model="model").to_dicts()}
    for row in sections["bootstrap"]:
        reference = boot[row["model"]]
        for key in ("estimate", "se", "ci_low", "ci_high", "estimate_bc"):  # stage 1 sums in another order
            shown = "corrected" if key == "estimate_bc" else key    # the report names the bias-corrected point so
            assert row[shown] == pytest.approx(reference[key], rel=1e-12), key
        assert (row["dropped"], row["calibrated"], row["groups"]) == (0, False, 12)
        got = summary[row["model"]]
        assert (got["r2_ci_low"], got["r2_ci_high"], got["r2_corrected"]) == (row["ci_low"], row["ci_high"], row["corrected"])
        assert got["calibrated"] is False
        a = anova[row["model"]]
        ms_w, ms_t = a["ss_w"] / (a["n"] - a["groups"]), a["ss_t"] / (a["n"] - 1)
        assert got["r2_adj"] == pytest.approx(1 - ms_w / ms_t, rel=1e-10)
    compare = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=300,
                                       seed=9).to_dicts()[0]
    (row,) = sections["compare"]
    for key in ("difference", "se", "ci_low", "ci_high", "dropped", "calibrated"):
        assert row[key] == pytest.approx(compare[key], rel=1e-12), key
    # the report has only group sums: equal sizes cannot tell whether the items are the same
    assert (row["items"], row["same_items"], row["shared_items"]) == (len(labels), None, None)
    assert compare["same_items"] is True
    # one note for both models (one note per kind, not per model), naming each of them
    said = [note for note in result.meta["notes"] if "12 groups: fewer than 30 groups" in note]
    assert len(said) == 1 and all(repr(model) in said[0] for model in summary)


def test_report_pairs_models_whose_group_sizes_differ(con):
    """One pairing rule: a model missing some items is still paired by group; same_items is false."""
    table, labels, x, y = two_models(seed=31)
    keep = pc.invert(pc.and_(pc.equal(table["model"], "B"), pc.is_in(table["item"], pa.array([0, 7]))))
    con.register("t", table.filter(keep))
    result = embsql.report("t", vector="v", group="g", model="model", replicates=200, sections=["compare"]).run(con)
    (row,) = result.sections[0].table.to_dicts()
    compare = embsql.compare_structure(con, "t", group="g", vector="v", model="model", item="item", replicates=200).to_dicts()[0]
    assert (row["same_items"], row["items"], row["shared_items"]) == (False, None, None)
    assert (compare["same_items"], compare["shared_items"]) == (False, len(labels) - 2)
    assert row["difference"] == pytest.approx(compare["difference"], rel=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((compare["ci_low"], compare["ci_high"]), rel=1e-12)
