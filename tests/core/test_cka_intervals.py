"""CKA's interval, the paired comparison compare_cka / emb_compare_cka, Procrustes' jackknife and the
refusal of a model with no spread (issue 22 item 4, issue 23 part 3).

References are independent of the kernels: Song et al.'s (2012) unbiased HSIC on n x n Gram
matrices (tests/api/test_geometry.py's references), every jackknife replicate by recomputing it on the
data with the group deleted, scipy's t quantile, and numpy's SVD for the Procrustes r.  Inference
is checked by small seeded simulations, with bounds the naive ``cka ± 1.96 se`` fails; the full
tables are in validation/cka_validity.py (validation/README.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from test_geometry import cka_reference, long_table, related, unit

import embsql
from embsql.core import geometry
from embsql.errors import DesignError, InputError
from embsql.statistics.geometry import CKA, COMPARE_CKA


@pytest.fixture
def con():
    return embsql.connect()


# ----------------------------------------------------------------------------------------------
# a model with no spread (issue 22, item 4): refused on both routes at every size

@pytest.mark.parametrize("n", [12, 50, 200])
def test_a_model_with_no_spread_is_refused_on_both_routes(con, n):
    rng = np.random.default_rng(n)
    x = unit(rng.normal(size=(n, 6)))
    flat = np.tile(unit(rng.normal(size=(1, 6))), (n, 1))           # every unit vector the same
    con.register("flat", long_table({"spread": x, "still": flat}))
    message = "the vectors of model 'still' are identical to within floating-point precision"
    for call in (lambda: embsql.cka(con, "flat", item="item", model="model", vector="v"),
                 lambda: embsql.cka(con, "flat", item="item", model="model", vector="v", debiased=True),
                 lambda: embsql.procrustes(con, "flat", item="item", model="model", vector="v")):
        with pytest.raises(DesignError, match=message) as caught:
            call()
        assert caught.value.kind == "design.identical"
    for sql in ("SELECT * FROM emb_cka('flat', 'item', 'model', 'v')",
                "SELECT * FROM emb_procrustes('flat', 'item', 'model', 'v', permutations := 0)"):
        with pytest.raises(Exception, match=r"embsql: \[design.identical\] " + message):
            con.sql(sql).fetchall()


def test_a_model_with_no_spread_beside_a_reference_is_refused(con):
    rng = np.random.default_rng(5)
    x, y = unit(rng.normal(size=(50, 4))), unit(rng.normal(size=(50, 4)))
    con.register("three", long_table({"ref": x, "ok": y, "flat": np.tile(x[:1], (50, 1))}))
    with pytest.raises(DesignError, match="model 'flat' are identical"):
        embsql.compare_cka(con, "three", reference="ref", model="model", item="item", vector="v")
    with pytest.raises(Exception, match=r"embsql: \[design.identical\] the vectors of model 'flat'"):
        con.sql("SELECT * FROM emb_compare_cka('three', 'item', 'model', 'v', 'ref')").fetchall()


def test_a_tiny_but_resolved_spread_is_still_computed():
    rng = np.random.default_rng(1)
    x = unit(np.ones((60, 5)) + 1e-6 * rng.normal(size=(60, 5)))     # spread 1e-6, above 1.5e-8
    y = unit(rng.normal(size=(60, 5)))
    assert 0 <= geometry.cka_pair(x, y, permutations=0)["cka"] <= 1


# ----------------------------------------------------------------------------------------------
# the interval against an independent recomputation

def _t_interval_reference(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The debiased CKA +- t_{G-1} jackknife SE on atanh (no second bias correction: the debiased CKA is unbiased),
    from replicates recomputed from scratch."""
    full, reps = np.arctanh(values[0]), np.arctanh(values[1:])
    g = len(reps)
    centre = full
    se = np.sqrt((g - 1) / g * np.sum((reps - reps.mean()) ** 2))
    half = stats.t.ppf((1 + level) / 2, g - 1) * se
    return max(float(np.tanh(centre - half)), 0.0), min(float(np.tanh(centre + half)), 1.0)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("debiased", [False, True])
def test_the_interval_is_the_debiased_jackknife_t_interval(grouped, debiased):
    x, y = related(11, 36, 5, 9, noise=1.2)
    labels = np.array([j % 12 for j in range(36)]) if grouped else np.arange(36)
    values = np.array([cka_reference(x, y, True)]
                      + [cka_reference(x[labels != g], y[labels != g], True) for g in np.unique(labels)])
    row = geometry.cka_pair(x, y, groups=labels if grouped else None, debiased=debiased, permutations=0)
    low, high = _t_interval_reference(values)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-10)
    assert row["calibrated"] is (not grouped)         # 36 items: yes; 12 groups: not shown, so no


