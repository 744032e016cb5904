"""Rank confidence sets of the other evaluation families (issue 33, item 3): similarity (Spearman and
Pearson against human scores), classification (accuracy and macro-F1) and CKA with a reference model.

References: the sets recomputed from the definition (Mogstad, Romano, Shaikh and Wilhelm's step-down,
test_model_ranking._reference_sets) by explicit loops on the given replicates: the joint normal
draws x* = V diag(sqrt(lambda)) z of the covariance (z the given standard normal draws, the
covariance recomputed by loops over items and dyads, or over the jackknife's deleted units), the
delete-one macro-F1 by loops with sklearn's f1_score, the correlations by scipy, the cluster
bootstrap of accuracy by loops over the drawn clusters.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from test_model_ranking import _cr1, _loop_t_star, _reference_sets

from embsql.core import model_ranking as mr
from embsql.core import similarity as sim
from embsql.core.classification import jackknife_macro_f1
from embsql.core.resampling import bootstrap_weights


def _draws_t_star(covariance, seed, replicates, pairs):
    """t*_jk of the joint normal draws, by loops: x* = V sqrt(max(lambda, 0)) z per draw, z given
    (numpy's standard normals of ``seed``), t*_jk = (x*_j - x*_k) / sqrt(V_jj + V_kk - 2 V_jk)."""
    k = len(covariance)
    z = np.random.default_rng(seed).standard_normal((replicates, k))
    values, vectors = np.linalg.eigh(covariance)
    out = []
    for r in range(replicates):
        x = [sum(vectors[j][m] * math.sqrt(max(values[m], 0.0)) * z[r][m] for m in range(k)) for j in range(k)]
        row = []
        for a, b in pairs:
            sd = math.sqrt(max(covariance[a][a] + covariance[b][b] - 2 * covariance[a][b], 0.0))
            row.append((x[a] - x[b]) / sd if sd > 0 else 0.0)
        out.append(row)
    return out


def _pairs_design(rng, items=40, n=160):
    a = rng.integers(0, items, size=n)
    b = (a + rng.integers(1, items, size=n)) % items          # never the item itself; items recur
    return a, b


@pytest.mark.parametrize("statistic", ["spearman", "pearson"])
def test_similarity_sets_equal_the_definition_by_loops(statistic):
    rng = np.random.default_rng(17)
    a, b = _pairs_design(rng)
    score = rng.normal(size=len(a))
    item_effect = rng.normal(size=40)
    cosines = [score * w + (item_effect[a] + item_effect[b]) * 0.3 + rng.normal(size=len(a)) * s
               for w, s in ((1.0, 0.5), (0.8, 0.9), (0.8, 0.95), (0.2, 1.0))]
    pairs = sim.Pairs(score, a, b, 40)
    rows = sim.similarity_rows(["w", "x", "y", "z"], pairs, cosines, statistic, replicates=300, seed=6, level=0.9)
    reference = stats.spearmanr if statistic == "spearman" else stats.pearsonr
    estimates = [reference(c, score)[0] for c in cosines]
    assert [r["estimate"] for r in rows] == pytest.approx(estimates, abs=1e-12)
    # the covariance by loops over the items and the dyads (unordered pairs of items)
    psi = [sim.influences(pairs, c)[statistic][1] for c in cosines]
    n, k = len(a), len(cosines)
    covariance = [[0.0] * k for _ in range(k)]
    for j in range(k):
        for m in range(k):
            total = 0.0
            for i in range(40):
                touching = [p for p in range(n) if a[p] == i or b[p] == i]
                s_j = sum(psi[j][p] for p in range(n) if a[p] == i) + sum(psi[j][p] for p in range(n) if b[p] == i)
                s_m = sum(psi[m][p] for p in range(n) if a[p] == i) + sum(psi[m][p] for p in range(n) if b[p] == i)
                total += s_j * s_m / max(n - len(touching), 1) ** 2
            for dyad in {(min(x, y), max(x, y)) for x, y in zip(a, b)}:
                members = [p for p in range(n) if (min(a[p], b[p]), max(a[p], b[p])) == dyad]
                total -= sum(psi[j][p] for p in members) * sum(psi[m][p] for p in members) / \
                    max(n - len(members), 1) ** 2
            covariance[j][m] = total
    pair_list = mr.pairs_of(k)
    t_star = _draws_t_star(np.array(covariance), 6, 300, pair_list)
    difference = [estimates[x] - estimates[y] for x, y in pair_list]
    se = [sim.difference(pairs, cosines[x], cosines[y], 0.9)[statistic].se for x, y in pair_list]   # the compare SE
    low, high = _reference_sets(estimates, difference, se, t_star, 0.9)
    assert [(r["rank_low"], r["rank_high"]) for r in rows] == list(zip(low, high))
    assert [r["top"] for r in rows] == [x == 1 for x in low]
    assert any(x < y for x, y in zip(low, high)) and low[0] == high[0] == 1   # a tie left open, the best placed
    own = [sim.evaluate(pairs, c, 0.9)[statistic] for c in cosines]
    assert [(r["ci_low"], r["ci_high"]) for r in rows] == [(c.ci_low, c.ci_high) for c in own]
    # 40 distinct items: calibrated from 30 on (validation/rank_sets_families.py); on 20 items it is not
    assert all(r["calibrated"] is True and r["statistic"] == statistic for r in rows)
    few = a < 20
    small = sim.Pairs(score[few & (b < 20)], a[few & (b < 20)], b[few & (b < 20)], 20)
    assert not any(r["calibrated"] for r in sim.similarity_rows(
        ["w", "x", "y", "z"], small, [c[few & (b < 20)] for c in cosines], statistic, replicates=50, seed=6))


def _macro_f1_loops(truth, predicted):
    from sklearn.metrics import f1_score

    labels = sorted(set(truth.tolist()) | set(predicted.tolist()))
    return f1_score(truth, predicted, labels=labels, average="macro", zero_division=0)


def test_macro_f1_sets_equal_the_definition_by_loops():
    """macro-F1 of three classifiers on the same items, clustered: the delete-one-cluster replicates
    by loops with sklearn, the jackknife covariance by loops, then the sets from the given draws."""
    rng = np.random.default_rng(4)
    clusters = np.repeat(np.arange(24), 5)
    truth = rng.integers(0, 4, size=len(clusters))
    predicted = [np.where(rng.uniform(size=len(truth)) < p, truth, rng.integers(0, 4, size=len(truth)))
                 for p in (0.9, 0.6, 0.58)]
    values = []
    for guess in predicted:
        full = _macro_f1_loops(truth, guess)
        deleted = jackknife_macro_f1(truth, guess, 4, clusters, 24)
        loops = [_macro_f1_loops(truth[clusters != g], guess[clusters != g]) for g in range(24)]
        assert deleted == pytest.approx(loops, abs=1e-12)
        values.append(np.concatenate([[full], loops]))
    rows = mr.jackknife_rows(["p", "q", "r"], values, "macro_f1", replicates=400, seed=2)
    estimates = [v[0] for v in values]
    g = 24
    means = [sum(v[1:]) / g for v in values]
    covariance = [[(g - 1) / g * sum((values[j][1 + u] - means[j]) * (values[m][1 + u] - means[m]) for u in range(g))
                   for m in range(3)] for j in range(3)]
    pair_list = mr.pairs_of(3)
    t_star = _draws_t_star(np.array(covariance), 2, 400, pair_list)
    se = [math.sqrt(covariance[x][x] + covariance[y][y] - 2 * covariance[x][y]) for x, y in pair_list]
    low, high = _reference_sets(estimates, [estimates[x] - estimates[y] for x, y in pair_list], se, t_star, 0.95)
    assert [(r["rank_low"], r["rank_high"]) for r in rows] == list(zip(low, high)) == [(1, 1), (2, 3), (2, 3)]
    half = stats.t.ppf(0.975, g - 1)
    for j, row in enumerate(rows):
        assert row["estimate"] == pytest.approx(estimates[j], abs=1e-12)
        assert row["ci_low"] == pytest.approx(estimates[j] - half * math.sqrt(covariance[j][j]), abs=1e-12)


def test_accuracy_sets_equal_the_definition_by_loops():
    """Accuracy as the mean of each item's 0/1 correctness, the items clustered: the cluster
    bootstrap's t* by loops over the drawn clusters; calibrated is false (coverage not simulated)."""
    rng = np.random.default_rng(12)
    clusters = np.repeat(np.arange(16), 4)
    correct = np.stack([rng.uniform(size=len(clusters)) < p for p in (0.9, 0.62, 0.6, 0.3)], axis=1).astype(float)
    rows = mr.retrieval_rows(["a", "b", "c", "d"], correct, clusters, "accuracy", replicates=200, seed=3,
                             calibrated_from=None)
    pair_list = mr.pairs_of(4)
    t_star = _loop_t_star(correct, clusters, bootstrap_weights(16, 200, 3), pair_list)
    means = correct.mean(axis=0)
    se = [_cr1(correct[:, x] - correct[:, y], clusters)[1] for x, y in pair_list]
    low, high = _reference_sets(means, [means[x] - means[y] for x, y in pair_list], se, t_star, 0.95)
    assert [(r["rank_low"], r["rank_high"]) for r in rows] == list(zip(low, high))
    assert [r["estimate"] for r in rows] == pytest.approx(means.tolist(), abs=1e-12)
    assert all(r["calibrated"] is False for r in rows)


def test_cka_sets_from_the_paired_jackknife_of_compare_cka():
    """CKA with a reference model: the estimates and each pair's SE are compare_cka's (debiased CKA,
    paired jackknife over the groups); the sets follow the definition on the given draws."""
    import pyarrow as pa

    import embsql
    rng = np.random.default_rng(9)
    items, d = 60, 6
    base = rng.normal(size=(items, d))
    models = {"ref": base, "near": base + rng.normal(size=(items, d)) * 0.3,
              "mid": base + rng.normal(size=(items, d)) * 1.2, "far": rng.normal(size=(items, d))}
    table = pa.table({"model": [m for m in models for _ in range(items)], "item": list(range(items)) * len(models),
                      "topic": [i // 4 for i in range(items)] * len(models),
                      "v": [list(map(float, row)) for m in models for row in models[m]]})
    con = embsql.connect()
    ranked = embsql.rank_models(con, table, vector="v", model="model", group="topic", statistic="cka",
                                reference="ref", replicates=300, seed=5).to_dicts()
    compared = embsql.compare_cka(con, table, reference="ref", model="model", item="item", vector="v",
                                  group="topic", debiased=True).to_dicts()
    cka = {}
    for row in compared:
        cka[row["model_a"]], cka[row["model_b"]] = row["cka_a"], row["cka_b"]
    assert [r["model"] for r in ranked] == ["far", "mid", "near"]
    assert [r["estimate"] for r in ranked] == pytest.approx([cka[m] for m in ("far", "mid", "near")], abs=1e-12)
    assert [(r["rank_low"], r["rank_high"]) for r in ranked] == [(3, 3), (2, 2), (1, 1)]
    assert ranked[2]["top"] and not ranked[0]["top"] and all(r["statistic"] == "cka" for r in ranked)
    # calibrated from 30 units of the jackknife on: not with these 15 groups, yes with the 60 items alone
    assert not any(r["calibrated"] for r in ranked)
    alone = embsql.rank_models(con, table, vector="v", model="model", statistic="cka", reference="ref",
                               replicates=50, seed=5).to_dicts()
    assert all(r["calibrated"] for r in alone)


def test_the_report_ranks_every_family_it_ran_as_rank_models_does(tmp_path):
    """A report with pairs= and label= of three models: the ranking section has one block per family
    (R², Spearman, k-NN accuracy), first, each equal to rank_models on the same data; the verdict
    speaks from each block."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    import embsql
    rng = np.random.default_rng(7)
    items, dim = 90, 8
    label = np.repeat(np.arange(6), items // 6)
    latent = rng.normal(size=(items, dim)) + 1.5 * np.eye(dim)[label]
    rows = []
    for model, noise in (("sharp", 0.2), ("mid", 1.0), ("blur", 2.5)):
        vectors = latent + noise * rng.normal(size=latent.shape)
        rows += [(model, f"i{i:02d}", f"t{label[i]}", f"c{label[i] % 3}", vectors[i].tolist()) for i in range(items)]
    emb = tmp_path / "emb.parquet"
    pq.write_table(pa.table({"model": [r[0] for r in rows], "item": [r[1] for r in rows], "topic": [r[2] for r in rows],
                             "kind": [r[3] for r in rows], "vector": [r[4] for r in rows]}), emb)
    a, b = rng.integers(0, items, 300), rng.integers(0, items, 300)
    keep = a != b
    unit = latent / np.linalg.norm(latent, axis=1, keepdims=True)
    gold = np.einsum("ij,ij->i", unit[a[keep]], unit[b[keep]]) + 0.1 * rng.normal(size=int(keep.sum()))
    pairs = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"item_a": [f"i{i:02d}" for i in a[keep]], "item_b": [f"i{j:02d}" for j in b[keep]],
                             "score": gold}), pairs)
    result = embsql.report(str(emb), vector="vector", group="topic", model="model", item="item", permutations=0,
                           replicates=300, pairs=str(pairs), label="kind").run()
    assert [s["name"] for s in json.loads(result.to_json())["sections"]][0] == "ranking"
    blocks = {}
    for row in result["ranking"].to_dicts():
        blocks.setdefault(row["metric"], []).append(row)
    assert list(blocks) == ["R²", "Spearman", "accuracy"]
    con = embsql.connect()
    per_item = embsql.knn_classify(con, str(emb), label="kind", item="item", group="topic", per_item=True, vector="vector",
                                   model="model")
    direct = {
        "R²": embsql.rank_models(con, str(emb), group="topic", vector="vector", model="model", replicates=300),
        "Spearman": embsql.rank_models(con, str(emb), vector="vector", model="model", pairs=str(pairs),
                                       replicates=300),
        "accuracy": embsql.rank_models(con, per_item, statistic="accuracy", group="group", replicates=300)}
    for metric, table in direct.items():
        # the section orders each block by rank (rank_models by model)
        theirs = sorted(table.to_dicts(), key=lambda r: (r["rank"], r["rank_low"], r["rank_high"], str(r["model"])))
        assert [r["model"] for r in blocks[metric]] == [r["model"] for r in theirs]
        assert [r["estimate"] for r in blocks[metric]] == pytest.approx([r["estimate"] for r in theirs], abs=1e-12)
        assert [(r["rank_low"], r["rank_high"], r["top"]) for r in blocks[metric]] == \
            [(r["rank_low"], r["rank_high"], r["top"]) for r in theirs]
    assert [(r["model"], r["rank_low"]) for r in blocks["Spearman"] if r["top"]] == [("sharp", 1)]
    said = " ".join(result.verdict)
    assert "Ranked by Spearman with 95% simultaneous rank sets: sharp is first (rank 1–1)" in said
    assert "Ranked by accuracy with 95% simultaneous rank sets:" in said
    macro = embsql.rank_models(con, per_item, statistic="macro_f1", group="group", replicates=300).to_dicts()
    assert [r["statistic"] for r in macro] == ["macro_f1"] * 3 and macro[2]["model"] == "sharp" and macro[2]["top"]


def test_compare_classification_simultaneous_intervals_equal_the_max_t_by_loops():
    """intervals='simultaneous': difference -/+ c se, se the CR1 SE of the per-item difference and c
    the max-|t| quantile of the joint cluster bootstrap, t* recomputed by loops over the drawn clusters."""
    import pyarrow as pa
    from test_model_ranking import _max_abs_quantile

    import embsql
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(15), 4)
    correct = np.stack([rng.uniform(size=len(clusters)) < p for p in (0.85, 0.6, 0.55)], axis=1)
    names = ["a", "b", "c"]
    predictions = pa.table({"model": [m for m in names for _ in clusters], "item": [f"i{i:02d}" for i in
                                                                                 range(len(clusters))] * 3,
                            "correct": correct.T.ravel().tolist(), "group": [f"g{c:02d}" for c in clusters] * 3})
    con = embsql.connect()
    rows = embsql.compare_classification(con, predictions, group="group", permutations=300, seed=8,
                                         intervals="simultaneous", replicates=250, model="model", item="item").to_dicts()
    marginal = embsql.compare_classification(con, predictions, group="group", permutations=300, seed=8, model="model",
                                             item="item").to_dicts()
    t_star = _loop_t_star(correct.astype(float), clusters, bootstrap_weights(15, 250, 8), mr.pairs_of(3))
    c = _max_abs_quantile(t_star, 0.95)
    for row, other, (x, y) in zip(rows, marginal, mr.pairs_of(3)):
        se = _cr1(correct[:, x].astype(float) - correct[:, y], clusters)[1]
        assert row["interval"] == "simultaneous" and row["se"] == pytest.approx(se, rel=1e-12)
        assert row["ci_low"] == pytest.approx(max(-1.0, row["difference"] - c * se), rel=1e-9)
        assert row["ci_high"] == pytest.approx(min(1.0, row["difference"] + c * se), rel=1e-9)
        assert row["p_value"] == other["p_value"] and row["difference"] == other["difference"]
    assert "interval" not in marginal[0]
    with pytest.raises(embsql.InputError, match="intervals must be 'marginal' or 'simultaneous'"):
        embsql.compare_classification(con, predictions, intervals="joint", model="model", item="item")


def test_compare_cka_simultaneous_intervals_from_the_given_draws_by_loops():
    """intervals='simultaneous': the marginal centre -/+ c se, c the 95% max-|t| over the pairs in
    normal draws with the jackknife covariance of the debiased CKAs (recomputed by loops)."""
    import pyarrow as pa
    from test_model_ranking import _max_abs_quantile

    import embsql
    from embsql.core.geometry import reference_values
    rng = np.random.default_rng(3)
    items, d = 40, 5
    base = rng.normal(size=(items, d))
    models = {"ref": base, "a": base + rng.normal(size=(items, d)) * 0.5, "b": base + rng.normal(size=(items, d)),
              "c": base + rng.normal(size=(items, d)) * 1.1}
    table = pa.table({"model": [m for m in models for _ in range(items)], "item": list(range(items)) * 4,
                      "v": [list(map(float, row)) for m in models for row in models[m]]})
    con = embsql.connect()
    marginal = embsql.compare_cka(con, table, reference="ref", model="model", item="item", vector="v").to_dicts()
    rows = embsql.compare_cka(con, table, reference="ref", model="model", item="item", vector="v",
                              intervals="simultaneous", seed=7).to_dicts()
    from embsql.api.driver import model_rows
    values = reference_values(model_rows(con, table, "item", "model", "v")[0], "ref", groups=None, group="group",
                              common=False, model="model")[0]
    names = sorted(values)
    replicates = [values[m].debiased for m in names]
    g = items
    means = [sum(r[1:]) / g for r in replicates]
    covariance = np.array([[(g - 1) / g * sum((replicates[j][1 + u] - means[j]) * (replicates[k][1 + u] - means[k])
                                              for u in range(g)) for k in range(3)] for j in range(3)])
    c = _max_abs_quantile(_draws_t_star(covariance, 7, 2000, mr.pairs_of(3)), 0.95)
    for row, other in zip(rows, marginal):
        assert row["interval"] == "simultaneous" and row["p_value"] == other["p_value"]
        centre = (other["ci_low"] + other["ci_high"]) / 2
        assert row["ci_low"] == pytest.approx(centre - c * row["se"], abs=1e-9)
        assert row["ci_high"] == pytest.approx(centre + c * row["se"], abs=1e-9)
        assert row["ci_high"] - row["ci_low"] > other["ci_high"] - other["ci_low"]


def _family_tables(rng):
    """(retrieval evaluation, predictions, embeddings, gold pairs, CKA embeddings) of three or four
    models, with clusters, as Arrow tables."""
    import pyarrow as pa
    g = 36
    evaluation = pa.table({"system": [m for m in ("a", "b", "c") for _ in range(2 * g)],
                           "qid": [f"q{i}" for i in range(2 * g)] * 3, "metric": ["ndcg@10"] * 6 * g,
                           "value": np.concatenate([rng.random(2 * g) + s for s in (0.3, 0.0, 0.05)]),
                           "topic": [f"t{i // 2}" for i in range(2 * g)] * 3})
    items = 90
    label = rng.integers(0, 3, items)
    predictions = {"model": [], "item": [], "correct": [], "label": [], "predicted": [], "src": []}
    for model, p in (("x", 0.9), ("y", 0.7), ("z", 0.68)):
        guess = np.where(rng.random(items) < p, label, (label + 1) % 3)
        predictions["model"] += [model] * items
        predictions["item"] += [f"i{i}" for i in range(items)]
        predictions["correct"] += (guess == label).tolist()
        predictions["label"] += [f"c{v}" for v in label]
        predictions["predicted"] += [f"c{v}" for v in guess]
        predictions["src"] += [f"s{i // 3}" for i in range(items)]
    latent = rng.normal(size=(40, 5))
    vectors = {m: latent + s * rng.normal(size=latent.shape) for m, s in (("sharp", 0.2), ("mid", 0.8), ("blur", 0.9))}
    embeddings = pa.table({"model": [m for m in vectors for _ in range(40)], "item": [f"w{i}" for i in range(40)] * 3,
                           "vector": [list(map(float, r)) for m in vectors for r in vectors[m]]})
    a, b = _pairs_design(rng)
    unit = latent / np.linalg.norm(latent, axis=1, keepdims=True)
    pairs = pa.table({"item_a": [f"w{i}" for i in a], "item_b": [f"w{j}" for j in b],
                      "score": np.einsum("ij,ij->i", unit[a], unit[b]) + 0.1 * rng.normal(size=len(a))})
    base = rng.normal(size=(60, 6))
    cka = {"ref": base, "near": base + rng.normal(size=(60, 6)) * 0.3, "mid": base + rng.normal(size=(60, 6)),
           "far": rng.normal(size=(60, 6))}
    geometry = pa.table({"m": [m for m in cka for _ in range(60)], "item": list(range(60)) * 4,
                         "topic": [i // 4 for i in range(60)] * 4,
                         "v": [list(map(float, row)) for m in cka for row in cka[m]]})
    return evaluation, pa.table(predictions), embeddings, pairs, geometry


def test_the_sql_rank_faces_of_every_family_equal_rank_models():
    """emb_rank_retrieval, emb_rank_classification (accuracy and macro-F1), emb_rank_similarity and
    emb_rank_cka give rank_models' rows (every column, the model under its own name) on the same
    data and seed."""
    import embsql
    con = embsql.connect()
    evaluation, predictions, embeddings, pairs, geometry = _family_tables(np.random.default_rng(23))
    for name, table in (("ev", evaluation), ("preds", predictions), ("emb", embeddings), ("gold", pairs),
                        ("geo", geometry)):
        con.register(name, table)
    cases = [
        ("SELECT * FROM emb_rank_retrieval('ev', model := 'system', \"group\" := 'topic', replicates := 300, "
         "seed := 4, level := 0.9)",
         embsql.rank_models(con, evaluation, model="system", group="topic", replicates=300, seed=4, level=0.9)),
        ("SELECT * FROM emb_rank_classification('preds', \"group\" := 'src', replicates := 300, seed := 4)",
         embsql.rank_models(con, predictions, statistic="accuracy", group="src", replicates=300, seed=4)),
        ("SELECT * FROM emb_rank_classification('preds', statistic := 'macro_f1', replicates := 300, seed := 4)",
         embsql.rank_models(con, predictions, statistic="macro_f1", replicates=300, seed=4)),
        ("SELECT * FROM emb_rank_similarity('gold', 'emb', statistic := 'pearson', replicates := 300, seed := 4)",
         embsql.rank_models(con, embeddings, vector="vector", model="model", pairs=pairs, statistic="pearson",
                            replicates=300, seed=4)),
        ("SELECT * FROM emb_rank_cka('geo', 'item', 'v', 'ref', model := 'm', \"group\" := 'topic', replicates := 300, "
         "seed := 4)",
         embsql.rank_models(con, geometry, vector="v", model="m", group="topic", statistic="cka", reference="ref",
                            replicates=300, seed=4)),
    ]
    for sql, python in cases:
        got = con.sql(sql)
        want = python.to_dicts()
        assert got.columns == list(want[0]), sql
        rows = [dict(zip(got.columns, r)) for r in got.fetchall()]
        assert len(rows) == len(want) >= 3, sql
        for mine, theirs in zip(rows, want):
            for column, value in theirs.items():
                if isinstance(value, float):
                    assert mine[column] == pytest.approx(value, abs=1e-12), (sql, column)
                else:
                    assert mine[column] == value, (sql, column)
        # the sets are not all trivial: some model is ordered against another
        assert any(r["rank_high"] - r["rank_low"] < 2 for r in rows), sql


def test_the_sql_compare_faces_give_the_simultaneous_intervals_of_python():
    """emb_compare_retrieval and emb_compare_classification with intervals := 'simultaneous' and
    replicates := give compare_retrieval's and compare_classification's intervals, say
    'simultaneous' in the interval column, and are wider than the marginal ones (K = 3)."""
    import embsql
    con = embsql.connect()
    evaluation, predictions, *_ = _family_tables(np.random.default_rng(29))
    con.register("ev", evaluation)
    con.register("preds", predictions)
    for sql, python in (
            ("SELECT * FROM emb_compare_retrieval('ev', model := 'system', \"group\" := 'topic', "
             "intervals := '{}', replicates := 400, seed := 8, permutations := 99)",
             lambda kind: embsql.compare_retrieval(con, evaluation, model="system", group="topic", intervals=kind,
                                                   replicates=400, seed=8, permutations=99)),
            ("SELECT * FROM emb_compare_classification('preds', \"group\" := 'src', intervals := '{}', "
             "replicates := 400, seed := 8, permutations := 99)",
             lambda kind: embsql.compare_classification(con, predictions, group="src", intervals=kind,
                                                        replicates=400, seed=8, permutations=99, model="model", item="item"))):
        rows = {}
        for kind in ("marginal", "simultaneous"):
            got = con.sql(sql.format(kind))
            rows[kind] = [dict(zip(got.columns, r)) for r in got.fetchall()]
            assert {r["interval"] for r in rows[kind]} == {kind}
        theirs = python("simultaneous").to_dicts()
        assert [r[e] for r in rows["simultaneous"] for e in ("ci_low", "ci_high")] == \
            pytest.approx([r[e] for r in theirs for e in ("ci_low", "ci_high")], abs=1e-12)
        assert [r["interval"] for r in theirs] == ["simultaneous"] * 3
        for m, s in zip(rows["marginal"], rows["simultaneous"]):
            assert s["ci_high"] - s["ci_low"] > m["ci_high"] - m["ci_low"]
            assert s["p_value"] == m["p_value"]


def _tied_classifiers(rng, k, groups, items=3, classes=3):
    """K tied classifiers on the same clustered items (the design of validation/rank_sets_families.py):
    a cluster difficulty and an item difficulty shared by the models, a model-by-cluster effect."""
    n = groups * items
    clusters = np.repeat(np.arange(groups), items)
    latent = (rng.normal(size=groups)[clusters][:, None] + 0.5 * rng.normal(size=(groups, k))[clusters]
              + 0.5 * rng.normal(size=(n, 1)) + rng.normal(size=(n, k)) + 0.5)
    labels = rng.integers(0, classes, n)
    wrong = (labels[:, None] + 1 + rng.integers(0, 2, (n, k))) % classes
    return labels, np.where(latent > 0, labels[:, None], wrong), clusters


def test_classification_rank_sets_and_simultaneous_intervals_hold_together_seeded():
    """Five tied classifiers (ten pairs), 30 clusters, 150 data sets: the rank sets by accuracy and
    by macro-F1 order no pair (falsely) in >= 88% of data sets and all ten simultaneous intervals
    of accuracy hold the true difference 0 together in >= 88% (nominal 95%; 88% is 3.5 Monte Carlo
    SEs below), where the ten marginal t intervals together hold in <= 85% (a bound the family must
    beat, and which it would fail were c the marginal t quantile)."""
    from embsql.core.classification import jackknife_macro_f1, macro_f1
    from embsql.core.retrieval_comparison import t_interval
    rng = np.random.default_rng(41)
    runs, k, groups = 150, 5, 30
    sets_acc = sets_f1 = simultaneous = marginal = 0
    for r in range(runs):
        labels, predicted, clusters = _tied_classifiers(rng, k, groups)
        correct = (predicted == labels[:, None]).astype(float)
        means, fam = mr.retrieval_family(correct, clusters, replicates=200, seed=r)
        sets_acc += not mr.rank_sets(means, fam, 0.95).better.any()
        low, high = mr.simultaneous_intervals(fam, 0.95)
        simultaneous += bool(np.all((low <= 0) & (0 <= high)))
        together = True
        for a, b in fam.pairs:
            sums = np.bincount(clusters, weights=correct[:, a] - correct[:, b], minlength=groups)
            _, _, lo, hi = t_interval(sums, np.bincount(clusters, minlength=groups).astype(float), 0.95)
            together &= lo <= 0 <= hi
        marginal += together
        values = np.stack([np.concatenate([[macro_f1(labels, predicted[:, m], 3)],
                                           jackknife_macro_f1(labels, predicted[:, m], 3, clusters, groups)])
                           for m in range(k)], axis=1)
        normal = mr.normal_family(values[0], mr.jackknife_covariance(values[1:]), replicates=200, seed=r)
        sets_f1 += not mr.rank_sets(values[0], normal, 0.95).better.any()
    assert sets_acc / runs >= 0.88 and sets_f1 / runs >= 0.88 and simultaneous / runs >= 0.88
    assert marginal / runs <= 0.85


def test_compare_similarity_simultaneous_intervals_from_the_given_draws_by_loops():
    """compare_similarity(intervals='simultaneous'): per correlation, difference -/+ c se with se
    the marginal row's (the paired dyadic SE) and c the 95% quantile of max |t*| over the three
    pairs, t* recomputed by loops from the given standard normal draws of the correlations'
    covariance; the p-values stay the marginal rows'."""
    import embsql
    evaluation, predictions, embeddings, pairs, _ = _family_tables(np.random.default_rng(31))
    con = embsql.connect()
    marginal = embsql.compare_similarity(con, pairs, embeddings, vector="vector", model="model", item="item").to_dicts()
    joint = embsql.compare_similarity(con, pairs, embeddings, intervals="simultaneous", replicates=300,
                                      seed=12, vector="vector", model="model", item="item").to_dicts()
    names = sorted({r["model_a"] for r in marginal} | {r["model_b"] for r in marginal})
    items = sorted({i for column in ("item_a", "item_b") for i in pairs.column(column).to_pylist()})
    code = {i: n for n, i in enumerate(items)}
    a = np.array([code[i] for i in pairs.column("item_a").to_pylist()])
    b = np.array([code[i] for i in pairs.column("item_b").to_pylist()])
    coded = sim.Pairs(np.asarray(pairs.column("score").to_pylist()), a, b, len(items))
    vectors = {m: {} for m in names}
    for m, item, v in zip(*(embeddings.column(c).to_pylist() for c in ("model", "item", "vector"))):
        vectors[m][item] = np.asarray(v) / np.linalg.norm(v)
    cosines = [np.array([vectors[m][items[x]] @ vectors[m][items[y]] for x, y in zip(a, b)]) for m in names]
    for statistic in ("spearman", "pearson"):
        psi = np.stack([sim.influences(coded, c)[statistic][1] for c in cosines], axis=1)
        covariance = sim.dyadic_covariance(psi, a, b, len(items), coded.dyads)
        t_star = _draws_t_star(covariance.tolist(), 12, 300, mr.pairs_of(3))
        c = float(np.quantile([max(abs(t) for t in row) for row in t_star], 0.95))
        rows = [(m, j) for m, j in zip(marginal, joint) if m["correlation"] == statistic]
        assert len(rows) == 3
        for m, j in rows:
            assert j["interval"] == "simultaneous" and j["p_value"] == m["p_value"]
            assert j["ci_low"] == pytest.approx(m["difference"] - c * m["se"], rel=1e-9, abs=1e-12)
            assert j["ci_high"] == pytest.approx(m["difference"] + c * m["se"], rel=1e-9, abs=1e-12)
            assert j["ci_high"] - j["ci_low"] > m["ci_high"] - m["ci_low"]


def _dyadic_covariance_by_loops(psi, a, b, items):
    """sum_i S_i S_i^T / (n - m_i)^2 - sum_d D_d D_d^T / (n - m_d)^2 by loops over the items and the
    dyads (S_i: the influence values of the pairs that contain item i, summed; D_d: those of the
    pairs of the same two items; m: how many pairs)."""
    n, k = psi.shape
    cov = [[0.0] * k for _ in range(k)]
    dyads = {}
    for p in range(n):
        dyads.setdefault((min(a[p], b[p]), max(a[p], b[p])), []).append(p)
    groups = [([p for p in range(n) if a[p] == i or b[p] == i], +1.0) for i in range(items)]
    groups += [(members, -1.0) for members in dyads.values()]
    for members, sign in groups:
        if not members:
            continue
        sums = [sum(psi[p][j] for p in members) for j in range(k)]
        scale = max(n - len(members), 1) ** 2
        for j in range(k):
            for m in range(k):
                cov[j][m] += sign * sums[j] * sums[m] / scale
    return cov


def _skip_one_item_table(embeddings, model, item):
    import pyarrow.compute as pc
    drop = pc.and_(pc.equal(embeddings.column("model"), model), pc.equal(embeddings.column("item"), item))
    return embeddings.filter(pc.invert(drop))


def test_compare_similarity_simultaneous_sql_equals_python_and_the_max_t_by_loops():
    """emb_compare_similarity(intervals := 'simultaneous', replicates :=, seed :=) gives
    compare_similarity's rows (every column, interval 'simultaneous'; 'marginal' without it), and
    its intervals are difference -/+ c se with c the 95% quantile of max |t*| over the pairs of
    models, t* by loops from the given normal draws of the covariance recomputed by loops over items
    and dyads.  With missing := 'skip' and a model that cannot score some pairs, every row is on the
    pairs every model scores: the rows equal those of the table without those pairs."""
    import pyarrow.compute as pc
    from test_model_ranking import _max_abs_quantile

    import embsql
    _, _, embeddings, pairs, _ = _family_tables(np.random.default_rng(37))
    con = embsql.connect()
    con.register("emb", embeddings)
    con.register("gold", pairs)
    for kind in ("marginal", "simultaneous"):
        got = con.sql(f"SELECT * FROM emb_compare_similarity('gold', 'emb', intervals := '{kind}', replicates := 250, "
                      "seed := 9)")
        sql_rows = [dict(zip(got.columns, r)) for r in got.fetchall()]
        python = embsql.compare_similarity(con, pairs, embeddings, intervals=kind, replicates=250, seed=9, vector="vector",
                                           model="model", item="item")
        assert got.columns == list(python.columns) + (["interval"] if kind == "marginal" else [])
        for mine, theirs in zip(sql_rows, python.to_dicts(), strict=True):
            assert mine["interval"] == kind
            for column, value in theirs.items():
                assert mine[column] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value)
    joint = [r for r in sql_rows if r["correlation"] == "pearson"]
    names = sorted({r["model_a"] for r in joint} | {r["model_b"] for r in joint})
    items = sorted({i for column in ("item_a", "item_b") for i in pairs.column(column).to_pylist()})
    code = {i: n for n, i in enumerate(items)}
    a = [code[i] for i in pairs.column("item_a").to_pylist()]
    b = [code[i] for i in pairs.column("item_b").to_pylist()]
    coded = sim.Pairs(np.asarray(pairs.column("score").to_pylist()), np.array(a), np.array(b), len(items))
    vectors = {m: {} for m in names}
    for m, item, v in zip(*(embeddings.column(c).to_pylist() for c in ("model", "item", "vector"))):
        vectors[m][item] = np.asarray(v) / np.linalg.norm(v)
    cosines = [np.array([vectors[m][items[x]] @ vectors[m][items[y]] for x, y in zip(a, b)]) for m in names]
    psi = np.stack([sim.influences(coded, c)["pearson"][1] for c in cosines], axis=1)
    covariance = _dyadic_covariance_by_loops(psi, a, b, len(items))
    c = _max_abs_quantile(_draws_t_star(covariance, 9, 250, mr.pairs_of(3)), 0.95)
    for row in joint:
        assert row["ci_low"] == pytest.approx(row["difference"] - c * row["se"], rel=1e-9, abs=1e-12)
        assert row["ci_high"] == pytest.approx(row["difference"] + c * row["se"], rel=1e-9, abs=1e-12)
    # a model without a vector for one item: simultaneous rows are on the pairs every model scores
    lacking = _skip_one_item_table(embeddings, "mid", items[0])
    kept = pairs.filter(pc.and_(pc.not_equal(pairs.column("item_a"), items[0]),
                                pc.not_equal(pairs.column("item_b"), items[0])))
    assert 0 < kept.num_rows < pairs.num_rows
    skipped = embsql.compare_similarity(con, pairs, lacking, missing="skip", intervals="simultaneous",
                                        replicates=250, seed=9, vector="vector", model="model", item="item").to_dicts()
    filtered = embsql.compare_similarity(con, kept, lacking, intervals="simultaneous", replicates=250,
                                         seed=9, vector="vector", model="model", item="item").to_dicts()
    assert {r["pairs"] for r in skipped} == {kept.num_rows}
    for mine, theirs in zip(skipped, filtered, strict=True):
        for column, value in theirs.items():
            assert mine[column] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value), column
    # the marginal table still compares each pair of models on the pairs both score
    marginal = embsql.compare_similarity(con, pairs, lacking, missing="skip", vector="vector", model="model",
                                         item="item").to_dicts()
    assert {(r["model_a"], r["model_b"]): r["pairs"] for r in marginal}[("blur", "sharp")] == pairs.num_rows


