"""k-NN and nearest-centroid classification, and the paired comparison of accuracy.

References: scikit-learn (KNeighborsClassifier(metric="cosine", algorithm="brute"), NearestCentroid,
accuracy_score, f1_score), scipy.stats.binomtest and statsmodels' mcnemar (McNemar's exact test),
scipy.stats.binom by hand (the mid-p McNemar test), statsmodels' proportion_confint (Wilson).  The
intervals and tests are checked by seeded simulation, with bounds the item-level method fails on
clustered items.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binom, binomtest
from sklearn.metrics import accuracy_score, f1_score
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

import embsql
from embsql.core import classification as core


def _data(n=300, d=12, classes=5, seed=0, spread=0.8):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.normal(size=(n, d)) + spread * rng.normal(size=(classes, d))[y]
    return x, y


def _table(models: dict, split=None, groups=None, labels=None):
    """An Arrow table of one row per model and item: model, item, label, vector (+ split, group)."""
    cols: dict[str, list] = {"model": [], "item": [], "label": [], "vector": []}
    if split is not None:
        cols["split"] = []
    if groups is not None:
        cols["grp"] = []
    for name, (x, y) in models.items():
        for i in range(len(y)):
            cols["model"].append(name)
            cols["item"].append(f"i{i:04d}")
            cols["label"].append(labels[y[i]] if labels is not None else int(y[i]))
            cols["vector"].append(x[i].tolist())
            if split is not None:
                cols["split"].append("train" if split[i] else "test")
            if groups is not None:
                cols["grp"].append(int(groups[i]))
    return pa.table(cols)


@pytest.fixture
def con():
    return embsql.connect()


@pytest.mark.parametrize("k", [1, 4, 10])
def test_knn_leave_one_out_equals_sklearn(con, k):
    a, b = _data(seed=1), _data(seed=2)
    table = _table({"m1": a, "m2": b})
    result = embsql.knn_classify(con, table, k=k, item="item", per_item=True, vector="vector", model="model").to_dicts()
    summary = {r["model"]: r for r in embsql.knn_classify(con, table, k=k, item="item", vector="vector",
                                                          model="model").to_dicts()}
    for name, (x, y) in (("m1", a), ("m2", b)):
        reference = KNeighborsClassifier(n_neighbors=k, metric="cosine", algorithm="brute").fit(x, y).predict(None)
        ours = [r["predicted"] for r in result if r["model"] == name]
        assert ours == reference.tolist()
        assert summary[name]["accuracy"] == pytest.approx(accuracy_score(y, reference), abs=1e-15)
        assert summary[name]["macro_f1"] == pytest.approx(f1_score(y, reference, average="macro"), abs=1e-12)
        assert summary[name]["items"] == len(y) and summary[name]["split"] == "leave-one-out"


def test_knn_on_more_items_than_the_first_block_equals_sklearn(con):
    # beyond FIRST_BLOCK documents the later, doubling blocks pass only what beats the running threshold
    x, y = _data(n=3000, d=8, classes=6, seed=12, spread=0.6)
    x = x.astype(np.float32)
    table = pa.table({"label": y, "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 8)})
    rows = embsql.knn_classify(con, table, k=7, per_item=True, vector="vector", model="model")
    reference = KNeighborsClassifier(n_neighbors=7, metric="cosine", algorithm="brute").fit(
        x.astype(np.float64), y).predict(None)
    assert rows.column("predicted") == reference.tolist()


def test_a_zero_vector_names_its_row(con):
    table = pa.table({"item": ["a", "b", "c"], "label": ["x", "y", "x"], "vector": [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]]})
    with pytest.raises(embsql.BadVectorError, match=r"vector column 'vector' has a zero-length vector at row 2 "
                                                    r"\(item 'b'\)"):
        embsql.centroid_classify(con, table, item="item", vector="vector", model="model")


@pytest.mark.parametrize("k", [1, 6])
def test_knn_train_test_equals_sklearn(con, k):
    x, y = _data(n=400, seed=3)
    train = np.random.default_rng(4).random(len(y)) < 0.7
    table = _table({"m": (x, y)}, split=train)
    rows = embsql.knn_classify(con, table, k=k, split="split", per_item=True, vector="vector", model="model").to_dicts()
    reference = KNeighborsClassifier(n_neighbors=k, metric="cosine", algorithm="brute").fit(
        x[train], y[train]).predict(x[~train])
    assert [r["predicted"] for r in rows] == reference.tolist()
    row = embsql.knn_classify(con, table, k=k, split="split", vector="vector", model="model").to_dicts()[0]
    assert row["items"] == int((~train).sum()) and row["split"] == "train-test"
    assert row["macro_f1"] == pytest.approx(f1_score(y[~train], reference, average="macro"), abs=1e-12)


def test_centroid_equals_sklearn_leave_one_out_and_split(con):
    x, y = _data(n=150, classes=4, seed=5, spread=0.5)
    y[7] = 4                                  # a class of one item: never predicted for itself
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    loo = [NearestCentroid().fit(np.delete(unit, i, 0), np.delete(y, i)).predict(unit[i:i + 1])[0]
           for i in range(len(y))]
    rows = embsql.centroid_classify(con, _table({"m": (x, y)}), per_item=True, vector="vector", model="model").to_dicts()
    assert [r["predicted"] for r in rows] == loo
    train = np.arange(len(y)) % 3 != 0
    reference = NearestCentroid().fit(unit[train], y[train]).predict(unit[~train])
    rows = embsql.centroid_classify(con, _table({"m": (x, y)}, split=train), split="split", per_item=True, vector="vector",
                                    model="model")
    assert rows.column("predicted") == reference.tolist()


def test_vote_tie_goes_to_the_smallest_label_in_number_order(con):
    # item q's two neighbours carry labels 10 and 2: a tie, won by 2 (2 < 10 as numbers, not as text)
    table = pa.table({"item": ["q", "a", "b", "far1", "far2"], "label": [2, 10, 2, 10, 10],
                      "vector": [[1.0, 0.0], [0.9, 0.1], [0.9, -0.1], [-1.0, 0.05], [-1.0, -0.05]]})
    rows = embsql.knn_classify(con, table, k=2, item="item", per_item=True, vector="vector", model="model").to_dicts()
    assert rows[0]["predicted"] == 2


def test_distance_tie_goes_to_the_item_first_in_text_order(con):
    # a and b are the same vector with different labels: the nearest of q is 'a' whatever the row order
    for order in ([0, 1, 2], [0, 2, 1]):
        items, labels = ["q", "a", "b"], ["x", "y", "z"]
        vectors = [[1.0, 0.0], [0.6, 0.8], [0.6, 0.8]]
        table = pa.table({"item": [items[i] for i in order], "label": [labels[i] for i in order],
                          "vector": [vectors[i] for i in order]})
        rows = {r["item"]: r for r in embsql.knn_classify(con, table, k=1, item="item", per_item=True, vector="vector",
                                                          model="model").to_dicts()}
        assert rows["q"]["predicted"] == "y"
        assert rows["b"]["predicted"] == "y" and rows["a"]["predicted"] == "z"   # itself excluded


def test_exact_duplicates_beyond_k_still_exclude_only_one_item():
    unit = np.tile([[1.0, 0.0]], (6, 1))
    neighbours = core.knn_neighbours(unit, np.ones(6), np.arange(6), 2)
    assert all(i not in row for i, row in enumerate(neighbours))
    assert neighbours[5].tolist() == [0, 1] and neighbours[0].tolist() == [1, 2]


def test_wilson_and_macro_f1_jackknife_match_references():
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 4, 120)
    predicted = np.where(rng.random(120) < 0.7, truth, rng.integers(0, 5, 120))
    figures = core.scores(truth, predicted, 5, None, 0.9)
    low, high = proportion_confint(int((truth == predicted).sum()), 120, alpha=0.1, method="wilson")
    assert (figures["ci_low"], figures["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    for clusters in (None, rng.integers(0, 25, 120)):
        units = np.arange(120) if clusters is None else clusters
        deleted = np.array([f1_score(truth[units != u], predicted[units != u], average="macro")
                            for u in np.unique(units)])
        count = len(deleted)
        from scipy.stats import t
        se = np.sqrt((count - 1) / count * np.sum((deleted - deleted.mean()) ** 2))
        f1 = f1_score(truth, predicted, average="macro")
        result = core.scores(truth, predicted, 5, clusters, 0.9)
        assert result["macro_f1"] == pytest.approx(f1, abs=1e-12)
        assert result["macro_f1_ci_low"] == pytest.approx(f1 - t.ppf(0.95, count - 1) * se, abs=1e-9)


@pytest.mark.parametrize("a_only, b_only", [(0, 0), (3, 0), (7, 12), (140, 101), (2500, 2600), (9, 9), (0, 1)])
def test_mcnemar_equals_binomtest(a_only, b_only):
    expected = 1.0 if a_only + b_only == 0 else binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert core.mcnemar_p(a_only, b_only) == pytest.approx(expected, rel=1e-12)
    table = np.array([[20, a_only], [b_only, 30]])
    assert core.mcnemar_p(a_only, b_only) == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)


def _mid_p(a_only, b_only):
    """The mid-p McNemar test by hand (Fagerland, Lydersen and Laake 2013): 2 [P(X <= low) - P(X = low) / 2]."""
    m, low = a_only + b_only, min(a_only, b_only)
    return 1.0 if m == 0 else min(1.0, 2 * (binom.cdf(low, m, 0.5) - 0.5 * binom.pmf(low, m, 0.5)))


@pytest.mark.parametrize("a_only, b_only", [(0, 0), (3, 0), (0, 1), (7, 12), (9, 9), (10, 11), (140, 101),
                                            (2500, 2600), (60_000, 60_100)])
def test_mid_p_mcnemar_equals_the_binomial_by_hand(a_only, b_only):
    # beyond EXACT_BINOMIAL discordant items the tail is summed in logs: 1e-9 there
    rel = 1e-12 if a_only + b_only <= core.EXACT_BINOMIAL else 1e-9
    assert core.mcnemar_mid_p(a_only, b_only) == pytest.approx(_mid_p(a_only, b_only), rel=rel)
    assert core.mcnemar_mid_p(a_only, b_only) <= core.mcnemar_p(a_only, b_only)


def test_mcnemar_p_values_stay_in_0_1():
    assert core.mcnemar_mid_p(9, 9) == 1.0 and core.mcnemar_mid_p(0, 0) == 1.0 and core.mcnemar_p(9, 9) == 1.0
    # tails far below the smallest float (2^-2000, 2^-200000) are given as the smallest normal float, not 0
    for a_only, b_only in ((0, 2000), (2000, 0), (0, 200_000), (150_000, 10)):
        for p in (core.mcnemar_p(a_only, b_only), core.mcnemar_mid_p(a_only, b_only)):
            assert 0 < p <= 1e-300


def test_agresti_min_interval_by_its_formula():
    # Agresti & Min (2005), eq. (3): add 1/2 to each cell, n* = n + 2
    se, low, high = core.agresti_min(40, 12, 5, 43, 0.95)
    p12, p21, n = 12.5 / 102, 5.5 / 102, 102
    half = 1.959963984540054 * np.sqrt((p12 + p21 - (p12 - p21) ** 2) / n)
    assert (low, high) == pytest.approx((p12 - p21 - half, p12 - p21 + half), abs=1e-12)


def test_compare_classification_on_knn_predictions(con):
    a, b = _data(seed=11), _data(seed=11, spread=0.4)
    per_item = embsql.knn_classify(con, _table({"strong": a, "weak": b}), k=5, item="item", per_item=True, vector="vector",
                                   model="model")
    row = embsql.compare_classification(con, per_item, model="model", item="item").to_dicts()[0]
    ok = {m: np.array([r["correct"] for r in per_item.to_dicts() if r["model"] == m]) for m in ("strong", "weak")}
    a_only, b_only = int(np.sum(ok["strong"] & ~ok["weak"])), int(np.sum(~ok["strong"] & ok["weak"]))
    assert (row["model_a"], row["model_b"], row["a_only"], row["b_only"]) == ("strong", "weak", a_only, b_only)
    assert row["p_value"] == pytest.approx(_mid_p(a_only, b_only), rel=1e-12)
    assert row["p_exact"] == pytest.approx(binomtest(a_only, a_only + b_only).pvalue, rel=1e-12)
    assert row["difference"] == pytest.approx(ok["strong"].mean() - ok["weak"].mean(), abs=1e-15)
    assert row["method"] == "mid-p McNemar" and row["ci_low"] < row["difference"] < row["ci_high"]


def test_holm_across_three_models():
    rng = np.random.default_rng(3)
    models = [core.Paired(m, rng.random(200) < p) for m, p in (("a", 0.8), ("b", 0.7), ("c", 0.75))]
    rows = core.paired_rows(models, None)
    from statsmodels.stats.multitest import multipletests
    adjusted = multipletests([r["p_value"] for r in rows], method="holm")[1]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(adjusted.tolist(), rel=1e-12)


# ----------------------------------------------------------------------------------------------
# simulation: level and coverage, independent and clustered items

def _correctness(rng, groups, size, shift, spread):
    """Two models' right/wrong on G clusters of ``size`` items: each cluster has its own chance of
    each model being right (logit ~ N(mu, spread), model a's shifted by ``shift``); spread 0 with
    size 1 gives independent items."""
    base = rng.normal(1.0, 1.0, groups)
    la = base + shift + spread * rng.normal(size=groups)
    lb = base + spread * rng.normal(size=groups)
    pa_, pb_ = 1 / (1 + np.exp(-la)), 1 / (1 + np.exp(-lb))
    a = rng.random((groups, size)) < pa_[:, None]
    b = rng.random((groups, size)) < pb_[:, None]
    return a.ravel(), b.ravel(), np.repeat(np.arange(groups), size)


def _true_difference(shift, spread, draws=2_000_000):
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 1.0, draws)
    la, lb = base + shift + spread * rng.normal(size=draws), base + spread * rng.normal(size=draws)
    return float(np.mean(1 / (1 + np.exp(-la)) - 1 / (1 + np.exp(-lb))))


def _simulate(runs, groups, size, shift, spread, clustered, seed=2026):
    rng = np.random.default_rng(seed)
    reject = cover = 0
    truth = _true_difference(shift, spread) if shift else 0.0
    for r in range(runs):
        a, b, clusters = _correctness(rng, groups, size, shift, spread)
        row = core.paired_rows([core.Paired("a", a), core.Paired("b", b)], clusters if clustered else None,
                               permutations=999, seed=r)[0]
        reject += row["p_value"] <= 0.05
        cover += row["ci_low"] <= truth <= row["ci_high"]
    return reject / runs, cover / runs


def test_level_and_coverage_on_independent_items():
    level, coverage = _simulate(1000, 200, 1, 0.0, 0.0, clustered=False)
    assert 0.03 <= level <= 0.07            # mid-p McNemar (about 60 discordant items here)
    assert 0.925 <= coverage <= 0.975
    _, coverage = _simulate(1000, 200, 1, 0.4, 0.0, clustered=False, seed=5)
    assert 0.925 <= coverage <= 0.975


def test_mid_p_holds_its_level_where_the_exact_test_is_conservative():
    # 50 independent items, a fifth discordant (10 expected), half of those favouring each model:
    # by enumeration the exact test's level is 2.21% and the mid-p's 4.13% (bench/classification_
    # validity_mcnemar.py); 5000 runs give a Monte Carlo error of 0.21 and 0.28 points
    rng = np.random.default_rng(2013)
    mid = exact = 0
    for _ in range(5000):
        discordant, a_only, both = rng.random(50) < 0.2, rng.random(50) < 0.5, rng.random(50) < 0.8
        a, b = np.where(discordant, a_only, both), np.where(discordant, ~a_only, both)
        row = core.paired_rows([core.Paired("a", a), core.Paired("b", b)], None)[0]
        assert 0 < row["p_value"] <= row["p_exact"] <= 1
        mid += row["p_value"] <= 0.05
        exact += row["p_exact"] <= 0.05
    assert 0.03 <= mid / 5000 <= 0.07
    assert exact / 5000 < 0.03


def test_clustered_items_need_the_cluster_test():
    # 60 clusters of 8 items whose chance of being right is shared: McNemar rejects far too often
    naive_level, naive_coverage = _simulate(600, 60, 8, 0.0, 1.5, clustered=False)
    level, coverage = _simulate(600, 60, 8, 0.0, 1.5, clustered=True)
    assert naive_level > 0.15 and naive_coverage < 0.85
    assert 0.025 <= level <= 0.075 and 0.92 <= coverage <= 0.98
    _, coverage = _simulate(600, 60, 8, 0.5, 1.5, clustered=True, seed=9)
    assert 0.92 <= coverage <= 0.98


def test_cluster_interval_of_accuracy_covers_and_wilson_does_not():
    # 60 clusters of 10 items sharing their chance of being right; the truth is E[p]
    rng = np.random.default_rng(8)
    draws = 1 / (1 + np.exp(-np.random.default_rng(1).normal(2.0, 1.0, 2_000_000)))
    truth = float(draws.mean())
    cover_cluster = cover_wilson = 0
    for _ in range(500):
        a, _, clusters = _correctness(rng, 60, 10, 1.0, 0.0)
        predicted = np.where(a, 0, 1)
        labels = np.zeros(len(a), dtype=np.int64)
        clustered = core.scores(labels, predicted, 2, clusters, 0.95)
        naive = core.scores(labels, predicted, 2, None, 0.95)
        cover_cluster += clustered["ci_low"] <= truth <= clustered["ci_high"]
        cover_wilson += naive["ci_low"] <= truth <= naive["ci_high"]
    assert 0.92 <= cover_cluster / 500 <= 0.98 and cover_wilson / 500 < 0.88


# ----------------------------------------------------------------------------------------------
# bad input and the face

def test_null_label_names_the_row(con):
    table = pa.table({"item": ["a", "b", "c"], "label": ["x", None, "y"], "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    with pytest.raises(embsql.BadLabelError, match=r"label column 'label' has a NULL label at row 2 \(item 'b'\)"):
        embsql.knn_classify(con, table, k=1, item="item", vector="vector", model="model")


def test_k_not_below_the_items(con):
    x, y = _data(n=12, seed=1)
    with pytest.raises(embsql.DesignError, match=r"k = 12 neighbours needs more than k items, but there are 12"):
        embsql.knn_classify(con, _table({"m": (x, y)}), k=12, vector="vector", model="model")
    train = np.arange(12) < 5
    with pytest.raises(embsql.DesignError, match=r"more than k training items, but there are 5 \(model 'm'\)"):
        embsql.knn_classify(con, _table({"m": (x, y)}, split=train), k=5, split="split", vector="vector", model="model")
    with pytest.raises(embsql.InputError, match="k must be a whole number of 1 or more, not 0"):
        embsql.knn_classify(con, _table({"m": (x, y)}), k=0, vector="vector", model="model")


def test_split_values_are_train_or_test(con):
    table = pa.table({"split": ["train", "Test", "train"], "label": ["x", "y", "x"],
                      "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    with pytest.raises(embsql.InputError, match=r"split column 'split' has 'Test' at row 2; its values must be "
                                                r"'train' or 'test'") as caught:
        embsql.knn_classify(con, table, k=1, split="split", vector="vector", model="model")
    assert caught.value.kind == "value.split"
    only_train = table.set_column(0, "split", pa.array(["train"] * 3))
    with pytest.raises(embsql.DesignError, match="split column 'split' has no test items"):
        embsql.centroid_classify(con, only_train, split="split", vector="vector", model="model")


def test_one_label_is_refused(con):
    table = pa.table({"label": ["x"] * 3, "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]})
    with pytest.raises(embsql.DesignError, match="only one group"):
        embsql.knn_classify(con, table, k=1, vector="vector", model="model")


def test_model_column_is_optional_and_keeps_its_name(con):
    x, y = _data(n=40, seed=2)
    table = _table({"m": (x, y)})
    with_model = embsql.knn_classify(con, table, k=3, vector="vector", model="model")
    assert with_model.columns[0] == "model"
    without = embsql.knn_classify(con, table.drop(["model"]), k=3, vector="vector", model="model")
    explicit = embsql.knn_classify(con, table, k=3, model=None, vector="vector")
    assert without.columns == explicit.columns == core.CLASSIFY_COLUMNS
    assert without.accuracy == explicit.accuracy == with_model.accuracy
    renamed = table.rename_columns(["encoder", "item", "label", "vector"])
    assert embsql.centroid_classify(con, renamed, model="encoder", vector="vector").columns[0] == "encoder"
    with pytest.raises(embsql.InputError, match="column.collision|output columns"):
        embsql.knn_classify(con, table.rename_columns(["accuracy", "item", "label", "vector"]), model="accuracy", vector="vector")


def test_old_and_unknown_keywords_are_refused(con):
    with pytest.raises(TypeError, match="unexpected keyword argument 'label_col'"):
        embsql.knn_classify(con, "t", label_col="x", vector="vector", model="model")       # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'by'"):
        embsql.compare_classification(con, "t", by="x", model="model", item="item")      # type: ignore[call-arg]


def test_compare_refuses_missing_items_and_reads_groups(con):
    predictions = pa.table({"model": ["a", "a", "b"], "item": ["u", "v", "u"], "correct": [True, False, True]})
    with pytest.raises(embsql.InputError, match=r"item 'v' has a prediction from model 'a' but not from model 'b'"):
        embsql.compare_classification(con, predictions, model="model", item="item")
    rows = pa.table({"model": ["a"] * 4 + ["b"] * 4, "item": list("uvwx") * 2, "g": [1, 2, 1, 2] * 2,
                     "correct": [True, True, True, False, False, False, True, False]})
    row = embsql.compare_classification(con, rows, group="g", model="model", item="item").to_dicts()[0]
    assert row["method"] == "exact cluster sign-flip" and row["groups"] == 2 and row["permutations"] == 4
    assert row["p_value"] == 0.5 and not row["calibrated"]


def test_grouped_knn_reports_cluster_intervals(con):
    x, y = _data(n=200, seed=4)
    groups = np.arange(200) // 4
    result = embsql.knn_classify(con, _table({"m": (x, y)}, groups=groups), k=5, group="grp", vector="vector", model="model")
    plain = embsql.knn_classify(con, _table({"m": (x, y)}), k=5, vector="vector", model="model")
    assert result.groups == 50 and plain.groups is None and result.accuracy == plain.accuracy
    assert result.ci_low != plain.ci_low


def test_duckdb_table_source(con):
    x, y = _data(n=60, seed=6)
    con.register("emb_view", _table({"m": (x, y)}, labels=["cat", "dog", "emu", "fox", "gnu"]))
    con.execute("CREATE TABLE emb AS SELECT * FROM emb_view")
    row = embsql.knn_classify(con, "emb", k=3, item="item", vector="vector", model="model").to_dicts()[0]
    reference = KNeighborsClassifier(n_neighbors=3, metric="cosine", algorithm="brute").fit(x, y).predict(None)
    assert row["accuracy"] == pytest.approx(accuracy_score(y, reference), abs=1e-15)
    assert isinstance(con, duckdb.DuckDBPyConnection)


# ----------------------------------------------------------------------------------------------
# SQL: the same numbers as Python

def test_sql_equals_python(con):
    x, y = _data(n=120, seed=13)
    groups = np.arange(120) // 3
    train = np.arange(120) % 4 != 0
    con.register("t_view", _table({"a": (x, y), "b": (x[::-1].copy(), y)}, split=train, groups=groups))
    con.execute("CREATE TABLE t AS SELECT * FROM t_view")
    for call, face in (("emb_knn_classify('t', k := 4, item := 'item')",
                        lambda: embsql.knn_classify(con, "t", k=4, item="item", vector="vector", model="model")),
                       ("emb_knn_classify('t', k := 3, split := 'split', \"group\" := 'grp')",
                        lambda: embsql.knn_classify(con, "t", k=3, split="split", group="grp", vector="vector", model="model")),
                       ("emb_centroid_classify('t', model := NULL)", lambda: embsql.centroid_classify(con, "t",
                                                                                                   model=None, vector="vector"))):
        sql = con.sql(f"SELECT * FROM {call}")
        python = face()
        assert sql.columns == list(python.columns)
        for got, want in zip(sql.fetchall(), python.rows, strict=True):
            for a, b in zip(got, want, strict=True):
                assert a == (pytest.approx(b, rel=1e-12) if isinstance(b, float) else b)
    items = con.sql("SELECT model, item, label, predicted, correct FROM emb_knn_classify_items('t', k := 4, "
                    "item := 'item') ORDER BY model, item").fetchall()
    python = embsql.knn_classify(con, "t", k=4, item="item", per_item=True, vector="vector", model="model")
    assert items == sorted((m, i, str(lab), str(p), c) for m, i, lab, p, c in python.rows)


def test_sql_refuses_a_null_label_naming_the_row(con):
    con.execute("CREATE TABLE nl AS SELECT * FROM (VALUES ('a', 1, [1.0, 0.0]), ('b', NULL, [0.0, 1.0]), "
                "('c', 2, [1.0, 1.0])) t(item, label, vector)")
    with pytest.raises(embsql.BadLabelError, match=r"label column 'label' has a NULL label at row 2 \(item 'b'\)"):
        embsql.run_sql(con, "SELECT * FROM emb_knn_classify('nl', k := 1, item := 'item')")
