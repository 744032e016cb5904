"""Similarity (STS) evaluation: embsql.similarity_eval and embsql.compare_similarity.

References are independent: scipy.stats.spearmanr / pearsonr on cosines computed here with numpy
from the stored vectors (float64), delete-one-pair recomputation with scipy for the influence
values, and MTEB's STS main score.  MTEB (mteb/evaluation/evaluators/STSEvaluator.py) computes
``cosine_scores = 1 - paired_cosine_distances(embeddings1, embeddings2)`` (scikit-learn) and reports
``cosine_spearman, _ = spearmanr(gold_scores, cosine_scores)`` as the task's main score
("cosine_spearman"); mteb cannot be installed offline here (it pulls torch), so the test below
computes that formula with scikit-learn and scipy.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from helpers import sql_error, sql_rows
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics.pairwise import paired_cosine_distances

import embsql
from embsql.core import similarity
from embsql.errors import (
    BadLabelError,
    ColumnNotFoundError,
    DesignError,
    InputError,
)

pytestmark = pytest.mark.shared_connection


def sts_data(seed: int = 0, items: int = 60, pairs: int = 300, d: int = 8, models=("m1", "m2"),
             dtype=np.float32, ties: bool = True):
    """An embeddings table (model, item, vector) and a pairs table (item_a, item_b, score)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(items, d))
    names = [f"item{i}" for i in range(items)]
    rows = {"model": [], "item": [], "vector": []}
    vectors = {}
    for j, m in enumerate(models):
        x = (truth + (0.5 + j) * rng.normal(size=(items, d))).astype(dtype) * rng.uniform(0.5, 3, (items, 1)).astype(dtype)
        vectors[m] = x
        rows["model"] += [m] * items
        rows["item"] += names
        rows["vector"] += [list(map(float, v)) for v in x]
    a = rng.integers(0, items, pairs)
    b = (a + rng.integers(1, items, pairs)) % items
    unit = truth / np.linalg.norm(truth, axis=1, keepdims=True)
    score = np.einsum("ij,ij->i", unit[a], unit[b]) * 5 + rng.normal(size=pairs)
    if ties:
        score = np.round(score)               # a gold scale of whole numbers: many ties
    vector_type = pa.list_(pa.float32() if dtype == np.float32 else pa.float64())
    emb = pa.table({"model": rows["model"], "item": rows["item"], "vector": pa.array(rows["vector"], vector_type)})
    judged = pa.table({"item_a": [names[i] for i in a], "item_b": [names[i] for i in b], "score": score})
    return emb, judged, vectors, a, b, score


def numpy_cosine(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return np.sum(x[a] * x[b], axis=1) / (np.linalg.norm(x[a], axis=1) * np.linalg.norm(x[b], axis=1))


# ----------------------------------------------------------------------------------------------
# the kernel against scipy

@settings(max_examples=60, deadline=None)
@given(st.integers(3, 200), st.integers(0, 2**31), st.sampled_from([0, 1, 2]))
def test_correlations_equal_scipy(n, seed, decimals):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n), decimals)
    y = np.round(x + rng.normal(size=n), decimals)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return
    rho, _ = similarity.spearman_influence(x, y)
    r, _ = similarity.pearson_influence(x, y)
    assert rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert r == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)


def test_midranks_are_scipy_average_ranks():
    from scipy.stats import rankdata
    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0, 7.0])
    assert similarity.midranks(x).tolist() == rankdata(x, method="average").tolist()


@pytest.mark.parametrize("name", ["spearman", "pearson"])
def test_influence_values_are_the_jackknife_limit(name):
    """psi_l is the limit of the delete-one-pair pseudo-value (n - 1)(rho - rho_(-l)), ties included:
    a wrong influence (Spearman with ranks held fixed) is off by over 0.03."""
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.normal(size=n)
    y = np.round(0.8 * x + 0.6 * rng.normal(size=n), 1)
    kernel = similarity.spearman_influence if name == "spearman" else similarity.pearson_influence
    reference = spearmanr if name == "spearman" else pearsonr
    estimate, psi = kernel(x, y)
    keep = np.ones(n, bool)
    for left_out in (0, 7, 19, 123, 999):
        keep[:] = True
        keep[left_out] = False
        pseudo = (n - 1) * (estimate - reference(x[keep], y[keep]).statistic)
        assert psi[left_out] == pytest.approx(pseudo, abs=2e-3)
    if name == "spearman":     # what ranks held fixed would give is visibly different
        fixed = similarity.pearson_influence(similarity.midranks(x), similarity.midranks(y))[1]
        assert np.max(np.abs(fixed - psi)) > 0.03          # 15 times the tolerance above


