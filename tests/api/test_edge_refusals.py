"""The edges an independent fuzzer found (issue 34), each on the issue's own example:

* an all-empty vector table ([] in every row) is refused as vector.zero on every Python face and in
  SQL's emb_dispersion, emb_knn_agreement and emb_cka (it was a raw numpy error);
* identical vectors are design.identical in the dispersion test too (its SS_T cancelled to noise
  above the resolution floor);
* the biased CKA stands where a model's debiased HSIC with itself is not positive; the debiased CKA
  is then NULL with a note naming the model (both were refused, naming "the second model");
* anova_dist returns SS_B = SS_T − SS_W signed, with R² and F as their definitions give (it clipped
  SS_B at 0);
* the margins raise full catalogue kinds, the same on the Python face, the registered emb_margins
  and the stock SQL file (the first two said `label` and `design`).

The expected figures come from numpy or by hand, never from embsql.
"""

import re

import duckdb
import numpy as np
import pytest
import test_retrieval_errors as margins_cases
from helpers import sql_error

import embsql
from embsql.errors import CATALOGUE, BadVectorError, DesignError
from embsql.io.resources import sql_entry_file

EMPTY = ("CREATE TABLE t AS SELECT * FROM (VALUES ('a', 'i0', 'm1', []::DOUBLE[]), ('b', 'i1', 'm1', []::DOUBLE[]), "
         "('b', 'i2', 'm1', []::DOUBLE[]), ('a', 'i0', 'm2', []::DOUBLE[]), ('b', 'i1', 'm2', []::DOUBLE[]), "
         "('b', 'i2', 'm2', []::DOUBLE[])) t(g, item, model, v)")

# the example: three rows of [] (one model), and the same table with two models for the
# faces that compare models
EMPTY_FACES = {
    "anova": lambda con: embsql.anova(con, "one", group="g", vector="v"),
    "groups": lambda con: embsql.groups(con, "one", group="g", vector="v"),
    "permanova": lambda con: embsql.permanova(con, "one", group="g", vector="v", permutations=9),
    "dispersion": lambda con: embsql.dispersion(con, "one", group="g", vector="v", permutations=9),
    "jackknife": lambda con: embsql.jackknife(con, "one", group="g", vector="v"),
    "report": lambda con: embsql.report("t", vector="v", group="g", model="model",
                                        permutations=0).run(con, progress=False),
    "knn_agreement": lambda con: embsql.knn_agreement(con, "t", item="item", model="model", vector="v", k=1),
    "cka": lambda con: embsql.cka(con, "t", item="item", model="model", vector="v", permutations=9),
}
EMPTY_SQL = {
    "emb_dispersion": "SELECT * FROM emb_dispersion('t', 'g', 'v', model := 'model', permutations := 9)",
    "emb_knn_agreement": "SELECT * FROM emb_knn_agreement('t', 'item', 'model', 'v', k := 1)",
    "emb_cka": "SELECT * FROM emb_cka('t', 'item', 'model', 'v', permutations := 9)",
}


def empty_tables(con):
    con.execute(EMPTY)
    con.execute("CREATE TABLE one AS SELECT g, v FROM t WHERE model = 'm1'")


@pytest.mark.parametrize("face", EMPTY_FACES)
def test_an_all_empty_vector_table_is_refused_as_zero_length_on_every_python_face(con, face):
    empty_tables(con)
    with pytest.raises(BadVectorError) as info:
        EMPTY_FACES[face](con)
    assert info.value.kind == "vector.zero"
    assert "zero-length vector" in str(info.value) and "'v'" in str(info.value)


@pytest.mark.parametrize("function", EMPTY_SQL)
def test_an_all_empty_vector_table_is_refused_as_zero_length_in_sql(con, function):
    empty_tables(con)
    message = sql_error(con, EMPTY_SQL[function])
    assert message.startswith("embsql: [vector.zero] vector column 'v' has a zero-length vector"), message


# ---- identical vectors in the dispersion test ---------------------------------------------

