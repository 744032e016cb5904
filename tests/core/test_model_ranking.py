"""Rank confidence sets (embsql.core.model_ranking, embsql.rank_models, emb_rank_models).

References: the sets recomputed from the definition (Mogstad, Romano, Shaikh and Wilhelm's step-down
over the ordered pairs) by explicit loops; the resampled R² and its inner jackknife SE recomputed
from the items of each resample with numpy; coverage measured by a seeded simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import embsql
from embsql.core import model_ranking as mr
from embsql.core.model_comparison import canonical
from embsql.core.sums import GroupSums


def _reference_sets(estimates, difference, se, t_star, level, stepdown=True):
    """The rank sets by loops: ordered pairs (j, k), t*_kj = -t*_jk; reject "theta_j <= theta_k"
    when d_jk - c se_jk > 0, c the level-quantile of the max of t* over the pairs not yet rejected."""
    k = len(estimates)
    index = {}
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            index[(a, b)] = p
            p += 1

    def t(r, a, b):
        return t_star[r][index[(a, b)]] if a < b else -t_star[r][index[(b, a)]]

    def d(a, b):
        return difference[index[(a, b)]] if a < b else -difference[index[(b, a)]]

    def s(a, b):
        return se[index[(min(a, b), max(a, b))]]

    active = [(a, b) for a in range(k) for b in range(k) if a != b]
    rejected = []
    while active:
        maxima = sorted(max(t(r, a, b) for a, b in active) for r in range(len(t_star)))
        position = level * (len(maxima) - 1)          # linear interpolation between order statistics
        low = math.floor(position)
        c = maxima[low] + (position - low) * (maxima[min(low + 1, len(maxima) - 1)] - maxima[low])
        new = [(a, b) for a, b in active if d(a, b) - c * s(a, b) > 0]
        if not new:
            break
        rejected += new
        active = [pair for pair in active if pair not in new]
        if not stepdown:
            break
    rank_low = [1 + sum((b, a) in rejected for b in range(k)) for a in range(k)]
    rank_high = [k - sum((a, b) in rejected for b in range(k)) for a in range(k)]
    return rank_low, rank_high


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("stepdown", [True, False])
def test_sets_equal_the_definition_by_loops(seed, stepdown):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    estimates = np.sort(rng.normal(size=k))[::-1] * rng.uniform(0.5, 4)
    estimates[rng.integers(k)] = estimates[0]          # an exact tie, sometimes at the top
    pairs = mr.pairs_of(k)
    difference = np.array([estimates[a] - estimates[b] for a, b in pairs])
    se = rng.uniform(0.3, 1.2, size=len(pairs))
    correlated = rng.normal(size=(300, k)) @ rng.normal(size=(k, k))
    t_star = np.array([[(x[a] - x[b]) / 2 for a, b in pairs] for x in correlated]) + rng.normal(size=(300, len(pairs)))
    fam = mr.PairFamily(pairs, difference, se, t_star)
    sets = mr.rank_sets(estimates, fam, 0.9, stepdown=stepdown)
    low, high = _reference_sets(estimates, difference, se, t_star, 0.9, stepdown)
    assert sets.rank_low.tolist() == low
    assert sets.rank_high.tolist() == high
    assert sets.top.tolist() == [x == 1 for x in low]
    assert sets.rank.tolist() == [1 + sum(e > x for e in estimates) for x in estimates]
    # the simultaneous intervals: d -/+ c se with c the level-quantile of max |t*|
    c = sorted(max(abs(v) for v in row) for row in t_star)
    position = 0.9 * (len(c) - 1)
    crit = c[int(position)] + (position - int(position)) * (c[int(position) + 1] - c[int(position)])
    lows, highs = mr.simultaneous_intervals(fam, 0.9)
    assert np.allclose(lows, difference - crit * se) and np.allclose(highs, difference + crit * se)


def test_stepdown_resolves_at_least_as_much_and_sets_are_ranges():
    rng = np.random.default_rng(5)
    for _ in range(30):
        k = 6
        estimates = np.cumsum(rng.uniform(0, 1, size=k))[::-1]
        pairs = mr.pairs_of(k)
        fam = mr.PairFamily(pairs, np.array([estimates[a] - estimates[b] for a, b in pairs]),
                            np.full(len(pairs), 0.4), rng.normal(size=(400, len(pairs))))
        step, single = mr.rank_sets(estimates, fam, 0.95), mr.rank_sets(estimates, fam, 0.95, stepdown=False)
        assert np.all(step.rank_low >= single.rank_low) and np.all(step.rank_high <= single.rank_high)
        assert np.all(step.rank_low <= step.rank) and np.all(step.rank <= step.rank_high)


def _items_r2(vectors_by_group):
    allv = np.concatenate(vectors_by_group)
    mean = allv.mean(axis=0)
    ss_t = ((allv - mean) ** 2).sum()
    ss_w = sum(((v - v.mean(axis=0)) ** 2).sum() for v in vectors_by_group)
    return 1 - ss_w / ss_t


def test_structure_resamples_equal_items_recomputed():
    """t* of the joint family from the items of each resample: R² of the drawn groups, and the
    jackknife SE over the G draws (one draw left out at a time), for the same draws for all models."""
    rng = np.random.default_rng(3)
    g, k = 7, 3
    groups = [f"g{i}" for i in range(g)]
    data = []
    for m in range(k):
        vecs = []
        for i in range(g):
            v = rng.normal(size=(4 + i % 3, 3)) * (0.5 + m * 0.4) + rng.normal(size=3)
            vecs.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        data.append(vecs)
    sums = [canonical(GroupSums.from_rows(np.repeat(groups, [len(v) for v in vecs]), np.concatenate(vecs)))
            for vecs in data]
    replicates = 6
    estimates, fam, _ = mr.structure_family(sums, "r2", replicates=replicates, seed=11, sizes="random")
    assert np.allclose(estimates, [_items_r2(vecs) for vecs in data])
    from embsql.core.resampling import resample_weights
    weights = resample_weights(g, replicates, 11)
    for r in range(replicates):
        draws = np.repeat(np.arange(g), weights[r].astype(int))
        theta = [_items_r2([data[m][i] for i in draws]) for m in range(k)]
        left = [[_items_r2([data[m][i] for i in np.delete(draws, x)]) for x in range(g)] for m in range(k)]
        for p, (a, b) in enumerate(fam.pairs):
            diffs = np.array(left[a]) - np.array(left[b])
            se_star = math.sqrt((g - 1) / g * sum((x - diffs.mean()) ** 2 for x in diffs))
            expected = ((theta[a] - theta[b]) - (estimates[a] - estimates[b])) / se_star
            assert fam.t_star[r, p] == pytest.approx(expected, rel=1e-7, abs=1e-9)


def _simulate(design, sims, rng, level=0.95, groups=40, per=3, replicates=300):
    """Per-query scores of K models, queries in clusters; returns (the share of draws where every
    model's set holds every rank of its tie in truth, i.e. no pair was ordered falsely, for the
    simultaneous sets, of the per-pair marginal sets, share of ordered pairs resolved)."""
    truth = np.asarray(design, dtype=float)
    k = len(truth)
    true_low = np.array([1 + np.sum(truth > x) for x in truth])
    true_high = np.array([np.sum(truth >= x) for x in truth])
    covered = covered_marginal = resolved = ordered = 0
    clusters = np.repeat(np.arange(groups), per)
    for s in range(sims):
        shared = rng.normal(size=(groups, 1)) * 0.15            # a cluster's difficulty, shared by the models
        own = rng.normal(size=(groups, k)) * 0.06
        scores = truth + (shared + own)[clusters] + rng.normal(size=(len(clusters), k)) * 0.1
        means, fam = mr.retrieval_family(scores, clusters, replicates=replicates, seed=s)
        sets = mr.rank_sets(means, fam, level)
        covered += np.all((sets.rank_low <= true_low) & (sets.rank_high >= true_high))
        # per-pair (marginal) decisions: each pair at its own level, no family
        q = np.quantile(np.abs(fam.t_star), level, axis=0)
        better = np.zeros((k, k), dtype=bool)
        for p, (a, b) in enumerate(fam.pairs):
            better[a, b] = fam.difference[p] - q[p] * fam.se[p] > 0
            better[b, a] = -fam.difference[p] - q[p] * fam.se[p] > 0
        low, high = 1 + better.sum(axis=0), k - better.sum(axis=1)
        covered_marginal += np.all((low <= true_low) & (high >= true_high))
        truly = truth[:, None] > truth[None, :]
        resolved += int((sets.better & truly).sum())
        ordered += int(truly.sum())
    return covered / sims, covered_marginal / sims, resolved / max(ordered, 1)


def test_coverage_seeded_simulation():
    """All ranks covered together in >= 90% of 200 draws (nominal 95%; the SE of the share is 1.5
    points), where the per-pair sets fall short (a bound the family must beat), and the sets still
    resolve most of a clear gap, so wide sets cannot pass."""
    rng = np.random.default_rng(2026)
    tied, tied_marginal, _ = _simulate([0.5] * 5, 200, rng)
    assert tied >= 0.90
    assert tied_marginal <= 0.85          # ten pairs at 95% each: the family does not hold
    gaps, _, power = _simulate([0.3, 0.4, 0.5, 0.5], 100, rng)
    assert gaps >= 0.90
    assert power >= 0.6                   # truly ordered pairs resolved


def _table(con):
    con.execute("CREATE TABLE ex AS SELECT m AS model, 'g' || (i % 10) AS topic, "
                "[cos(i % 10 + s * sin(i)), sin(i % 10 + s * sin(i)), cos(3 * i)] AS embedding "
                "FROM range(80) t(i), (VALUES ('tight', 0.3), ('mid', 0.35), ('loose', 1.5)) m(m, s)")


def test_rank_models_face_and_sql_agree():
    con = embsql.connect()
    _table(con)
    result = embsql.rank_models(con, "ex", group="topic", vector="embedding", model="model", replicates=400, seed=3)
    assert result.columns == ("model",) + mr.RANK_COLUMNS
    rows = result.to_dicts()
    assert [r["model"] for r in rows] == ["loose", "mid", "tight"]
    assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in rows)
    assert rows[0]["rank_low"] == 3 and not rows[0]["top"]
    assert all(r["calibrated"] is False for r in rows)          # 10 groups
    sql = con.sql("SELECT * FROM emb_rank_models('ex', 'topic', 'embedding', model := 'model', "
                  "replicates := 400, seed := 3) ORDER BY model").fetchall()
    assert len(sql) == len(rows)
    for got, want in zip(sql, rows):
        for value, expected in zip(got, want.values()):
            if isinstance(expected, float):
                assert value == pytest.approx(expected, rel=1e-9)   # the sums are added in another order
            else:
                assert value == expected and type(value) is type(expected)


def test_rank_models_refuses_one_model_and_missing_group():
    con = embsql.connect()
    con.execute("CREATE TABLE one AS SELECT 'a' AS model, 'g' || (i % 4) AS topic, [cos(i), sin(i)] AS embedding "
                "FROM range(20) t(i)")
    with pytest.raises(embsql.InputError, match="model"):
        embsql.rank_models(con, "one", group="topic", vector="embedding", model="model")
    con.execute("CREATE TABLE gap AS SELECT * FROM one UNION ALL SELECT 'b', 'g' || (i % 3), [cos(i), sin(2 * i)] "
                "FROM range(20) t(i)")
    with pytest.raises(embsql.InputError, match="group 'g3'"):
        embsql.rank_models(con, "gap", group="topic", vector="embedding", model="model")


# ----------------------------------------------------------------------------------------------
# simultaneous intervals for the pairwise differences (intervals="simultaneous" of compare*)

def _max_abs_quantile(t_star, level):
    """The level-quantile (linear interpolation, as numpy's default) of max over pairs of |t*|, by loops."""
    maxima = sorted(max(abs(v) for v in row) for row in t_star)
    position = level * (len(maxima) - 1)
    low = math.floor(position)
    return maxima[low] + (position - low) * (maxima[min(low + 1, len(maxima) - 1)] - maxima[low])


def test_compare_simultaneous_intervals_equal_the_max_t_by_loops():
    con = embsql.connect()
    _table(con)
    con.execute("CREATE TABLE ex_items AS SELECT *, row_number() OVER (PARTITION BY model) AS item FROM ex")
    args = dict(group="topic", vector="embedding", model="model", item="item", replicates=300, seed=5)
    marginal = embsql.compare_structure(con, "ex_items", **args).to_dicts()
    result = embsql.compare_structure(con, "ex_items", intervals="simultaneous", **args)
    assert result.columns[-1] == "interval"
    rows = result.to_dicts()
    names = sorted({r["model_a"] for r in rows} | {r["model_b"] for r in rows})
    sums = {}
    for m in names:
        got = con.sql(f"SELECT topic, embedding FROM ex WHERE model = '{m}'").fetchall()
        labels = np.array([g for g, _ in got], dtype=object)
        vectors = np.array([v for _, v in got], dtype=float)
        sums[m] = canonical(GroupSums.from_rows(labels, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)))
    _, fam, _ = mr.structure_family([sums[m] for m in names], "r2", replicates=300, seed=5)
    c = _max_abs_quantile(fam.t_star, 0.95)
    assert c > max(np.quantile(np.abs(fam.t_star[:, p]), 0.95) for p in range(len(fam.pairs)))
    for p, (row, plain) in enumerate(zip(rows, marginal)):
        assert (row["model_a"], row["model_b"]) == (names[fam.pairs[p][0]], names[fam.pairs[p][1]])
        assert row["interval"] == "simultaneous"
        assert row["difference"] == pytest.approx(plain["difference"], rel=1e-12)
        assert row["ci_low"] == pytest.approx(row["difference"] - c * row["se"], rel=1e-9)
        assert row["ci_high"] == pytest.approx(row["difference"] + c * row["se"], rel=1e-9)


