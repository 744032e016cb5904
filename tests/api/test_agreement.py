"""Cross-model agreement (SPEC S25): embsql.knn_agreement / emb_knn_agreement(_items) and
embsql.mantel / emb_mantel.

References are independent: neighbour sets by sorting every other item in plain Python, the
jackknife by deleting each item and recomputing, the Mantel r by scipy.stats.spearmanr on
scipy's condensed cosine distances, its p-value by re-running the documented permutations with
scipy, and the null distribution of p by simulation.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from helpers import sql_error, sql_rows
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform
from scipy.stats import spearmanr

import embsql
from embsql.core import agreement
from embsql.errors import (
    VECTOR_KINDS,
    BadLabelError,
    BadVectorError,
    ColumnNotFoundError,
    DesignError,
    InputError,
)

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

GRID = 2.0 ** -40     # the documented tie grid of cosine similarities


# ----------------------------------------------------------------------------------------------
# data and brute force

def long_table(models: dict, items=None, order=None) -> pa.Table:
    """(item, model, v) rows; ``models``: name -> n x d array; rows optionally reordered."""
    names, item_col, vectors = [], [], []
    for name, x in models.items():
        ids = items if items is not None else [f"i{j:03d}" for j in range(len(x))]
        names += [name] * len(x)
        item_col += list(ids)
        vectors += [list(map(float, row)) for row in x]
    t = pa.table({"item": item_col, "model": names, "v": pa.array(vectors, pa.list_(pa.float64()))})
    return t.take(pa.array(order)) if order is not None else t


def related(seed, n, dims=(5, 8), noise=0.5):
    """Two models of the same items: the second a noisy linear map of the first."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dims[0]))
    y = x @ rng.normal(size=(dims[0], dims[1])) + noise * rng.normal(size=(n, dims[1]))
    return x, y


def brute_sets(x, names, k):
    """N(i) for every item: the other items sorted by (cosine similarity on the grid, descending;
    item text, ascending), first k."""
    z = x / np.linalg.norm(x, axis=1, keepdims=True)
    key = np.rint((z @ z.T) / GRID)
    out = []
    for i in range(len(x)):
        others = sorted((j for j in range(len(x)) if j != i), key=lambda j: (-key[i, j], str(names[j])))
        out.append({names[j] for j in others[:k]})
    return out


def brute_overlaps(x, y, names, k):
    a, b = brute_sets(x, names, k), brute_sets(y, names, k)
    return np.array([len(a[i] & b[i]) / k for i in range(len(x))])


def brute_jackknife_se(x, y, names, k):
    n = len(x)
    theta = np.array([brute_overlaps(np.delete(x, j, 0), np.delete(y, j, 0), np.delete(names, j), k).mean()
                      for j in range(n)])
    return float(np.sqrt((n - 1) / n * np.sum((theta - theta.mean()) ** 2)))


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def integer_models(seed, n, dims, bounds):
    """Two models with small integer coordinates (many duplicated and mirrored vectors, so many
    exact ties); items whose vector is zero in either model are dropped."""
    rng = np.random.default_rng(seed)
    x, y = (rng.integers(low, high, size=(n, d)).astype(float) for d, (low, high) in zip(dims, bounds))
    keep = (np.abs(x).sum(1) > 0) & (np.abs(y).sum(1) > 0)
    return x[keep], y[keep]


# ----------------------------------------------------------------------------------------------
# k-NN agreement equals brute force

