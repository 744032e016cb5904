"""bad_rows="skip" (SQL bad_rows := 'skip', CLI --skip-bad-rows): rows whose vector is NULL, zero or
non-finite are left out and counted per model and reason, and the figures are those of the same
call on the table with those rows removed beforehand in SQL (the reference here: a WHERE clause
written independently of embsql's own rule).  Without skipping, the error names the model, the
item (when item= is given) and the row counted from 1.

The table: three models (a: 4-d, b: 3-d, c: 5-d, 60 items each, items i -> group i mod 5).
  model a: item 3 NULL vector, item 7 zero vector, item 20 NaN coordinate  -> 1 NULL, 1 zero, 1 non-finite
  model b: item 10 NaN, item 11 +inf, item 12 NULL element, item 14 NULL vector, item 15 zero
                                                                            -> 2 NULL, 1 zero, 2 non-finite
  model c: no bad row                                                      -> 0, 0, 0
"""

from __future__ import annotations

import csv
import io
import math
import re
import subprocess

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import embsql_cli
from test_icc import duckdb_cli

import embsql
from embsql import InputError
from embsql.io.resources import sql_entry_file
from embsql.reporting.build import retrieval_report

MODELS = {"a": 4, "b": 3, "c": 5}
ITEMS = 60
BAD = {("a", 3): "null", ("a", 7): "zero", ("a", 20): "nan",
       ("b", 10): "nan", ("b", 11): "inf", ("b", 12): "null_element", ("b", 14): "null", ("b", 15): "zero"}
COUNTS = {"a": {"skipped_null": 1, "skipped_zero": 1, "skipped_nonfinite": 1},
          "b": {"skipped_null": 2, "skipped_zero": 1, "skipped_nonfinite": 2},
          "c": {"skipped_null": 0, "skipped_zero": 0, "skipped_nonfinite": 0}}
# the cleaned table, by a rule written here in SQL: a non-NULL vector with no NULL, NaN or infinite
# element and at least one non-zero element
CLEAN = ("SELECT * FROM {source} WHERE v IS NOT NULL "
         "AND len(list_filter(v, lambda x: x IS NULL OR isnan(x) OR isinf(x))) = 0 "
         "AND len(list_filter(v, lambda x: x <> 0)) > 0")


def _vector(kind: str | None, good: list[float]) -> list[float | None] | None:
    d = len(good)
    return {None: good, "null": None, "zero": [0.0] * d, "nan": [math.nan] + good[1:], "inf": [math.inf] + good[1:],
            "null_element": [None] + good[1:]}[kind]


def bad_table() -> pa.Table:
    rng = np.random.default_rng(32)
    rows = []
    for model, d in MODELS.items():
        centres = rng.standard_normal((5, d))
        for i in range(ITEMS):
            good = (centres[i % 5] + 0.8 * rng.standard_normal(d)).tolist()
            rows.append({"m": model, "item": f"i{i:02d}", "g": f"g{i % 5}", "v": _vector(BAD.get((model, i)), good)})
    return pa.Table.from_pylist(rows, schema=pa.schema([("m", pa.string()), ("item", pa.string()), ("g", pa.string()),
                                                        ("v", pa.list_(pa.float64()))]))


@pytest.fixture(scope="module")
def con():
    con = embsql.connect()
    con.register("bad_arrow", bad_table())
    con.execute("CREATE TABLE t AS SELECT * FROM bad_arrow")
    con.execute(f"CREATE TABLE clean AS {CLEAN.format(source='t')}")
    assert con.execute("SELECT count(*) FROM t").fetchall()[0][0] - con.execute("SELECT count(*) FROM clean").fetchall()[0][0] \
        == len(BAD)
    yield con
    con.close()


def _counts(skipped, model: str = "m") -> dict:
    return {row[model]: {k: v for k, v in row.items() if k != model} for row in skipped.to_dicts()}


