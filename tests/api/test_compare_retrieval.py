"""embsql.compare_retrieval and emb_compare_retrieval: the paired comparison of retrieval models.

References: a hand-worked three-group case (every sign vector by hand, the interval with scipy's t
quantile), statsmodels' cluster-robust OLS and scipy's paired t test for the interval, exact
enumeration of sign vectors against the seeded random ones, statsmodels' multipletests for
Holm/BH/Bonferroni, and small seeded simulations whose bounds come from the
Monte Carlo SE (the full tables are validation/retrieval_validity.py, in validation/README.md).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import embsql
from embsql.core import retrieval_comparison as qp

statsmodels_multitest = pytest.importorskip("statsmodels.stats.multitest")


def long_table(values: dict, groups=None, metric="ndcg@10") -> pa.Table:
    """{model: per-query values} -> a per-query evaluation table (qids q0, q1, ...)."""
    rows = {"model": [], "qid": [], "metric": [], "value": []}
    if groups is not None:
        rows["group"] = []
    for model, v in values.items():
        rows["model"] += [model] * len(v)
        rows["qid"] += [f"q{i}" for i in range(len(v))]
        rows["metric"] += [metric] * len(v)
        rows["value"] += list(map(float, v))
        if groups is not None:
            rows["group"] += list(groups)
    return pa.table(rows)


# ---- hand-worked ------------------------------------------------------------------------------

# three groups; the per-query differences a - b are A: [1], B: [1, 1], C: [1, 2]
HAND_A = [1.0, 1.0, 1.0, 1.0, 2.0]
HAND_B = [0.0, 0.0, 0.0, 0.0, 0.0]
HAND_GROUPS = ["A", "B", "B", "C", "C"]


def test_hand_worked_three_groups():
    # group sums 1, 2, 3: the 8 sign vectors give |T| = 6, 4, 2, 0, 0, 2, 4, 6, so 2 of 8 reach 6
    # D = 6/5; residuals S_g - n_g D = -0.2, -0.4, 0.6; se = sqrt(3/2 * 0.56) / 5
    con = embsql.connect()
    table = long_table({"a": HAND_A, "b": HAND_B}, HAND_GROUPS)
    row = embsql.compare_retrieval(con, table, group="group", model="model").to_dicts()[0]
    se = math.sqrt(1.5 * 0.56) / 5
    half = stats.t.ppf(0.975, 2) * se
    assert row["p_value"] == 0.25 and row["permutations"] == 8 and row["method"] == "exact group sign-flip"
    assert row["difference"] == pytest.approx(1.2, abs=1e-15)
    assert (row["mean_a"], row["mean_b"]) == (pytest.approx(1.2), 0.0)
    assert row["se"] == pytest.approx(se, rel=1e-13)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(1.2 - half, rel=1e-12), pytest.approx(1.2 + half, rel=1e-12))
    assert (row["queries"], row["groups"], row["calibrated"]) == (5, 3, False)
    # single queries instead: 5 queries, |T| >= 6 for sign vectors whose flipped queries sum to 0 only,
    # i.e. none flipped or all flipped: 2 of 32
    row = embsql.compare_retrieval(con, table, model="model").to_dicts()[0]
    assert row["p_value"] == 2 / 32 and row["permutations"] == 32 and row["groups"] == 5


@pytest.mark.parametrize("seed,groups", [(3, 25), (4, 60), (5, 7)])
def test_interval_equals_statsmodels_cluster_ols_and_scipy_paired_t(seed, groups):
    """With groups: the intercept of an OLS of d on 1 with statsmodels' cluster-robust covariance
    (CR1, t with G - 1 df).  Without: scipy's paired t test's interval."""
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    codes = rng.integers(0, groups, 6 * groups)
    codes[:groups] = np.arange(groups)
    a, b = rng.random(len(codes)), rng.random(len(codes)) + 0.05
    ours = qp.paired_difference(a, b, codes, permutations=10)
    fit = sm.OLS(a - b, np.ones(len(a))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    assert ours.se == pytest.approx(fit.bse[0], rel=1e-12)
    assert [ours.ci_low, ours.ci_high] == pytest.approx(list(fit.conf_int(0.05)[0]), rel=1e-12)
    ours = qp.paired_difference(a, b, None, permutations=10)
    paired = stats.ttest_rel(a, b).confidence_interval(0.95)
    assert [ours.ci_low, ours.ci_high] == pytest.approx([paired.low, paired.high], rel=1e-12)


def test_random_sign_vectors_agree_with_exact_enumeration():
    rng = np.random.default_rng(5)
    sums = rng.normal(size=14) + 0.3
    exact, used, is_exact = qp.sign_flip_p(sums, 2 ** 14, 0)
    assert is_exact and used == 2 ** 14
    brute = np.mean([abs(np.dot(s, sums)) >= abs(sums.sum()) - 1e-12
                     for s in itertools.product((1, -1), repeat=14)])
    assert exact == pytest.approx(brute, abs=1e-15)
    random = qp.sign_flip_statistics(sums, 200_000, 3)       # what sign_flip_p draws above 2^20 vectors
    p = np.mean(np.abs(random) >= abs(sums.sum()) - 1e-12)
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / 200_000)


def test_each_random_statistic_is_one_sign_vector():
    # with S_g = 2^g each T* decodes to exactly one sign vector; the bits are fair and independent
    sums = 2.0 ** np.arange(20)
    t = qp.sign_flip_statistics(sums, 4000, 11)
    bits = ((t + sums.sum()) / 2).astype(np.int64)           # T* = 2 * (sum of S_g with s_g = +1) - sum S
    assert np.array_equal(2.0 * bits - sums.sum(), t)
    matrix = (bits[:, None] >> np.arange(20)) & 1
    assert np.all(np.abs(matrix.mean(axis=0) - 0.5) < 4 * math.sqrt(0.25 / 4000))
    assert len(np.unique(bits)) > 3990


@pytest.mark.parametrize("method,reference", [("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni")])
def test_adjustments_equal_statsmodels(method, reference):
    p = [0.01, 0.04, 0.03, 0.2, 0.04, 0.5, 0.001]
    expected = statsmodels_multitest.multipletests(p, method=reference)[1]
    assert qp.adjust(p, method) == pytest.approx(list(expected), abs=1e-15)
    assert qp.adjust(p, None) == p


def test_three_models_holm_across_pairs():
    rng = np.random.default_rng(2)
    values = {m: rng.random(40) + shift for m, shift in (("x", 0.0), ("y", 0.15), ("z", 0.02))}
    rows = embsql.compare_retrieval(embsql.connect(), long_table(values), permutations=999, model="model").to_dicts()
    assert [(r["model_a"], r["model_b"]) for r in rows] == [("x", "y"), ("x", "z"), ("y", "z")]
    expected = statsmodels_multitest.multipletests([r["p_value"] for r in rows], method="holm")[1]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(list(expected), abs=1e-15)
    for r in rows:
        assert r["difference"] == pytest.approx(values[r["model_a"]].mean() - values[r["model_b"]].mean(), abs=1e-14)
        assert 0 < r["p_value"] <= 1 and r["p_value"] <= r["p_adjusted"] <= 1


# ---- validity by simulation (small; validation/retrieval_validity.py has the full tables) --------


def clustered(rng, groups, delta=0.0, tau=0.8):
    sizes = 1 + rng.poisson(3, groups)
    codes = np.repeat(np.arange(groups), sizes)
    u = rng.normal(size=groups)[codes]
    v = tau * rng.normal(size=groups)[codes]
    a = 1 / (1 + np.exp(-(u + v / 2 + 0.5 * rng.normal(size=len(codes)) + delta)))
    b = 1 / (1 + np.exp(-(u - v / 2 + 0.5 * rng.normal(size=len(codes)))))
    return a, b, codes


RUNS = 400
SE_REJECT = math.sqrt(0.05 * 0.95 / RUNS)       # 1.1 points
SE_COVER = math.sqrt(0.05 * 0.95 / RUNS)


def test_group_test_holds_its_level_and_the_query_test_does_not():
    rng = np.random.default_rng(20261201)
    group_hits = query_hits = 0
    for run in range(RUNS):
        a, b, codes = clustered(rng, 40)
        group_hits += qp.paired_difference(a, b, codes, permutations=199, seed=run).p_value <= 0.05
        query_hits += qp.paired_difference(a, b, None, permutations=199, seed=run).p_value <= 0.05
    # 4 MC SEs either side of 5%: a test at 5% fails this with probability below 1e-4
    assert abs(group_hits / RUNS - 0.05) < 4 * SE_REJECT
    # the bound is tight enough to fail a cluster-unaware test (bench: 27% here)
    assert query_hits / RUNS > 0.05 + 4 * SE_REJECT


def test_interval_covers_at_30_groups_and_the_query_interval_does_not():
    delta = 0.4
    a, b, _ = clustered(np.random.default_rng(999), 200_000, delta)
    truth = a.mean() - b.mean()                 # MC error about 3e-4, under a twentieth of a half-width
    rng = np.random.default_rng(7)
    hits = naive = 0
    for _ in range(RUNS):
        a, b, codes = clustered(rng, 30, delta)
        result = qp.paired_difference(a, b, codes, permutations=1, seed=0)
        hits += result.ci_low <= truth <= result.ci_high
        _, _, low, high = qp.t_interval(a - b, np.ones(len(a)), 0.95)
        naive += low <= truth <= high
        assert result.calibrated
    assert abs(hits / RUNS - 0.95) < 4 * SE_COVER
    assert naive / RUNS < 0.95 - 4 * SE_COVER    # bench: 73%


def test_the_randomization_kernel_beats_a_dense_sign_matrix():
    """Best of 3, warm, at 1,000 sign vectors over 10,000 queries: faster than a dense +/-1 sign matrix
    timed beside it (a ratio, so a loaded machine slows both).  The absolute figure, 10,000 x 10,000
    in 0.35 s (under 2 s), is validation/retrieval_validity.py's (validation/README.md)."""
    import time

    rng = np.random.default_rng(0)
    d = rng.normal(size=10_000)

    def dense():
        for _ in range(2):
            (rng.integers(0, 2, size=(500, 10_000), dtype=np.int8).astype(np.float64) * 2 - 1) @ d

    def best(run):
        times = []
        for _ in range(3):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return min(times)

    assert best(lambda: qp.sign_flip_p(d, 1_000, 1)) < best(dense)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.integers(2, 40), shift=st.floats(-5, 5), scale=st.floats(0.1, 10))