def _evaluation(rng, truth, groups=12, per=3):
    k = len(truth)
    clusters = np.repeat(np.arange(groups), per)
    shared = rng.normal(size=(groups, 1)) * 0.15
    scores = np.asarray(truth) + (shared + rng.normal(size=(groups, k)) * 0.06)[clusters] \
        + rng.normal(size=(len(clusters), k)) * 0.1
    return scores, clusters


def test_compare_retrieval_simultaneous_intervals_equal_the_max_t_by_loops():
    """t* recomputed from each bootstrap resample's drawn clusters by loops (CR1 SE of the drawn
    clusters, a cluster drawn twice counting twice), then the max-|t| critical value."""
    import pyarrow as pa

    from embsql.core.resampling import bootstrap_weights
    rng = np.random.default_rng(8)
    scores, clusters = _evaluation(rng, [0.5, 0.45, 0.45, 0.3])
    names, n = ["m0", "m1", "m2", "m3"], len(clusters)
    evaluation = pa.table({"model": [m for m in names for _ in range(n)],
                           "qid": [f"q{i:03d}" for i in range(n)] * 4, "metric": ["ndcg@10"] * (4 * n),
                           "value": scores.T.ravel().tolist(), "group": [f"g{c:02d}" for c in clusters] * 4})
    rows = embsql.compare_retrieval(embsql.connect(), evaluation, group="group", intervals="simultaneous",
                                    permutations=50, replicates=200, seed=4, model="model").to_dicts()
    t_star = _loop_t_star(scores, clusters, bootstrap_weights(12, 200, 4), mr.pairs_of(4))
    c = _max_abs_quantile(t_star, 0.95)
    for row, (a, b) in zip(rows, mr.pairs_of(4)):
        assert (row["model_a"], row["model_b"]) == (names[a], names[b]) and row["interval"] == "simultaneous"
        assert row["ci_low"] == pytest.approx(row["difference"] - c * row["se"], rel=1e-9)
        assert row["ci_high"] == pytest.approx(row["difference"] + c * row["se"], rel=1e-9)
    with pytest.raises(embsql.InputError, match="intervals must be 'marginal' or 'simultaneous'"):
        embsql.compare_retrieval(embsql.connect(), evaluation, group="group", intervals="joint", model="model")