def _same(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.keys() == e.keys()
        for key in g:
            if isinstance(e[key], float):
                assert g[key] == pytest.approx(e[key], rel=1e-12, abs=1e-14), key
            else:
                assert g[key] == e[key], key


# ---------------------------------------------------------------------------------------------- Python faces

def test_anova_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    got = embsql.anova(con, "t", group="g", vector="v", model="m", item="item", bad_rows="skip")
    expected = embsql.anova(con, "clean", group="g", vector="v", model="m", item="item")
    _same(got.to_dicts(), expected.to_dicts())
    assert got.column("n") == [ITEMS - 3, ITEMS - 5, ITEMS]
    assert _counts(got.skipped) == COUNTS
    assert expected.skipped is None                 # nothing asked, nothing attached
    assert "(8 rows with an unusable vector were skipped: .skipped)" in repr(got)


def test_groups_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    got = embsql.groups(con, "t", group="g", vector="v", model="m", bad_rows="skip")
    expected = embsql.groups(con, "clean", group="g", vector="v", model="m")
    _same(got.to_dicts(), expected.to_dicts())
    assert _counts(got.skipped) == COUNTS


def test_permanova_skipping_gives_the_cleaned_tables_observed_statistic_and_the_counts(con):
    got = embsql.permanova(con, "t", group="g", vector="v", model="m", permutations=19, bad_rows="skip",
                           check_dispersion=False)
    expected = embsql.permanova(con, "clean", group="g", vector="v", model="m", permutations=19,
                                check_dispersion=False)
    observed = ["m", "n", "groups", "ss_t", "ss_w", "ss_b", "r2", "f"]
    _same([{k: row[k] for k in observed} for row in got.to_dicts()],
          [{k: row[k] for k in observed} for row in expected.to_dicts()])
    assert _counts(got.skipped) == COUNTS


def test_dispersion_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    got = embsql.dispersion(con, "t", group="g", vector="v", model="m", permutations=19, bad_rows="skip")
    expected = embsql.dispersion(con, "clean", group="g", vector="v", model="m", permutations=19)
    _same([{k: v for k, v in row.items() if k != "p_value"} for row in got.test.to_dicts()],
          [{k: v for k, v in row.items() if k != "p_value"} for row in expected.test.to_dicts()])
    _same(got.groups.to_dicts(), expected.groups.to_dicts())
    assert _counts(got.skipped) == COUNTS


def test_jackknife_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    got = embsql.jackknife(con, "t", group="g", vector="v", model="m", bad_rows="skip")
    expected = embsql.jackknife(con, "clean", group="g", vector="v", model="m")
    _same(got.to_dicts(), expected.to_dicts())
    assert _counts(got.skipped) == COUNTS


def test_rank_models_skipping_gives_the_cleaned_tables_ranks_and_the_counts(con):
    got = embsql.rank_models(con, "t", group="g", vector="v", model="m", replicates=200, bad_rows="skip")
    expected = embsql.rank_models(con, "clean", group="g", vector="v", model="m", replicates=200)
    _same(got.to_dicts(), expected.to_dicts())
    assert _counts(got.skipped) == COUNTS


def test_rank_models_takes_bad_rows_only_where_it_reads_vectors(con):
    with pytest.raises(embsql.InputError) as raised:
        embsql.rank_models(con, "t", statistic="ndcg@10", bad_rows="skip")
    assert raised.value.kind == "argument.bad_rows"


def test_the_report_skipping_gives_the_cleaned_tables_summary_and_the_counts(con):
    got = embsql.report("t", vector="v", group="g", model="m", permutations=0, replicates=50,
                        bad_rows="skip").run(con, progress=False)
    expected = embsql.report("clean", vector="v", group="g", model="m", permutations=0,
                             replicates=50).run(con, progress=False)
    _same(got.summary.to_dicts(), expected.summary.to_dicts())
    assert got.meta["skipped"] == COUNTS
    assert "skipped" not in expected.meta
    notes = " ".join(got.meta.get("notes", []))
    assert ("skipped 8 row(s) with an unusable vector (model a: 1 NULL, 1 zero, 1 NaN/inf; "
            "model b: 2 NULL, 1 zero, 2 NaN/inf)") in notes


def test_permanova_terms_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    got = embsql.permanova_terms(con, "t", terms=["g"], vector="v", model="m", permutations=19, bad_rows="skip")
    expected = embsql.permanova_terms(con, "clean", terms=["g"], vector="v", model="m", permutations=19)
    _same(got.to_dicts(), expected.to_dicts())
    assert _counts(got.skipped) == COUNTS


@pytest.mark.parametrize("face", ["anova", "permanova", "permanova_terms", "knn_agreement"])
def test_a_row_named_after_skipping_is_its_row_in_the_table(face):
    """Rows 2 (NULL) and 3 (zero) are skipped; row 5's vector has another length: the error names
    row 5, counted in the table as given, not among the rows kept."""
    vectors = [[1.0, 0.0], None, [0.0, 0.0], [0.6, 0.8], [0.1, 0.2, 0.3], [0.0, 1.0], [0.8, 0.6], [0.3, 0.9]]
    table = pa.table({"m": ["a"] * 8, "item": [f"i{i}" for i in range(8)], "g": ["x", "x", "x", "x", "y", "y", "y", "y"],
                      "v": pa.array(vectors, pa.list_(pa.float64()))})
    con = embsql.connect()
    con.register("short", table)
    calls = {
        "anova": lambda: embsql.anova(con, "short", group="g", vector="v", model="m", bad_rows="skip"),
        "permanova": lambda: embsql.permanova(con, "short", group="g", vector="v", model="m", permutations=9,
                                              bad_rows="skip"),
        "permanova_terms": lambda: embsql.permanova_terms(con, "short", terms=["g"], vector="v", model="m",
                                                          permutations=9, bad_rows="skip"),
        "knn_agreement": lambda: embsql.knn_agreement(con, "short", item="item", model="m", vector="v", k=2,
                                                      bad_rows="skip"),
    }
    with pytest.raises(embsql.BadVectorError, match=r"a vector of length 3 at row 5 \(model 'a'"):
        calls[face]()


# ---------------------------------------------------------------------------------------------- SQL

def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_emb_anova_skipping_in_the_stock_cli_gives_the_cleaned_tables_figures_and_the_counts(tmp_path):
    pq.write_table(bad_table(), tmp_path / "t.parquet")
    columns = "m, n, groups, ss_t, ss_w, ss_b, r2, f"
    script = (f".read {sql_entry_file()}\n.mode csv\n"
              f"CREATE VIEW clean AS {CLEAN.format(source=repr(str(tmp_path / 't.parquet')))};\n"
              f"SELECT {columns}, skipped_null, skipped_zero, skipped_nonfinite FROM emb_anova('{tmp_path / 't.parquet'}', "
              f"'g', 'v', model := 'm', bad_rows := 'skip') ORDER BY m;\n"
              f"SELECT {columns} FROM emb_anova('clean', 'g', 'v', model := 'm') ORDER BY m;\n")
    out = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and not out.stderr, out.stderr
    blocks = re.split(r"^(?=m,n,)", out.stdout, flags=re.MULTILINE)[1:]       # one CSV block per SELECT
    assert len(blocks) == 2, out.stdout
    got, expected = (_csv_rows(block) for block in blocks)
    assert [row["m"] for row in got] == list(MODELS)
    for g, e in zip(got, expected):
        assert {k: int(g[k]) for k in COUNTS["a"]} == COUNTS[g["m"]]
        assert (g["n"], g["groups"]) == (e["n"], e["groups"])
        for key in ("ss_t", "ss_w", "ss_b", "r2", "f"):
            assert float(g[key]) == pytest.approx(float(e[key]), rel=1e-12), key


def test_emb_permanova_skipping_gives_the_cleaned_tables_observed_statistic_and_the_counts(con):
    columns = "m, n, groups, ss_t, ss_w, ss_b, r2, f"
    got = con.sql(f"SELECT {columns}, skipped_null, skipped_zero, skipped_nonfinite FROM "
                  "emb_permanova('t', 'g', 'v', model := 'm', permutations := 19, bad_rows := 'skip') ORDER BY m")
    expected = con.sql(f"SELECT {columns} FROM emb_permanova('clean', 'g', 'v', model := 'm', permutations := 19) "
                       "ORDER BY m")
    got_rows = [dict(zip(got.columns, row)) for row in got.fetchall()]
    expected_rows = [dict(zip(expected.columns, row)) for row in expected.fetchall()]
    _same([{k: row[k] for k in expected.columns} for row in got_rows], expected_rows)
    assert {row["m"]: {k: row[k] for k in COUNTS["a"]} for row in got_rows} == COUNTS


def test_emb_anova_without_skipping_has_no_skipped_columns_and_refuses_naming_the_model(con):
    """The table has 8 bad rows in 7 groups of two models: the one named is the first in the table's
    order (row 4, model a's item i03), whichever group DuckDB checks first, every time."""
    columns = [row[0] for row in con.sql("DESCRIBE SELECT * FROM emb_anova('clean', 'g', 'v', model := 'm')").fetchall()]
    assert not any(c.startswith("skipped_") for c in columns)
    for _ in range(5):
        with pytest.raises(embsql.BadVectorError) as raised:
            embsql.run_sql(con, "SELECT * FROM emb_anova('t', 'g', 'v', model := 'm')")
        assert str(raised.value).startswith("embsql: [vector.null] vector column \"v\" has a NULL vector at row 4 "
                                            "(model 'a', group 'g3'); "), str(raised.value)


@pytest.mark.parametrize("function", ["emb_anova", "emb_groups", "emb_permanova"])
def test_a_bad_vector_in_sql_is_named_by_its_first_row_from_1_as_the_python_face_names_it(con, function):
    """The SQL message names the row, model, item and group the Python face names (model b's NaN
    vector, item i10, is row 68 of only_b: rows counted from 1 in the table's order)."""
    con.execute("CREATE OR REPLACE TABLE only_b AS SELECT * FROM t "
                "WHERE NOT (m = 'a' AND item IN ('i03', 'i07', 'i20')) "
                "AND NOT (m = 'b' AND item IN ('i11', 'i12', 'i14', 'i15')) ORDER BY m, item")
    item = "" if function == "emb_permanova" else ", item := 'item'"
    extra = ", permutations := 9" if function == "emb_permanova" else ""
    with pytest.raises(embsql.BadVectorError) as sql:
        embsql.run_sql(con, f"SELECT * FROM {function}('only_b', 'g', 'v', model := 'm'{item}{extra})")
    with pytest.raises(embsql.BadVectorError) as python:
        embsql.groups(con, "only_b", group="g", vector="v", model="m", item=None if function == "emb_permanova" else "item")
    where = "row 68 (model 'b', group 'g0')" if function == "emb_permanova" else "row 68 (model 'b', item 'i10', group 'g0')"
    assert f"has a NaN vector at {where};" in str(sql.value), str(sql.value)
    assert str(sql.value).split("] ", 1)[1].replace('"v"', "'v'") == str(python.value)


# ---------------------------------------------------------------------------------------------- the command line

def test_the_cli_skip_bad_rows_prints_the_counts_per_model_and_reason(tmp_path):
    pq.write_table(bad_table(), tmp_path / "t.parquet")
    out = embsql_cli("report", tmp_path / "t.parquet", "--vector", "v", "--group", "g", "--model", "m",
                     "--permutations", "0", "--no-progress", "--skip-bad-rows")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())            # the note wraps at the terminal's width
    assert ("skipped 8 row(s) with an unusable vector (model a: 1 NULL, 1 zero, 1 NaN/inf; "
            "model b: 2 NULL, 1 zero, 2 NaN/inf)") in text
    refused = embsql_cli("report", tmp_path / "t.parquet", "--vector", "v", "--group", "g", "--model", "m",
                         "--permutations", "0", "--no-progress")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "NULL vector at row 4 (model 'a'" in refused.stderr, refused.stderr