IDENTICAL = "CREATE TABLE t AS SELECT (i % 2)::VARCHAR AS g, [0.1, 0.2, 0.7] AS v FROM range(14) r(i)"


def test_identical_vectors_are_refused_by_the_dispersion_test_as_by_the_decomposition(con):
    con.execute(IDENTICAL)
    with pytest.raises(DesignError) as anova:
        embsql.anova(con, "t", group="g", vector="v")
    with pytest.raises(DesignError) as dispersion:
        embsql.dispersion(con, "t", group="g", vector="v", permutations=9)
    assert anova.value.kind == dispersion.value.kind == "design.identical"
    assert sql_error(con, "SELECT * FROM emb_dispersion('t', 'g', 'v', permutations := 9)").startswith(
        "embsql: [design.identical] ")
    with pytest.raises(DesignError, match="identical") as pairwise:
        embsql.pairwise_permanova(con, "t", group="g", vector="v", permutations=9)
    assert pairwise.value.kind == "design.identical"


# ---- CKA where the debiased HSIC of a model with itself is not positive ---------------------

CKA_TABLE = """CREATE TABLE t AS SELECT * FROM (VALUES ('a','i0',[1.0,0.2]),('a','i1',[0.3,1.0]),('a','i2',[-1.0,0.4]),
 ('a','i3',[0.5,-1.0]),('a','i4',[0.9,0.9]),('a','i5',[-0.7,-0.2]),('b','i0',[2.0]),('b','i1',[1.0]),('b','i2',[3.0]),
 ('b','i3',[0.5]),('b','i4',[-1.0]),('b','i5',[4.0])) t(model,item,v)"""
CKA_A = [[1.0, 0.2], [0.3, 1.0], [-1.0, 0.4], [0.5, -1.0], [0.9, 0.9], [-0.7, -0.2]]
CKA_B = [[2.0], [1.0], [3.0], [0.5], [-1.0], [4.0]]


def numpy_linear_cka(x, y) -> float:
    """Linear CKA of the unit vectors (embsql compares directions): HSIC from centred Gram matrices,
    tr(K~ L~) / sqrt(tr(K~ K~) tr(L~ L~)) with K~ = H X Xᵀ H."""
    x = np.asarray(x) / np.linalg.norm(x, axis=1, keepdims=True)
    y = np.asarray(y) / np.linalg.norm(y, axis=1, keepdims=True)
    n = len(x)
    h = np.eye(n) - np.ones((n, n)) / n
    k, lg = h @ x @ x.T @ h, h @ y @ y.T @ h
    return float(np.sum(k * lg) / np.sqrt(np.sum(k * k) * np.sum(lg * lg)))


def test_cka_gives_the_biased_value_where_the_debiased_one_is_undefined(con):
    con.execute(CKA_TABLE)
    want = numpy_linear_cka(CKA_A, CKA_B)
    assert want == pytest.approx(0.189458, abs=1e-6)
    row, = embsql.cka(con, "t", item="item", model="model", vector="v", permutations=9).to_dicts()
    assert row["cka"] == pytest.approx(want, rel=1e-12) and row["debiased"] is False
    assert "model 'b'" in row["note"] and "debiased CKA is undefined" in row["note"]
    sql_row, = con.sql("SELECT cka, note FROM emb_cka('t', 'item', 'model', 'v', permutations := 9)").fetchall()
    assert sql_row[0] == pytest.approx(want, rel=1e-12) and "model 'b'" in sql_row[1]


def test_the_debiased_cka_is_null_with_a_note_naming_the_model(con):
    con.execute(CKA_TABLE)
    row, = embsql.cka(con, "t", item="item", model="model", vector="v", permutations=9, debiased=True).to_dicts()
    assert row["cka"] is None and row["se"] is None and row["p_value"] is None and row["debiased"] is True
    assert row["note"].startswith("the debiased CKA is undefined: the unbiased HSIC of model 'b' with itself")
    assert CATALOGUE["design.debiased_hsic"].template.split("{")[0] in row["note"]
    sql_row, = con.sql("SELECT cka, debiased, note FROM emb_cka('t', 'item', 'model', 'v', permutations := 9, "
                       "debiased := true)").fetchall()
    assert sql_row[:2] == (None, True) and sql_row[2] == row["note"]


