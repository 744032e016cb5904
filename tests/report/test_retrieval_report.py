"""Retrieval summary (rank figures with cluster-jackknife SEs), the four-layer report, the input/output
pairing and the eff_dim flag, against numpy computations written here (explicit delete-one-group loops,
one-way ANOVA by its definition, eigenvalues of the covariance)."""

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import retrieval_data as rd

import embsql
from embsql.io.resources import sql_entry_file


def jackknife_se(values: np.ndarray, clusters: np.ndarray, statistic) -> float:
    """Leave each cluster out, recompute, SE = sqrt((G-1)/G sum (theta_-g - mean)^2)."""
    labels = sorted(set(clusters.tolist()))
    replicates = np.array([statistic(values[clusters != g], clusters[clusters != g]) for g in labels])
    return float(np.sqrt((len(labels) - 1) / len(labels) * np.sum((replicates - replicates.mean()) ** 2)))


def reference_summary(queries: pa.Table, docs: pa.Table, model, scope) -> dict:
    q, d = rd.arrays(queries, model), rd.arrays(docs, model)
    rows = rd.brute_force(q, d, scope)
    rank = np.array([r["rank"] for r in rows])
    m = np.array([r["m"] for r in rows])
    clusters = q["group"]
    mean = lambda x, c: float(np.mean(x))
    out = {"queries": len(rank), "groups": len(set(clusters)), "top1": np.mean(rank == 1),
           "top1_se": jackknife_se((rank == 1).astype(float), clusters, mean), "recall_at_1": np.mean(rank == 1),
           "mrr": np.mean(1 / rank), "mrr_se": jackknife_se(1 / rank, clusters, mean), "m_mean": m.mean(),
           "m_mean_se": jackknife_se(m, clusters, mean), "ties": int(sum(r["ties"] > 0 for r in rows)), "scope": scope}
    for k in (5, 10):
        out[f"recall_at_{k}"] = np.mean(rank <= k)
        out[f"recall_at_{k}_se"] = jackknife_se((rank <= k).astype(float), clusters, mean)
    for name, p in (("m_p05", 5), ("m_p25", 25), ("m_median", 50), ("m_p75", 75), ("m_p95", 95)):
        out[name] = np.percentile(m, p)
    return out


@pytest.fixture(scope="module")
def data():
    queries, docs = rd.make(11, models=("a", "b"), dims=[10, 14], topics=5, docs_per_topic=4, questions=9,
                            paraphrases=4, levels=2, dose=0.6)
    return queries, docs


def _connect(kind, queries, docs):
    if kind == "sql":
        con = duckdb.connect()
        con.execute(sql_entry_file().read_text())
    else:
        con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    return con


@pytest.mark.parametrize("scope", ["corpus", "group"])
def test_summary_equals_brute_force_on_every_route(data, scope):
    queries, docs = data
    expected = [reference_summary(queries, docs, m, scope) for m in ("a", "b")]
    assert 0 < expected[0]["top1"] < 1 and expected[0]["top1_se"] > 0
    python = embsql.retrieval_summary(_connect("udf", queries, docs), "q", "d", scope=scope, model="model")
    routes = {"python": python.to_dicts()}
    for kind in ("sql", "udf"):
        table = _connect(kind, queries, docs).sql(
            f"SELECT * FROM emb_retrieval_summary('q', 'd', scope := '{scope}', model := 'model')").to_arrow_table()
        assert table.column_names == list(python.columns)
        routes[kind] = table.to_pylist()
    for route, rows in routes.items():
        assert [r["model"] for r in rows] == ["a", "b"], route
        for row, reference in zip(rows, expected):
            for key, value in reference.items():
                assert row[key] == pytest.approx(value, abs=1e-12), (route, key)