# ---------------------------------------------------------------------------------------------- the messages

def test_a_bad_vector_is_named_by_model_item_and_row_from_1(con):
    """Row 4 is model a's item i03 (rows are counted from 1 in table order); with model a's three
    bad rows removed and model b's but one, model b's bad row (item i10) is row 57 + 10 + 1."""
    with pytest.raises(embsql.BadVectorError, match=r"^vector column 'v' has a NULL vector at row 4 "
                                                    r"\(model 'a', item 'i03', group 'g3'\)"):
        embsql.anova(con, "t", group="g", vector="v", model="m", item="item")
    with pytest.raises(embsql.BadVectorError, match=r"^vector column 'v' has a NULL vector at row 4 "
                                                    r"\(model 'a', group 'g3'\)"):
        embsql.anova(con, "t", group="g", vector="v", model="m")
    con.execute("CREATE OR REPLACE TABLE only_b AS SELECT * FROM t "
                "WHERE NOT (m = 'a' AND item IN ('i03', 'i07', 'i20')) "
                "AND NOT (m = 'b' AND item IN ('i11', 'i12', 'i14', 'i15')) ORDER BY m, item")
    with pytest.raises(embsql.BadVectorError, match=r"^vector column 'v' has a NaN vector at row 68 "
                                                    r"\(model 'b', item 'i10', group 'g0'\)"):
        embsql.groups(con, "only_b", group="g", vector="v", model="m", item="item")
    with pytest.raises(embsql.BadVectorError, match=r"^vector column 'v' has a NaN vector at row 68 "
                                                    r"\(model 'b', group 'g0'\)"):
        embsql.permanova(con, "only_b", group="g", vector="v", model="m", permutations=9)


def test_a_bad_vector_is_named_by_model_item_and_row_from_1_on_the_paired_faces(con):
    with pytest.raises(embsql.BadVectorError, match=r"vector at row 4 \(model 'a', item 'i03'"):
        embsql.knn_agreement(con, "t", item="item", model="m", vector="v", k=3)


@pytest.mark.parametrize("call", [
    lambda con: embsql.anova(con, "t", group="g", vector="v", bad_rows="drop"),
    lambda con: embsql.permanova(con, "t", group="g", vector="v", permutations=9, bad_rows="drop"),
    lambda con: embsql.knn_agreement(con, "t", item="item", model="m", vector="v", bad_rows="drop"),
    lambda con: embsql.report("t", vector="v", group="g", bad_rows="drop").run(con, progress=False),
], ids=["anova", "permanova", "knn_agreement", "report"])
def test_an_invalid_bad_rows_is_refused_with_its_kind(con, call):
    with pytest.raises(InputError) as raised:
        call(con)
    assert raised.value.kind == "argument.bad_rows"
    assert "'drop'" in str(raised.value) and "'error' or 'skip'" in str(raised.value)


@pytest.mark.parametrize("function", ["emb_anova", "emb_groups"])
def test_an_invalid_bad_rows_is_refused_in_sql_with_its_kind(con, function):
    with pytest.raises(InputError) as raised:
        embsql.run_sql(con, f"SELECT * FROM {function}('t', 'g', 'v', bad_rows := 'drop')")
    assert raised.value.kind == "argument.bad_rows"
    assert str(raised.value) == "embsql: [argument.bad_rows] bad_rows must be 'error' or 'skip', not 'drop'"


RANK_CALLS = {
    "emb_rank_models": "emb_rank_models('t', 'g', 'v', 'm', replicates := 20, bad_rows := {})",
    "emb_rank_cka": "emb_rank_cka('t', 'item', 'v', 'c', model := 'm', replicates := 20, bad_rows := {})",
    "emb_rank_similarity": "emb_rank_similarity('judged', 't', model := 'm', vector := 'v', replicates := 20, "
                           "bad_rows := {})",
}