# ---- anova_dist: a non-Euclidean dissimilarity ----------------------------------------------

def non_euclidean(con):
    """A = {1, 2}, B = {3, 4}: distance 2 within each group, 0.1 between them (not Euclidean-
    embeddable: 2 > 0.1 + 0.1 breaks the triangle inequality)."""
    con.execute("CREATE TABLE lab AS SELECT * FROM (VALUES (1, 'A'), (2, 'A'), (3, 'B'), (4, 'B')) t(id, g)")
    con.execute("CREATE TABLE dist AS SELECT * FROM (VALUES (1, 2, 2.0), (3, 4, 2.0), (1, 3, 0.1), (1, 4, 0.1), "
                "(2, 3, 0.1), (2, 4, 0.1)) t(i, j, d)")


def test_anova_dist_returns_ss_b_signed_with_r2_and_f_as_defined(con):
    non_euclidean(con)
    n, groups = 4, 2
    ss_t = (2.0 ** 2 + 2.0 ** 2 + 4 * 0.1 ** 2) / n          # (1/n) Σ_{i<j} d²
    ss_w = 2.0 ** 2 / 2 + 2.0 ** 2 / 2                       # Σ_g (1/n_g) Σ_{i<j in g} d²
    ss_b = ss_t - ss_w
    expected = {"n": n, "groups": groups, "ss_t": 2.01, "ss_w": 4.0, "ss_b": -1.99, "r2": ss_b / ss_t,
                "r2_null": (groups - 1) / (n - 1), "f": (ss_b / (groups - 1)) / (ss_w / (n - groups))}
    assert (ss_t, ss_w, ss_b) == pytest.approx((2.01, 4.0, -1.99))
    assert expected["f"] == pytest.approx(-0.995) and expected["r2"] == pytest.approx(-1.99 / 2.01)
    python, = embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").to_dicts()
    stock = duckdb.connect()
    stock.execute(sql_entry_file().read_text())
    non_euclidean(stock)
    names = list(expected)
    sql, = stock.sql(f"SELECT {', '.join(names)} FROM emb_anova_dist('dist', 'lab', 'g')").fetchall()
    for got in (python, dict(zip(names, sql))):
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-12), key


# ---- the margins: one catalogue kind per cause on every route ---------------------------------

@pytest.fixture(scope="module")
def margin_routes():
    stock = duckdb.connect()
    stock.execute(sql_entry_file().read_text())
    return {"registered": embsql.connect(), "stock": stock}


def margin_kinds(routes, case) -> dict[str, str]:
    change, kwargs, _, _ = margins_cases.CASES[case]
    q, d = change(*margins_cases.base())
    kinds = {}
    for route, con in routes.items():
        con.register("q", q)
        con.register("d", d)
        if route == "registered":
            with pytest.raises(embsql.EmbsqlError) as info:
                margins_cases.python_call(con, kwargs)
            kinds["python"] = info.value.kind
        message = sql_error(con, margins_cases.sql_call(kwargs))
        kinds[route] = message[len("embsql: ["):].split("]")[0]
    return kinds


def test_a_missing_positive_is_label_unknown_positive_on_every_route(margin_routes):
    assert margin_kinds(margin_routes, "missing positive") == dict.fromkeys(
        ("python", "registered", "stock"), "label.unknown_positive")


# the stock SQL checks a query against its positive (vector.dimension) and the documents' lengths
# among themselves (vector.length) in one pass, in an order DuckDB chooses: either is a true cause
EITHER = {"document lengths differ": {"vector.length", "vector.dimension"}}


@pytest.mark.parametrize("case", list(margins_cases.CASES))
def test_every_margins_route_raises_one_full_catalogue_kind(margin_routes, case):
    kinds = margin_kinds(margin_routes, case)
    assert set(kinds.values()) <= set(CATALOGUE), kinds
    assert len(set(kinds.values())) == 1 or set(kinds.values()) <= EITHER.get(case, set()), kinds