def structure_reference(labels: np.ndarray, vectors: np.ndarray) -> dict:
    """R2, mean W~ and their delete-one-group jackknife SEs, and the participation ratio, by definition."""
    z = rd.unit(vectors)

    def r2(z, labels):
        total = np.sum((z - z.mean(0)) ** 2)
        within = sum(np.sum((z[labels == g] - z[labels == g].mean(0)) ** 2) for g in set(labels.tolist()))
        return 1 - within / total

    def w_tilde(z, labels):
        values = []
        for g in sorted(set(labels.tolist())):
            zg = z[labels == g]
            if len(zg) > 1:
                values.append(len(zg) / (len(zg) - 1) * np.mean(np.sum((zg - zg.mean(0)) ** 2, axis=1)))
        return float(np.mean(values))

    eigenvalues = np.linalg.eigvalsh(np.cov(z.T))
    return {"items": len(z), "r2": r2(z, labels), "r2_se": jackknife_se(z, labels, r2), "w_tilde_mean": w_tilde(z, labels),
            "w_tilde_se": jackknife_se(z, labels, w_tilde), "dim": z.shape[1],
            "eff_dim": eigenvalues.sum() ** 2 / np.sum(eigenvalues ** 2), "eff_dim_bounded": len(z) <= z.shape[1]}