@pytest.mark.parametrize("value,shown", [("0", "0"), ("true", "true"), ("1.5", "1.5"), ("NULL", "NULL"),
                                         ("'drop'", "'drop'")])
@pytest.mark.parametrize("function", RANK_CALLS)
def test_an_invalid_bad_rows_is_refused_by_every_rank_function_with_its_kind(con, function, value, shown):
    """A number or a boolean is refused by the bad_rows rule, not by DuckDB's failed cast of 'skip'."""
    con.execute("CREATE OR REPLACE TABLE judged AS SELECT 'i00' AS item_a, 'i01' AS item_b, 1.0 AS score")
    with pytest.raises(InputError) as raised:
        embsql.run_sql(con, "SELECT * FROM " + RANK_CALLS[function].format(value))
    assert raised.value.kind == "argument.bad_rows"
    assert str(raised.value) == f"embsql: [argument.bad_rows] bad_rows must be 'error' or 'skip', not {shown}"


def test_emb_rank_models_skipping_gives_the_cleaned_tables_ranks_and_the_counts(con):
    columns = "m, statistic, estimate, ci_low, ci_high, rank, rank_low, rank_high, top"
    got = con.sql(f"SELECT {columns}, skipped_null, skipped_zero, skipped_nonfinite FROM "
                  "emb_rank_models('t', 'g', 'v', 'm', replicates := 50, bad_rows := 'skip') ORDER BY m")
    expected = con.sql(f"SELECT {columns} FROM emb_rank_models('clean', 'g', 'v', 'm', replicates := 50) ORDER BY m")
    got_rows = [dict(zip(got.columns, row)) for row in got.fetchall()]
    expected_rows = [dict(zip(expected.columns, row)) for row in expected.fetchall()]
    _same([{k: row[k] for k in expected.columns} for row in got_rows], expected_rows)
    assert {row["m"]: {k: row[k] for k in COUNTS["a"]} for row in got_rows} == COUNTS


def test_emb_rank_cka_skipping_gives_the_cleaned_tables_ranks_and_the_counts(con):
    """Item i05 is unusable in every model (so the models stay paired once it is skipped): NULL in the
    reference r, zero in x, NaN in y and NULL in z; the counts are the ranked models'."""
    rng = np.random.default_rng(11)
    base = rng.normal(size=(40, 6))
    rows = [{"m": m, "item": f"i{i:02d}", "v": (base[i] + s * rng.normal(size=6)).tolist()}
            for m, s in (("r", 0.1), ("x", 0.3), ("y", 0.8), ("z", 1.5)) for i in range(40)]
    bad = {"r": None, "x": [0.0] * 6, "y": [float("nan")] * 6, "z": None}
    con.register("cka_bad", pa.Table.from_pylist([{**r, "v": bad[r["m"]]} if r["item"] == "i05" else r for r in rows]))
    con.register("cka_clean", pa.Table.from_pylist([r for r in rows if r["item"] != "i05"]))
    call = "emb_rank_cka('{}', 'item', 'v', 'r', model := 'm', replicates := 200{})"
    got = con.sql("SELECT * FROM " + call.format("cka_bad", ", bad_rows := 'skip'"))
    expected = con.sql("SELECT * FROM " + call.format("cka_clean", ""))
    got_rows = [dict(zip(got.columns, row)) for row in got.fetchall()]
    expected_rows = [dict(zip(expected.columns, row)) for row in expected.fetchall()]
    _same([{k: row[k] for k in expected.columns} for row in got_rows], expected_rows)
    assert {row["m"]: (row["skipped_null"], row["skipped_zero"], row["skipped_nonfinite"]) for row in got_rows} == \
        {"x": (0, 1, 0), "y": (0, 0, 1), "z": (1, 0, 0)}
    assert "skipped_null" not in expected.columns


# ---------------------------------------------------------------------------------------------- retrieval faces
# Two models (a: 3-d, b: 4-d).  Documents d00..d11 in topics t0..t2 (i mod 3); queries q00..q23 in
# paraphrase groups p0..p5 (i mod 6), strength i // 6 mod 2, positive d(2 (i mod 6)): only even
# documents are positives, and only odd documents are bad, so the cleaned tables keep every positive.
#   model a: q03 NULL, q08 NaN, d01 +inf                  -> 1 NULL, 0 zero, 2 non-finite
#   model b: q05 zero, q10 NULL element, d03 NULL, d05 zero -> 2 NULL, 2 zero, 0 non-finite
R_MODELS = {"a": 3, "b": 4}
R_BAD = {("a", "q03"): "null", ("a", "q08"): "nan", ("a", "d01"): "inf",
         ("b", "q05"): "zero", ("b", "q10"): "null_element", ("b", "d03"): "null", ("b", "d05"): "zero"}
R_COUNTS = {"a": {"skipped_null": 1, "skipped_zero": 0, "skipped_nonfinite": 2},
            "b": {"skipped_null": 2, "skipped_zero": 2, "skipped_nonfinite": 0}}


def retrieval_tables() -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(7)
    queries, docs = [], []
    for model, d in R_MODELS.items():
        topics = rng.standard_normal((3, d))
        doc_vectors = [topics[i % 3] + 0.5 * rng.standard_normal(d) for i in range(12)]
        for i, v in enumerate(doc_vectors):
            docs.append({"enc": model, "doc_id": f"d{i:02d}", "topic": f"t{i % 3}",
                         "v": _vector(R_BAD.get((model, f"d{i:02d}")), v.tolist())})
        for i in range(24):
            positive = 2 * (i % 6)
            v = doc_vectors[positive] + 0.7 * rng.standard_normal(d)
            queries.append({"enc": model, "qid": f"q{i:02d}", "para": f"p{i % 6}", "level": i // 6 % 2,
                            "pos": f"d{positive:02d}", "v": _vector(R_BAD.get((model, f"q{i:02d}")), v.tolist())})
    vector = ("v", pa.list_(pa.float64()))
    return (pa.Table.from_pylist(queries, schema=pa.schema([("enc", pa.string()), ("qid", pa.string()),
                                                            ("para", pa.string()), ("level", pa.int64()),
                                                            ("pos", pa.string()), vector])),
            pa.Table.from_pylist(docs, schema=pa.schema([("enc", pa.string()), ("doc_id", pa.string()),
                                                         ("topic", pa.string()), vector])))


def _with_retrieval_tables(con):
    """``con`` with the tables q and d, and q_clean and d_clean (CLEAN's rows of each)."""
    queries, docs = retrieval_tables()
    con.register("q_arrow", queries)
    con.register("d_arrow", docs)
    for name in ("q", "d"):
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
        con.execute(f"CREATE TABLE {name}_clean AS {CLEAN.format(source=name)}")
    return con