def test_simultaneous_intervals_coverage_seeded_simulation():
    """Five tied models (ten pairs), 40 clusters: all ten simultaneous intervals hold the true
    difference 0 together in >= 90% of 200 draws (nominal 95%), where the ten marginal t
    intervals together fall short (a bound the family must beat)."""
    rng = np.random.default_rng(33)
    together = together_marginal = 0
    from embsql.core.retrieval_comparison import t_interval
    for s in range(200):
        scores, clusters = _evaluation(rng, [0.5] * 5, groups=40)
        _, fam = mr.retrieval_family(scores, clusters, replicates=300, seed=s)
        low, high = mr.simultaneous_intervals(fam, 0.95)
        together += bool(np.all((low <= 0) & (high >= 0)))
        marginal = [t_interval(np.bincount(clusters, weights=scores[:, a] - scores[:, b]),
                               np.bincount(clusters).astype(float), 0.95) for a, b in fam.pairs]
        together_marginal += all(lo <= 0 <= hi for _, _, lo, hi in marginal)
    assert together / 200 >= 0.90
    assert together_marginal / 200 <= 0.85


# ----------------------------------------------------------------------------------------------
# rank_models on a retrieval evaluation

def _loop_t_star(scores, clusters, weights, pairs):
    """t*_jk per resample by loops over the drawn clusters (CR1 SE; a cluster drawn twice counts twice)."""
    out = []
    for w in weights:
        draws = [g for g in range(len(w)) for _ in range(int(w[g]))]
        row = []
        for a, b in pairs:
            d = scores[:, a] - scores[:, b]
            cluster_sum = [d[clusters == g].sum() for g in draws]
            cluster_n = [int((clusters == g).sum()) for g in draws]
            total = sum(cluster_n)
            mean = sum(cluster_sum) / total
            se_star = math.sqrt(len(draws) / (len(draws) - 1)
                                * sum((s - m * mean) ** 2 for s, m in zip(cluster_sum, cluster_n))) / total
            row.append((mean - d.mean()) / se_star if se_star > 0 else 0.0)
        out.append(row)
    return out