def one_way_anova(values: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(R2, ICC(1)) of scalar values by the textbook one-way random-effects ANOVA."""
    groups = sorted(set(labels.tolist()))
    n, g = len(values), len(groups)
    sizes = np.array([np.sum(labels == x) for x in groups])
    means = np.array([values[labels == x].mean() for x in groups])
    ss_b = np.sum(sizes * (means - values.mean()) ** 2)
    ss_w = sum(np.sum((values[labels == x] - values[labels == x].mean()) ** 2) for x in groups)
    ms_b, ms_w = ss_b / (g - 1), ss_w / (n - g)
    n0 = (n - np.sum(sizes ** 2) / n) / (g - 1)
    return ss_b / (ss_b + ss_w), (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)


def trace_icc(vectors: np.ndarray, labels: np.ndarray) -> float:
    z = rd.unit(vectors)
    groups = sorted(set(labels.tolist()))
    n, g = len(z), len(groups)
    ss_w = sum(np.sum((z[labels == x] - z[labels == x].mean(0)) ** 2) for x in groups)
    ss_b = np.sum((z - z.mean(0)) ** 2) - ss_w
    sizes = np.array([np.sum(labels == x) for x in groups])
    n0 = (n - np.sum(sizes ** 2) / n) / (g - 1)
    ms_b, ms_w = ss_b / (g - 1), ss_w / (n - g)
    return (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)


def test_four_layers_report(data):
    queries, docs = data
    con = _connect("udf", queries, docs)
    report = embsql.retrieval_layers(con, embsql.Queries("q", strength="level"), "d", model="model", permutations=99)
    assert [s.name for s in report.sections] == ["query_stability", "document_structure", "alignment", "rank",
                                                 "pairing", "dose"]
    for table in [report.summary] + [s.table for s in report.sections]:
        assert table.columns[0] == "model" and set(table.column("model")) == {"a", "b"}, table.title
    for model_index, model in enumerate(("a", "b")):
        q, d = rd.arrays(queries, model), rd.arrays(docs, model)
        for section, (labels, vectors) in (("query_stability", (q["group"], q["vector"])),
                                           ("document_structure", (d["group"], d["vector"]))):
            row = report[section].to_dicts()[model_index]
            for key, value in structure_reference(labels, vectors).items():
                assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (section, key)
        summary = reference_summary(queries, docs, model, "corpus")
        for section in ("alignment", "rank"):
            row = report[section].to_dicts()[model_index]
            for key in set(row) & set(summary):
                assert row[key] == pytest.approx(summary[key], abs=1e-12), (section, key)
    cautions = {s.name: s.caution for s in report.sections}
    assert "NOT the crowding" in cautions["document_structure"] and "difficulty" in cautions["document_structure"]
    assert "clue" in cautions["pairing"] and "not an effect size" in cautions["pairing"]
    assert "scale-free" in cautions["alignment"] and "ranks below the first" in cautions["alignment"]
    assert "descriptive" in cautions["dose"]
    without_level = embsql.retrieval_layers(con, "q", "d", model="model")
    assert "dose" not in [s.name for s in without_level.sections]


def test_effective_dimension_is_flagged_when_n_is_at_most_d():
    queries, docs = rd.make(12, topics=4, docs_per_topic=5, questions=10, dim=24)     # 20 documents in 24 dims
    con = _connect("udf", queries.drop_columns(["model"]), docs.drop_columns(["model"]))
    report = embsql.retrieval_layers(con, "q", "d")
    docs_row = report["document_structure"].to_dicts()[0]
    queries_row = report["query_stability"].to_dicts()[0]
    assert docs_row["model"] is None
    assert (docs_row["items"], docs_row["dim"], docs_row["eff_dim_bounded"]) == (20, 24, True)
    assert docs_row["eff_dim"] <= 19 + 1e-9                  # bounded by n - 1
    assert (queries_row["items"], queries_row["eff_dim_bounded"]) == (30, False)
    assert "n <= d" in report.section("document_structure").caution


def test_pairing_same_side_figures_against_one_way_anova(data):
    queries, docs = data
    con = _connect("udf", queries, docs)
    table = embsql.pairing(con, "q", "d", model="model")
    assert "clue, not an effect size" in table.title
    margins = embsql.margins(con, "q", "d", model="model").to_dicts()
    for model in ("a", "b"):
        q = rd.arrays(queries, model)
        top1 = {r["qid"]: float(r["top1"]) for r in margins if r["model"] == model}
        correct = np.array([top1[x] for x in q["qid"]])
        rows = {r["measure"]: r for r in table.to_dicts() if r["model"] == model}
        out_r2, out_icc = one_way_anova(correct, q["group"])
        z = rd.unit(q["vector"])
        in_r2 = 1 - sum(np.sum((z[q["group"] == g] - z[q["group"] == g].mean(0)) ** 2) for g in set(q["group"]))\
            / np.sum((z - z.mean(0)) ** 2)
        assert rows["R2"]["input"] == pytest.approx(in_r2, rel=1e-10)
        assert rows["R2"]["output"] == pytest.approx(out_r2, rel=1e-10)
        assert rows["ICC(1)"]["input"] == pytest.approx(trace_icc(q["vector"], q["group"]), rel=1e-10)
        assert rows["ICC(1)"]["output"] == pytest.approx(out_icc, rel=1e-10)
        assert rows["R2"]["groups"] == 9 and rows["R2"]["queries"] == 72


def test_pairing_scalar_icc_matches_pingouin(data):
    pingouin = pytest.importorskip("pingouin")
    import pandas as pd

    queries, docs = data
    con = _connect("udf", queries, docs)
    table = embsql.pairing(con, "q", "d", model="model").to_dicts()
    margins = {(r["model"], r["qid"]): r["top1"] for r in embsql.margins(con, "q", "d", model="model").to_dicts()}
    q = rd.arrays(queries, "a")
    frame = pd.DataFrame({"target": q["group"], "rater": [int(x.split("_")[1]) * 4 + int(x.split("_")[2]) for x in q["qid"]],
                          "score": [float(margins[("a", x)]) for x in q["qid"]]})
    icc1 = pingouin.intraclass_corr(frame, targets="target", raters="rater", ratings="score").set_index("Type")
    row = next(r for r in table if r["model"] == "a" and r["measure"] == "ICC(1)")
    name = "ICC(1,1)" if "ICC(1,1)" in icc1.index else "ICC1"       # pingouin < 0.6 says ICC1
    assert row["output"] == pytest.approx(icc1.loc[name, "ICC"], rel=1e-10)


def test_pairing_when_every_query_succeeds():
    queries, docs = rd.make(13, topics=3, docs_per_topic=2, questions=4, query_noise=0.01, doc_noise=2.0)
    con = _connect("udf", queries, docs)
    rows = embsql.pairing(con, "q", "d", model="model").to_dicts()
    assert all(r["output"] is None and "same top-1 outcome (all ranked first)" in r["note"] for r in rows)
    assert all(r["input"] is not None for r in rows)


# ---------------------------------------------------------------- layers the data cannot support

def test_documents_without_topic_groups_leave_out_only_their_layer(data):
    queries, docs = data
    own_topic = docs.set_column(docs.schema.get_field_index("group"), "group",
                                pa.array([f"doc-{i}" for i in range(docs.num_rows)]))
    result = _retrieval_report_only(queries, own_topic)
    names = [s.name for s in result.sections]
    assert "document_structure" not in names
    assert {"query_stability", "alignment", "rank", "pairing"} <= set(names)
    (note,) = [n for n in result.meta["notes"] if "Document structure" in n]
    assert "documents 'd'" in note and "column 'group'" in note and "two or more documents" in note
    # the figures that remain are the ones the full data give
    full = _retrieval_report_only(queries, docs)
    assert result["rank"].to_dicts() == full["rank"].to_dicts()
    assert "Document structure" in render_text(result)


def test_one_query_per_group_and_level_leaves_out_the_dose(data):
    queries, docs = data
    levels = queries.column("level").to_numpy()
    groups = np.asarray(queries.column("group").to_pylist(), dtype=object)
    first = np.zeros(len(levels), dtype=bool)
    seen = set()
    for i, key in enumerate(zip(queries.column("model").to_pylist(), groups, levels)):
        first[i] = key not in seen
        seen.add(key)
    thin = queries.filter(pa.array(first))
    result = _retrieval_report_only(thin, docs, strength="level")
    assert "dose" not in [s.name for s in result.sections] and "alignment" in [s.name for s in result.sections]
    (note,) = [n for n in result.meta["notes"] if n.startswith("Dose")]
    assert "queries 'q'" in note and "column 'level'" in note
    with_dose = _retrieval_report_only(queries, docs, strength="level")
    assert "dose" in [s.name for s in with_dose.sections]
    skipped = _retrieval_report_only(queries, docs, strength="level", permutations=0)
    assert "dose" not in [s.name for s in skipped.sections]
    assert any("permutations > 0" in n for n in skipped.meta["notes"])


def _retrieval_report_only(queries, docs, strength=None, permutations=19, **retrieval):
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    return embsql.report("q", vector="vector", group="group", model="model", queries="q", docs="d",
                         permutations=permutations, sections=("decomposition", "retrieval"),
                         retrieval={**({"strength": strength} if strength else {}), **retrieval}).run(con)


def test_the_report_passes_its_retrieval_settings_to_the_layers(data):
    """[report.retrieval] names the columns by the vocabulary; relevance (the qrels' column) is the
    evaluation's, not the layers', and a report that has both runs."""
    queries, docs = data
    renamed = queries.rename_columns(["query" if c == "qid" else c for c in queries.column_names])
    result = _retrieval_report_only(renamed, docs, strength="level", qid="query", scope="group", alpha=0.1,
                                    relevance="grade")
    direct = embsql.retrieval_layers(embsql.connect(), embsql.Queries(renamed, qid="query", strength="level"), docs,
                                     model="model", scope="group", alpha=0.1, permutations=19)
    for name in ("rank", "dose"):
        assert result[name].to_dicts() == direct[name].to_dicts()


def render_text(result):
    from embsql.render.formats import to_text

    return to_text(result)


def test_the_retrieval_report_opens_with_its_top1_rates(data):
    queries, docs = data
    con = embsql.connect()
    result = embsql.retrieval_layers(con, queries, docs, model="model")
    rank = {row["model"]: row["top1"] for row in result["rank"].to_dicts()}
    (sentence,) = result.verdict
    best, other = sorted(rank, key=lambda m: -rank[m])
    assert sentence == (f"The correct document ranks first for {rank[best]:.0%} with {best}, "
                        f"{rank[other]:.0%} with {other} of the {result['rank'].to_dicts()[0]['queries']} queries.")


def test_a_retrieval_report_opens_with_retrieval_and_the_tables_alone_get_a_verdict(data):
    """Issue 32 item 4: a report given query and document tables answers retrieval first (the top-1
    rates, from the brute-force ranking here), and a report of the retrieval tables alone, without
    qrels, says the same sentence."""
    from embsql.reporting.build import retrieval_report

    queries, docs = data
    top1 = {m: reference_summary(queries, docs, m, "corpus")["top1"] for m in ("a", "b")}
    best, other = sorted(top1, key=lambda m: -top1[m])
    expected = (f"The correct document ranks first for {top1[best]:.0%} with {best}, {top1[other]:.0%} with "
                f"{other} of the {len(queries) // 2} queries.")
    full = _retrieval_report_only(queries, docs)
    assert full.verdict[0] == expected and "R²" in full.verdict[1]
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    alone = retrieval_report(con, queries="q", docs="d", model="model", permutations=0)
    assert alone.verdict == [expected]
    assert render_text(alone).splitlines()[2] == expected[:len(render_text(alone).splitlines()[2])]