def test_the_interval_is_missing_where_it_cannot_be_built():
    x, y = related(2, 4, 3, 3)                         # 4 items: no debiased CKA, so no interval
    row = geometry.cka_pair(x, y, permutations=0)
    assert row["ci_low"] is None and row["ci_high"] is None and row["calibrated"] is False
    x, y = related(3, 30, 3, 5)
    row = geometry.cka_pair(x, y, groups=[j % 2 for j in range(30)], permutations=0)   # 2 groups
    assert row["ci_low"] is None and row["calibrated"] is False and row["se"] is not None


def test_python_and_sql_give_the_same_interval(con):
    x, y = related(7, 40, 4, 6)
    con.register("t", long_table({"a": x, "b": y}, groups=[f"t{j % 8}" for j in range(40)]))
    py = embsql.cka(con, "t", item="item", model="model", vector="v", group="g", permutations=0).to_dicts()[0]
    sql = con.sql("SELECT * FROM emb_cka('t', 'item', 'model', 'v', \"group\" := 'g', permutations := 0)").fetchdf()
    assert list(sql.columns) == list(CKA.column_names())
    assert sql.loc[0, "ci_low"] == pytest.approx(py["ci_low"], abs=1e-12)
    assert sql.loc[0, "ci_high"] == pytest.approx(py["ci_high"], abs=1e-12)
    assert not sql.loc[0, "calibrated"] and not py["calibrated"]      # 8 groups


# ----------------------------------------------------------------------------------------------
# coverage: seeded small simulations (validation/cka_validity.py has the full table)

def _population(draw) -> float:
    x, y, _ = draw(20_000, 1)
    return cka_big(x, y)


def cka_big(x, y) -> float:
    """The debiased CKA of a large sample, from the cross products (the n x n references would not fit)."""
    n = len(x)
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    a, b = np.einsum("ik,ik->i", x, x), np.einsum("ik,ik->i", y, y)

    def h(m, s, t):
        return np.vdot(m, m) - s @ t + s.sum() * t.sum() / ((n - 1) * (n - 2)) - 2 * (s @ t) / (n - 2)
    return float(h(x.T @ y, a, b) / np.sqrt(h(x.T @ x, a, a) * h(y.T @ y, b, b)))


def _model_pair(seed: int, p: int, q: int, noise: float):
    rng = np.random.default_rng(seed)
    k = 6
    a, b = rng.normal(size=(k, p)) / np.sqrt(k), rng.normal(size=(k, q)) / np.sqrt(k)

    def draw(groups: int, size: int, rng=rng):
        """groups x size items: z = a group's centre + the item's own part (the same marginal for size 1)."""
        codes = np.repeat(np.arange(groups), size)
        if size == 1:
            z = np.hypot(1.0, 0.7) * rng.normal(size=(groups, k))
        else:
            z = rng.normal(size=(groups, k))[codes] + 0.7 * rng.normal(size=(len(codes), k))
        z = z / np.sqrt(np.arange(1, k + 1))
        return (unit(z @ a + 0.3 * noise * rng.normal(size=(len(codes), p))),
                unit(z @ b + noise * rng.normal(size=(len(codes), q))), codes)
    return draw


@pytest.mark.parametrize("groups,size", [(40, 1), (30, 4)])
def test_the_interval_covers_the_population_cka_where_the_naive_one_cannot(groups, size):
    # d = 8 against 160 with 40-120 items: the biased CKA is about twice the population value
    draw = _model_pair(100 + size, 8, 160, 3.0)
    truth = _population(draw)
    ours = naive = 0
    reps = 60
    for _ in range(reps):
        x, y, codes = draw(groups, size)
        row = geometry.cka_pair(x, y, groups=codes if size > 1 else None, permutations=0)
        ours += row["ci_low"] <= truth <= row["ci_high"]
        naive += abs(row["cka"] - truth) <= 1.96 * row["se"]
        assert row["calibrated"]
    # 95% nominal: P(ours < 51 of 60) < 0.2% if it holds; the naive interval covered 0 of 60
    assert ours >= 51, ours
    assert naive <= 6, naive


# ----------------------------------------------------------------------------------------------
# compare_cka: the paired comparison

def _three(seed: int, n: int, noise_a: float, noise_b: float, groups: int = 0):
    """Models A, B (d = 40) and a reference R (d = 60) of the same n items; the models' maps are fixed
    (one population), the items and noise drawn with ``seed``."""
    k, p, q = 5, 40, 60
    fixed = np.random.default_rng(0)
    m, r = fixed.normal(size=(k, p)), fixed.normal(size=(k, q))
    turn = np.linalg.qr(fixed.normal(size=(p, p)))[0]
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % groups if groups else np.arange(n)
    z = rng.normal(size=(max(groups, n), k))[codes] + (0.6 * rng.normal(size=(n, k)) if groups else 0.0)
    a = unit(z @ m + noise_a * rng.normal(size=(n, p)))
    b = unit((z @ m + noise_b * rng.normal(size=(n, p))) @ turn)        # B = A's model rotated: same CKA with R
    ref = unit(z @ r + 2.0 * rng.normal(size=(n, q)))
    return a, b, ref, codes


