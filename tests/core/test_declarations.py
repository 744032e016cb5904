"""Issue 30, item 1: one definition per statistic.

A declared statistic (embsql.statistics) has one kernel (a function of embsql/core/) and one
declaration; its Python face, its UDF and its SQL macro (with the macro's reference block) come
from that declaration: the face's body is ``drive(DECLARATION, locals())``, the UDF is
udfs/declared.py's adapter, the macro is what sql/build.py writes into 86_statistics.sql.  The
faces and SQL functions not declared yet are listed here as data, so the gap is visible and
shrinks as they are declared (a statistic declared must leave the lists; one added must join them).
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap

import duckdb
import pytest
from helpers import ROOT

import embsql
from embsql import sql_reference
from embsql.api import agreement as agreement_faces
from embsql.api import driver
from embsql.api import geometry as geometry_faces
from embsql.calibration import render
from embsql.io.registration import udf_specs
from embsql.statistics import STATISTICS, Statistic
from embsql.statistics.declaration import REQUIRED, check_vocabulary, sql_literal

sys.path.insert(0, str(ROOT / "sql"))
import build  # noqa: E402  (sql/build.py, which writes 86_statistics.sql)

NAMES = [s.name for s in STATISTICS]
BY_NAME = {s.name: s for s in STATISTICS}
# the Python face of each declaration (knn_agreement_items is knn_agreement(per_item=True))
FACE = {"cka": "cka", "procrustes": "procrustes", "compare_cka": "compare_cka", "knn_agreement": "knn_agreement",
        "knn_agreement_items": "knn_agreement", "mantel": "mantel"}

# ---- the gap, as data: what is not declared yet
# Python faces that still have a hand-written body
FACES_NOT_DECLARED = {
    "anova", "anova_dist", "bootstrap", "centroid_classify", "compare_structure", "compare_classification",
    "compare_retrieval", "compare_similarity", "dispersion", "retrieval_dose", "evaluate", "groups", "jackknife",
    "knn_classify", "margins", "pairing", "pairwise_permanova", "permanova", "permanova_terms", "permanova_welch",
    "rank_models", "retrieval_layers", "retrieval_summary", "retrieve", "similarity_eval", "write_trec_run",
}
# SQL functions on the Python UDFs (sql/python/) whose macro is still hand-written
SQL_NOT_DECLARED = {
    "emb_unit", "emb_permanova", "emb_permanova_welch", "emb_permanova_dist", "emb_permanova_welch_dist",
    "emb_dispersion", "emb_dispersion_groups", "emb_permanova_terms", "emb_permanova_terms_dist", "emb_jackknife",
    "emb_bootstrap", "emb_compare_structure", "emb_rank_models", "emb_retrieval_dose", "emb_knn_classify",
    "emb_knn_classify_items", "emb_centroid_classify", "emb_similarity_eval", "emb_compare_similarity",
    "emb_compare_classification", "emb_retrieval_eval", "emb_compare_retrieval", "emb_rank_retrieval",
    "emb_rank_similarity", "emb_rank_classification", "emb_rank_cka",
}
# the pure-SQL tier the stock CLI runs without Python (sql/modules/)
PURE_SQL = {
    "emb_anova", "emb_groups", "emb_anova_dist", "emb_icc", "emb_normal_quantile", "emb_power_groups",
    "emb_power_rho", "emb_margins", "emb_retrieval_summary", "emb_evaluate", "emb_evaluate_per_query",
    "emb_similarity_pearson", "emb_similarity_spearman",
}


def public_faces() -> set[str]:
    return {name for name in embsql.__all__ if inspect.isfunction(getattr(embsql, name))
            and getattr(embsql, name).__module__.startswith("embsql.api.")}


def test_the_statistics_are_enumerated_once():
    assert NAMES == ["cka", "procrustes", "compare_cka", "knn_agreement", "knn_agreement_items", "mantel"]
    assert len(set(NAMES)) == len(NAMES)
    assert all(isinstance(s, Statistic) for s in STATISTICS)


def test_every_face_is_declared_or_listed_as_not_yet():
    declared = set(FACE.values())
    assert declared & FACES_NOT_DECLARED == set()
    assert declared | FACES_NOT_DECLARED == public_faces()


def test_every_sql_function_is_declared_generated_pure_sql_or_listed():
    found = {f.name: f for f in sql_reference.functions()}
    declared = {s.sql_name for s in STATISTICS}
    assert declared | SQL_NOT_DECLARED | PURE_SQL == set(found)
    assert not declared & SQL_NOT_DECLARED and not declared & PURE_SQL and not SQL_NOT_DECLARED & PURE_SQL
    assert {name for name, f in found.items() if not f.needs_python} == PURE_SQL
    assert {found[name].path.name for name in declared} == {"86_statistics.sql"}


@pytest.mark.parametrize("name", NAMES)
def test_one_kernel_in_core(name):
    kernel = BY_NAME[name].kernel
    assert kernel.__module__.startswith("embsql.core."), kernel.__module__
    # the kernel is declared by one statistic only
    assert [s.name for s in STATISTICS if s.kernel is kernel] == [name]


@pytest.mark.parametrize("name", NAMES)
def test_names_come_from_the_vocabulary(name):
    assert check_vocabulary(BY_NAME[name]) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_kernel_takes_every_declared_option(name):
    statistic = BY_NAME[name]
    takes = inspect.signature(statistic.kernel).parameters
    assert {o.name for o in statistic.options} <= set(takes)
    assert ("group" in statistic.roles()) == ("groups" in takes)


def _face_body(face) -> list[ast.stmt]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(face)))
    body = tree.body[0].body                                     # type: ignore[attr-defined]
    return [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]  # no docstring


@pytest.mark.parametrize("name", NAMES)
def test_the_python_face_is_one_call_of_the_driver(name):
    face = getattr(embsql, FACE[name])
    body = _face_body(face)
    assert len(body) == 1 and isinstance(body[0], ast.Return), ast.unparse(body[0])
    call = body[0].value
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "drive"
    assert ast.unparse(call.args[1]) == "locals()"
    assert name.upper() in ast.unparse(call.args[0])           # its declaration (knn: chosen by per_item)
    module = agreement_faces if FACE[name] in ("knn_agreement", "mantel") else geometry_faces
    assert getattr(module, name.upper()) is BY_NAME[name]
    assert module.drive is driver.drive


@pytest.mark.parametrize("name", NAMES)
def test_the_face_takes_the_declared_inputs_and_options_with_their_defaults(name):
    statistic = BY_NAME[name]
    parameters = inspect.signature(getattr(embsql, FACE[name])).parameters
    for each in statistic.inputs:
        assert parameters[each.role].default is (None if each.optional else inspect.Parameter.empty)
    for option in statistic.options:
        assert parameters[option.name].default == option.default or (
            option.default is REQUIRED and parameters[option.name].default is inspect.Parameter.empty)
    assert parameters["bad_rows"].default == "error"


@pytest.mark.parametrize("name", NAMES)
def test_the_udf_is_the_declared_adapter(name):
    statistic = BY_NAME[name]
    spec = {s.name: s for s in udf_specs()}[statistic.udf_name]
    assert spec.function.__name__ == statistic.udf_name
    assert inspect.getsourcefile(inspect.unwrap(spec.function)).endswith("udfs/declared.py")
    assert spec.parameters[-len(statistic.sql_options()):] == tuple(o.type_in_sql() for o in statistic.sql_options())
    assert statistic.struct_type() in spec.return_type


def test_no_hand_written_udf_of_a_declared_statistic():
    for path in (ROOT / "udfs").glob("*.py"):
        if path.name != "declared.py":
            text = path.read_text(encoding="utf-8")
            assert not any(f"def {s.udf_name}(" in text for s in STATISTICS), path


def test_the_generated_sql_file_is_current():
    assert (ROOT / "sql" / "python" / "86_statistics.sql").read_text(encoding="utf-8") == build.statistics_text()


@pytest.mark.parametrize("name", NAMES)
def test_the_sql_macro_and_its_block_come_from_the_declaration(name):
    statistic = BY_NAME[name]
    text = (ROOT / "sql" / "python" / "86_statistics.sql").read_text(encoding="utf-8")
    assert statistic.sql_text() in text
    # no other sql file defines it
    for path in (ROOT / "sql").rglob("*.sql"):
        if path.name not in ("86_statistics.sql", "embsql.sql"):
            assert f"MACRO {statistic.sql_name}(" not in path.read_text(encoding="utf-8"), path
    block = {f.name: f for f in sql_reference.functions()}[statistic.sql_name]
    assert [(c.name, c.meaning) for c in block.columns] == [
        (o.name, render(o.described())) for o in statistic.outputs]
    arguments = {a.name: a.default for a in block.arguments}
    for option in statistic.sql_options():
        assert arguments[option.name] == (None if option.default is REQUIRED else sql_literal(option.default))


@pytest.fixture(scope="module")
def con():
    connection = embsql.connect()
    connection.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item, 'g' || (i % 4) AS g, "
                       "[cos(i), sin(i), w * cos(3 * i)] AS v FROM range(16) t(i), "
                       "(VALUES ('small', 0.0), ('large', 0.3), ('mid', 0.1)) m(m, w)")
    return connection


ARGUMENTS = {"compare_cka": ("'mid'", dict(reference="mid")), "knn_agreement": ("", dict(k=3)),
             "knn_agreement_items": ("", dict(k=3, per_item=True)), "mantel": ("", dict(permutations=19)),
             "cka": ("", dict(permutations=19)), "procrustes": ("", dict(permutations=19))}


@pytest.mark.parametrize("name", NAMES)
def test_python_and_sql_give_the_declared_columns_and_the_same_rows(con, name):
    statistic = BY_NAME[name]
    positional, keywords = ARGUMENTS[name]
    named = ", ".join(f"{k} := {v}" for k, v in keywords.items() if k not in ("reference", "per_item"))
    sql_args = ", ".join(x for x in ("'ex'", "'item'", "'model'", "'v'", positional, named) if x)
    sql = con.execute(f"SELECT * FROM {statistic.sql_name}({sql_args})")
    columns = [d[0] for d in sql.description]
    fetched = sql.fetchall()
    assert tuple(columns) == statistic.column_names()
    py = getattr(embsql, FACE[name])(con, "ex", item="item", model="model", vector="v", **keywords)
    assert tuple(py.columns) == statistic.column_names(keywords)
    assert py.title == name
    # (the Python table's columns: compare_cka's marginal table has no `interval`, SQL's always has)
    got = [tuple(str(row[columns.index(c)]) for c in py.columns) for row in fetched]
    assert got == [tuple(map(str, row)) for row in py.rows]


def test_an_option_the_kernel_refuses_reads_the_same_in_python_and_sql(con):
    with pytest.raises(embsql.InputError) as python:
        embsql.mantel(con, "ex", item="item", model="model", vector="v", permutations=0)
    with pytest.raises(duckdb.Error) as sql:
        con.execute("SELECT * FROM emb_mantel('ex', 'item', 'model', 'v', permutations := 0)").fetchall()
    assert str(sql.value).split("embsql: ")[1].startswith(f"[{python.value.kind}]")


def test_the_interval_column_is_always_in_sql_and_in_python_with_simultaneous_intervals(con):
    """As emb_compare_retrieval and embsql.compare_retrieval: SQL's table has fixed columns."""
    statistic = BY_NAME["compare_cka"]
    result = embsql.compare_cka(con, "ex", reference="mid", model="model", item="item", vector="v",
                                intervals="simultaneous")
    assert tuple(result.columns) == statistic.column_names({"intervals": "simultaneous"}) == statistic.column_names()
    assert result.columns[-1] == "interval" and {r["interval"] for r in result.to_dicts()} == {"simultaneous"}
    marginal = embsql.compare_cka(con, "ex", reference="mid", model="model", item="item", vector="v")
    assert "interval" not in marginal.columns
    arguments = {a.name: a.default for a in {f.name: f for f in sql_reference.functions()}["emb_compare_cka"].arguments}
    assert (arguments["intervals"], arguments["replicates"], arguments["seed"]) == ("'marginal'", "2000", "42")


@pytest.mark.parametrize("name", [s.name for s in STATISTICS if s.calibration])
def test_the_calibration_key_is_a_measured_figure(name):
    from embsql.calibration import figure
    assert figure(BY_NAME[name].calibration)["text"]