@pytest.mark.parametrize("k", [1, 3, 7])
def test_knn_agreement_equals_brute_force(con, k):
    x, y = related(1, 24, dims=(4, 9))
    names = np.array([f"i{j:03d}" for j in range(24)])
    con.register("t", long_table({"small": x, "large": y}, order=np.random.default_rng(0).permutation(48)))
    got = embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=k).to_dicts()
    per_item = brute_overlaps(y, x, names, k)          # pairs are in model-name order: large, small
    assert [(r["model_a"], r["model_b"], r["k"], r["items"]) for r in got] == [("large", "small", k, 24)]
    assert got[0]["overlap"] == pytest.approx(per_item.mean(), abs=1e-12)
    assert got[0]["se"] == pytest.approx(brute_jackknife_se(y, x, names, k), abs=1e-12)
    assert got[0]["chance"] == pytest.approx(k / 23)
    items = embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=k, per_item=True)
    assert items.columns == ("model_a", "model_b", "item", "overlap")
    assert items.column("item") == list(names)
    assert items.column("overlap") == pytest.approx(per_item, abs=1e-12)
    assert 0 < got[0]["overlap"] < 1           # the data leave something to agree and disagree on


def test_sql_equals_python_for_three_models_of_different_dimension(con):
    x, y = related(2, 30, dims=(6, 3))
    w = np.random.default_rng(3).normal(size=(30, 11))
    con.register("t", long_table({"m1": x, "m2": y, "m3": w}, order=np.random.default_rng(1).permutation(90)))
    py = embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=4).to_dicts()
    sql = sql_rows(con, "SELECT * FROM emb_knn_agreement('t', 'item', 'model', 'v', k := 4)")
    assert [(r["model_a"], r["model_b"]) for r in py] == [("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    assert sql == py
    items_py = embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=4, per_item=True).to_dicts()
    items_sql = sql_rows(con, "SELECT * FROM emb_knn_agreement_items('t', 'item', 'model', 'v', k := 4)")
    assert items_sql == items_py and len(items_py) == 90
    names = np.array([f"i{j:03d}" for j in range(30)])
    assert py[1]["overlap"] == pytest.approx(brute_overlaps(x, w, names, 4).mean(), abs=1e-12)


def test_result_does_not_depend_on_row_order_or_model_names_order(con):
    x, y = related(4, 20)
    con.register("t1", long_table({"a": x, "b": y}))
    con.register("t2", long_table({"b": y, "a": x}, order=np.random.default_rng(2).permutation(40)))
    assert (embsql.knn_agreement(con, "t1", item="item", model="model", vector="v", k=3).to_dicts()
            == embsql.knn_agreement(con, "t2", item="item", model="model", vector="v", k=3).to_dicts())
    assert (embsql.mantel(con, "t1", item="item", model="model", vector="v", permutations=49).to_dicts()
            == embsql.mantel(con, "t2", item="item", model="model", vector="v", permutations=49).to_dicts())


def test_ties_at_the_kth_neighbour_go_to_the_item_first_in_text_order(con):
    # under model A, 'q' is equally near 'a' and 'b' (the same cosine, 0.6, from vectors of
    # different length); 'a' comes first in text order, so it is q's nearest neighbour
    a_vectors = {"q": [1.0, 0.0], "b": [1.2, -1.6], "a": [0.6, 0.8], "c": [-1.0, 0.1], "d": [-1.0, -0.2]}
    for b_nearest, expected in (("a", 1.0), ("b", 0.0)):
        b_vectors = {"q": [1.0, 0.0, 0.0], "a": [0.0, 1.0, 0.0], "b": [0.0, 0.0, 1.0], "c": [-1.0, 0.0, 0.0],
                     "d": [-1.0, 0.5, 0.5]}
        b_vectors[b_nearest] = [0.9, 0.1, 0.1]
        names = list(a_vectors)
        con.register("t", long_table({"A": np.array([a_vectors[i] for i in names]),
                                      "B": np.array([b_vectors[i] for i in names])}, items=names))
        got = embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=1, per_item=True).to_dicts()
        assert {r["item"]: r["overlap"] for r in got}["q"] == expected


def test_tie_heavy_data_equals_brute_force():
    x, y = integer_models(5, 60, (3, 4), ((-2, 3), (-1, 2)))
    names = np.array([f"i{j:03d}" for j in range(len(x))])
    for k in (2, 9):
        _, item_rows = agreement.knn_rows({"a": (names, unit(x)), "b": (names, unit(y))}, k)
        assert [r["overlap"] for r in item_rows] == pytest.approx(brute_overlaps(x, y, names, k), abs=1e-12)


