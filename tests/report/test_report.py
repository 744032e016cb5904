"""The report builder: its numbers are the SQL functions' numbers, its SQL is golden, parses back
and runs, names are quoted and checked before anything runs, and bad input is a clear error."""

import json
import os

import numpy as np
import pyarrow as pa
import pytest
import sqlglot
from helpers import TESTS, sql_rows

import embsql
from embsql.engines.dialects import WRITABLE as DIALECTS
from embsql.reporting.build import Report

GOLDEN = TESTS / "golden"
TOL = 1e-9


def model_table(seed=1, dims=(("a", 5), ("b", 7)), topics=6, per_topic=9, extra=None) -> pa.Table:
    """Two models embedding the same items (item ids shared), topics of unequal strength."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, d in dims:
        centres = rng.standard_normal((topics, d))
        for i in range(topics * per_topic):
            t = i % topics
            rows.append({"model": model, "topic": f"t{t}", "item": i, "split": "test" if i % 3 else "train",
                         "emb": (centres[t] * (0.5 + t / topics) + rng.standard_normal(d)).tolist()})
    return pa.Table.from_pylist(rows)


@pytest.fixture
def emb_con(con):
    con.register("emb", model_table())
    return con


def by_model(rows, key="model"):
    return {row[key]: row for row in rows}


def assert_close(a, b, tol=TOL):
    assert a == pytest.approx(b, rel=tol, abs=tol)


def test_report_numbers_are_the_sql_functions_numbers(emb_con):
    report = embsql.report("emb", vector="emb", group="topic", model="model", permutations=49, seed=7, replicates=300)
    result = report.run(emb_con, progress=False)
    anova = by_model(sql_rows(emb_con, "SELECT * FROM emb_anova('emb', 'topic', 'emb', model := 'model')"))
    for row in result["decomposition"].to_dicts():
        for column in ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v", "mean_resultant_length", "w_bar"):
            assert_close(row[column], anova[row["model"]][column])
    group_rows = sql_rows(emb_con, "SELECT * FROM emb_groups('emb', 'topic', 'emb', model := 'model')")
    groups = {(r["model"], r["group"]): r for r in group_rows}
    assert len(groups) == len(result["groups"])
    for row in result["groups"].to_dicts():
        assert_close(row["w_tilde"], groups[(row["model"], row["group"])]["w_tilde"])
    for stat in ("r2", "f", "w_bar"):
        sql = by_model(sql_rows(emb_con, f"SELECT * FROM emb_jackknife('emb', 'topic', 'emb', model := 'model', "
                                         f"statistic := '{stat}')"))
        for row in result["jackknife"].to_dicts():
            if row["statistic"] == stat:
                assert_close(row["se"], sql[row["model"]]["se"])
    boot = by_model(sql_rows(emb_con, "SELECT * FROM emb_bootstrap('emb', 'topic', 'emb', model := 'model', "
                                      "replicates := 300, seed := 7)"))
    for row in result["bootstrap"].to_dicts():
        for column in ("se", "ci_low", "ci_high"):
            assert_close(row[column], boot[row["model"]][column])
    compare = sql_rows(emb_con,
                       "SELECT * FROM emb_compare_structure('emb', 'topic', 'emb', 'model', 'item', "
                       "replicates := 300, seed := 7)")
    (row,) = result["compare"].to_dicts()
    for column in ("difference", "se", "ci_low", "ci_high"):
        assert_close(row[column], compare[0][column])
    perm = by_model(sql_rows(emb_con, "SELECT * FROM emb_permanova('emb', 'topic', 'emb', model := 'model', "
                                      "permutations := 49, seed := 7)"))
    disp = by_model(sql_rows(emb_con, "SELECT * FROM emb_dispersion('emb', 'topic', 'emb', model := 'model', "
                                      "permutations := 49, seed := 7)"))
    for row in result.summary.to_dicts():
        assert row["p_value"] == perm[row["model"]]["p_value"]
        assert row["dispersion_p"] == disp[row["model"]]["p_value"]
        assert_close(row["r2"], anova[row["model"]]["r2"])
        assert 0 < row["p_value"] <= 1 and 0 <= row["r2"] <= 1
        assert row["r2_ci_low"] <= row["r2"] <= row["r2_ci_high"]


def test_example_1_through_the_report(con):
    con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
                " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    result = embsql.report("ex", vector="v", group="g", sections=["decomposition"]).run(con)
    (row,) = result["decomposition"].to_dicts()
    assert row["ss_t"] == pytest.approx(2.2, abs=1e-12)
    assert row["ss_w"] == pytest.approx(0.4, abs=1e-12)
    assert row["r2"] == pytest.approx(1.8 / 2.2, abs=1e-12)
    assert row["model"] is None


def test_every_section_carries_its_caution_and_converts(emb_con):
    result = embsql.report("emb", vector="emb", group="topic", model="model", permutations=0).run(emb_con)
    # the ranking (two models) comes first: it is shown right after the verdict
    assert [s.name for s in result.sections] == ["ranking", "decomposition", "groups", "jackknife", "bootstrap",
                                                 "compare"]
    for section in result.sections:
        assert len(section.caution) > 40
        assert section.table.to_arrow().num_rows == len(section.table)
    assert "not comparable" in result.section("decomposition").caution
    assert "not crowding" in result.section("groups").caution
    assert result["decomposition"].to_pandas().shape[0] == 2
    assert result.meta["stage1_bytes"] < 10_000   # O(G d), not O(n d)


def test_models_of_different_dimension_share_one_pass(emb_con):
    result = embsql.report("emb", vector="emb", group="topic", model="model", sections=["decomposition"]).run(emb_con)
    assert result.meta["dimensions"] == {"a": 5, "b": 7}
    table = model_table()
    for row in result["decomposition"].to_dicts():
        part = table.filter(pa.compute.equal(table["model"], row["model"]))
        x = np.asarray(part["emb"].to_pylist())
        u = x / np.linalg.norm(x, axis=1, keepdims=True)
        labels = np.asarray(part["topic"].to_pylist())
        ss_t = ((u - u.mean(0)) ** 2).sum()
        ss_w = sum(((u[labels == g] - u[labels == g].mean(0)) ** 2).sum() for g in set(labels))
        assert_close(row["ss_t"], ss_t)
        assert_close(row["ss_w"], ss_w)


def test_where_filters_every_section(emb_con):
    emb_con.execute("CREATE VIEW test_rows AS SELECT * FROM emb WHERE split = 'test'")
    filtered = embsql.report("emb", vector="emb", group="topic", model="model", permutations=19, where="split = 'test'",
                             sections=["decomposition", "permanova"]).run(emb_con, progress=False)
    direct = embsql.report("test_rows", vector="emb", group="topic", model="model", permutations=19,
                           sections=["decomposition", "permanova"]).run(emb_con, progress=False)
    assert filtered.summary.to_dicts() == direct.summary.to_dicts()
    assert filtered["decomposition"].column("n") == [36, 36]


STRANGE = ['my "vec"; DROP TABLE x', "group col", "Model"]


def test_strange_names_are_quoted_identifiers(con):
    table = model_table().rename_columns(["Model", "group col", "item", "split", 'my "vec"; DROP TABLE x'])
    con.register("weird table", table)
    report = embsql.report("weird table", vector=STRANGE[0], group=STRANGE[1], model=STRANGE[2], sections=["decomposition"])
    for dialect in DIALECTS:
        sql = report.sql(dialect, con=con)
        columns = {c.name for statement in sqlglot.parse(sql, read=dialect)
                   for c in statement.find_all(sqlglot.exp.Column)}
        assert set(STRANGE) <= columns      # each name came back whole, as one identifier
    r2 = embsql.anova(con, "weird table", group=STRANGE[1], vector=STRANGE[0], model=STRANGE[2]).column("r2")
    assert report.run(con)["decomposition"].column("r2") == pytest.approx(r2, rel=TOL)


def test_missing_names_fail_before_anything_runs(emb_con):
    for kwargs, word in (({"vector": "nope", "group": "topic"}, "nope"), ({"vector": "emb", "group": "nope"}, "nope"),
                         ({"vector": "emb", "group": "topic", "model": "nope"}, "nope"),
                         ({"vector": "emb", "group": "topic", "where": "nope = 1"}, "nope")):
        report = embsql.report("emb", **kwargs)
        for call in (lambda report=report: report.run(emb_con), lambda report=report: report.sql("spark", con=emb_con)):
            with pytest.raises(embsql.ColumnNotFoundError, match=word):
                call()
    with pytest.raises(embsql.SourceNotFoundError, match="no_table"):
        embsql.report("no_table", vector="emb", group="topic").run(emb_con)
    with pytest.raises(embsql.ColumnTypeError, match="topic"):
        embsql.report("emb", vector="topic", group="model").run(emb_con)


@pytest.mark.parametrize("kwargs, match", [
    ({"sections": ["nope"]}, "unknown section 'nope'"),
    ({"permutations": -1}, "permutations"),
    ({"permutations": 1.5}, "permutations"),
    ({"level": 1.5}, "level"),
    ({"model": "topic"}, "is the group column"),
    ({"where": "split = "}, "not a SQL condition"),
    ({"queries": "q"}, "both queries and docs"),
])
def test_bad_report_settings(kwargs, match):
    with pytest.raises(embsql.InputError, match=match):
        embsql.report("emb", vector="emb", group="topic", **kwargs)


def test_duckdb_only_functions_are_caught_before_emitting(emb_con):
    report = embsql.report("emb", vector="emb", group="topic", model="model",
                           where="list_cosine_similarity(emb, emb) > 0.5")
    assert "list_cosine_similarity" in report.sql("duckdb", con=emb_con).lower()
    for dialect in ("spark", "postgres", "trino", "bigquery", "snowflake"):
        with pytest.raises(embsql.InputError, match=f"list_cosine_similarity.*{dialect}"):
            report.sql(dialect, con=emb_con)


def test_a_file_source_needs_a_table_name_on_other_engines(tmp_path):
    path = tmp_path / "emb.parquet"
    import pyarrow.parquet as pq

    pq.write_table(model_table(), path)
    report = embsql.report(str(path), vector="emb", group="topic", model="model")
    with pytest.raises(embsql.InputError, match="name the table"):
        report.sql("spark")
    sql = report.replace(table="lake.emb").sql("spark")
    assert "`lake`.`emb`" in sql and "TRY_ELEMENT_AT(`emb`, 7)" in sql and "`emb`[6]" not in sql


def test_rows_sections_need_duckdb(emb_con):
    report = embsql.report("emb", vector="emb", group="topic", permutations=9, sections=("decomposition", "permanova"))
    with pytest.raises(embsql.InputError, match="permanova section needs the rows"):
        report.finish([], con=None)


def test_the_default_report_has_p_values_and_zero_permutations_skips_them(emb_con):
    result = embsql.report("emb", vector="emb", group="topic", model="model").run(emb_con, progress=False)
    names = [s.name for s in result.sections]
    assert names[-2:] == ["permanova", "dispersion"] and result.meta["permutations"] == 999
    for row in result.summary.to_dicts():
        assert 1 / 1000 <= row["p_value"] <= 1 and 1 / 1000 <= row["dispersion_p"] <= 1
        assert result["permanova"].to_dicts()[0]["permutations"] == 999
    skipped = embsql.report("emb", vector="emb", group="topic", model="model", permutations=0).run(emb_con)
    assert "permanova" not in [s.name for s in skipped.sections]
    assert all(row["p_value"] is None for row in skipped.summary.to_dicts())
    assert "No p-values" in " ".join(skipped.verdict)


def test_off_duckdb_the_default_tests_are_left_out_with_a_note(emb_con):
    """Another engine sends only the group sums: the defaulted tests are dropped, and the report says so."""
    report = embsql.report("emb", vector="emb", group="topic", model="model")
    sums = embsql.report("emb", vector="emb", group="topic", model="model", permutations=0)
    parts = [(value, part) for value, part in _group_sums_of(emb_con)]
    result = report.finish(parts, con=None)
    assert "permanova" not in [s.name for s in result.sections]
    assert any("only DuckDB" in note for note in result.meta["notes"])
    assert sums.sections_on(False) == sums.chosen_sections


def _group_sums_of(con):
    from embsql.io.sources import resolve
    from embsql.io.table_stream import group_sums

    return group_sums(con, resolve(con, "emb"), "topic", "emb", model="model")


def _golden_report():
    return embsql.report("emb", vector="emb", group="topic", model="model", where="split = 'test'")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_golden_sql(dialect):
    """sqlglot-style fixture pairs: the report in tests/golden/report.toml -> the SQL in <dialect>.sql.
    Set EMBSQL_REGOLD=1 to rewrite them (then read the diff)."""
    report = Report.from_file(GOLDEN / "report.toml")
    sql = report.sql(dialect, dims={"a": 2, "b": 3})
    path = GOLDEN / f"{dialect}.sql"
    if os.environ.get("EMBSQL_REGOLD"):
        path.write_text(sql)
    assert sql == path.read_text()
    statements = sqlglot.parse(sql, read=dialect)
    assert len(statements) == 1 and statements[0] is not None


def test_emitted_duckdb_sql_runs_and_gives_the_group_sums(emb_con):
    report = embsql.report("emb", vector="emb", group="topic", model="model", where="split = 'test'")
    *probes, aggregate = [s for s in report.sql("duckdb", con=emb_con).split(";") if s.strip()]
    assert len(probes) == 3     # the models, then one vector of each
    rows = emb_con.sql(aggregate).to_arrow_table().to_pylist()
    assert len(rows) == 8       # 2 models x the 4 topics with test rows (t0 and t3 hold only train rows)
    table = model_table().to_pylist()
    for row in rows:
        members = [np.asarray(r["emb"]) for r in table
                   if r["model"] == row["__emb_b"] and r["topic"] == row["__emb_g"] and r["split"] == "test"]
        expected = sum(x / np.linalg.norm(x) for x in members)
        got = [row[f"__emb_s{k + 1}"] for k in range(len(expected))]
        assert got == pytest.approx(expected.tolist(), rel=1e-12, abs=1e-12)
        assert row["__emb_n"] == len(members) and row["__emb_bad"] == 0


@pytest.mark.parametrize("vectors, match", [   # on DuckDB, as embsql.anova names them: the row (from 1) and its group
    ([[1.0, None], [0.0, 1.0]], r"NULL-element vector at row 1 \(group 'x'\)"),
    ([[0.0, 0.0], [0.0, 1.0]], r"zero-length vector at row 1 \(group 'x'\)"),
    ([[float("nan"), 1.0], [0.0, 1.0]], r"NaN vector at row 1 \(group 'x'\)"),
    ([[float("inf"), 1.0], [0.0, 1.0]], r"infinite vector at row 1 \(group 'x'\)"),
    ([[1.0, 0.0], None], r"NULL vector at row 2 \(group 'x'\)"),
    ([[1.0, 0.0], [1.0, 0.0, 1.0]], r"a vector of length 3 at row 2 \(group 'x'\); other vectors have length 2"),
    ([[1.0, 0.0], [1.0]], r"a vector of length 1 at row 2 \(group 'x'\); other vectors have length 2"),
])
def test_bad_vectors_are_named(con, vectors, match):
    good = [[1.0, 0.2], [0.3, 1.0], [0.5, 0.5], [0.9, 0.1]]
    con.register("bad", pa.table({"g": ["x", "x", "y", "y", "z", "z"],
                                  "v": pa.array(vectors + good, pa.list_(pa.float64()))}))
    with pytest.raises(embsql.BadVectorError, match=match):
        embsql.report("bad", vector="v", group="g").run(con)


def test_null_labels_and_empty_sources_are_named(con):
    con.register("nolabel", pa.table({"g": ["x", None, "y", "y"], "v": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 1]]}))
    with pytest.raises(embsql.BadLabelError, match="group column 'g' has a NULL label at row 2;"):
        embsql.report("nolabel", vector="v", group="g").run(con)
    con.execute("CREATE TABLE empty (g VARCHAR, v DOUBLE[])")
    with pytest.raises(embsql.InputError, match="no rows"):
        embsql.report("empty", vector="v", group="g").run(con)


def test_toml_describes_the_same_report(emb_con, tmp_path):
    path = tmp_path / "report.toml"
    path.write_text('[report]\nsource = "emb"\nvector = "emb"\ngroup = "topic"\nmodel = "model"\nreplicates = 200\n')
    from_file = Report.from_file(path).run(emb_con)
    from_python = embsql.report("emb", vector="emb", group="topic", model="model", replicates=200).run(emb_con)
    assert from_file.summary.to_dicts() == from_python.summary.to_dicts()
    path.write_text('[report]\nsource = "emb"\nvectr = "emb"\n')
    with pytest.raises(embsql.InputError, match="unknown setting 'vectr'"):
        Report.from_file(path)
    with pytest.raises(embsql.InputError, match="does not exist"):
        Report.from_file(tmp_path / "nope.toml")


def test_compare_needs_matching_groups(con):
    table = model_table()
    keep = [not (m == "b" and t == "t0") for m, t in zip(table["model"].to_pylist(), table["topic"].to_pylist())]
    con.register("uneven", table.filter(pa.array(keep)))
    result = embsql.report("uneven", vector="emb", group="topic", model="model").run(con)
    assert "compare" not in [s.name for s in result.sections]
    assert "cannot be paired" in result.meta["notes"][0]
    with pytest.raises(embsql.DesignError, match="cannot be paired"):
        embsql.report("uneven", vector="emb", group="topic", model="model", sections=["compare"]).run(con)


# ---------------------------------------------------------------- the verdict

def _judged(r2, v, pairs, p=None, dispersion=None, groups=30, n=600, group="topic"):
    """A report with only what the verdict reads: the summary and the compare rows."""
    from embsql.reporting.report_result import ReportResult, Section
    from embsql.result_table import ResultTable

    columns = ("model", "n", "groups", "r2", "f", "p_value", "v", "dispersion_p")
    summary = ResultTable.from_dicts("summary", columns, [
        {"model": m, "n": n, "groups": groups, "r2": r2[m], "f": 10.0, "p_value": (p or {}).get(m), "v": v[m],
         "dispersion_p": (dispersion or {}).get(m)} for m in r2])
    compare = ResultTable.from_dicts("compare", ("model_a", "model_b", "estimate_a", "estimate_b", "difference",
                                                 "ci_low", "ci_high"),
                                     [{"model_a": a, "model_b": b, "estimate_a": r2[a], "estimate_b": r2[b],
                                       "difference": r2[a] - r2[b], "ci_low": lo, "ci_high": hi}
                                      for (a, b), (lo, hi) in pairs.items()])
    sections = (Section("compare", "Paired comparison", compare, "paired"),) if pairs else ()
    return ReportResult("t", summary, sections, {"group": group, "permutations": 999, "level": 0.95})


def test_verdict_names_the_model_ahead_and_its_interval():
    first = _judged({"mini": 0.30, "base": 0.40}, {"mini": 0.81, "base": 0.62}, {("mini", "base"): (-0.14, -0.07)})
    (sentence,) = first.verdict[:1]
    assert sentence.startswith("base separates the topic groups more than mini: R² 0.40 vs 0.30")
    assert "paired difference 0.10 (95% CI 0.07–0.14, 30 groups)" in sentence      # flipped to base − mini
    assert "V would rank them the other way (0.62 vs 0.81)" in sentence
    # the other model ahead, and V agreeing: every part follows the numbers
    second = _judged({"mini": 0.50, "base": 0.40}, {"mini": 0.70, "base": 0.60}, {("mini", "base"): (0.04, 0.16)})
    assert second.verdict[0].startswith("mini separates the topic groups more than base: R² 0.50 vs 0.40")
    assert "(95% CI 0.04–0.16" in second.verdict[0] and "V points the same way (0.70 vs 0.60)" in second.verdict[0]


def test_verdict_says_when_the_interval_includes_zero():
    tie = _judged({"a": 0.41, "b": 0.40}, {"a": 0.6, "b": 0.7}, {("a", "b"): (-0.02, 0.04)})
    assert "a and b cannot be told apart on these data" in tie.verdict[0]
    assert "(95% CI −0.02 to 0.04, 30 groups) includes 0" in tie.verdict[0]
    assert "separates" not in tie.verdict[0]


def test_verdict_with_three_models_ranks_them_and_compares_the_top_two():
    result = _judged({"a": 0.2, "b": 0.5, "c": 0.3}, {"a": 1, "b": 1, "c": 1},
                     {("a", "b"): (-0.4, -0.2), ("a", "c"): (-0.2, 0.0), ("b", "c"): (0.1, 0.3)})
    assert result.verdict[0].startswith("Ranked by R²: b 0.50, c 0.30, a 0.20. b separates the topic groups more than c")


def test_verdict_reads_the_p_values():
    strong = _judged({"a": 0.4, "b": 0.3}, {"a": 1, "b": 1}, {("a", "b"): (0.05, 0.15)},
                     p={"a": 0.001, "b": 0.001}, dispersion={"a": 0.4, "b": 0.03})
    assert strong.verdict[1].startswith("The groups differ beyond chance in every model (PERMANOVA p = 0.001 for each")
    assert "dispersion test is significant too (p = 0.4 for a, 0.03 for b)" in strong.verdict[1]
    weak = _judged({"a": 0.4, "b": 0.3}, {"a": 1, "b": 1}, {("a", "b"): (0.05, 0.15)}, p={"a": 0.2, "b": 0.5})
    assert weak.verdict[1].startswith("PERMANOVA finds no evidence")
    none = _judged({"a": 0.4, "b": 0.3}, {"a": 1, "b": 1}, {("a", "b"): (0.05, 0.15)})
    assert none.verdict[1].startswith("No p-values")


def test_verdict_with_one_model_says_what_r2_f_and_p_show_and_cannot():
    one = _judged({None: 0.25}, {None: 0.8}, {}, p={None: 0.001}, groups=11, n=101)
    first, second = one.verdict
    assert first.startswith("R² = 0.25: 25% of the spread of the unit vectors lies between the topic groups, "
                            "against 0.10 expected with no structure (11 groups, 101 items); F = 10.00")
    assert "cannot say whether another model" in first
    assert second.startswith("The groups differ beyond chance in this model (PERMANOVA p = 0.001 with 999 "
                             "permutations); p says whether the grouping could be chance, not how strong it is")


def test_verdict_of_a_real_report(emb_con):
    result = embsql.report("emb", vector="emb", group="topic", model="model", permutations=99).run(emb_con)
    compare = result["compare"].to_dicts()[0]
    lead, other = (compare["model_a"], compare["model_b"])[::1 if compare["difference"] > 0 else -1]
    if compare["ci_low"] > 0 or compare["ci_high"] < 0:
        assert result.verdict[0].startswith(f"{lead} separates the topic groups more than {other}")
    else:
        assert result.verdict[0].startswith(f"{lead} and {other} cannot be told apart on these data")
    assert f"{abs(compare['difference']):.2f}" in result.verdict[0]
    assert "99 permutations" in result.verdict[1]
    assert result.verdict == json.loads(result.to_json())["verdict"]


def test_the_tests_read_the_rows_once_and_match_the_faces(emb_con, monkeypatch):
    """PERMANOVA and the dispersion test share one read of each model's rows (one model at a time, not one
    read per section, and not through the public faces), and give the numbers embsql.permanova and
    embsql.dispersion give."""
    from embsql.reporting import sections as sections_module

    reads = []
    real = sections_module.model_unit_rows
    monkeypatch.setattr(sections_module, "model_unit_rows", lambda *a, **k: reads.append(a[2:6]) or real(*a, **k))
    result = embsql.report("emb", vector="emb", group="topic", model="model", permutations=49,
                           sections=("permanova", "dispersion")).run(emb_con, progress=False)
    models = sorted(r[0] for r in emb_con.sql("select distinct model from emb").fetchall())
    assert reads == [("topic", "emb", "model", value) for value in models]
    permanova = embsql.permanova(emb_con, "emb", group="topic", vector="emb", model="model", permutations=49,
                                 check_dispersion=False, progress=False)
    tests = embsql.dispersion(emb_con, "emb", group="topic", vector="emb", model="model", permutations=49,
                              progress=False).test
    for name, face in (("permanova", permanova), ("dispersion", tests)):
        section = result[name]
        shared = [c for c in face.columns[1:] if c in section.columns]
        assert "p_value" in shared
        for row, expected in zip(section.to_dicts(), face.to_dicts()):
            assert row["model"] == expected["model"]
            assert {k: row[k] for k in shared} == {k: expected[k] for k in shared}
    assert [r["p_value"] for r in result.summary.to_dicts()] == permanova.column("p_value")
    assert [r["dispersion_p"] for r in result.summary.to_dicts()] == tests.column("p_value")


def test_the_sections_are_one_registry_with_their_cautions():
    from embsql.reporting import cautions
    from embsql.reporting.build import DEFAULT_SECTIONS, ROW_SECTIONS, SECTIONS
    from embsql.reporting.sections import REGISTRY

    assert SECTIONS == ("decomposition", "groups", "jackknife", "bootstrap", "compare", "permanova", "dispersion",
                        "models", "retrieval", "ranking")
    assert DEFAULT_SECTIONS == SECTIONS[:5] + ("ranking",) and ROW_SECTIONS == ("permanova", "dispersion", "models")
    for name, entry in REGISTRY.items():
        if name not in ("retrieval", "models"):      # these carry their own titles and cautions
            assert entry.caution == getattr(cautions, name.upper()) and entry.title
    default = Report("t", vector="v", group="g")     # ranking by default: it ranks when there are two models
    assert default.chosen_sections == SECTIONS[:7] + ("ranking",)
    assert default.replace(permutations=0).chosen_sections == SECTIONS[:5] + ("ranking",)
    assert default.replace(queries="q", docs="d").chosen_sections == SECTIONS[:7] + ("retrieval", "ranking")
    assert default.replace(item="i", model="m").chosen_sections == SECTIONS[:8] + ("ranking",)