def test_dyadic_variance_without_shared_items_is_the_pair_variance():
    """Pairs of disjoint items: each item's and each pair's term are the same, so only the scaling
    (n / (n - 1))^2 separates it from sum psi^2 / n^2."""
    n = 50
    psi = np.random.default_rng(1).normal(size=n)
    a, b = np.arange(n), np.arange(n, 2 * n)
    v = similarity.dyadic_variance(psi, a, b, 2 * n)
    assert v == pytest.approx(psi @ psi / (n - 1) ** 2, rel=1e-12)
    assert similarity.effective_items(a, b, 2 * n) == pytest.approx(2 * n)


def test_dyadic_variance_counts_pairs_that_share_an_item():
    """Brute force: sum over ordered pairs (k, l) sharing an item of psi_k psi_l / n^2, against the
    closed form without the jackknife scaling."""
    rng = np.random.default_rng(2)
    n, items = 80, 20
    a = rng.integers(0, items, n)
    b = (a + rng.integers(1, items, n)) % items
    psi = rng.normal(size=n)
    share = (a[:, None] == a[None]) | (a[:, None] == b[None]) | (b[:, None] == a[None]) | (b[:, None] == b[None])
    brute = float(psi @ share @ psi) / n**2
    degree = np.bincount(a, minlength=items) + np.bincount(b, minlength=items)
    per_item = np.bincount(a, psi, minlength=items) + np.bincount(b, psi, minlength=items)
    dyads = {}
    for k in range(n):
        key = (min(a[k], b[k]), max(a[k], b[k]))
        dyads.setdefault(key, []).append(k)
    unscaled = (per_item @ per_item - sum(psi[ks].sum() ** 2 for ks in dyads.values())) / n**2
    assert unscaled == pytest.approx(brute, rel=1e-12)
    scaled = similarity.dyadic_variance(psi, a, b, items)
    assert scaled > unscaled           # the jackknife scaling only widens
    expected = (np.sum((per_item / (n - degree)) ** 2)
                - sum((psi[ks].sum() / (n - len(ks))) ** 2 for ks in dyads.values()))
    assert scaled == pytest.approx(expected, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# similarity_eval against scipy and MTEB's formula

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_similarity_eval_equals_scipy(con, dtype):
    emb, judged, vectors, a, b, score = sts_data(dtype=dtype)
    result = embsql.similarity_eval(con, judged, emb, vector="vector", model="model", item="item")
    assert result.columns[0] == "model"
    rows = {r["model"]: r for r in result.to_dicts()}
    assert list(rows) == ["m1", "m2"]
    for m, x in vectors.items():
        cosine = numpy_cosine(x, a, b)
        assert rows[m]["spearman"] == pytest.approx(spearmanr(cosine, score).statistic, abs=1e-12)
        assert rows[m]["pearson"] == pytest.approx(pearsonr(cosine, score).statistic, abs=1e-12)
        assert rows[m]["pairs"] == len(score) and rows[m]["skipped"] == 0
        assert rows[m]["items"] == len(set(a) | set(b))
        assert rows[m]["ci_low"] < rows[m]["spearman"] < rows[m]["ci_high"]
        assert rows[m]["pearson_ci_low"] < rows[m]["pearson"] < rows[m]["pearson_ci_high"]
        assert rows[m]["calibrated"] is True       # 300 pairs, 60 items in about 10 pairs each: df about 60


def test_similarity_eval_is_mtebs_main_score(con):
    """MTEB's STSEvaluator: 1 - sklearn's paired_cosine_distances, then scipy's spearmanr(gold, cosine)."""
    emb, judged, vectors, a, b, score = sts_data(seed=3, dtype=np.float64)
    rows = {r["model"]: r for r in embsql.similarity_eval(con, judged, emb, vector="vector", model="model",
                                                          item="item").to_dicts()}
    for m, x in vectors.items():
        cosine_scores = 1 - paired_cosine_distances(x[a], x[b])
        main_score, _ = spearmanr(score, cosine_scores)
        assert rows[m]["spearman"] == pytest.approx(main_score, abs=1e-12)


def test_per_pair_gives_the_cosines_in_pair_order(con):
    emb, judged, vectors, a, b, score = sts_data(seed=4, dtype=np.float64)
    judged = judged.rename_columns(["left", "right", "gold"])
    emb = emb.rename_columns(["encoder", "id", "embedding"])
    result = embsql.similarity_eval(con, judged, emb, model="encoder", a="left", b="right", score="gold",
                                    item="id", vector="embedding", per_pair=True)
    assert result.columns == ("encoder", "left", "right", "gold", "cosine")
    rows = result.to_dicts()
    assert len(rows) == 2 * len(score)
    first = [r for r in rows if r["encoder"] == "m1"]
    assert [r["left"] for r in first] == judged.column("left").to_pylist()
    np.testing.assert_allclose([r["cosine"] for r in first], numpy_cosine(vectors["m1"], a, b), atol=1e-14)
    assert [r["gold"] for r in first] == score.tolist()


def test_one_model_without_a_model_column(con):
    emb, judged, vectors, a, b, score = sts_data(seed=6, models=("only",))
    plain = emb.drop_columns(["model"])
    result = embsql.similarity_eval(con, judged, plain, vector="vector", model="model", item="item")
    assert "model" not in result.columns
    assert result.spearman == pytest.approx(spearmanr(numpy_cosine(vectors["only"], a, b), score).statistic, abs=1e-12)
    explicit = embsql.similarity_eval(con, judged, emb, model=None, vector="vector",
                                      item="item")        # the column is there, but not read
    assert "model" not in explicit.columns and explicit.spearman == result.spearman
    with pytest.raises(ColumnNotFoundError, match="'encoder'"):
        embsql.similarity_eval(con, judged, plain, model="encoder", vector="vector", item="item")


def test_spearman_is_invariant_to_a_monotone_score_and_to_swapping_a_and_b(con):
    emb, judged, *_ = sts_data(seed=7, ties=False)
    base = embsql.similarity_eval(con, judged, emb, vector="vector", model="model", item="item").to_dicts()
    warped = judged.set_column(2, "score", pa.array(np.exp(judged.column("score").to_numpy())))
    swapped = judged.select(["item_b", "item_a", "score"]).rename_columns(["item_a", "item_b", "score"])
    for other in (embsql.similarity_eval(con, warped, emb, vector="vector", model="model", item="item").to_dicts(),
                  embsql.similarity_eval(con, swapped, emb, vector="vector", model="model", item="item").to_dicts()):
        for x, y in zip(base, other):
            assert x["spearman"] == pytest.approx(y["spearman"], abs=1e-12)
            assert x["ci_low"] == pytest.approx(y["ci_low"], abs=1e-12)


def test_missing_vectors_error_or_skip(con):
    emb, judged, vectors, a, b, score = sts_data(seed=8)
    lacking = emb.filter(pa.compute.invert(pa.compute.and_(pa.compute.equal(emb.column("model"), "m2"),
                                                           pa.compute.equal(emb.column("item"), "item3"))))
    first = int(np.flatnonzero((a == 3) | (b == 3))[0])
    side = "item_a" if a[first] == 3 else "item_b"
    with pytest.raises(InputError, match=rf"item 'item3' \('{side}' at row {first + 1} of pairs .*model 'm2'") as caught:
        embsql.similarity_eval(con, judged, lacking, vector="vector", model="model", item="item")
    assert caught.value.kind == "pair.no_vector"
    rows = {r["model"]: r for r in embsql.similarity_eval(con, judged, lacking, missing="skip", vector="vector", model="model",
                                                          item="item").to_dicts()}
    left_out = int(np.sum((a == 3) | (b == 3)))
    assert rows["m1"]["skipped"] == 0 and rows["m2"]["skipped"] == left_out
    assert rows["m2"]["pairs"] == len(score) - left_out
    keep = (a != 3) & (b != 3)
    expected = spearmanr(numpy_cosine(vectors["m2"], a[keep], b[keep]), score[keep]).statistic
    assert rows["m2"]["spearman"] == pytest.approx(expected, abs=1e-12)
    compared = embsql.compare_similarity(con, judged, lacking, missing="skip", vector="vector", model="model",
                                         item="item").to_dicts()
    assert {r["pairs"] for r in compared} == {len(score) - left_out}
    with pytest.raises(InputError, match="missing must be 'error' or 'skip', not 'drop'"):
        embsql.similarity_eval(con, judged, emb, missing="drop", vector="vector", model="model", item="item")


# ----------------------------------------------------------------------------------------------
# bad input: one clear error naming the column, row or value

def _judged(**columns):
    base = {"item_a": ["item0", "item1", "item2", "item3"], "item_b": ["item1", "item2", "item3", "item4"],
            "score": [1.0, 2.0, 3.0, 4.0]}
    base.update(columns)
    return pa.table(base)


@pytest.mark.parametrize("scores, kind, text", [
    ([1.0, None, 3.0, 4.0], "value.null", r"score column 'score' has 1 NULL value\(s\) \(first at row 2 "),
    ([1.0, 2.0, float("nan"), 4.0], "value.nonfinite", r"score column 'score' has 1 NaN value\(s\) \(first at row 3 "),
    ([1.0, 2.0, 3.0, float("inf")], "value.nonfinite", r"1 infinite value\(s\) \(first at row 4 "),
])
def test_bad_scores(con, scores, kind, text):
    emb, *_ = sts_data()
    with pytest.raises(InputError, match=text) as caught:
        embsql.similarity_eval(con, _judged(score=pa.array(scores, pa.float64())), emb, vector="vector", model="model",
                               item="item")
    assert caught.value.kind == kind


def test_same_item_twice_is_refused(con):
    emb, *_ = sts_data()
    with pytest.raises(InputError, match=r"pair at row 3 of .* has item 'item2' as both 'item_a' and 'item_b'") as caught:
        embsql.similarity_eval(con, _judged(item_b=["item1", "item2", "item2", "item4"]), emb, vector="vector", model="model",
                               item="item")
    assert caught.value.kind == "pair.same_item"


def test_too_few_pairs_and_constant_scores(con):
    emb, *_ = sts_data()
    two = _judged().slice(0, 2)
    with pytest.raises(DesignError, match=r"model 'm1' has 2 pair\(s\); a correlation needs at least 3") as caught:
        embsql.similarity_eval(con, two, emb, vector="vector", model="model", item="item")
    assert caught.value.kind == "pair.too_few"
    with pytest.raises(DesignError, match="the gold score is the same on every pair"):
        embsql.similarity_eval(con, _judged(score=[2.0] * 4), emb, vector="vector", model="model", item="item")


def test_null_item_and_wrong_columns(con):
    emb, *_ = sts_data()
    with pytest.raises(BadLabelError, match="item column 'item_b' has a NULL label at row 2 of pairs"):
        embsql.similarity_eval(con, _judged(item_b=["item1", None, "item3", "item4"]), emb, vector="vector", model="model",
                               item="item")
    with pytest.raises(ColumnNotFoundError, match="score column 'gold' not found"):
        embsql.similarity_eval(con, _judged(), emb, score="gold", vector="vector", model="model", item="item")
    with pytest.raises(TypeError, match="unexpected keyword argument 'by'"):
        embsql.similarity_eval(con, _judged(), emb, by="model", vector="vector", model="model", item="item")
    with pytest.raises(InputError, match="level must be a number between 0 and 1"):
        embsql.similarity_eval(con, _judged(), emb, level=95, vector="vector", model="model", item="item")


def test_model_column_named_like_an_output_column(con):
    emb, judged, *_ = sts_data()
    with pytest.raises(InputError) as caught:
        embsql.similarity_eval(con, judged, emb.rename_columns(["pairs", "item", "vector"]), model="pairs", vector="vector",
                               item="item")
    assert caught.value.kind == "column.collision"


# ----------------------------------------------------------------------------------------------
# compare_similarity

def test_compare_similarity_differences_and_holm(con):
    emb, judged, vectors, a, b, score = sts_data(seed=9, models=("m1", "m2", "m3"))
    result = embsql.compare_similarity(con, judged, emb, vector="vector", model="model", item="item").to_dicts()
    assert [(r["model_a"], r["model_b"], r["correlation"]) for r in result] == [
        ("m1", "m2", "spearman"), ("m1", "m2", "pearson"), ("m1", "m3", "spearman"), ("m1", "m3", "pearson"),
        ("m2", "m3", "spearman"), ("m2", "m3", "pearson")]
    cos = {m: numpy_cosine(x, a, b) for m, x in vectors.items()}
    for r in result:
        ref = spearmanr if r["correlation"] == "spearman" else pearsonr
        ea, eb = (ref(cos[r[k]], score).statistic for k in ("model_a", "model_b"))
        assert r["difference"] == pytest.approx(ea - eb, abs=1e-12)
        assert r["ci_low"] < r["difference"] < r["ci_high"]
        assert 0 < r["p_value"] <= r["p_adjusted"] <= 1
    for name in ("spearman", "pearson"):
        p = np.array([r["p_value"] for r in result if r["correlation"] == name])
        order = np.argsort(p)
        holm = np.minimum(1, np.maximum.accumulate(p[order] * np.array([3, 2, 1])))
        assert sorted(r["p_adjusted"] for r in result if r["correlation"] == name) == pytest.approx(sorted(holm))


def test_compare_needs_two_models_and_same_model_is_no_difference(con):
    emb, judged, *_ = sts_data(models=("only",))
    with pytest.raises(InputError) as caught:
        embsql.compare_similarity(con, judged, emb, vector="vector", model="model", item="item")
    assert caught.value.kind == "model.too_few"
    twin = pa.concat_tables([emb, emb.set_column(0, "model", pa.array(["copy"] * emb.num_rows))])
    for r in embsql.compare_similarity(con, judged, twin, vector="vector", model="model", item="item").to_dicts():
        assert r["difference"] == 0 and r["se"] == 0 and r["p_value"] == 1.0


# ----------------------------------------------------------------------------------------------
# SQL: emb_similarity_eval and emb_compare_similarity (UDF-backed) give the Python numbers

def _register(con, **tables):
    for name, table in tables.items():
        con.register(name, table)


def test_sql_similarity_eval_equals_python(con):
    emb, judged, *_ = sts_data(seed=10, dtype=np.float64)
    _register(con, sim_emb=emb, sim_pairs=judged)
    python = embsql.similarity_eval(con, judged, emb, vector="vector", model="model", item="item").to_dicts()
    sql = sql_rows(con, "SELECT * FROM emb_similarity_eval('sim_pairs', 'sim_emb')")
    assert [r["model"] for r in sql] == [r["model"] for r in python]
    for x, y in zip(sql, python):
        assert set(x) == set(y)
        for key, value in y.items():
            assert x[key] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value), key
    compared = sql_rows(con, "SELECT * FROM emb_compare_similarity('sim_pairs', 'sim_emb')")
    for x, y in zip(compared, embsql.compare_similarity(con, judged, emb, vector="vector", model="model",
                                                        item="item").to_dicts()):
        for key, value in y.items():
            assert x[key] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value), key