def test_candidates_within_float32_noise_are_decided_in_float64(monkeypatch):
    """30 items whose similarities to item 0 differ by 1e-9 (float32 cannot tell them apart):
    rows where a non-candidate might belong are redone in float64, and the order is exact."""
    rng = np.random.default_rng(6)
    cosines = 0.5 + 1e-9 * rng.permutation(30)
    angles = rng.uniform(0, 2 * np.pi, 30)
    near = np.column_stack([cosines, np.sqrt(1 - cosines ** 2) * np.cos(angles),
                            np.sqrt(1 - cosines ** 2) * np.sin(angles)])
    x = np.vstack([[1.0, 0.0, 0.0], near, rng.normal(size=(20, 3)) - [3.0, 0.0, 0.0]])
    calls = []
    exact = agreement._exact_rows
    monkeypatch.setattr(agreement, "_exact_rows", lambda *a: calls.append(a[1]) or exact(*a))
    got = agreement.neighbours(unit(x), 5)
    assert calls and 0 in np.concatenate(calls)
    assert {f"{j:03d}" for j in got[0]} == brute_sets(x, [f"{j:03d}" for j in range(len(x))], 5)[0]
    assert list(got[0]) == list(1 + np.argsort(-cosines)[:5])


def test_fallback_path_agrees_with_candidate_path(monkeypatch):
    x = np.random.default_rng(7).integers(-3, 4, size=(80, 5)).astype(float)
    x = x[np.abs(x).sum(1) > 0]
    fast = agreement.neighbours(unit(x), 6)
    monkeypatch.setattr(agreement, "KNN_SPARE", 10 ** 6)       # every row through the exact path
    assert (agreement.neighbours(unit(x), 6) == fast).all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_similarity_transform_gives_perfect_agreement(data):
    """A rotated, rescaled (globally and per item) copy in a higher dimension agrees fully."""
    n = data.draw(st.integers(4, 12))
    d = data.draw(st.integers(1, 4))
    x = np.array(data.draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d),
                                    min_size=n, max_size=n)), dtype=float)
    assume((np.abs(x).sum(axis=1) > 0).all())
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    wide = d + data.draw(st.integers(0, 3))
    rotation = np.linalg.qr(rng.normal(size=(wide, wide)))[0]
    scales = data.draw(st.floats(0.01, 100)) * rng.uniform(0.5, 2.0, size=(n, 1))
    y = np.hstack([x, np.zeros((n, wide - d))]) @ rotation * scales
    names = np.array([f"i{j:02d}" for j in range(n)])
    models = {"a": (names, unit(x)), "b": (names, unit(y))}
    k = data.draw(st.integers(1, n - 2))
    rows, item_rows = agreement.knn_rows(models, k)
    assert rows[0]["overlap"] == 1.0 and rows[0]["se"] == 0.0
    assert all(r["overlap"] == 1.0 for r in item_rows)
    try:
        result = agreement.mantel_rows(models, permutations=9)[0]
    except DesignError:          # every pair at one distance: r undefined for both
        return
    assert result["r"] == pytest.approx(1.0, abs=1e-12)


def test_jackknife_is_conservative_but_not_wildly():
    """The delete-one-item jackknife against the spread of the overlap over independent data
    sets of the same population (measured 1.4-1.9x in bench/README.md)."""
    rng = np.random.default_rng(8)
    estimates, ses = [], []
    for _ in range(150):
        x = rng.normal(size=(80, 6))
        y = x[:, :4] + 0.8 * rng.normal(size=(80, 4))
        _, estimate, se = agreement.overlap_jackknife(agreement.neighbours(unit(x), 6),
                                                      agreement.neighbours(unit(y), 6), 5)
        estimates.append(estimate)
        ses.append(se)
    ratio = np.mean(ses) / np.std(estimates, ddof=1)
    assert 1.0 < ratio < 2.5