@pytest.fixture(scope="module")
def rcon():
    con = _with_retrieval_tables(embsql.connect())
    removed = sum(con.execute(f"SELECT (SELECT count(*) FROM {n}) - (SELECT count(*) FROM {n}_clean)").fetchall()[0][0]
                  for n in ("q", "d"))
    assert removed == len(R_BAD)
    yield con
    con.close()


def _queries(name: str) -> embsql.Queries:
    return embsql.Queries(name, qid="qid", group="para", positive="pos", vector="v", strength="level")


def _docs(name: str) -> embsql.Docs:
    return embsql.Docs(name, doc_id="doc_id", group="topic", vector="v")


RETRIEVAL_FACES = {
    "margins": lambda con, q, d, **kw: embsql.margins(con, _queries(q), _docs(d), model="enc", **kw),
    "margins_group_scope": lambda con, q, d, **kw: embsql.margins(con, _queries(q), _docs(d), model="enc",
                                                                  scope="group", **kw),
    "retrieval_summary": lambda con, q, d, **kw: embsql.retrieval_summary(con, _queries(q), _docs(d), model="enc", **kw),
    "pairing": lambda con, q, d, **kw: embsql.pairing(con, _queries(q), _docs(d), model="enc", **kw),
    "retrieval_dose": lambda con, q, d, **kw: embsql.retrieval_dose(con, _queries(q), _docs(d), model="enc", permutations=19,
                                                                    **kw),
    "retrieve": lambda con, q, d, **kw: embsql.retrieve(con, _queries(q), _docs(d), model="enc", k=5, **kw),
}


@pytest.mark.parametrize("face", RETRIEVAL_FACES)
def test_retrieval_skipping_gives_the_cleaned_tables_figures_and_the_counts(rcon, face):
    got = RETRIEVAL_FACES[face](rcon, "q", "d", bad_rows="skip")
    expected = RETRIEVAL_FACES[face](rcon, "q_clean", "d_clean")
    assert got.columns == expected.columns
    _same(got.to_dicts(), expected.to_dicts())
    assert len(got.to_dicts()) > 0
    assert _counts(got.skipped, "enc") == R_COUNTS
    assert expected.skipped is None


def test_retrieval_layers_skipping_gives_the_cleaned_tables_figures_the_counts_and_a_note(rcon):
    got = embsql.retrieval_layers(rcon, _queries("q"), _docs("d"), model="enc", permutations=19, bad_rows="skip")
    expected = embsql.retrieval_layers(rcon, _queries("q_clean"), _docs("d_clean"), model="enc", permutations=19)
    _same(got.summary.to_dicts(), expected.summary.to_dicts())
    assert [s.name for s in got.sections] == [s.name for s in expected.sections]
    for mine, theirs in zip(got.sections, expected.sections):
        _same(mine.table.to_dicts(), theirs.table.to_dicts())
    assert _counts(got.skipped, "enc") == R_COUNTS
    assert ("skipped 7 row(s) with an unusable vector (model a: 1 NULL, 2 NaN/inf; model b: 2 NULL, 2 zero)"
            in got.meta["notes"])


@pytest.mark.parametrize("face", ["margins", "retrieve"])
def test_a_bad_retrieval_vector_is_an_error_naming_its_row_without_skipping(rcon, face):
    """q03 of model a is row 4 of the queries (rows counted from 1)."""
    with pytest.raises(embsql.BadVectorError, match=r"NULL vector at row 4 \((model 'a', )?qid 'q03'"):
        RETRIEVAL_FACES[face](rcon, "q", "d")


def test_a_row_named_after_skipping_retrieval_rows_is_its_row_in_the_table(rcon):
    """With model a's bad rows (rows 4 and 9) skipped, a vector of another length is still named by
    its row in the queries table as given."""
    rcon.execute("CREATE OR REPLACE TABLE q_short AS SELECT * REPLACE (CASE WHEN qid = 'q09' THEN [1.0, 2.0] "
                 "ELSE v END AS v) FROM q WHERE enc = 'a' ORDER BY qid")       # row 10: another length
    with pytest.raises(embsql.BadVectorError, match=r"a vector of length 2 at row 10 \(qid 'q09'"):
        embsql.margins(rcon, _queries("q_short"), _docs("d"), model="enc", bad_rows="skip")


@pytest.mark.parametrize("face", ["margins", "retrieve"])
def test_an_invalid_bad_rows_is_refused_on_the_retrieval_faces(rcon, face):
    with pytest.raises(InputError) as raised:
        RETRIEVAL_FACES[face](rcon, "q", "d", bad_rows="drop")
    assert raised.value.kind == "argument.bad_rows"


# ---------------------------------------------------------------------------------------------- SQL, the others
# Each call on the table with bad rows and bad_rows := 'skip' against the same call on the table
# cleaned in SQL (CLEAN); {t} is the table.  Counted: per-model tables carry the skipped_ columns
# (on each of a model's rows); the tables of pairs of models have no place for them.
SQL_COUNTED = {
    "emb_permanova_welch": "emb_permanova_welch('{t}', 'g', 'v', permutations := 19, model := 'm'{skip})",
    "emb_dispersion_groups": "emb_dispersion_groups('{t}', 'g', 'v', model := 'm', permutations := 19{skip})",
    "emb_permanova_terms": "emb_permanova_terms('{t}', ['g'], 'v', permutations := 19, model := 'm'{skip})",
    "emb_rank_models": "emb_rank_models('{t}', 'g', 'v', 'm', replicates := 50{skip})",
    "emb_knn_classify": "emb_knn_classify('{t}', label := 'g', vector := 'v', model := 'm', item := 'item', k := 3{skip})",
    "emb_knn_classify_items": "emb_knn_classify_items('{t}', label := 'g', vector := 'v', model := 'm', item := 'item', "
                              "k := 3{skip})",
    "emb_centroid_classify": "emb_centroid_classify('{t}', label := 'g', vector := 'v', model := 'm'{skip})",
}
SQL_PAIRS = {
    "emb_knn_agreement": "emb_knn_agreement('{t}', 'item', 'm', 'v', k := 3, common := true{skip})",
    "emb_knn_agreement_items": "emb_knn_agreement_items('{t}', 'item', 'm', 'v', k := 3, common := true{skip})",
    "emb_mantel": "emb_mantel('{t}', 'item', 'm', 'v', permutations := 19, common := true{skip})",
    "emb_cka": "emb_cka('{t}', 'item', 'm', 'v', permutations := 19, common := true{skip})",
    "emb_procrustes": "emb_procrustes('{t}', 'item', 'm', 'v', permutations := 19, common := true{skip})",
    "emb_compare_cka": "emb_compare_cka('{t}', 'item', 'm', 'v', 'c', common := true{skip})",
    "emb_compare_structure": "emb_compare_structure('{t}', 'g', 'v', 'm', 'item', replicates := 50, common := true{skip})",
}
SKIP = ", bad_rows := 'skip'"