def test_sql_similarity_eval_keeps_the_model_column_and_its_errors(con):
    emb, judged, *_ = sts_data(seed=11)
    _register(con, sim_emb2=emb.rename_columns(["encoder", "item", "vector"]), sim_pairs2=judged,
              sim_plain=emb.drop_columns(["model"]).slice(0, 60))
    rows = sql_rows(con, "SELECT * FROM emb_similarity_eval('sim_pairs2', 'sim_emb2', model := 'encoder')")
    assert list(rows[0])[0] == "encoder" and [r["encoder"] for r in rows] == ["m1", "m2"]
    plain = sql_rows(con, "SELECT * FROM emb_similarity_eval('sim_pairs2', 'sim_plain')")
    assert len(plain) == 1 and "model" not in plain[0]
    assert sql_error(con, "SELECT * FROM emb_similarity_eval('sim_pairs2', 'sim_emb2', model := 'enc')").startswith(
        "embsql: [column.missing] model column 'enc' not found in 'sim_emb2'")
    assert sql_error(con, "SELECT * FROM emb_similarity_eval('sim_pairs2', 'sim_plain', score := 'gold')").startswith(
        "embsql: [column.missing] score column 'gold' not found")
    _register(con, sim_short=emb.drop_columns(["model"]).slice(0, 30))
    message = sql_error(con, "SELECT * FROM emb_similarity_eval('sim_pairs2', 'sim_short')")
    assert message.startswith("embsql: [pair.no_vector] item 'item")
    skipped = sql_rows(con, "SELECT pairs, skipped FROM emb_similarity_eval('sim_pairs2', 'sim_short', missing := 'skip')")
    assert skipped[0]["pairs"] + skipped[0]["skipped"] == judged.num_rows and skipped[0]["skipped"] > 0
    _register(con, sim_bad=_judged(score=[1.0, float("nan"), 3.0, 4.0]))
    assert sql_error(con, "SELECT * FROM emb_similarity_eval('sim_bad', 'sim_plain')").startswith(
        "embsql: [value.nonfinite] score column 'score' has 1 NaN value(s) (first at row 2")
    assert sql_error(con, "SELECT * FROM emb_compare_similarity('sim_pairs2', 'sim_plain')").startswith(
        "embsql: [model.too_few]")