def test_swapping_models_negates_and_shifting_both_changes_nothing(seed, groups, shift, scale):
    """a <-> b negates the difference and its interval and keeps se and p; adding one constant to
    both models moves only the means; scaling both scales difference, se and interval, keeps p."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, groups, 5 * groups)
    codes[:groups] = np.arange(groups)
    a, b = rng.random(len(codes)), rng.random(len(codes))
    base = qp.paired_difference(a, b, codes, permutations=300, seed=1)
    swapped = qp.paired_difference(b, a, codes, permutations=300, seed=1)
    assert swapped.p_value == base.p_value and swapped.se == pytest.approx(base.se, rel=1e-12)
    assert swapped.difference == pytest.approx(-base.difference, abs=1e-12)
    assert swapped.ci_low == pytest.approx(-base.ci_high, abs=1e-12)
    moved = qp.paired_difference(scale * a + shift, scale * b + shift, codes, permutations=300, seed=1)
    assert moved.p_value == base.p_value
    assert moved.difference == pytest.approx(scale * base.difference, abs=1e-9)
    assert moved.se == pytest.approx(scale * base.se, rel=1e-9)
    assert moved.mean_a == pytest.approx(scale * base.mean_a + shift, abs=1e-9)


# ---- the faces: Python, SQL, groups from a queries table ----------------------------------


def test_sql_equals_python_and_groups_may_come_from_a_queries_table():
    rng = np.random.default_rng(3)
    groups = [f"g{i // 3}" for i in range(90)]
    table = long_table({"m1": rng.random(90), "m2": rng.random(90) + 0.05}, groups)
    con = embsql.connect()
    con.register("ev", table)
    python = embsql.compare_retrieval(con, "ev", group="group", permutations=2000, seed=9, model="model").to_dicts()
    sql = con.sql("SELECT * FROM emb_compare_retrieval('ev', metric := 'ndcg@10', model := 'model', "
                  "\"group\" := 'group', permutations := 2000, seed := 9)").to_arrow_table().to_pylist()
    assert list(sql[0]) == list(qp.PAIR_COLUMNS) + ["interval"] and sql[0]["interval"] == "marginal"
    for key in qp.PAIR_COLUMNS:
        assert sql[0][key] == (python[0][key] if not isinstance(python[0][key], float)
                               else pytest.approx(python[0][key], abs=1e-15)), key
    unquoted = con.sql("SELECT * FROM emb_compare_retrieval('ev', \"group\" := 'group', permutations := 2000, seed := 9)")
    assert unquoted.to_arrow_table().to_pylist() == sql
    plain = con.sql("SELECT p_value, p_adjusted, p_adjust FROM emb_compare_retrieval('ev', p_adjust := NULL)").fetchall()
    assert plain[0][0] == plain[0][1] and plain[0][2] is None
    queries = pa.table({"qid": [f"q{i}" for i in range(90)] * 2, "group": groups * 2, "model": ["m1"] * 90 + ["m2"] * 90})
    other = embsql.compare_retrieval(con, table.drop(["group"]), queries=queries, permutations=2000, seed=9,
                                     model="model").to_dicts()
    assert other == python
    assert embsql.compare_retrieval(con, embsql.ResultTable.from_dicts("t", table.column_names, table.to_pylist()),
                                    group="group", permutations=2000, seed=9, model="model").to_dicts() == python
    assert embsql.compare_retrieval(con, table.to_pandas(), group="group", permutations=2000, seed=9,
                                    model="model").to_dicts() == python


def test_the_seed_does_not_depend_on_row_order():
    rng = np.random.default_rng(4)
    table = long_table({"m1": rng.random(60), "m2": rng.random(60)}, [f"g{i % 17}" for i in range(60)])
    con = embsql.connect()
    shuffled = table.take(np.random.default_rng(1).permutation(table.num_rows))
    a, b = (embsql.compare_retrieval(con, t, group="group", permutations=500, model="model").to_dicts()[0] for t in (table,
                                                                                                                     shuffled))
    assert a["p_value"] == b["p_value"] and a["difference"] == pytest.approx(b["difference"], abs=1e-15)


@pytest.mark.parametrize("change,kwargs,error,words", [
    (lambda t: t, {"metric": "map@100"}, embsql.InputError, "no rows for metric 'map@100'; its metrics are: 'ndcg@10'"),
    (lambda t: t.slice(0, t.num_rows - 1), {}, embsql.InputError, "model 'b' has no ndcg@10 for qid 'q4'"),
    (lambda t: pa.concat_tables([t, t.slice(0, 1)]), {}, embsql.InputError, "more than once"),
    (lambda t: t.filter(pa.compute.equal(t["model"], "a")), {}, embsql.DesignError, "only 1 model"),
    (lambda t: t, {"p_adjust": "fdr"}, embsql.InputError, "p_adjust must be one of"),
    (lambda t: t, {"permutations": 0}, embsql.InputError, "permutations must be a whole number"),
    (lambda t: t, {"level": 95}, embsql.InputError, "level must be a number between 0 and 1"),
    (lambda t: t, {"group": "topic"}, embsql.ColumnNotFoundError, "group column 'topic' not found"),
    (lambda t: t.set_column(3, "value", pa.array([1.0, float("nan")] + [0.0] * 8)), {}, embsql.InputError,
     "is nan; every value must be a finite number"),
    (lambda t: t.set_column(4, "group", pa.array(["A", "B"] * 5)), {"group": "group"}, embsql.InputError,
     "is in group 'A' and in group 'B'"),
    (lambda t: t.set_column(4, "group", pa.array([None] + ["A"] * 9)), {"group": "group"}, embsql.BadLabelError,
     "NULL label"),
    (lambda t: t.set_column(3, "value", pa.array(["0.5"] * 10)), {}, embsql.ColumnTypeError,
     "value column 'value' in 'pyarrow Table (10 rows)' has type VARCHAR; expected a number"),
])
def test_bad_input_is_named(change, kwargs, error, words):
    table = change(long_table({"a": HAND_A, "b": HAND_B}, HAND_GROUPS))
    with pytest.raises(error) as caught:
        embsql.compare_retrieval(embsql.connect(), table, model="model", **kwargs)
    assert words in str(caught.value)


def test_sql_errors_start_with_embsql():
    con = embsql.connect()
    con.register("ev", long_table({"a": HAND_A, "b": HAND_B}, HAND_GROUPS))
    for call, words in (("emb_compare_retrieval('ev', metric := 'mrr@10')", "[metric.absent] evaluation 'ev' has no rows for "
                                                                              "metric 'mrr@10'"),
                        ("emb_compare_retrieval('ev', \"group\" := 'topic')", "[column.missing] group column 'topic' not found"),
                        ("emb_compare_retrieval('ev', model := 'run')", "[column.missing] model column 'run' not found"),
                        ("emb_compare_retrieval('ev', p_adjust := 'fdr')", "[argument.p_adjust] p_adjust must be one of")):
        with pytest.raises(Exception) as caught:
            con.sql(f"SELECT * FROM {call}").fetchall()
        assert f"embsql: {words}" in str(caught.value)


# ---- the verdict sentence ----------------------------------------------------------------------


def _row(a, b, mean_a, mean_b, p, low, high, groups=40, calibrated=True):
    return {"model_a": a, "model_b": b, "metric": "ndcg@10", "mean_a": mean_a, "mean_b": mean_b,
            "difference": mean_a - mean_b, "se": 0.01, "ci_low": low, "ci_high": high, "p_value": p / 3,
            "p_adjusted": p, "p_adjust": "holm", "queries": 4 * groups, "groups": groups, "permutations": 10_000,
            "method": "group sign-flip", "level": 0.95, "calibrated": calibrated}


def test_verdict_names_the_better_model_the_gap_and_the_evidence():
    from embsql.reporting.verdict import retrieval_comparison_sentence

    # model_b ahead: the sentence leads with it and turns the interval round
    text = retrieval_comparison_sentence([_row("e5", "bge", 0.41, 0.47, 0.002, -0.09, -0.03)])
    assert text.startswith("bge retrieves better than e5 on ndcg@10: 0.470 against 0.410, 0.060 higher")
    assert "p = 0.002, Holm-adjusted, 95% interval 0.030 to 0.090; over 40 paraphrase groups" in text
    text = retrieval_comparison_sentence([_row("e5", "bge", 0.47, 0.46, 0.41, -0.02, 0.04, groups=12,
                                               calibrated=False)])
    assert text.startswith("e5 and bge are not told apart on ndcg@10") and "p = 0.410" in text
    assert text.endswith("With 12 groups (under 30) the intervals are rough.")
    three = [_row("a", "b", 0.5, 0.4, 0.001, 0.05, 0.15), _row("a", "c", 0.5, 0.48, 0.3, -0.02, 0.06),
             _row("b", "c", 0.4, 0.48, 0.01, -0.12, -0.04)]
    assert retrieval_comparison_sentence(three).startswith(
        "a has the highest ndcg@10 (0.500) and beats 1 of the 2 others beyond chance. a retrieves better than b")
    assert retrieval_comparison_sentence([]) == ""