def _sql_rows(con, call: str) -> list[dict]:
    result = con.sql(f"SELECT * FROM {call}")
    return [dict(zip(result.columns, row)) for row in result.fetchall()]


def _same_with_counts(got: list[dict], expected: list[dict], counts: dict, model: str) -> None:
    """got (with bad_rows := 'skip') has expected's rows (the cleaned table's, without skipped_ columns),
    and, last, the counts per model and reason on each row."""
    assert got and not any(c.startswith("skipped_") for c in expected[0])
    _same([{k: row[k] for k in expected[0]} for row in got], expected)
    assert list(got[0])[-3:] == list(COUNTS["a"])             # the counts come last
    for row in got:
        assert {k: row[k] for k in COUNTS["a"]} == counts[row[model]]
    assert {row[model] for row in got} == set(counts)


@pytest.mark.parametrize("function", SQL_COUNTED)
def test_sql_skipping_gives_the_cleaned_tables_figures_and_the_counts_per_model(con, function):
    got = _sql_rows(con, SQL_COUNTED[function].format(t="t", skip=SKIP))
    expected = _sql_rows(con, SQL_COUNTED[function].format(t="clean", skip=""))
    _same_with_counts(got, expected, COUNTS, "m")


@pytest.mark.parametrize("function", SQL_PAIRS)
def test_sql_skipping_on_the_pair_tables_gives_the_cleaned_tables_figures(con, function):
    got = _sql_rows(con, SQL_PAIRS[function].format(t="t", skip=SKIP))
    expected = _sql_rows(con, SQL_PAIRS[function].format(t="clean", skip=""))
    assert got
    _same(got, expected)


@pytest.mark.parametrize("function", [*SQL_COUNTED, *SQL_PAIRS])
def test_sql_without_skipping_a_bad_vector_is_an_error(con, function):
    call = {**SQL_COUNTED, **SQL_PAIRS}[function].format(t="t", skip="")
    with pytest.raises(embsql.BadVectorError, match=r"^embsql: \[vector\.\w+\]"):
        embsql.run_sql(con, f"SELECT * FROM {call}")
    with pytest.raises(InputError) as raised:
        embsql.run_sql(con, f"SELECT * FROM {call[:-1]}, bad_rows := 'drop')")
    assert raised.value.kind == "argument.bad_rows"


@pytest.mark.parametrize("value", ["0", "true", "1.5"])
@pytest.mark.parametrize("function", ["emb_anova", "emb_jackknife", "emb_permanova_terms", "emb_knn_classify",
                                      "emb_compare_structure"])
def test_a_bad_rows_of_another_type_is_refused_as_an_argument_not_a_failed_cast(con, function, value):
    """(bad_rows := 0 was DuckDB's `Could not convert string 'skip' to INT32`.)"""
    call = {"emb_anova": "emb_anova('t', 'g', 'v'{skip})", "emb_jackknife": "emb_jackknife('t', 'g', 'v'{skip})",
            **SQL_COUNTED, **SQL_PAIRS}[function].format(t="t", skip=f", bad_rows := {value}")
    with pytest.raises(InputError) as raised:
        embsql.run_sql(con, f"SELECT * FROM {call}")
    assert str(raised.value) == f"embsql: [argument.bad_rows] bad_rows must be 'error' or 'skip', not {value}"


def test_emb_retrieval_dose_skipping_gives_the_cleaned_tables_figures_and_the_counts(rcon):
    call = ("emb_retrieval_dose('{t}', strength := 'level', \"group\" := 'para', vector := 'v', model := 'enc', "
            "permutations := 19{skip})")
    got = _sql_rows(rcon, call.format(t="q", skip=SKIP))
    expected = _sql_rows(rcon, call.format(t="q_clean", skip=""))
    _same([{k: row[k] for k in expected[0]} for row in got], expected)
    # the queries' own bad rows: a: q03 NULL, q08 NaN; b: q05 zero, q10 NULL element
    queries_only = {"a": {"skipped_null": 1, "skipped_zero": 0, "skipped_nonfinite": 1},
                    "b": {"skipped_null": 1, "skipped_zero": 1, "skipped_nonfinite": 0}}
    for row in got:
        assert {k: row[k] for k in COUNTS["a"]} == queries_only[row["enc"]]
    with pytest.raises(embsql.BadVectorError, match=r"at row \d+ \(model '[ab]', qid 'q\d\d'\)"):
        embsql.run_sql(rcon, f"SELECT * FROM {call.format(t='q', skip='')}")


def test_emb_permanova_terms_names_a_bad_vector_by_its_row_in_the_table_from_1(con):
    """Model b's NULL vector (item i14) comes after model a's 57 rows and b's 11 rows i00..i13 but
    i10..i12: row 57 + 11 + 1 = 69 of the table; the kernel used to count it within its model from 0
    (row 11)."""
    con.execute("CREATE OR REPLACE TABLE only_null_b AS SELECT * FROM t WHERE NOT (m = 'a' AND item IN ('i03', 'i07', "
                "'i20')) AND NOT (m = 'b' AND item IN ('i10', 'i11', 'i12', 'i15')) ORDER BY m, item")
    with pytest.raises(embsql.BadVectorError) as raised:
        embsql.run_sql(con, "SELECT * FROM emb_permanova_terms('only_null_b', ['g'], 'v', permutations := 9, "
                            "model := 'm')")
    assert str(raised.value) == ("embsql: [vector.null] vector column 'v' has a NULL vector at row 69 (model 'b'); "
                                 "vectors must be non-NULL, finite and of non-zero length")


def test_emb_compare_names_the_model_of_a_bad_vector(con):
    """(emb_compare_structure named only the item; the item is in every model.)"""
    with pytest.raises(embsql.BadVectorError) as raised:
        embsql.run_sql(con, "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'm', 'item', replicates := 50)")
    assert re.match(r"embsql: \[vector\.\w+\] vector column 'v' has a \w+ vector at item 'i\d\d' of model '[ab]'; ",
                    str(raised.value)), str(raised.value)