# ---- column names the SQL keeps for its own stand-in columns ---------------------------------

RESERVED_TABLE = ('CREATE OR REPLACE TABLE t AS SELECT (i % 3)::VARCHAR AS "{name}", [1.0 + i % 3, (i * 7 % 5)::DOUBLE] '
                  "AS v, i // 2 AS item, 'm' || (i % 2) AS model, (i % 4)::DOUBLE AS x FROM range(24) r(i)")
RESERVED_CALLS = {   # (role, call): the column under test named {name}
    "emb_anova": ("group", "emb_anova('t', '{name}', 'v')"),
    "emb_groups": ("group", "emb_groups('t', '{name}', 'v')"),
    "emb_icc": ("group", "emb_icc('t', '{name}', 'x')"),
    "emb_dispersion": ("group", "emb_dispersion('t', '{name}', 'v', permutations := 9)"),
    "emb_permanova": ("group", "emb_permanova('t', '{name}', 'v', permutations := 9)"),
    "emb_cka": ("group", "emb_cka('t', 'item', 'model', 'v', \"group\" := '{name}', permutations := 9)"),
    "emb_knn_classify": ("label", "emb_knn_classify('t', label := '{name}', vector := 'v', k := 2)"),
    "emb_anova_dist": ("group", "emb_anova_dist('dist', 't', '{name}', item := 'item')"),
}


@pytest.mark.parametrize("name", ["__emb_null", "__emb_all", "__EMB_Null"])
@pytest.mark.parametrize("function", RESERVED_CALLS)
def test_a_column_named_like_the_sqls_stand_in_columns_is_refused_naming_it(margin_routes, function, name):
    """A group or label column named __emb_null or __emb_all (any case) was a binder error or a
    wrong refusal (design.one_group): it is column.reserved, naming the column, on both SQL routes
    (the registered connection, and the stock SQL file for the functions it has)."""
    role, call = RESERVED_CALLS[function]
    stock = function in ("emb_anova", "emb_groups", "emb_icc", "emb_anova_dist")    # the plain-SQL functions
    for route, con in margin_routes.items():
        if route == "stock" and not stock:
            continue
        con.execute(RESERVED_TABLE.format(name=name))
        con.execute("CREATE OR REPLACE TABLE dist AS SELECT a.item AS i, b.item AS j, 1.0 AS d FROM "
                    "(SELECT DISTINCT item FROM t) a JOIN (SELECT DISTINCT item FROM t) b ON a.item < b.item")
        message = sql_error(con, f"SELECT * FROM {call.format(name=name)}")
        assert message.startswith(f'embsql: [column.reserved] {role} column "{name}" '), message
        assert function in message and f'SELECT "{name}" AS {role}_name' in message


def test_an_item_column_named_like_a_stand_in_column_is_refused_naming_it(margin_routes):
    for con in (margin_routes["registered"],):
        con.execute(RESERVED_TABLE.format(name="g").replace("i // 2 AS item", 'i // 2 AS "__emb_null"'))
        message = sql_error(con, "SELECT * FROM emb_knn_agreement('t', '__emb_null', 'model', 'v', k := 2)")
        assert message.startswith('embsql: [column.reserved] item column "__emb_null" '), message


# ---- errors under where= name the rows as the user wrote them ---------------------------------

WHERE_TABLE = ("CREATE TABLE t AS SELECT 'g' || (i // 2 % 3) AS g, 'm' || (i % 2) AS model, i // 2 AS item, "
               "[1.0 + i % 3, (i * 7 % 5)::DOUBLE + i] AS v, i AS k, (i // 2 % 3)::VARCHAR AS lab FROM range(60) r(i)")


