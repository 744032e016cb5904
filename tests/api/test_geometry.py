"""Model-to-model geometry: embsql.cka / emb_cka and embsql.procrustes / emb_procrustes.

References are independent: CKA by the paper's formula with n x n centring matrices (Kornblith et
al. 2019, eq. via HSIC = tr(K H L H)); the debiased CKA by the unbiased HSIC exactly as Song et al.
(2012) print it; the jackknife by deleting each item (or group) and recomputing those formulas;
the Procrustes correlation and its p-value by vegan's protest (tests/reference/vegan/procrustes/,
script, inputs and output kept there); the p-value's null distribution by simulation.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from helpers import TESTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import embsql
from embsql.core import geometry
from embsql.errors import BadLabelError, ColumnNotFoundError, DesignError, InputError
from embsql.render.plots import report_plots

VEGAN = TESTS / "reference" / "vegan" / "procrustes"


# ----------------------------------------------------------------------------------------------
# references

def unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def hsic_biased(k, g):
    """tr(K H L H) (the 1/(n-1)^2 factor cancels in CKA)."""
    n = len(k)
    h = np.eye(n) - np.ones((n, n)) / n
    return np.trace(k @ h @ g @ h)


def hsic_unbiased(k, g):
    """Song et al. (2012), eq. 5: K~, L~ (here k, g) are K, L with their diagonals set to zero."""
    n = len(k)
    k, g = k.copy(), g.copy()
    np.fill_diagonal(k, 0)
    np.fill_diagonal(g, 0)
    one = np.ones(n)
    return (np.trace(k @ g) + (one @ k @ one) * (one @ g @ one) / ((n - 1) * (n - 2))
            - 2 / (n - 2) * (one @ k @ g @ one)) / (n * (n - 3))


def cka_reference(x, y, debiased=False):
    h = hsic_unbiased if debiased else hsic_biased
    k, g = x @ x.T, y @ y.T
    return h(k, g) / np.sqrt(h(k, k) * h(g, g))


def jackknife_reference(x, y, labels, debiased=False):
    labels = np.asarray(labels)
    values = np.array([cka_reference(x[labels != g], y[labels != g], debiased) for g in np.unique(labels)])
    return np.sqrt((len(values) - 1) / len(values) * np.sum((values - values.mean()) ** 2))


def related(seed, n, p=5, q=8, noise=0.7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p)) + 0.8           # a shared mean direction, as real embeddings have
    y = np.c_[x, np.zeros((n, max(q - p, 0)))][:, :q] @ np.linalg.qr(rng.normal(size=(q, q)))[0]
    return unit(x), unit(y + noise * rng.normal(size=(n, q)))


def long_table(models: dict, items=None, groups=None) -> pa.Table:
    names, item_col, group_col, vectors = [], [], [], []
    for name, x in models.items():
        ids = items if items is not None else [f"i{j:03d}" for j in range(len(x))]
        names += [name] * len(x)
        item_col += list(ids)
        group_col += list(groups) if groups is not None else [None] * len(x)
        vectors += [list(map(float, row)) for row in x]
    return pa.table({"item": item_col, "model": names, "g": group_col,
                     "v": pa.array(vectors, pa.list_(pa.float64()))})


@pytest.fixture
def con():
    return embsql.connect()


# ----------------------------------------------------------------------------------------------
# against the published formulas

@pytest.mark.parametrize("n,p,q", [(40, 5, 8), (25, 3, 3), (9, 50, 60), (12, 70, 6)])   # the last two: Gram route
@pytest.mark.parametrize("debiased", [False, True])
def test_cka_and_its_jackknife_match_the_formulas(n, p, q, debiased):
    x, y = related(n + p, n, p, q)
    labels = [f"g{j % 4}" for j in range(n)]
    by_item = geometry.cka_pair(x, y, debiased=debiased, permutations=0)
    by_group = geometry.cka_pair(x, y, groups=labels, debiased=debiased, permutations=0)
    assert by_item["cka"] == pytest.approx(cka_reference(x, y, debiased), abs=1e-12)
    assert by_group["cka"] == pytest.approx(by_item["cka"], abs=1e-14)   # two routes to the same sums
    assert by_item["se"] == pytest.approx(jackknife_reference(x, y, np.arange(n), debiased), abs=1e-11)
    assert by_group["se"] == pytest.approx(jackknife_reference(x, y, labels, debiased), abs=1e-11)
    assert by_group["groups"] == 4 and by_item["groups"] is None and by_item["p_value"] is None


def test_the_routes_are_chosen_by_cost_and_agree():
    assert geometry.gram_cheaper(100, 768) and not geometry.gram_cheaper(200, 768)
    assert geometry.coordinates(np.ones((9, 50)))[1] == "gram"
    x, y = related(3, 30, 6, 9)
    wide = lambda a: np.c_[a, np.zeros((len(a), 200))]      # same Gram matrix, Gram route
    assert geometry.coordinates(wide(x))[1] == "gram"
    a = geometry.cka_pair(x, y, permutations=0, debiased=True)
    b = geometry.cka_pair(wide(x), wide(y), permutations=0, debiased=True)
    assert b["cka"] == pytest.approx(a["cka"], abs=1e-12) and b["se"] == pytest.approx(a["se"], abs=1e-11)


def test_with_permutations_the_gram_route_runs_up_to_three_quarters_of_d_and_gives_the_same_p():
    """Each permutation costs n d_x d_y on the cross products, n r_x r_y (r < n) on the Gram route."""
    assert geometry.gram_cheaper(500, 768, permutations=99) and not geometry.gram_cheaper(500, 768)
    assert not geometry.gram_cheaper(600, 768, permutations=99) and not geometry.gram_cheaper(200, 768, permutations=9)
    x, y = related(8, 30, 50, 60, noise=3.0)                 # 30 items: 4n < 3d, 5n > d
    assert geometry.coordinates(x, permutations=99)[1] == "gram" and geometry.coordinates(x)[1] == "cross products"
    for debiased in (False, True):
        auto = geometry.cka_pair(x, y, permutations=99, seed=4, debiased=debiased)
        cross = geometry.cka_pair(x, y, permutations=99, seed=4, debiased=debiased, route="cross products")
        assert auto["cka"] == pytest.approx(cross["cka"], abs=1e-12) and auto["p_value"] == cross["p_value"]
        assert 0.01 < auto["p_value"] < 1      # not at either end: the comparison counts real ties of order
    r_auto = geometry.procrustes_pair(x, y, permutations=99, seed=4)
    r_cross = geometry.procrustes_pair(x, y, permutations=0)
    assert r_auto["r"] == pytest.approx(r_cross["r"], abs=1e-12)


def test_the_cross_products_survive_a_large_shared_mean():
    rng = np.random.default_rng(5)
    x = unit(np.c_[np.full(500, 1e4), rng.normal(size=(500, 4))])     # all near one direction
    y = unit(np.c_[np.full(500, 1e4), x[:, 1:] * 1e4 + rng.normal(size=(500, 4))])
    assert geometry.cka_pair(x, y, permutations=0)["cka"] == pytest.approx(cka_reference(x, y), rel=1e-8)


def test_the_permutation_p_reruns_the_documented_permutations():
    x, y = related(11, 15, 3, 4, noise=3.0)
    rng = np.random.default_rng(7)
    reference = [cka_reference(x, y[rng.permutation(15)]) for _ in range(199)]
    observed = cka_reference(x, y)
    b = sum(r >= observed - 1.5e-8 * max(1, observed) for r in reference)
    assert geometry.cka_pair(x, y, permutations=199, seed=7)["p_value"] == (b + 1) / 200


def test_the_debiased_permutation_p_reruns_the_documented_permutations():
    x, y = related(12, 15, 3, 4, noise=3.0)
    rng = np.random.default_rng(3)
    reference = [cka_reference(x, y[rng.permutation(15)], True) for _ in range(99)]
    observed = cka_reference(x, y, True)
    b = sum(r >= observed - 1.5e-8 * max(1, abs(observed)) for r in reference)
    assert geometry.cka_pair(x, y, permutations=99, seed=3, debiased=True)["p_value"] == (b + 1) / 100


def _vegan_cases():
    out = {}
    for line in (VEGAN / "protest.Rout").read_text().splitlines():
        if line.startswith("case "):
            words = line.split()
            out[words[1]] = dict(zip(words[2::2], map(float, words[3::2])))
    return out


@pytest.mark.parametrize("case", ["small", "wide", "weak"])
def test_procrustes_matches_vegan_protest(case):
    expected = _vegan_cases()[case]
    x = np.loadtxt(VEGAN / f"{case}_x.csv", delimiter=",")
    y = np.loadtxt(VEGAN / f"{case}_y.csv", delimiter=",")
    permutations = 4999
    ours = geometry.procrustes_pair(x, y, permutations=permutations, seed=1)
    assert ours["r"] == pytest.approx(expected["r"], abs=1e-12)
    assert ours["m12_squared"] == pytest.approx(expected["ss"], abs=1e-12)
    # two independent Monte Carlo p-values: 4 SDs of their difference (about 6e-5 to fail by chance)
    p = expected["p"]
    tolerance = 4 * np.sqrt(p * (1 - p) * (1 / permutations + 1 / expected["permutations"]))
    assert abs(ours["p_value"] - p) <= tolerance
    assert ours["invariance"] == "similarity"


# ----------------------------------------------------------------------------------------------
# invariances (hypothesis)

@st.composite
def model_pairs(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n, p = draw(st.integers(5, 30)), draw(st.integers(2, 6))
    rng = np.random.default_rng(seed)
    return rng, unit(rng.normal(size=(n, p)) + draw(st.floats(-1, 1))), unit(rng.normal(size=(n, p + 2)))


def _rotate_pad(rng, x, extra, scale):
    q = x.shape[1] + extra
    return scale * np.c_[x, np.zeros((len(x), extra))] @ np.linalg.qr(rng.normal(size=(q, q)))[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_pairs(), st.integers(0, 5), st.floats(0.01, 100))
def test_cka_is_one_for_a_rotated_rescaled_padded_copy(pair, extra, scale):
    rng, x, _ = pair
    y = _rotate_pad(rng, x, extra, scale)
    for debiased in (False, True):
        assert geometry.cka_pair(x, y, permutations=0, debiased=debiased)["cka"] == pytest.approx(1.0, abs=1e-9)
    assert geometry.procrustes_pair(x, y, permutations=0)["r"] == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_pairs())
def test_cka_is_symmetric_and_invariant_to_rotating_either_model(pair):
    rng, x, y = pair
    for debiased in (False, True):
        base = geometry.cka_pair(x, y, permutations=0, debiased=debiased)
        swapped = geometry.cka_pair(y, x, permutations=0, debiased=debiased)
        rotated = geometry.cka_pair(_rotate_pad(rng, x, 0, 1.0), _rotate_pad(rng, y, 0, 1.0), permutations=0,
                                    debiased=debiased)
        for other in (swapped, rotated):
            assert other["cka"] == pytest.approx(base["cka"], abs=1e-10)
            assert other["se"] == pytest.approx(base["se"], rel=1e-7, abs=1e-9)   # a jackknife of a few items loses digits
    r = geometry.procrustes_pair(x, y, permutations=0)["r"]
    assert geometry.procrustes_pair(y, x, permutations=0)["r"] == pytest.approx(r, abs=1e-10)
    assert geometry.procrustes_pair(_rotate_pad(rng, x, 0, 1.0), y, permutations=0)["r"] == pytest.approx(r, abs=1e-10)


# ----------------------------------------------------------------------------------------------
# the p-value under H0 (simulation)

def test_the_p_values_reject_at_their_level_under_independence():
    """Independent models: P(p <= 0.05) is 0.05 (exact for an exchangeable null, up to the (b+1)/(B+1)
    discreteness: with B = 99, P(p <= 0.05) = 5/100).  400 data sets: MC SE 0.011; 4 SEs either side."""
    rng = np.random.default_rng(2024)
    rejected = {"cka": 0, "debiased": 0, "procrustes": 0}
    runs = 400
    for _ in range(runs):
        x, y = unit(rng.normal(size=(12, 3)) + 0.5), unit(rng.normal(size=(12, 4)))
        seed = int(rng.integers(2**31))
        rejected["cka"] += geometry.cka_pair(x, y, permutations=99, seed=seed)["p_value"] <= 0.05
        rejected["debiased"] += geometry.cka_pair(x, y, permutations=99, seed=seed, debiased=True)["p_value"] <= 0.05
        rejected["procrustes"] += geometry.procrustes_pair(x, y, permutations=99, seed=seed)["p_value"] <= 0.05
    bound = 4 * np.sqrt(0.05 * 0.95 / runs)
    for name, count in rejected.items():
        assert abs(count / runs - 0.05) <= bound, (name, count / runs)


# ----------------------------------------------------------------------------------------------
# faces: Python, SQL, and the same numbers from both

def test_python_and_sql_give_the_same_rows(con):
    x, y = related(21, 30, 4, 6)
    z = related(22, 30, 4, 3)[1]
    con.register("t", long_table({"m1": x, "m2": y, "m3": z}, groups=[f"g{j % 5}" for j in range(30)]))
    py = embsql.cka(con, "t", item="item", model="model", vector="v", group="g", permutations=49).to_dicts()
    sql = con.sql("SELECT * FROM emb_cka('t', 'item', 'model', 'v', \"group\" := 'g', permutations := 49)")
    assert [tuple(r.values()) for r in py] == sql.fetchall()
    assert [(r["model_a"], r["model_b"]) for r in py] == [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    assert py[0]["cka"] == pytest.approx(cka_reference(x, y), abs=1e-12)
    pr = embsql.procrustes(con, "t", item="item", model="model", vector="v", permutations=49).to_dicts()
    assert [tuple(r.values()) for r in pr] == \
        con.sql("SELECT * FROM emb_procrustes('t', 'item', 'model', 'v', permutations := 49)").fetchall()


def test_row_order_does_not_change_the_result(con):
    x, y = related(31, 20, 3, 5)
    table = long_table({"a": x, "b": y})
    con.register("t", table)
    con.register("shuffled", table.take(pa.array(np.random.default_rng(0).permutation(40))))
    args = dict(item="item", model="model", vector="v", permutations=99, seed=5)
    assert embsql.cka(con, "t", **args).to_dicts() == embsql.cka(con, "shuffled", **args).to_dicts()
    assert embsql.procrustes(con, "t", **args).to_dicts() == embsql.procrustes(con, "shuffled", **args).to_dicts()


def test_raw_vectors_are_normalised_first(con):
    x, y = related(41, 20, 3, 5)
    scales = np.random.default_rng(1).uniform(0.1, 10, size=(20, 1))
    con.register("t", long_table({"a": x * scales, "b": y}))
    row = embsql.cka(con, "t", item="item", model="model", vector="v", permutations=0).to_dicts()[0]
    assert row["cka"] == pytest.approx(cka_reference(x, y), abs=1e-12) and row["p_value"] is None


# ----------------------------------------------------------------------------------------------
# bad input

def test_items_that_differ_between_models(con):
    x, y = related(51, 10, 3, 4)
    items = [f"i{j}" for j in range(10)]
    table = pa.concat_tables([long_table({"a": x}, items), long_table({"b": y[:8]}, items[:8])])
    con.register("t", table)
    lacks = r"model 'a' has item 'i8' that another model lacks \(2 such items\).*common=True.*8 items"
    with pytest.raises(InputError, match=lacks):
        embsql.cka(con, "t", item="item", model="model", vector="v")
    with pytest.raises(Exception, match=r"embsql: \[input\] model 'a' has item 'i8'"):
        con.sql("SELECT * FROM emb_cka('t', 'item', 'model', 'v')").fetchall()
    row = embsql.cka(con, "t", item="item", model="model", vector="v", common=True, permutations=0).to_dicts()[0]
    assert row["items"] == 8 and row["cka"] == pytest.approx(cka_reference(x[:8], y[:8]), abs=1e-12)
    assert embsql.procrustes(con, "t", item="item", model="model", vector="v", common=True,
                             permutations=0).to_dicts()[0]["items"] == 8


def test_too_few_items(con):
    x, y = related(52, 2, 3, 4)
    con.register("t", long_table({"a": x, "b": y}))
    for call in (embsql.cka, embsql.procrustes):
        with pytest.raises(DesignError, match="at least 3 items shared by both models; there are 2"):
            call(con, "t", item="item", model="model", vector="v")
    x, y = related(53, 4, 3, 4)
    con.register("four", long_table({"a": x, "b": y}))
    with pytest.raises(DesignError, match="debiased CKA needs at least 5 items"):
        embsql.cka(con, "four", item="item", model="model", vector="v", debiased=True)


def test_null_model_item_or_group(con):
    x, y = related(54, 6, 3, 4)
    base = long_table({"a": x, "b": y}, groups=["g1", "g2"] * 3)
    columns = {name: base.column(name).to_pylist() for name in base.column_names}
    for column, message, error in (("model", "model column", BadLabelError), ("item", "item", BadLabelError),
                                   ("g", "group column 'g'", BadLabelError)):
        values = dict(columns)
        values[column] = [None] + values[column][1:]
        con.register("t", pa.table({**values, "v": base.column("v")}))
        with pytest.raises(error, match=message):
            embsql.cka(con, "t", item="item", model="model", vector="v", group="g")
    with pytest.raises(ColumnNotFoundError, match="item column 'nope' not found"):
        embsql.cka(con, "t", item="nope", model="model", vector="v")
    with pytest.raises(Exception, match=r"embsql: \[column\.missing\] group column 'nope' not found"):
        con.sql("SELECT * FROM emb_cka('t', 'item', 'model', 'v', \"group\" := 'nope')").fetchall()


def test_an_item_in_two_groups_and_one_model_only(con):
    x, y = related(55, 6, 3, 4)
    table = pa.concat_tables([long_table({"a": x}, groups=list("aabbcc")), long_table({"b": y}, groups=list("abbbcc"))])
    con.register("t", table)
    with pytest.raises(InputError, match=r"group column 'g': item 'i001' is in group 'a' for one model and 'b'"):
        embsql.cka(con, "t", item="item", model="model", vector="v", group="g")
    con.register("one", long_table({"a": x}))
    with pytest.raises(InputError, match="1 model"):
        embsql.procrustes(con, "one", item="item", model="model", vector="v")


def test_bad_arguments(con):
    x, y = related(56, 6, 3, 4)
    con.register("t", long_table({"a": x, "b": y}))
    with pytest.raises(InputError, match="permutations must be a whole number"):
        embsql.cka(con, "t", item="item", model="model", vector="v", permutations=-1)
    with pytest.raises(InputError, match="seed must be a whole number"):
        embsql.procrustes(con, "t", item="item", model="model", vector="v", seed=None)
    with pytest.raises(Exception, match=re.escape("embsql: [argument.permutations] permutations must be a whole number, "
                                                  "not 2.5")):
        con.sql("SELECT * FROM emb_cka('t', 'item', 'model', 'v', permutations := 2.5)").fetchall()
    flat = long_table({"a": np.tile(x[:1], (6, 1)), "b": y})
    con.register("flat", flat)
    with pytest.raises(DesignError, match="the vectors of model 'a' are identical"):
        embsql.cka(con, "flat", item="item", model="model", vector="v")


# ----------------------------------------------------------------------------------------------
# the report's models section

def _report_table():
    x, y = related(61, 40, 4, 6)
    z = unit(np.random.default_rng(62).normal(size=(40, 3)))
    return long_table({"m1": x, "m2": y, "m3": z}, groups=[f"t{j % 5}" for j in range(40)]), x, y


def test_the_report_compares_models_when_it_knows_the_items(con):
    table, x, y = _report_table()
    con.register("t", table)
    result = embsql.report("t", vector="v", group="g", model="model", item="item", permutations=49).run(con)
    rows = result["models"].to_dicts()
    assert {(r["measure"], r["invariance"]) for r in rows} == {
        ("linear CKA", "similarity"), ("Procrustes r", "similarity"),
        ("k-NN overlap (k = 10)", "monotone"), ("Mantel r (Spearman)", "monotone")}
    first = {r["measure"]: r for r in rows if (r["model_a"], r["model_b"]) == ("m1", "m2")}
    assert first["linear CKA"]["value"] == pytest.approx(cka_reference(x, y), abs=1e-12)
    assert first["linear CKA"]["se"] == pytest.approx(jackknife_reference(x, y, [f"t{j % 5}" for j in range(40)]),
                                                      abs=1e-11)
    assert first["Procrustes r"]["value"] == pytest.approx(
        embsql.procrustes(con, "t", item="item", model="model", vector="v", permutations=0).to_dicts()[0]["r"])
    assert first["Mantel r (Spearman)"]["value"] == pytest.approx(
        embsql.mantel(con, "t", item="item", model="model", vector="v", permutations=49).to_dicts()[0]["r"])
    assert len(rows) == 3 * 4
    plots = [p for p in report_plots(result) if p.anchor == "models"]
    assert len(plots) == 1 and len(plots[0].figure.axes) == 5        # four measures and the colour bar


def test_the_models_section_is_off_without_an_item_column(con):
    table, _, _ = _report_table()
    con.register("t", table)
    plain = embsql.report("t", vector="v", group="g", model="model", permutations=0).run(con)
    assert "models" not in [s.name for s in plain.sections]
    with pytest.raises(InputError, match=r"needs the item column \(item=...\)"):
        embsql.report("t", vector="v", group="g", model="model", sections=["models"]).run(con)
    x, y = related(63, 20, 4, 4)
    con.register("same_d", long_table({"m1": x, "m2": y}, groups=[f"t{j % 4}" for j in range(20)]))
    with pytest.raises(InputError, match=r"needs the model column \(model=...\)"):
        embsql.report("same_d", vector="v", group="g", item="item", sections=["models"]).run(con)


def test_the_jackknife_se_matches_the_spread_over_samples():
    """Mean jackknife SE / SD of CKA over 200 independent samples from one population, items free and
    items clustered in 15 groups of 4 (cluster jackknife).  Measured 1.00-1.07; the ratio's Monte
    Carlo error is about 1/sqrt(2 * 200) = 5%, so 0.8-1.25 leaves 4 of them either side."""
    rng = np.random.default_rng(5)
    for clustered in (False, True):
        estimates, ses = [], []
        for _ in range(200):
            x = rng.normal(size=(60, 4))
            labels = np.repeat(np.arange(15), 4)
            if clustered:
                x = x + rng.normal(size=(15, 4))[labels]
            y = np.c_[x, np.zeros((60, 2))] + rng.normal(size=(60, 6))
            row = geometry.cka_pair(unit(x), unit(y), permutations=0, groups=labels if clustered else None)
            estimates.append(row["cka"])
            ses.append(row["se"])
        assert 0.8 <= np.mean(ses) / np.std(estimates, ddof=1) <= 1.25, clustered


# ----------------------------------------------------------------------------------------------
# ranges: the biased CKA in [0, 1], the debiased one in [-1, 1] and negative when its HSIC is

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_pairs(), st.booleans())
def test_cka_stays_in_its_range_on_random_data(pair, clustered):
    _, x, y = pair
    groups = [j % 3 for j in range(len(x))] if clustered and len(x) >= 9 else None   # 4 items left per replicate
    biased = geometry.cka_pair(x, y, permutations=0, groups=groups)
    assert 0.0 <= biased["cka"] <= 1.0
    debiased = geometry.cka_pair(x, y, permutations=0, groups=groups, debiased=True)
    assert -1.0 <= debiased["cka"] <= 1.0
    # the bound is Cauchy-Schwarz for the U-centred Gram matrices, not a clip: the reference agrees
    assert debiased["cka"] == pytest.approx(cka_reference(x, y, True), abs=1e-9)
    for row in (biased, debiased):
        assert row["se"] is None or (np.isfinite(row["se"]) and row["se"] >= 0)


def test_the_debiased_cka_of_unrelated_models_is_negative_about_as_often_as_not():
    """Unclipped: for independent models the unbiased HSIC is centred at 0.  Out of 200 seeded pairs
    (n = 30) the share below 0 is about one half; 0.25-0.75 is more than 7 Monte Carlo SEs wide,
    and a clip at 0 would give a share of 0.  The biased CKA is never below 0."""
    negative = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        x, y = unit(rng.normal(size=(30, 5)) + 0.3), unit(rng.normal(size=(30, 7)) + 0.3)
        negative += geometry.cka_pair(x, y, permutations=0, debiased=True)["cka"] < 0
        assert geometry.cka_pair(x, y, permutations=0)["cka"] > 0
    assert 0.25 <= negative / 200 <= 0.75


# ----------------------------------------------------------------------------------------------
# matching items and reading rows (the fast routes give the general route's numbers)

@pytest.mark.parametrize("interleaved", [False, True])
def test_shuffled_items_and_items_of_one_model_give_the_direct_cka_of_the_matched_items(con, interleaved):
    rng = np.random.default_rng(61)
    x, y = related(61, 30, 4, 6)
    ids = [f"é{j}" if j % 7 == 0 else f"item{j}" * (1 + j % 3) for j in range(30)]   # uneven lengths, non-ASCII
    only_a, only_b = [f"a_only{j}" for j in range(3)], [f"b_only{j}" for j in range(4)]
    ra, rb = rng.permutation(33), rng.permutation(34)
    xa = np.r_[x, unit(rng.normal(size=(3, 4)))][ra]
    yb = np.r_[y, unit(rng.normal(size=(4, 6)))][rb]
    table = pa.concat_tables([long_table({"a": xa}, list(np.array(ids + only_a)[ra])),
                              long_table({"b": yb}, list(np.array(ids + only_b)[rb]))])
    if interleaved:     # the models' rows mixed within a batch: each model's part is filtered, not sliced
        table = table.take(pa.array(rng.permutation(table.num_rows)))
    con.register("t", table)
    row = embsql.cka(con, "t", item="item", model="model", vector="v", common=True, permutations=0).to_dicts()[0]
    order = np.argsort(np.array(ids))                     # the shared items in text order, as embsql matches them
    assert row["items"] == 30
    assert row["cka"] == pytest.approx(cka_reference(x[order], y[order]), abs=1e-12)
    assert row["se"] == pytest.approx(jackknife_reference(x[order], y[order], np.arange(30)), abs=1e-12)


@pytest.mark.parametrize("case", ["same sorted", "shuffled", "one model lacks some", "integers"])
def test_shared_items_matches_a_direct_lookup(case):
    from embsql.core.model_comparison import shared_items
    rng = np.random.default_rng(71)
    ids = [f"x{j}" for j in range(50)] + ["10", "2", "Z", "a", "é"]
    if case == "integers":
        ids = list(range(12, -3, -1))                    # text order: "-1" < "0" < "10" < "2"
    a = np.array(sorted(ids, key=str) if case == "same sorted" else list(np.array(ids, dtype=object)[rng.permutation(len(ids))]),
                 dtype=object)
    b = a.copy() if case == "same sorted" else a[rng.permutation(len(a))]
    if case == "one model lacks some":
        b = b[5:]
    order, rows = shared_items({"a": a, "b": b}, common=True)
    expected = sorted(set(a.tolist()) & set(b.tolist()), key=str)
    assert order == expected
    for m, items in (("a", a), ("b", b)):
        assert rows[m].dtype == np.int64 and items[rows[m]].tolist() == expected


@pytest.mark.parametrize("items,message", [
    (["i0", "i1", "i0"], r"model 'a' has item 'i0' more than once"),
    (["i0", None, "i2"], r"model 'a' has a NULL item"),
])
def test_shared_items_names_a_repeated_or_null_item(items, message):
    from embsql.core.model_comparison import shared_items
    with pytest.raises((InputError, BadLabelError), match=message):
        shared_items({"a": np.array(items, dtype=object), "b": np.array(["i0", "i1", "i2"], dtype=object)}, common=True)


def test_scaling_from_the_arrow_values_gives_the_numbers_of_copying_them_first():
    from embsql.core.sums import normalise
    rng = np.random.default_rng(81)
    raw = rng.normal(size=(40, 6)) * rng.uniform(0.1, 10, size=(40, 1))
    raw[3] *= 1e-170             # rows whose squared norm underflows or overflows take the rescaled route
    raw[7] *= 1e170
    copied, direct = raw.copy(), np.empty_like(raw)
    normalise(copied, str, "v")
    normalise(direct, str, "v", source=raw)
    assert np.array_equal(copied, direct) and np.allclose(np.linalg.norm(direct, axis=1), 1.0, rtol=1e-15)