REPORT_RETRIEVAL = {"qid": "qid", "group": "para", "positive": "pos", "vector": "v", "strength": "level",
                    "doc_id": "doc_id", "doc_group": "topic", "doc_vector": "v"}


@pytest.mark.parametrize("route", ["report", "retrieval_report"])
def test_the_reports_retrieval_layers_skip_bad_rows_when_asked(rcon, route):
    """--skip-bad-rows reaches the report's retrieval layers (the report's section and the retrieval-only
    report of `embsql report --queries --docs`): the cleaned tables' figures and the note counting the rows;
    without it a bad vector is refused."""
    def run(q, d, **kw):
        if route == "report":
            return embsql.report("q_clean", vector="v", group="para", model="enc", queries=q, docs=d, permutations=19,
                                 sections=("retrieval",), retrieval=REPORT_RETRIEVAL, **kw).run(rcon)
        return retrieval_report(rcon, queries=q, docs=d, model="enc", permutations=19, retrieval=REPORT_RETRIEVAL, **kw)

    got, expected = run("q", "d", bad_rows="skip"), run("q_clean", "d_clean")
    layers = [s.name for s in expected.sections if s.name != "ranking"]
    assert {"alignment", "rank"} <= set(layers)
    for name in layers:
        _same(got[name].to_dicts(), expected[name].to_dicts())
    assert any("skipped 7 row(s) with an unusable vector (model a: 1 NULL, 2 NaN/inf; model b: 2 NULL, 2 zero)"
               in note for note in got.meta["notes"])
    with pytest.raises(embsql.BadVectorError, match=r"NULL vector at row 4 \(qid 'q03'"):
        run("q", "d")


# ---------------------------------------------------------------------------------------------- SQL retrieval faces
# emb_margins and emb_retrieval_summary with bad_rows := 'skip', on the registered connection (the
# blocked UDF) and on the stock SQL file (the plain join): the cleaned tables' figures, and the
# counts of both tables together per model (on each row).
SQL_RETRIEVAL = {
    "emb_margins": "emb_margins('{q}', '{d}', qid := 'qid', positive := 'pos', vector := 'v', doc_id := 'doc_id', "
                   "doc_group := 'topic', doc_vector := 'v', model := 'enc'{skip})",
    "emb_margins group scope": "emb_margins('{q}', '{d}', scope := 'group', qid := 'qid', positive := 'pos', "
                               "vector := 'v', doc_id := 'doc_id', doc_group := 'topic', doc_vector := 'v', "
                               "model := 'enc'{skip})",
    "emb_retrieval_summary": "emb_retrieval_summary('{q}', '{d}', qid := 'qid', \"group\" := 'para', positive := 'pos', "
                             "vector := 'v', doc_id := 'doc_id', doc_group := 'topic', doc_vector := 'v', "
                             "model := 'enc'{skip})",
}


@pytest.fixture(scope="module")
def stock_rcon():
    stock = duckdb.connect()
    stock.execute(sql_entry_file().read_text())
    yield _with_retrieval_tables(stock)
    stock.close()


@pytest.mark.parametrize("route", ["registered", "stock"])
@pytest.mark.parametrize("function", SQL_RETRIEVAL)
def test_sql_retrieval_skipping_gives_the_cleaned_tables_figures_and_the_counts(rcon, stock_rcon, function, route):
    con = rcon if route == "registered" else stock_rcon
    call = SQL_RETRIEVAL[function]
    got = _sql_rows(con, call.format(q="q", d="d", skip=SKIP))
    expected = _sql_rows(con, call.format(q="q_clean", d="d_clean", skip=""))
    _same_with_counts(got, expected, R_COUNTS, "enc")
    # without skipping, the first bad row is an error naming its row from 1 and its id
    with pytest.raises(duckdb.Error, match=r"embsql: \[vector\.\w+\] .* at row \d+ \(model '[ab]', (qid|doc_id) '[qd]\d\d'\)"):
        con.sql(f"SELECT * FROM {call.format(q='q', d='d', skip='')}").fetchall()
    with pytest.raises(duckdb.Error, match=r"embsql: \[argument\.bad_rows\] bad_rows must be 'error' or 'skip', not 0"):
        con.sql(f"SELECT * FROM {call.format(q='q', d='d', skip=', bad_rows := 0')}").fetchall()


def test_emb_retrieval_eval_skipping_gives_the_cleaned_tables_figures_and_the_counts(rcon):
    rcon.execute("CREATE OR REPLACE TABLE qr AS SELECT DISTINCT qid, pos AS doc_id, 1 AS relevance FROM q")
    call = ("emb_retrieval_eval('{q}', '{d}', 'qr', k := 5, model := 'enc', vector := 'v', doc_vector := 'v', "
            "unknown := 'skip'{skip})")
    got = _sql_rows(rcon, call.format(q="q", d="d", skip=SKIP))
    expected = _sql_rows(rcon, call.format(q="q_clean", d="d_clean", skip=""))
    _same_with_counts(got, expected, R_COUNTS, "enc")
    with pytest.raises(embsql.BadVectorError, match=r"at row \d+ \(model '[ab]', (qid|doc_id) '[qd]\d\d'\)"):
        embsql.run_sql(rcon, f"SELECT * FROM {call.format(q='q', d='d', skip='')}")


# ---------------------------------------------------------------------------------------------- similarity faces
# Gold pairs (i, i + 1) and (i, i + 7) of the table's items, scores from a fixed formula; a skipped
# row leaves its item without a vector in that model, so its pairs go with missing='skip'.
SIMILARITY_PAIRS = ("CREATE OR REPLACE TABLE sim_pairs AS SELECT 'i' || lpad(i::VARCHAR, 2, '0') AS item_a, "
                    "'i' || lpad(((i + s) % 60)::VARCHAR, 2, '0') AS item_b, ((i * 13 + s * 7) % 11)::DOUBLE AS score "
                    "FROM range(60) r(i), (VALUES (1), (7)) t(s)")
SIMILARITY_FACES = {
    "similarity_eval": lambda con, t, **kw: embsql.similarity_eval(con, "sim_pairs", t, model="m", vector="v",
                                                                   missing="skip", item="item", **kw),
    "similarity_eval per pair": lambda con, t, **kw: embsql.similarity_eval(con, "sim_pairs", t, model="m", vector="v",
                                                                            missing="skip", per_pair=True, item="item", **kw),
    "compare_similarity": lambda con, t, **kw: embsql.compare_similarity(con, "sim_pairs", t, model="m", vector="v",
                                                                         missing="skip", item="item", **kw),
}