# ----------------------------------------------------------------------------------------------
# Mantel

def test_mantel_r_equals_scipy_spearman_and_p_the_documented_permutations(con):
    x, y = related(10, 15, dims=(4, 6), noise=4.0)
    con.register("t", long_table({"a": x, "b": y}, order=np.random.default_rng(3).permutation(30)))
    got = embsql.mantel(con, "t", item="item", model="model", vector="v", permutations=199, seed=11).to_dicts()[0]
    da, db = pdist(x, "cosine"), pdist(y, "cosine")
    r = spearmanr(da, db).statistic
    assert got["r"] == pytest.approx(r, abs=1e-12)
    rng = np.random.default_rng(11)
    square = squareform(db)
    permuted = []
    for _ in range(199):
        p = rng.permutation(15)
        permuted.append(spearmanr(da, squareform(square[np.ix_(p, p)], checks=False)).statistic)
    b = int(np.sum(np.array(permuted) >= r - 1e-9))
    assert got["p_value"] == (b + 1) / 200 and got["permutations"] == 199 and got["items"] == 15
    assert 0.01 < got["p_value"] < 0.9      # a p-value neither at its floor nor trivial
    sql = sql_rows(con, "SELECT * FROM emb_mantel('t', 'item', 'model', 'v', permutations := 199, seed := 11)")
    assert sql == [got]


def test_mantel_with_tied_distances_uses_average_ranks():
    x, y = integer_models(10, 25, (3, 2), ((-2, 3), (-2, 3)))
    names = np.arange(len(x))
    got = agreement.mantel_rows({"a": (names, unit(x)), "b": (names, unit(y))}, permutations=9)[0]
    # scipy's distances carry rounding noise that splits exact ties; round it away first
    r = spearmanr(np.round(pdist(x, "cosine"), 9), np.round(pdist(y, "cosine"), 9)).statistic
    assert got["r"] == pytest.approx(r, abs=1e-12)


def test_mantel_p_value_is_uniform_under_the_null():
    """500 independent pairs of unrelated models (n = 8, 39 permutations): the empirical CDF of p
    stays within the DKW band (false alarm rate 1e-3) of the uniform on {1/40, ..., 1}."""
    rng = np.random.default_rng(12)
    datasets, permutations = 500, 39
    p = np.array([agreement.mantel_test(unit(rng.normal(size=(8, 3))), unit(rng.normal(size=(8, 4))),
                                        permutations=permutations, seed=int(s)).p_value
                  for s in rng.integers(0, 2 ** 31, datasets)])
    assert p.min() > 0 and p.max() <= 1
    grid = np.arange(1, permutations + 2) / (permutations + 1)
    empirical = np.searchsorted(np.sort(p), grid + 1e-12, side="right") / datasets
    assert np.max(np.abs(empirical - grid)) < np.sqrt(np.log(2 / 1e-3) / (2 * datasets))


def test_mantel_detects_shared_structure():
    x, y = related(13, 30, noise=0.3)
    names = np.arange(30)
    got = agreement.mantel_rows({"a": (names, unit(x)), "b": (names, unit(y))}, permutations=99)[0]
    assert got["r"] > 0.5 and got["p_value"] == 0.01


# ----------------------------------------------------------------------------------------------
# items across models