def _cr1(values, clusters):
    """(mean, CR1 SE) by loops over the clusters."""
    g = int(clusters.max()) + 1
    mean = values.mean()
    residual = [values[clusters == c].sum() - (clusters == c).sum() * mean for c in range(g)]
    return mean, math.sqrt(g / (g - 1) * sum(r * r for r in residual)) / len(values)


def test_rank_models_on_an_evaluation_equals_the_definition_by_loops():
    import pyarrow as pa
    from scipy import stats

    from embsql.core.resampling import bootstrap_weights
    rng = np.random.default_rng(21)
    scores, clusters = _evaluation(rng, [0.62, 0.5, 0.5, 0.47, 0.3], groups=14)
    names, n, k = ["e", "d", "c", "b", "a"], len(clusters), 5        # display order is a..e
    order = [names.index(m) for m in sorted(names)]
    qid = [f"q{i:03d}" for i in range(n)]
    evaluation = pa.table({"system": [m for m in names for _ in range(n)], "qid": qid * k,
                           "metric": ["ndcg@10"] * (k * n) + [], "value": scores.T.ravel().tolist()})
    queries = pa.table({"qid": qid, "group": [f"t{c:02d}" for c in clusters]})
    con = embsql.connect()
    result = embsql.rank_models(con, evaluation, model="system", queries=embsql.Queries(queries),
                                replicates=300, seed=9)
    assert result.columns == ("system",) + mr.RANK_COLUMNS
    rows = result.to_dicts()
    assert [r["system"] for r in rows] == sorted(names)
    ordered = scores[:, order]                                           # columns in a..e order
    pairs = mr.pairs_of(k)
    t_star = _loop_t_star(ordered, clusters, bootstrap_weights(14, 300, 9), pairs)
    means = ordered.mean(axis=0)
    difference = [means[a] - means[b] for a, b in pairs]
    se = [_cr1(ordered[:, a] - ordered[:, b], clusters)[1] for a, b in pairs]
    low, high = _reference_sets(means, difference, se, t_star, 0.95)
    half = stats.t.ppf(0.975, 13)
    for j, row in enumerate(rows):
        mean, own = _cr1(ordered[:, j], clusters)
        assert row["statistic"] == "ndcg@10" and row["estimate"] == pytest.approx(mean, rel=1e-12)
        assert row["ci_low"] == pytest.approx(mean - half * own, rel=1e-9)
        assert row["ci_high"] == pytest.approx(mean + half * own, rel=1e-9)
        assert (row["rank_low"], row["rank_high"]) == (low[j], high[j])
        assert row["top"] == (low[j] == 1) and row["calibrated"] is False      # 14 clusters
    assert any(r["rank_low"] < r["rank_high"] for r in rows) and any(r["rank_low"] == r["rank_high"] for r in rows)