@pytest.mark.parametrize("face", SIMILARITY_FACES)
def test_similarity_skipping_gives_the_cleaned_tables_figures_and_the_counts(con, face):
    con.execute(SIMILARITY_PAIRS)
    got = SIMILARITY_FACES[face](con, "t", bad_rows="skip")
    expected = SIMILARITY_FACES[face](con, "clean")
    assert got.columns == expected.columns and len(got.to_dicts()) > 0
    _same(got.to_dicts(), expected.to_dicts())
    assert _counts(got.skipped) == COUNTS
    assert expected.skipped is None
    with pytest.raises(embsql.BadVectorError):
        SIMILARITY_FACES[face](con, "t")
    with pytest.raises(InputError) as raised:
        SIMILARITY_FACES[face](con, "t", bad_rows=0)
    assert raised.value.kind == "argument.bad_rows"


def test_emb_similarity_eval_skipping_gives_the_cleaned_tables_figures_and_the_counts(con):
    con.execute(SIMILARITY_PAIRS)
    call = "emb_similarity_eval('sim_pairs', '{t}', model := 'm', vector := 'v', missing := 'skip'{skip})"
    got = _sql_rows(con, call.format(t="t", skip=SKIP))
    expected = _sql_rows(con, call.format(t="clean", skip=""))
    _same_with_counts(got, expected, COUNTS, "m")
    compare = "emb_compare_similarity('sim_pairs', '{t}', model := 'm', vector := 'v', missing := 'skip'{skip})"
    _same(_sql_rows(con, compare.format(t="t", skip=SKIP)), _sql_rows(con, compare.format(t="clean", skip="")))
    for query in (call, compare):
        with pytest.raises(embsql.BadVectorError):
            embsql.run_sql(con, f"SELECT * FROM {query.format(t='t', skip='')}")


@pytest.mark.parametrize("route", ["registered", "stock"])
@pytest.mark.parametrize("function", ["emb_similarity_pearson", "emb_similarity_spearman"])
def test_the_plain_sql_similarity_skips_or_refuses_a_bad_vector(con, function, route):
    """(A zero or NaN vector gave r = 1 with a NaN se, a NULL element DuckDB's own error.)"""
    if route == "stock":
        con = duckdb.connect()
        con.execute(sql_entry_file().read_text())
        con.register("bad_arrow", bad_table())
        con.execute("CREATE TABLE t AS SELECT * FROM bad_arrow")
        con.execute(f"CREATE TABLE clean AS {CLEAN.format(source='t')}")
    con.execute(SIMILARITY_PAIRS)
    call = f"{function}('sim_pairs', '{{t}}', model := 'm', vector := 'v', missing := 'skip'{{skip}})"
    got = _sql_rows(con, call.format(t="t", skip=SKIP))
    expected = _sql_rows(con, call.format(t="clean", skip=""))
    _same_with_counts(got, expected, COUNTS, "m")
    # without skipping: the first bad row (model a, item i03, row 4) by its kind, item, model and row
    with pytest.raises(duckdb.Error, match=r"embsql: \[vector\.null\] vector column 'v' has a NULL vector at row 4 "
                                           r"\(model 'a', item 'i03'\);"):
        con.sql(f"SELECT * FROM {call.format(t='t', skip='')}").fetchall()
    for word, kind, vector in [("zero-length", "zero", "[0.0, 0.0, 0.0, 0.0, 0.0]"),
                               ("NaN", "nonfinite", "['nan'::DOUBLE, 1, 1, 1, 1]"),
                               ("NULL-element", "null_element", "[NULL, 1.0, 1, 1, 1]")]:
        con.execute(f"CREATE OR REPLACE TABLE z AS SELECT * REPLACE (CASE WHEN item = 'i07' THEN {vector} ELSE v END AS v) "
                    "FROM clean WHERE m = 'c'")
        with pytest.raises(duckdb.Error,
                           match=rf"embsql: \[vector\.{kind}\] .* has a {word} vector at row \d+ \(model 'c', item 'i07'\)"):
            con.sql(f"SELECT * FROM {call.format(t='z', skip='')}").fetchall()


def test_a_bad_vector_is_named_by_model_item_and_row_on_compare_and_similarity(con):
    """(compare named no item, similarity_eval no model, the SQL similarity functions no row.)  Model a's
    item i03 is row 4 of the table."""
    con.execute(SIMILARITY_PAIRS)
    calls = [lambda: embsql.compare_structure(con, "t", group="g", vector="v", model="m", item="item"),
             lambda: embsql.similarity_eval(con, "sim_pairs", "t", model="m", vector="v", item="item"),
             lambda: embsql.run_sql(con, "SELECT * FROM emb_similarity_eval('sim_pairs', 't', model := 'm', vector := 'v')"),
             lambda: embsql.run_sql(con, "SELECT * FROM emb_compare_similarity('sim_pairs', 't', model := 'm', "
                                         "vector := 'v')")]
    for call in calls:
        with pytest.raises(embsql.BadVectorError, match=r"NULL vector at row 4 \(model 'a', item 'i03'"):
            call()


@pytest.mark.parametrize("function", ["emb_similarity_eval", "emb_similarity_pearson", "emb_similarity_spearman"])
def test_a_bad_embedding_is_named_alike_by_python_and_every_sql_similarity_function(function):
    """One wording of the rule (the table's row from 1, model, item) from Python, the UDFs and the plain-SQL tier."""
    con = embsql.connect()
    # two models, their rows interleaved: the bad vector is model b's 4th row and the table's 8th
    con.register("e", pa.table({"m": ["a", "b"] * 4, "item": ["i0", "i0", "i1", "i1", "i2", "i2", "i3", "i3"],
                                "v": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 1.0], [2.0, 1.0], [1.0, 2.0],
                                      [1.0, 3.0], [float("nan"), 1.0]]}))
    con.register("p", pa.table({"item_a": ["i0", "i1"], "item_b": ["i1", "i3"], "score": [1.0, 2.0]}))
    with pytest.raises(embsql.BadVectorError) as python:
        embsql.similarity_eval(con, "p", "e", vector="v", item="item", model="m")
    with pytest.raises(duckdb.Error) as sql:
        con.sql(f"SELECT * FROM {function}('p', 'e', model := 'm', vector := 'v')").fetchall()
    said = str(python.value).split(": ", 1)[1]
    assert said.startswith("vector column 'v' has a NaN vector at row 8 (model 'b', item 'i3')")
    assert python.value.kind == "vector.nonfinite"
    assert f"embsql: [vector.nonfinite] {said}" in str(sql.value)