def test_compare_cka_simultaneous_sql_equals_python():
    """emb_compare_cka(..., intervals := 'simultaneous', replicates :=, seed :=) gives compare_cka's
    rows with the same options; replicates change the draws (c) and nothing else."""
    import embsql
    _, _, _, _, geometry = _family_tables(np.random.default_rng(43))
    con = embsql.connect()
    con.register("geo", geometry)
    for kind, replicates in (("marginal", 2000), ("simultaneous", 300), ("simultaneous", 2000)):
        got = con.sql(f"SELECT * FROM emb_compare_cka('geo', 'item', 'm', 'v', 'ref', \"group\" := 'topic', "
                      f"intervals := '{kind}', replicates := {replicates}, seed := 5)")
        sql_rows = [dict(zip(got.columns, r)) for r in got.fetchall()]
        python = embsql.compare_cka(con, geometry, reference="ref", model="m", item="item", vector="v",
                                    group="topic", intervals=kind, replicates=replicates, seed=5).to_dicts()
        assert len(sql_rows) == len(python) == 3
        for mine, theirs in zip(sql_rows, python):
            assert mine["interval"] == kind
            for column, value in theirs.items():
                assert mine[column] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value)
    with pytest.raises(Exception, match=r"embsql: \[argument.intervals\]"):
        con.sql("SELECT * FROM emb_compare_cka('geo', 'item', 'm', 'v', 'ref', intervals := 'joint')").fetchall()