def test_rank_models_on_an_evaluation_refuses_what_it_cannot_rank():
    import pyarrow as pa
    evaluation = pa.table({"model": ["a"] * 6 + ["b"] * 6, "qid": [f"q{i}" for i in range(6)] * 2,
                           "metric": ["ndcg@10"] * 12, "value": [0.5, 0.6, 0.7, 0.2, 0.9, 0.4] * 2})
    con = embsql.connect()
    with pytest.raises(embsql.InputError, match="structure statistic"):
        embsql.rank_models(con, evaluation, statistic="r2")
    with pytest.raises(embsql.InputError, match="no rows for metric 'map@10'"):
        embsql.rank_models(con, evaluation, statistic="map@10")
    with pytest.raises(embsql.InputError, match="takes group= and model="):
        embsql.rank_models(con, evaluation, vector="value")


# ----------------------------------------------------------------------------------------------
# the report's ranking section (named in sections=) and the verdict sentence it gives

def test_report_ranking_section_and_verdict(tmp_path):
    import json

    import duckdb
    path = tmp_path / "three.parquet"
    duckdb.connect().execute(
        f"""COPY (SELECT * FROM 'examples/embeddings.parquet' UNION ALL BY NAME
               SELECT * REPLACE ('mini-64' AS model, embedding[1:64] AS embedding)
               FROM 'examples/embeddings.parquet' WHERE model = 'mini-384') TO '{path}'""")
    result = embsql.report(str(path), vector="embedding", group="topic", model="model", permutations=0,
                           replicates=300, seed=4, sections=["ranking"]).run()
    rows = result["ranking"].to_dicts()
    con = embsql.connect()
    direct = embsql.rank_models(con, str(path), group="topic", vector="embedding", model="model", replicates=300,
                                seed=4).to_dicts()
    # the section orders by rank (rank_models by model)
    direct.sort(key=lambda r: (r["rank"], r["rank_low"], r["rank_high"], r["model"]))
    assert [(r["model"], r["rank_low"], r["rank_high"], r["top"]) for r in rows] == \
        [(r["model"], r["rank_low"], r["rank_high"], r["top"]) for r in direct]
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    assert [(r["model"], r["rank_low"], r["rank_high"]) for r in rows][0] == ("base-768", 1, 1)
    assert {(r["model"], r["rank_low"], r["rank_high"]) for r in rows[1:]} == {("mini-384", 2, 3), ("mini-64", 2, 3)}
    assert result.verdict[0].endswith("Ranked by R² with 95% simultaneous rank sets: base-768 is first (rank 1–1); "
                                      "mini-64 and mini-384 cannot be ordered (ranks 2–3).")
    assert [s["name"] for s in json.loads(result.to_json())["sections"]] == ["ranking"]
    assert result["ranking"].columns == ("metric", "model") + mr.RANK_COLUMNS
    assert {r["metric"] for r in rows} == {"R²"}
    assert "Rank confidence sets of the models" in result.to_html() and "rank_high" in result.to_text(full=True)
    # by default (no sections named) the ranking runs, first: right after the verdict in JSON, text and HTML
    default = embsql.report(str(path), vector="embedding", group="topic", model="model", permutations=0,
                            replicates=300, seed=4).run()
    assert [s["name"] for s in json.loads(default.to_json())["sections"]][:2] == ["ranking", "decomposition"]
    assert default["ranking"].to_dicts() == result["ranking"].to_dicts()
    from embsql.render.formats import to_text
    text = to_text(default, color=False, width=100)
    assert text.index("cannot be ordered") < text.index("Rank confidence sets") < text.index("Summary")
    assert "base-768 1 [1–1]*  mini-64 2 [2–3]  mini-384 3 [2–3]" in text
    html = default.to_html()
    assert html.index('id="verdict"') < html.index('id="section-ranking"') < html.index('id="summary"')
    section = html[html.index('id="section-ranking"'):html.index('id="summary"')]
    assert section.count("<img") == 1 and "simultaneous rank set" in section
    headings = [line for line in default.to_markdown().splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Rank confidence sets of the models", "## Summary", "## Sum-of-squares decomposition"]
    assert not any(s.startswith("Ranked by R²: ") for s in default.verdict)   # the point-estimate order is gone
    con.execute(f"CREATE VIEW three AS SELECT * FROM '{path}'")
    for statistic, calibrated in (("r2", True), ("f", False)):      # simultaneous coverage measured for R² only
        pairs = embsql.compare_structure(con, "three", group="topic", vector="embedding", model="model", item="item",
                               statistic=statistic, replicates=50, intervals="simultaneous").to_dicts()
        assert [r["calibrated"] for r in pairs] == [calibrated] * 3


def test_verdict_names_a_tie_at_the_top():
    from embsql.reporting.verdict import ranking_sentence
    rows = [{"model": m, "estimate": e, "rank_low": lo, "rank_high": hi, "top": lo == 1, "level": 0.9}
            for m, e, lo, hi in (("a", 0.5, 1, 2), ("b", 0.49, 1, 2), ("c", 0.1, 3, 3))]
    assert ranking_sentence(rows) == ("Ranked by R² with 90% simultaneous rank sets: these 2 models are tied for the top: "
                                      "a and b (ranks 1–2); c is third (rank 3–3). These sets are rough: their "
                                      "coverage was not shown for this design.")
    for row in rows:
        row["calibrated"] = True
    rows[1]["rank_high"] = 3                                         # two sets at the top: the tie named first
    assert ranking_sentence(rows) == ("Ranked by R² with 90% simultaneous rank sets: a and b could each be first; "
                                      "a ranks 1–2; b ranks 1–3; c is third (rank 3–3).")
    assert ranking_sentence(rows, "nDCG@10").startswith("Ranked by nDCG@10 with 90% simultaneous rank sets: ")
    assert ranking_sentence(rows[:1]) == ""


def test_structure_family_refuses_models_whose_groups_differ_with_a_catalogue_kind():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(12, 3))
    a = canonical(GroupSums.from_rows(np.repeat(["g1", "g2", "g3"], 4), v))
    b = canonical(GroupSums.from_rows(np.repeat(["g1", "g2", "g4"], 4), v))
    with pytest.raises(embsql.InputError, match="group 'g3' is in one and not the other") as raised:
        mr.structure_family([a, b], "r2", replicates=10, seed=1)
    assert raised.value.kind == "model.unpaired_groups"