def test_compare_cka_matches_a_recomputed_paired_jackknife(con):
    a, b, ref, codes = _three(1, 36, 1.0, 3.0, groups=12)
    con.register("three", long_table({"A": a, "B": b, "R": ref}, groups=[f"g{c}" for c in codes]))
    row = embsql.compare_cka(con, "three", reference="R", model="model", item="item", vector="v",
                             group="g").to_dicts()[0]
    labels = np.array([f"g{c}" for c in codes])

    def values(x):
        return np.array([cka_reference(x, ref, True)] + [cka_reference(x[labels != g], ref[labels != g], True)
                                                          for g in np.unique(labels)])
    d = values(a) - values(b)
    g = len(d) - 1
    centre = g * d[0] - (g - 1) * d[1:].mean()
    se = np.sqrt((g - 1) / g * np.sum((d[1:] - d[1:].mean()) ** 2))
    half = stats.t.ppf(0.975, g - 1) * se
    assert (row["model_a"], row["model_b"], row["reference"]) == ("A", "B", "R")
    assert row["cka_a"] == pytest.approx(cka_reference(a, ref), abs=1e-12)
    assert row["difference"] == pytest.approx(cka_reference(a, ref) - cka_reference(b, ref), abs=1e-12)
    assert row["se"] == pytest.approx(se, abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(centre) / se, g - 1), rel=1e-9)
    assert row["groups"] == 12 and row["items"] == 36 and row["calibrated"] is False
    sql = con.sql("SELECT * FROM emb_compare_cka('three', 'item', 'model', 'v', 'R', \"group\" := 'g')").fetchdf()
    assert list(sql.columns) == list(COMPARE_CKA.column_names())
    assert sql.loc[0, "ci_low"] == pytest.approx(row["ci_low"], abs=1e-12)
    assert sql.loc[0, "p_value"] == pytest.approx(row["p_value"], rel=1e-12)


def test_compare_cka_refuses_what_it_cannot_compare(con):
    a, b, ref, _ = _three(2, 30, 1.0, 1.0)
    con.register("two", long_table({"A": a, "R": ref}))
    con.register("three", long_table({"A": a, "B": b, "R": ref}))
    with pytest.raises(InputError, match="besides the reference 'R' has 1 model") as caught:
        embsql.compare_cka(con, "two", reference="R", model="model", item="item", vector="v")
    assert caught.value.kind == "model.too_few"
    with pytest.raises(InputError, match="reference 'Q' is not a model of model column 'model'") as caught:
        embsql.compare_cka(con, "three", reference="Q", model="model", item="item", vector="v")
    assert caught.value.kind == "model.reference"
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'by'"):
        embsql.compare_cka(con, "three", reference="R", model="model", item="item", vector="v", by="model")


def test_compare_cka_holds_its_level_and_covers_the_difference():
    """Seeded: H0 (B is A rotated, fresh noise) rejects at about 5%; with A closer, the interval
    covers the population difference where the difference of the biased CKAs does not."""
    reject = 0
    for seed in range(80):
        a, b, ref, codes = _three(1000 + seed, 40, 1.5, 1.5)
        pa, pb = geometry.pair_values(a, ref, None, 0), geometry.pair_values(b, ref, None, 0)
        reject += geometry.paired_difference(pa.debiased, pb.debiased)[3] <= 0.05
    # 80 draws at a true 5%: P(more than 11) < 0.5%; a test that ignored the pairing (or used the
    # biased CKAs' bias) would not hold here
    assert reject <= 11, reject
    truth_rng = _three(7, 20_000, 1.0, 3.0)
    truth = cka_big(truth_rng[0], truth_rng[2]) - cka_big(truth_rng[1], truth_rng[2])
    ours = naive = 0
    for seed in range(60):
        a, b, ref, _ = _three(2000 + seed, 40, 1.0, 3.0)
        pa, pb = geometry.pair_values(a, ref, None, 0), geometry.pair_values(b, ref, None, 0)
        _, low, high, _ = geometry.paired_difference(pa.debiased, pb.debiased)
        ours += low <= truth <= high
        d = pa.biased - pb.biased
        se = geometry.jackknife_se(d[1:])
        naive += abs(d[0] - truth) <= 1.96 * se
    assert ours >= 51, ours
    assert naive <= 30, naive


# ----------------------------------------------------------------------------------------------
# Procrustes' jackknife

def _protest_r(x, y) -> float:
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    return float(np.linalg.svd(x.T @ y, compute_uv=False).sum() / np.sqrt(np.sum(x * x) * np.sum(y * y)))