def _tied_similarity(rng, k, items):
    """K tied models on 5 x ``items`` pairs of recurring items (validation/rank_sets_families.py's design):
    Pearson 0.6, Spearman (6/pi) asin(0.3) for every model."""
    n = 5 * items
    a = rng.integers(0, items, n)
    b = (a + rng.integers(1, items, n)) % items
    alpha, beta = rng.normal(size=items), rng.normal(size=items)
    score = rng.normal(size=n) + (alpha[a] + alpha[b]) / 2
    shared = (beta[a] + beta[b]) / 2 + rng.normal(size=n) / 2
    tau = math.sqrt(1.5 / 0.36 - 2.25)
    return sim.Pairs(score, a, b, items), [score + shared + tau * rng.normal(size=n) for _ in range(k)]


def test_similarity_rank_sets_and_simultaneous_intervals_hold_together_seeded():
    """Five tied models (ten pairs), 40 items in 200 pairs, 150 data sets: the Spearman and the
    Pearson rank sets order no pair (falsely) in >= 88% of data sets and all ten simultaneous
    intervals of each hold the true difference 0 together in >= 88% (nominal 95%; 88% is 3.5 Monte
    Carlo SEs below), where the ten marginal t intervals of compare_similarity together hold in
    <= 85% (a bound the family must beat, and which it would fail were c the marginal t quantile)."""
    rng = np.random.default_rng(47)
    runs, k = 150, 5
    held = {"sets": 0, "simultaneous": 0, "marginal": 0}
    for r in range(runs):
        pairs, cosines = _tied_similarity(rng, k, 40)
        for statistic in ("spearman", "pearson"):
            estimates, fam = sim.similarity_family(pairs, cosines, statistic, replicates=200, seed=r)
            held["sets"] += not mr.rank_sets(estimates, fam, 0.95).better.any()
            low, high = mr.simultaneous_intervals(fam, 0.95)
            held["simultaneous"] += bool(np.all((low <= 0) & (0 <= high)))
            held["marginal"] += all(
                d.ci_low <= 0 <= d.ci_high for d in
                (sim.difference(pairs, cosines[x], cosines[y], 0.95)[statistic] for x, y in fam.pairs))
    assert held["sets"] / (2 * runs) >= 0.88 and held["simultaneous"] / (2 * runs) >= 0.88
    assert held["marginal"] / (2 * runs) <= 0.85