@pytest.mark.parametrize("settings, kind", [
    ({"pairs": "pairs"}, "pair.no_vector"),         # a pair's item has no vector in the filtered rows
    ({"label": "lab"}, "item.missing"),             # k < 59 leaves item 29 to one model only
])
def test_errors_under_where_name_the_source_and_condition_not_an_internal_view(con, settings, kind):
    con.execute(WHERE_TABLE)
    con.execute("CREATE TABLE pairs AS SELECT * FROM (VALUES (1, 2, 0.5), (3, 77, 0.2), (4, 5, 0.1)) p(item_a, item_b, score)")
    with pytest.raises(embsql.EmbsqlError) as info:
        embsql.report("t", vector="v", group="g", model="model", item="item", where="k < 59", permutations=9,
                      sections=("decomposition",), **settings).run(con, progress=False)
    assert info.value.kind == kind
    assert "__emb" not in str(info.value) and "'t where k < 59'" in str(info.value), str(info.value)


# ---- a vector column of text ('[0.1, 0.2]', as CSV and JSON hold it): every face refuses it as
# column.type with the cast that reads it (issue 32 item 6).  The classifiers', the SQL similarity
# correlations' and emb_permanova_terms' were a DuckDB binder error or read the text silently.
TEXT_VECTORS = [
    "CREATE TABLE t AS SELECT (i % 2)::VARCHAR AS label, (i % 2)::VARCHAR AS g, 'i' || (i // 2) AS item, "
    "'[' || (i * 0.1 + 1) || ', ' || (i % 3 + 1) || ']' AS vec, ['m', 'n'][i % 2 + 1] AS model FROM range(40) r(i)",
    "CREATE TABLE p AS SELECT 'i' || i AS item_a, 'i' || (i + 1) AS item_b, i * 1.0 AS score FROM range(10) r(i)",
]
TEXT_SQL = {
    "emb_knn_classify": "emb_knn_classify('t', vector := 'vec', k := 3)",
    "emb_knn_classify_items": "emb_knn_classify_items('t', vector := 'vec', k := 3)",
    "emb_centroid_classify": "emb_centroid_classify('t', vector := 'vec')",
    "emb_similarity_pearson": "emb_similarity_pearson('p', 't', vector := 'vec')",
    "emb_similarity_spearman": "emb_similarity_spearman('p', 't', vector := 'vec')",
    "emb_similarity_eval": "emb_similarity_eval('p', 't', vector := 'vec')",
    "emb_permanova_terms": "emb_permanova_terms('t', ['g'], 'vec', permutations := 9)",
    "emb_permanova_terms skip": "emb_permanova_terms('t', ['g'], 'vec', permutations := 9, bad_rows := 'skip')",
    "emb_anova": "emb_anova('t', 'g', 'vec')",
}
TEXT_PYTHON = {
    "knn_classify": lambda con: embsql.knn_classify(con, "t", vector="vec", k=3, model="model"),
    "centroid_classify": lambda con: embsql.centroid_classify(con, "t", vector="vec", model="model"),
    "similarity_eval": lambda con: embsql.similarity_eval(con, "p", "t", vector="vec", model="model", item="item"),
    "permanova_terms": lambda con: embsql.permanova_terms(con, "t", terms=["g"], vector="vec", permutations=9),
}
CAST = "SELECT * REPLACE (vec::DOUBLE[] AS vec)"


@pytest.mark.parametrize("function", TEXT_SQL)
def test_a_text_vector_column_is_refused_in_sql_with_the_cast_that_works(con, function):
    for statement in TEXT_VECTORS:
        con.execute(statement)
    message = sql_error(con, "SELECT * FROM " + TEXT_SQL[function])
    assert message.startswith("embsql: [column.type] vector column") and "has type VARCHAR" in message, message
    assert CAST in message


@pytest.mark.parametrize("face", TEXT_PYTHON)
def test_a_text_vector_column_is_refused_in_python_with_the_cast_that_works(con, face):
    for statement in TEXT_VECTORS:
        con.execute(statement)
    with pytest.raises(embsql.errors.ColumnTypeError, match=re.escape(CAST)):
        TEXT_PYTHON[face](con)
