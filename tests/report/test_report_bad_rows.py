"""bad_rows="skip" (--skip-bad-rows) in the report's sections that read rows besides stage 1: the
similarity sections and the retrieval evaluation (of the full report and of the retrieval-only
report).  Each is compared with the same report on the tables cleaned in SQL beforehand
(test_bad_rows.CLEAN, a rule written independently of embsql's own), and the skipped rows are
counted once per model and reason in the report's notes.

The retrieval evaluation needs one more step for its reference: the models skip different queries
(model a: q03, q08; model b: q05, q10), so the per-model metrics are each model's alone on the
cleaned tables, and the paired comparison is the cleaned tables' on the 20 queries both models kept.
"""

from __future__ import annotations

import pytest
import test_bad_rows as bad
from test_cli import embsql_cli

import embsql
from embsql.reporting.build import retrieval_report

SKIP_NOTE = "skipped 8 row(s) with an unusable vector (model a: 1 NULL, 1 zero, 1 NaN/inf; model b: 2 NULL, 1 zero, 2 NaN/inf)"
R_SKIP_NOTE = "skipped 7 row(s) with an unusable vector (model a: 1 NULL, 2 NaN/inf; model b: 2 NULL, 2 zero)"
SIMILARITY_SECTIONS = ("similarity", "similarity_compare", "similarity_pairs")


@pytest.fixture(scope="module")
def con():
    con = embsql.connect()
    con.register("bad_arrow", bad.bad_table())
    con.execute("CREATE TABLE t AS SELECT * FROM bad_arrow")
    con.execute(f"CREATE TABLE clean AS {bad.CLEAN.format(source='t')}")
    con.execute(bad.SIMILARITY_PAIRS)
    bad._with_retrieval_tables(con)
    con.execute("CREATE TABLE qr AS SELECT DISTINCT qid, pos AS doc_id, 1 AS relevance FROM q")
    yield con
    con.close()


def _similarity_report(con, source: str, **kw):
    return embsql.report(source, vector="v", group="g", model="m", item="item", pairs="sim_pairs",
                         similarity={"missing": "skip"}, permutations=0, replicates=50,
                         sections=("decomposition",), **kw).run(con, progress=False)


def test_the_similarity_sections_skip_bad_rows_as_the_cleaned_table_and_count_them_once(con):
    got, expected = _similarity_report(con, "t", bad_rows="skip"), _similarity_report(con, "clean")
    for name in SIMILARITY_SECTIONS:
        assert len(expected[name].to_dicts()) > 0, name
        bad._same(got[name].to_dicts(), expected[name].to_dicts())
    assert got.meta["skipped"] == bad.COUNTS
    assert got.meta["notes"].count(SKIP_NOTE) == 1              # stage 1 and the similarity read the same rows
    with pytest.raises(embsql.BadVectorError, match=r"NULL vector at row 4 \(model 'a'"):
        _similarity_report(con, "t")


def _evaluation(con, q: str, d: str, qrels: str = "qr", **kw):
    return retrieval_report(con, queries=q, docs=d, qrels=qrels, model="enc", permutations=19, replicates=50,
                            retrieval=bad.REPORT_RETRIEVAL, **kw)