def test_cka_rank_sets_and_simultaneous_intervals_hold_together_seeded():
    """Five models tied in their CKA with a reference (validation/rank_sets_families.py's design), 30
    groups of 4 items, 120 data sets: the rank sets order no pair (falsely) and compare_cka's ten
    simultaneous intervals hold the true difference 0 together in >= 87% of data sets (nominal 95%;
    87% is 3.8 Monte Carlo SEs below), where its ten marginal intervals together hold in <= 85%."""
    from embsql.core.geometry import paired_difference, reference_values, simultaneous_cka_intervals
    rng = np.random.default_rng(53)
    runs, k, groups = 120, 5, 30
    labels = np.repeat(np.arange(groups), 4)
    ids = np.array([f"i{i:03d}" for i in range(len(labels))], dtype=object)
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)     # noqa: E731
    held = {"sets": 0, "simultaneous": 0, "marginal": 0}
    for r in range(runs):
        z = rng.normal(size=(groups, 8))[labels] + rng.normal(size=(len(labels), 8))
        shared = rng.normal(size=z.shape) / 2
        models = {"ref": (ids, unit(z)), **{f"m{m}": (ids, unit(z + shared + rng.normal(size=z.shape)))
                                            for m in range(k)}}
        values = reference_values(models, "ref", groups={m: labels for m in models}, group="group", common=False,
                                  model="model")[0]
        debiased = [values[f"m{m}"].debiased for m in range(k)]
        table = np.stack(debiased, axis=1)
        fam = mr.normal_family(table[0], mr.jackknife_covariance(table[1:]), replicates=200, seed=r)
        held["sets"] += not mr.rank_sets(table[0], fam, 0.95).better.any()
        low, high = simultaneous_cka_intervals(debiased, 0.95, replicates=200, seed=r)
        held["simultaneous"] += bool(np.all((low <= 0) & (0 <= high)))
        held["marginal"] += all(paired_difference(debiased[x], debiased[y])[1] <= 0 <=
                                paired_difference(debiased[x], debiased[y])[2] for x, y in fam.pairs)
    assert held["sets"] / runs >= 0.87 and held["simultaneous"] / runs >= 0.87
    assert held["marginal"] / runs <= 0.85