def test_items_must_match_unless_common(con):
    x, y = related(14, 12)
    t = long_table({"a": x, "b": y})
    con.register("t", t.filter(pa.array([not (m == "b" and i in ("i003", "i007"))
                                          for m, i in zip(t["model"].to_pylist(), t["item"].to_pylist())])))
    message = ("model 'a' has item 'i003' that another model lacks (2 such items); pass common=True to "
               "compare on the 10 items every model has")
    for run in (lambda: embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=3),
                lambda: embsql.mantel(con, "t", item="item", model="model", vector="v")):
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            run()
    assert sql_error(con, "SELECT * FROM emb_knn_agreement('t', 'item', 'model', 'v', k := 3)") == \
        f"embsql: [input] {message.replace('common=True', 'common := true')}"
    keep = [j for j in range(12) if j not in (3, 7)]
    con.register("shared", long_table({"a": x[keep], "b": y[keep]}, items=[f"i{j:03d}" for j in keep]))
    for run in (lambda source, **kw: embsql.knn_agreement(con, source, item="item", model="model", vector="v", k=3, **kw),
                lambda source, **kw: embsql.mantel(con, source, item="item", model="model", vector="v", **kw)):
        assert run("t", common=True).to_dicts() == run("shared").to_dicts()
    assert sql_rows(con, "SELECT * FROM emb_mantel('t', 'item', 'model', 'v', common := true)") == \
        embsql.mantel(con, "shared", item="item", model="model", vector="v").to_dicts()


def test_duplicate_and_null_items_and_models(con):
    x, y = related(15, 8)
    dup = long_table({"a": x, "b": y}, items=[f"i{j}" for j in (0, 1, 2, 3, 4, 5, 6, 0)])
    con.register("dup", dup)
    with pytest.raises(InputError, match="model 'a' has item 'i0' more than once"):
        embsql.knn_agreement(con, "dup", item="item", model="model", vector="v", k=2)
    assert sql_error(con, "SELECT * FROM emb_mantel('dup', 'item', 'model', 'v')") == \
        "embsql: [input] model 'a' has item 'i0' more than once"
    null_item = long_table({"a": x, "b": y}, items=[f"i{j}" for j in range(7)] + [None])
    con.register("null_item", null_item)
    with pytest.raises(BadLabelError, match=r"item column 'item' has a NULL label at row 8 \(model 'a'\)"):
        embsql.knn_agreement(con, "null_item", item="item", model="model", vector="v", k=2)
    assert sql_error(con, "SELECT * FROM emb_knn_agreement('null_item', 'item', 'model', 'v', k := 2)") == \
        "embsql: [label] model 'a' has a NULL item; every row needs an item id"
    null_model = dup.set_column(1, "model", pa.array(["a"] * 8 + [None] * 8))
    null_model = null_model.set_column(0, "item", pa.array([f"i{j}" for j in range(8)] * 2))
    con.register("null_model", null_model)
    with pytest.raises(BadLabelError, match=r"^model column 'model' has a NULL label at row 9 \(item 'i0'\)"):
        embsql.mantel(con, "null_model", item="item", model="model", vector="v")
    assert sql_error(con, "SELECT * FROM emb_mantel('null_model', 'item', 'model', 'v')") == \
        "embsql: [label.null] model column 'model' has a NULL label at item 'i0'; every row needs a label " \
        "(filter those rows out, or give them one)"


def test_one_model_and_no_rows(con):
    x, _ = related(16, 8)
    con.register("one", long_table({"a": x}))
    with pytest.raises(InputError, match=r"the model column has 1 model\(s\); agreement needs at least two"):
        embsql.knn_agreement(con, "one", item="item", model="model", vector="v", k=2)
    assert sql_error(con, "SELECT * FROM emb_mantel('one', 'item', 'model', 'v')") == \
        "embsql: [model.too_few] the model column has 1 model(s); agreement needs at least two"
    con.execute("CREATE TABLE empty (item VARCHAR, model VARCHAR, v DOUBLE[])")
    with pytest.raises(InputError, match="has no rows"):
        embsql.mantel(con, "empty", item="item", model="model", vector="v")
    assert sql_error(con, "SELECT * FROM emb_knn_agreement('empty', 'item', 'model', 'v')") == \
        "embsql: [source.empty] source 'empty' has no rows"