def test_the_retrieval_only_evaluation_skips_bad_rows_as_the_cleaned_tables(con):
    got = _evaluation(con, "q", "d", bad_rows="skip")
    # per model: that model's rows of the cleaned tables alone
    for model in ("a", "b"):
        for name in ("q", "d"):
            con.execute(f"CREATE OR REPLACE TABLE {name}_{model} AS SELECT * FROM {name}_clean WHERE enc = '{model}'")
        con.execute(f"CREATE OR REPLACE TABLE qr_{model} AS SELECT * FROM qr WHERE qid IN (SELECT qid FROM q_{model})")
        alone = _evaluation(con, f"q_{model}", f"d_{model}", qrels=f"qr_{model}")
        for name in ("evaluation", "evaluation_queries"):
            bad._same([row for row in got[name].to_dicts() if row["model"] == model], alone[name].to_dicts())
    # the comparison: the cleaned tables on the queries both models kept (and their qrels)
    con.execute("CREATE OR REPLACE TABLE q_both AS SELECT * FROM q_clean WHERE qid IN "
                "(SELECT qid FROM q_clean GROUP BY qid HAVING count(*) = 2)")
    con.execute("CREATE OR REPLACE TABLE qr_both AS SELECT * FROM qr WHERE qid IN (SELECT qid FROM q_both)")
    both = _evaluation(con, "q_both", "d_clean", qrels="qr_both")
    assert got["evaluation_compare"].to_dicts()[0]["queries"] == 20
    bad._same(got["evaluation_compare"].to_dicts(), both["evaluation_compare"].to_dicts())
    notes = got.meta["notes"]
    assert notes.count(R_SKIP_NOTE) == 1                  # the layers and the evaluation read the same tables
    assert any("over the 20 queries every model kept; 4 query(ies)" in note for note in notes), notes
    with pytest.raises(embsql.BadVectorError, match=r"NULL vector at row 4 \((model 'a', )?qid 'q03'"):
        _evaluation(con, "q", "d")


def test_the_full_reports_evaluation_skips_bad_rows(con):
    """The report with queries, docs and qrels beside its embedding table passes the skip to its evaluation."""
    con.execute("CREATE OR REPLACE TABLE clean_enc AS SELECT m AS enc, * EXCLUDE (m) FROM clean")
    got = embsql.report("clean_enc", vector="v", group="g", model="enc", queries="q", docs="d", qrels="qr",
                        retrieval=bad.REPORT_RETRIEVAL, permutations=0, replicates=50, bad_rows="skip",
                        sections=("decomposition",)).run(con, progress=False)
    reference = _evaluation(con, "q", "d", bad_rows="skip")
    for name in ("evaluation", "evaluation_queries", "evaluation_compare"):
        bad._same(got[name].to_dicts(), reference[name].to_dicts())
    assert R_SKIP_NOTE in got.meta["notes"]


def test_the_cli_retrieval_only_report_skips_bad_rows_in_its_evaluation(con, tmp_path):
    for name in ("q", "d", "qr"):
        con.execute(f"COPY {name} TO '{tmp_path / name}.parquet'")
    (tmp_path / "report.toml").write_text("[report.retrieval]\n" + "".join(
        f'{key} = "{value}"\n' for key, value in bad.REPORT_RETRIEVAL.items()))
    args = ["report", "--queries", tmp_path / "q.parquet", "--docs", tmp_path / "d.parquet", "--qrels",
            tmp_path / "qr.parquet", "--model", "enc", "--permutations", "19", "--no-progress",
            "--config", tmp_path / "report.toml"]
    out = embsql_cli(*args, "--skip-bad-rows")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert R_SKIP_NOTE in text, text
    refused = embsql_cli(*args)
    assert refused.returncode == 2 and "NULL vector at row 4" in refused.stderr, refused.stderr


def test_the_cli_skip_bad_rows_gives_the_cleaned_tables_report_and_the_counts(con, tmp_path):
    """`embsql report T --skip-bad-rows` on a file with NULL, zero and NaN vectors: the JSON report's
    figures (summary and every section) are those of the same command on the file cleaned in SQL, and
    its meta counts the skipped rows per model and reason."""
    import json

    con.execute(f"COPY t TO '{tmp_path / 'bad.parquet'}'")
    con.execute(f"COPY clean TO '{tmp_path / 'clean.parquet'}'")
    args = ["--vector", "v", "--group", "g", "--model", "m", "--permutations", "19", "--replicates", "50",
            "--no-progress", "--format", "json"]
    got = embsql_cli("report", tmp_path / "bad.parquet", *args, "--skip-bad-rows")
    expected = embsql_cli("report", tmp_path / "clean.parquet", *args)
    assert got.returncode == 0 and expected.returncode == 0, got.stderr + expected.stderr
    got, expected = json.loads(got.stdout), json.loads(expected.stdout)
    assert got["summary"] == expected["summary"]
    assert got["sections"] == expected["sections"]
    assert got["meta"]["skipped"] == bad.COUNTS and "skipped" not in expected["meta"]