# ----------------------------------------------------------------------------------------------
# plain SQL for the stock CLI: emb_similarity_pearson and emb_similarity_spearman

def _plain_connection():
    import duckdb

    from embsql.io.resources import sql_entry_file
    plain = duckdb.connect()
    plain.execute(sql_entry_file().read_text(encoding="utf-8"))
    return plain


@pytest.mark.parametrize("name", ["pearson", "spearman"])
def test_plain_sql_correlations_equal_python_and_scipy(con, name):
    emb, judged, vectors, a, b, score = sts_data(seed=12, items=150, pairs=600, dtype=np.float64)
    plain = _plain_connection()
    _register(plain, emb=emb, judged=judged)
    rows = sql_rows(plain, f"SELECT * FROM emb_similarity_{name}('judged', 'emb')")
    python = embsql.similarity_eval(con, judged, emb, vector="vector", model="model", item="item").to_dicts()
    prefix = "" if name == "spearman" else "pearson_"
    reference = spearmanr if name == "spearman" else pearsonr
    assert [r["model"] for r in rows] == ["m1", "m2"]
    for row, py in zip(rows, python):
        assert list(row) == ["model", name, "ci_low", "ci_high", "se", "pairs", "items", "skipped", "level", "calibrated"]
        assert row[name] == pytest.approx(reference(numpy_cosine(vectors[row["model"]], a, b), score).statistic, abs=1e-12)
        assert row["se"] == pytest.approx(py[f"{prefix}se" if prefix else "se"], rel=1e-9)
        for end in ("ci_low", "ci_high"):       # the t quantile is a series in SQL
            assert row[end] == pytest.approx(py[f"{prefix}{end}"], abs=1e-5)
        assert (row["pairs"], row["items"], row["skipped"], row["calibrated"]) == (
            py["pairs"], py["items"], py["skipped"], py["calibrated"])