def test_procrustes_jackknife_matches_recomputation_and_is_never_calibrated(con):
    x, y = related(9, 45, 4, 7)
    labels = np.array([j % 9 for j in range(45)])
    reps = np.array([_protest_r(x[labels != g], y[labels != g]) for g in range(9)])
    se = np.sqrt(8 / 9 * np.sum((reps - reps.mean()) ** 2))
    row = geometry.procrustes_pair(x, y, groups=labels, permutations=0)
    assert row["r"] == pytest.approx(_protest_r(x, y), abs=1e-12)
    assert row["se"] == pytest.approx(se, abs=1e-12)
    assert row["ci_low"] < row["r"] < row["ci_high"] <= 1 and row["calibrated"] is False
    by_item = geometry.procrustes_pair(x, y, permutations=0)
    items = np.array([_protest_r(np.delete(x, i, 0), np.delete(y, i, 0)) for i in range(45)])
    assert by_item["se"] == pytest.approx(np.sqrt(44 / 45 * np.sum((items - items.mean()) ** 2)), abs=1e-12)
    con.register("t", long_table({"a": x, "b": y}, groups=[f"g{c}" for c in labels]))
    face = embsql.procrustes(con, "t", item="item", model="model", vector="v", group="g", permutations=0).to_dicts()[0]
    assert face["se"] == pytest.approx(se, abs=1e-12) and face["groups"] == 9


def test_procrustes_deletes_blocks_above_its_limit():
    units, count = geometry.jackknife_units(1000, None, 0, seed=3)
    assert count == geometry.PROCRUSTES_BLOCKS and np.bincount(units).min() == 5 == np.bincount(units).max()
    codes = np.repeat(np.arange(450), 2)
    units, count = geometry.jackknife_units(900, codes, 450, seed=3)
    assert count == geometry.PROCRUSTES_BLOCKS
    assert all(len(set(units[codes == g])) == 1 for g in range(0, 450, 37))       # a group stays in one block


# ----------------------------------------------------------------------------------------------
# the report shows CKA's interval

def test_the_report_shows_the_cka_interval(con):
    x, y = related(61, 40, 4, 6)
    con.register("t", long_table({"m1": x, "m2": y}, groups=[f"t{j % 5}" for j in range(40)]))
    result = embsql.report("t", vector="v", group="g", model="model", item="item", permutations=0).run(con)
    rows = {r["measure"]: r for r in result["models"].to_dicts()}
    cka = embsql.cka(con, "t", item="item", model="model", vector="v", group="g", permutations=0).to_dicts()[0]
    assert rows["linear CKA"]["ci_low"] == pytest.approx(cka["ci_low"]) and rows["linear CKA"]["ci_high"] == \
        pytest.approx(cka["ci_high"])
    assert rows["linear CKA"]["calibrated"] is False                       # 5 groups
    assert rows["Procrustes r"]["ci_low"] is None
    # the point the interval is built around, beside it: the debiased CKA (value stays the biased one)
    debiased = embsql.cka(con, "t", item="item", model="model", vector="v", group="g", permutations=0,
                          debiased=True).to_dicts()[0]["cka"]
    assert rows["linear CKA"]["corrected"] == pytest.approx(debiased, abs=1e-12)
    assert rows["linear CKA"]["value"] == pytest.approx(cka["cka"], abs=1e-12)
    assert rows["Procrustes r"]["corrected"] is None


def test_the_public_cka_shows_the_debiased_point_its_interval_is_built_around(con):
    """embsql.cka and emb_cka show ``corrected``, the debiased CKA (Song et al.'s unbiased HSIC, by
    the reference formula), beside the interval built around it; ``cka`` stays the biased CKA, which
    at d = 40 on 24 items lies far above its interval."""
    x, y = related(11, 24, 40, 40)
    con.register("wide", long_table({"a": x, "b": y}, groups=[f"t{j % 12}" for j in range(24)]))
    row = embsql.cka(con, "wide", item="item", model="model", vector="v", group="g", permutations=0).to_dicts()[0]
    assert row["cka"] == pytest.approx(cka_reference(x, y), rel=1e-10)
    assert row["corrected"] == pytest.approx(cka_reference(x, y, debiased=True), rel=1e-10)
    assert row["ci_low"] <= row["corrected"] <= row["ci_high"] < row["cka"]
    debiased = embsql.cka(con, "wide", item="item", model="model", vector="v", group="g", permutations=0,
                          debiased=True).to_dicts()[0]
    assert debiased["corrected"] == pytest.approx(debiased["cka"], rel=1e-12)
    sql = con.sql("SELECT corrected FROM emb_cka('wide', 'item', 'model', 'v', \"group\" := 'g', "
                  "permutations := 0)").fetchall()
    assert sql[0][0] == pytest.approx(row["corrected"], rel=1e-12)