@pytest.mark.parametrize("k,message", [
    (0, "k must be a positive whole number, not 0"),
    (2.5, "k must be a positive whole number, not 2.5"),
    (9, ("k = 9 needs at least k + 2 = 11 items (each item has n - 1 = 9 other items, and the jackknife "
         "deletes one); there are 10")),
])
def test_bad_k(con, k, message):
    x, y = related(17, 10)
    con.register("t", long_table({"a": x, "b": y}))
    with pytest.raises(InputError) as info:
        embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=k)
    assert str(info.value) == message
    if isinstance(k, int):
        assert sql_error(con, f"SELECT * FROM emb_knn_agreement('t', 'item', 'model', 'v', k := {k})") == \
            f"embsql: [{info.value.kind}] {message}"
    assert embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=8).k == 8     # n - 2 is allowed


@pytest.mark.parametrize("bad,word", [(None, "NULL"), ([0.0] * 8, "zero-length"),
                                      ([1.0, float("nan")] + [0.0] * 6, "NaN")])
def test_bad_vectors_name_the_row(con, bad, word):
    x, y = related(18, 10)
    t = long_table({"a": x, "b": y})
    vectors = t["v"].to_pylist()
    vectors[13] = bad
    con.register("t", t.set_column(2, "v", pa.array(vectors, pa.list_(pa.float64()))))
    with pytest.raises(BadVectorError) as info:
        embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=3)
    assert str(info.value).startswith(f"vector column 'v' has a {word} vector at row 14 (model 'b', item 'i003')")
    # SQL names the row as Python does (row 14 of the table, from 1)
    assert sql_error(con, "SELECT * FROM emb_mantel('t', 'item', 'model', 'v')").startswith(
        f"embsql: [{info.value.kind}] vector column 'v' has a {word} vector at row 14 (model 'b', item 'i003')")
    assert info.value.kind == VECTOR_KINDS[word]


def test_missing_and_mistyped_columns(con):
    x, y = related(19, 6)
    con.register("t", long_table({"a": x, "b": y}))
    for args, message in (((" nope", "model", "v"), "item column ' nope' not found in 't'"),
                          (("item", "nope", "v"), "model column 'nope' not found in 't'"),
                          (("item", "model", "nope"), "vector column 'nope' not found in 't'"),
                          (("item", "model", "item"), "vector column 'item' in 't' has type VARCHAR")):
        with pytest.raises(InputError) as info:
            embsql.mantel(con, "t", **dict(zip(("item", "model", "vector"), args)))
        assert str(info.value).startswith(message)
        quoted = ", ".join(f"'{a}'" for a in args)
        assert sql_error(con, f"SELECT * FROM emb_knn_agreement('t', {quoted})").startswith(
            f"embsql: [{info.value.kind}] {message}")
    with pytest.raises(ColumnNotFoundError):
        embsql.knn_agreement(con, "t", item="item", model="nope", vector="v")


def test_mantel_undefined_or_too_large(con, monkeypatch):
    simplex = np.eye(4)          # every pair at the same distance
    names = np.arange(4)
    with pytest.raises(DesignError, match="model 'a' puts every pair of items at the same distance"):
        agreement.mantel_rows({"a": (names, simplex), "b": (names, unit(np.random.default_rng(1).normal(size=(4, 3))))})
    with pytest.raises(DesignError, match="needs at least 3 items"):
        agreement.mantel_test(np.eye(2), np.eye(2))
    with pytest.raises(InputError, match="permutations must be a whole number from 1 to 1,000,000, not 0"):
        agreement.mantel_test(np.eye(3), np.eye(3), permutations=0)
    monkeypatch.setattr(agreement, "MANTEL_MAX_ITEMS", 5)
    with pytest.raises(InputError, match="6 items is more than 5: run it on a random sample of items"):
        agreement.mantel_test(np.eye(6), np.eye(6))
    x, y = related(20, 6)
    con.register("t", long_table({"a": x, "b": y}))
    assert sql_error(con, "SELECT * FROM emb_mantel('t', 'item', 'model', 'v', permutations := 0)") == \
        "embsql: [argument.permutations] permutations must be a whole number from 1 to 1,000,000, not 0"