def test_plain_sql_errors_name_the_row_and_the_model():
    emb, judged, *_ = sts_data(seed=13)
    plain = _plain_connection()
    _register(plain, emb=emb, judged=judged, short=emb.slice(0, 30), bad=_judged(score=[1.0, 2.0, None, 4.0]),
              same=_judged(item_b=["item1", "item1", "item3", "item4"]))
    message = sql_error(plain, "SELECT * FROM emb_similarity_pearson('judged', 'short')")
    assert message.startswith("embsql: [pair.no_vector] item 'item") and "model 'm" in message
    skipped = sql_rows(plain, "SELECT pairs, skipped FROM emb_similarity_spearman('judged', 'short', missing := 'skip')")
    assert skipped[0]["pairs"] + skipped[0]["skipped"] == judged.num_rows
    assert sql_error(plain, "SELECT * FROM emb_similarity_pearson('bad', 'emb')").startswith(
        "embsql: [value.null] score column 'score' has 1 NULL value(s) (first at row 3 of pairs 'bad')")
    assert sql_error(plain, "SELECT * FROM emb_similarity_pearson('same', 'emb')").startswith(
        "embsql: [pair.same_item] pair at row 2 of 'same' has item 'item1' as both 'item_a' and 'item_b'")
    assert sql_error(plain, "SELECT * FROM emb_similarity_spearman('judged', 'emb', item := 'id')").startswith(
        "embsql: [column.missing] item column 'id' not found in 'emb'")
    assert sql_error(plain, "SELECT * FROM emb_similarity_pearson('judged', 'emb', missing := 'drop')").startswith(
        "embsql: [argument.missing] missing must be 'error' or 'skip', not 'drop'")


def test_plain_sql_runs_in_the_stock_cli(tmp_path):
    """The stock duckdb CLI (no Python): Spearman of a Parquet pairs file against scipy."""
    import subprocess
    import sys
    from pathlib import Path

    import pyarrow.parquet as pq

    from embsql.io.resources import sql_entry_file
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    emb, judged, vectors, a, b, score = sts_data(seed=14, dtype=np.float64, models=("only",))
    pq.write_table(emb.drop_columns(["model"]), tmp_path / "emb.parquet")
    pq.write_table(judged, tmp_path / "pairs.parquet")
    script = (f".read {sql_entry_file()}\n.mode csv\n"
              "SELECT spearman, pairs FROM emb_similarity_spearman('pairs.parquet', 'emb.parquet');\n")
    out = subprocess.run([str(cli), ":memory:"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    header, values = out.stdout.strip().splitlines()[-2:]
    rho, pairs = values.split(",")
    assert header == "spearman,pairs" and int(pairs) == len(score)
    assert float(rho) == pytest.approx(spearmanr(numpy_cosine(vectors["only"], a, b), score).statistic, abs=1e-12)
