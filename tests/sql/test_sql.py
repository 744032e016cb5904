"""The SQL macros never give a wrong number: adversarial inputs against independent references.

References are computed here in numpy with extended precision (np.longdouble, the two-pass sums
about the exact group means), never from embsql's own output.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql.io.resources import sql_entry_file

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

RESOLUTION = "1.5e-08"
PRECISION_T = ("embsql: [design.identical] the vectors{} are identical to within floating-point precision "
               "(root-mean-square spread {}")
LABEL_RULE = "; every row needs a label (filter those rows out, or give them one)"


def sql_error(con, query: str) -> str:
    with pytest.raises(duckdb.Error) as info:
        con.sql(query).fetchall()
    message = str(info.value)
    assert "embsql:" in message, message
    return message[message.index("embsql:"):].splitlines()[0]


def one(con, query: str) -> tuple:
    """The first row of a query's result."""
    return con.sql(query).fetchall()[0]


def vectors_table(x, labels, **extra) -> pa.Table:
    return pa.table({"g": labels, "v": pa.array(list(np.asarray(x, dtype=np.float64)), type=pa.list_(pa.float64())),
                     **extra})


def reference(x, labels) -> dict:
    """SS_T, SS_W, R² and W_g of the float64 unit vectors, summed in long double about exact means."""
    z = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.longdouble)
    labels = np.asarray(labels)
    ss_t = ((z - z.mean(axis=0)) ** 2).sum()
    w = {g: ((z[labels == g] - z[labels == g].mean(axis=0)) ** 2).sum(axis=1).mean() for g in np.unique(labels)}
    ss_w = sum(w[g] * np.sum(labels == g) for g in w)
    return {"ss_t": float(ss_t), "ss_w": float(ss_w), "r2": float((ss_t - ss_w) / ss_t), "w": {g: float(v) for g, v in w.items()}}


def near_duplicates(spread: float, seed: int = 1, n: int = 600, d: int = 8, groups: int = 6):
    """One base vector plus spread * (a group offset + noise): true R² about 0.07."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, groups, n)
    centres = 0.3 * rng.standard_normal((groups, d))
    x = rng.standard_normal(d) + spread * (centres[labels] + rng.standard_normal((n, d)))
    return x, labels


# ---- stable sums ---------------------------------------------------------------------------

@pytest.mark.parametrize("spread", [1e-4, 1e-6, 1e-7, 4e-8])
def test_near_duplicates_match_the_extended_precision_reference(con, spread):
    """Rounding leaves a relative error of about eps / spread (1e-8 at 4e-8); 1e-6 cannot pass by luck:
    the old formulas gave R² = -1, NaN, 0 or 1 here."""
    x, labels = near_duplicates(spread)
    con.register("t", vectors_table(x, labels))
    ref = reference(x, labels)
    row = one(con, "SELECT ss_t, ss_w, r2 FROM emb_anova('t', 'g', 'v')")
    assert row == pytest.approx((ref["ss_t"], ref["ss_w"], ref["r2"]), rel=1e-6)
    groups = dict(con.sql("SELECT \"group\", w FROM emb_groups('t', 'g', 'v')").fetchall())
    assert groups == pytest.approx(ref["w"], rel=1e-6)


@pytest.mark.parametrize("spread", [1e-9, 1e-10, 0.0])
def test_spread_below_resolution_is_refused(con, spread):
    x, labels = near_duplicates(spread)
    con.register("t", vectors_table(x, labels))
    message = sql_error(con, "SELECT r2 FROM emb_anova('t', 'g', 'v')")
    assert message.startswith(PRECISION_T.format("", "")) and message.endswith(f" < {RESOLUTION}); R² and F are undefined")
    assert sql_error(con, "SELECT icc FROM emb_icc('t', 'g', 'v')") == message  # the ICC is refused the same way


def test_sixty_identical_vectors_are_refused_not_r2_one(con):
    con.register("t", vectors_table([[0.6, 0.8, 0.0]] * 60, np.repeat(["a", "b", "c"], 20)))
    for query in ("SELECT * FROM emb_anova('t', 'g', 'v')", "SELECT icc FROM emb_icc('t', 'g', 'v')",
                  "SELECT f FROM emb_anova('t', 'g', 'v')"):
        message = sql_error(con, query)  # the spread is 0 or a rounding error of about 1e-16
        assert message.startswith(PRECISION_T.format("", "")) and message.endswith(
            f" < {RESOLUTION}); R² and F are undefined"), message
        assert float(message[len(PRECISION_T.format("", "")):].split(" ")[0]) < 1e-15
    assert [w for (w,) in con.sql("SELECT w FROM emb_groups('t', 'g', 'v')").fetchall()] == [0.0, 0.0, 0.0]


def test_identical_within_each_group_is_refused_with_the_within_message(con):
    con.register("t", vectors_table(np.repeat(np.eye(3), 10, axis=0), np.repeat(["a", "b", "c"], 10)))
    assert sql_error(con, "SELECT r2 FROM emb_anova('t', 'g', 'v')") == (
        PRECISION_T.format(" within each group", "0") + f" < {RESOLUTION}); F is undefined")


def test_precision_message_names_the_model(con):
    x, labels = near_duplicates(0.3)
    con.register("t", vectors_table(np.vstack([x, np.tile([1.0, 2.0] * 4, (600, 1))]), np.concatenate([labels, labels]),
                                    m=["ok"] * 600 + ["flat"] * 600))
    assert sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v', model := 'm')").startswith(
        "embsql: [design.identical] the vectors of model 'flat' are identical to within floating-point precision")


def test_many_identical_vectors_in_few_dimensions(con):
    """300k identical 8-d vectors: the old formulas gave R² = 0.0013 and F = 65 here."""
    con.execute("CREATE TABLE same AS SELECT (i % 7)::INTEGER AS g, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] AS v "
                "FROM range(300000) r(i)")
    assert sql_error(con, "SELECT r2, f FROM emb_anova('same', 'g', 'v')").startswith(PRECISION_T.format("", ""))


def test_tight_groups_far_apart_keep_their_f(con):
    """Within-group spread 1e-6 around far-apart centres: F is about 1e12 and must keep its digits."""
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(5), 40)
    x = np.eye(8)[labels] + 1e-6 * rng.standard_normal((200, 8))
    con.register("t", vectors_table(x, labels))
    ref = reference(x, labels)
    ss_t, ss_w, f = one(con, "SELECT ss_t, ss_w, f FROM emb_anova('t', 'g', 'v')")
    assert (ss_t, ss_w) == pytest.approx((ref["ss_t"], ref["ss_w"]), rel=1e-7)
    assert f == pytest.approx(((ref["ss_t"] - ref["ss_w"]) / 4) / (ref["ss_w"] / 195), rel=1e-7)
    assert ss_w <= ss_t


@pytest.mark.parametrize("factor", [1e-160, 1e200, 1e-300, 1e300])
def test_scaled_raw_vectors_give_the_same_figures(con, factor):
    rng = np.random.default_rng(4)
    x, labels = rng.standard_normal((40, 5)), np.repeat(np.arange(4), 10)
    con.register("t", vectors_table(x, labels))
    con.register("s", vectors_table(x * factor, labels))
    query = "SELECT r2, f, ss_w FROM emb_anova('{}', 'g', 'v')"
    assert one(con, query.format("s")) == pytest.approx(one(con, query.format("t")), rel=1e-13)
    ref = reference(x, labels)
    assert one(con, query.format("s"))[0] == pytest.approx(ref["r2"], rel=1e-12)


def test_infinite_coordinate_is_still_refused(con):
    con.register("t", vectors_table([[1.0, 0.0], [0.0, 1.0], [np.inf, 1.0], [1.0, 1.0]], list("AABB")))
    assert sql_error(con, "SELECT r2 FROM emb_anova('t', 'g', 'v')").startswith(
        "embsql: [vector.nonfinite] vector column \"v\" has a infinite vector at row 3 (group 'B');")


# ---- checks hold whatever a query reads ----------------------------------------------------

GOOD = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]]
ANOVA_COLUMNS = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v", "mean_resultant_length", "w_bar")
BAD_TABLES = {
    "one group": (vectors_table(GOOD, list("AAAA")), "has only one group"),
    "n = G": (vectors_table(GOOD, list("ABCD")), "(n = G = 4)"),
    "identical": (vectors_table([[1.0, 0.0]] * 4, list("AABB")), "identical to within floating-point precision"),
    "NULL vector": (pa.table({"g": list("AABB"), "v": pa.array(GOOD[:3] + [None], pa.list_(pa.float64()))}),
                    "has a NULL vector at row 4 (group 'B')"),
    "mixed lengths": (pa.table({"g": list("AABB"), "v": pa.array(GOOD[:3] + [[1.0, 0.0, 0.0]], pa.list_(pa.float64()))}),
                      "mixes vectors of length"),
    "NULL label": (vectors_table(GOOD, ["A", None, "B", "B"]), 'group column "g" has a NULL label'),
    "NaN label": (vectors_table(GOOD, [1.0, float("nan"), 2.0, 2.0]), 'group column "g" has a NaN label'),
    "VARCHAR vector": (pa.table({"g": list("AABB"), "v": ["a", "b", "c", "d"]}), 'vector column "v" in t has type VARCHAR'),
}


@pytest.mark.parametrize("case", list(BAD_TABLES))
@pytest.mark.parametrize("column", ANOVA_COLUMNS + ("count(*)",))
def test_every_check_of_emb_anova_holds_for_every_projection(con, case, column):
    table, words = BAD_TABLES[case]
    con.register("t", table)
    assert words in sql_error(con, f"SELECT {column} FROM emb_anova('t', 'g', 'v')")


@pytest.mark.parametrize("case", ["NULL vector", "mixed lengths", "NULL label", "NaN label", "VARCHAR vector"])
@pytest.mark.parametrize("column", ["\"group\"", "n_g", "w", "w_tilde", "count(*)"])
def test_every_check_of_emb_groups_holds_for_every_projection(con, case, column):
    table, words = BAD_TABLES[case]
    con.register("t", table)
    assert words in sql_error(con, f"SELECT {column} FROM emb_groups('t', 'g', 'v')")


@pytest.mark.parametrize("case", list(BAD_TABLES))
@pytest.mark.parametrize("column", ["icc", "n0", "ms_b", "ms_w", "f", "groups", "n", "kind", "count(*)"])
def test_every_check_of_emb_icc_holds_for_every_projection(con, case, column):
    table, words = BAD_TABLES[case]
    con.register("t", table)
    if case == "VARCHAR vector":
        words = 'value column "v" has type VARCHAR'
    assert words in sql_error(con, f"SELECT {column} FROM emb_icc('t', 'g', 'v')")


@pytest.mark.parametrize("column", ANOVA_COLUMNS[:8])
def test_empty_source_is_an_error(con, column):
    con.execute("CREATE OR REPLACE TABLE empty (g VARCHAR, v DOUBLE[])")
    expected = "embsql: [source.empty] source 'empty' has no rows"
    assert sql_error(con, f"SELECT {column} FROM emb_anova('empty', 'g', 'v')") == expected
    assert sql_error(con, "SELECT * FROM emb_groups('empty', 'g', 'v')") == expected
    assert sql_error(con, "SELECT * FROM emb_icc('empty', 'g', 'v')") == expected
    assert sql_error(con, "SELECT p_value FROM emb_permanova('empty', 'g', 'v', permutations := 9)") == expected


def test_misspelt_model_column_is_named(con):
    con.register("t", vectors_table(GOOD * 2, list("AABBAABB"), m=list("xxxxyyyy")))
    for macro in ("emb_anova", "emb_groups", "emb_icc"):
        assert sql_error(con, f"SELECT * FROM {macro}('t', 'g', 'v', model := 'mdoel')") == \
            'embsql: [column.missing] model column "mdoel" not found in t'
    assert len(con.sql("SELECT * FROM emb_anova('t', 'g', 'v', model := 'm')").fetchall()) == 2


# ---- labels: one rule on every route -------------------------------------------------------

def test_nan_label_is_refused_on_every_route(con):
    con.register("t", vectors_table(GOOD * 3, [1.0, float("nan"), 2.0, 2.0] * 3))
    expected = 'embsql: [label.null] group column "g" has a NaN label' + LABEL_RULE
    for query in ("SELECT * FROM emb_anova('t', 'g', 'v')", "SELECT * FROM emb_groups('t', 'g', 'v')",
                  "SELECT * FROM emb_icc('t', 'g', 'v')", "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_dispersion('t', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_jackknife('t', 'g', 'v')"):
        assert sql_error(con, query) == expected, query


def test_negative_zero_is_zero_on_every_route(con):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 3))
    signed = [0.0, -0.0, 1.0, 2.0] * 4
    con.register("signed", vectors_table(x, signed))
    con.register("plain", vectors_table(x, [abs(v) for v in signed]))
    assert con.sql("SELECT \"group\", n_g FROM emb_groups('signed', 'g', 'v')").fetchall() == [(0.0, 8), (1.0, 4), (2.0, 4)]
    assert str(one(con, "SELECT \"group\" FROM emb_groups('signed', 'g', 'v')")[0]) == "0.0"
    for query in ("SELECT groups, r2, f FROM emb_anova('{}', 'g', 'v')",
                  "SELECT p_value, permutations FROM emb_permanova('{}', 'g', 'v', permutations := 99)",
                  "SELECT groups, f, p_value FROM emb_dispersion('{}', 'g', 'v', permutations := 99)",
                  "SELECT estimate, se, groups FROM emb_jackknife('{}', 'g', 'v')"):
        assert con.sql(query.format("signed")).fetchall() == con.sql(query.format("plain")).fetchall(), query


def test_null_label_is_refused_on_every_route(con):
    con.register("t", vectors_table(GOOD * 3, ["A", None, "B", "B"] * 3))
    expected = 'embsql: [label.null] group column "g" has a NULL label' + LABEL_RULE
    for query in ("SELECT n FROM emb_anova('t', 'g', 'v')", "SELECT * FROM emb_groups('t', 'g', 'v')",
                  "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_dispersion('t', 'g', 'v', permutations := 9)"):
        assert sql_error(con, query) == expected, query


# ---- the distance route --------------------------------------------------------------------

LABELS = pa.table({"id": [1, 2, 3, 4], "g": ["A", "A", "B", "B"]})
PAIRS = [(1, 2, 0.2), (1, 3, 1.0), (1, 4, 1.1), (2, 3, 0.9), (2, 4, 1.2), (3, 4, 0.3)]


def distances(pairs) -> pa.Table:
    return pa.table({"i": [p[0] for p in pairs], "j": [p[1] for p in pairs], "d": [p[2] for p in pairs]})


@pytest.mark.parametrize("column", ["n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "count(*)"])
def test_missing_pair_is_an_error_for_every_projection(con, column):
    con.register("dist", distances(PAIRS[:-1]))
    con.register("lab", LABELS)
    assert "missing pair(s), e.g. (3, 4)" in sql_error(con, f"SELECT {column} FROM emb_anova_dist('dist', 'lab', 'g')")


def test_unlabelled_id_is_an_embsql_error_on_the_permutation_route(con):
    con.register("dist", distances(PAIRS + [(4, 99, 0.5)]))
    con.register("lab", LABELS)
    for query in ("SELECT r2 FROM emb_anova_dist('dist', 'lab', 'g')",
                  "SELECT p_value FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 9)"):
        message = sql_error(con, query)
        assert "id 99 in " in message and "has no label" in message, message


def test_distance_labels_follow_the_label_rule(con):
    con.register("dist", distances(PAIRS))
    con.register("lab", pa.table({"id": [1, 2, 3, 4], "g": [0.0, -0.0, 1.0, float("nan")]}))
    assert sql_error(con, "SELECT r2 FROM emb_anova_dist('dist', 'lab', 'g')") == \
        'embsql: [label.null] group column "g" has a NaN label for id 4' + LABEL_RULE
    con.register("lab", pa.table({"id": [1, 2, 3, 4], "g": [0.0, -0.0, 1.0, 1.0]}))
    assert one(con, "SELECT groups FROM emb_anova_dist('dist', 'lab', 'g')") == (2,)


# ---- the power and retrieval macros --------------------------------------------------------

@pytest.mark.parametrize("query,words", [
    ("SELECT rho FROM emb_power_groups(5)", "rho must be in (0, 1)"),
    ("SELECT power FROM emb_power_groups(0.3, alpha := 2)", "alpha must be in (0, 1)"),
    ("SELECT alpha FROM emb_power_rho(2)", "groups must be a whole number greater than 3"),
    ("SELECT groups FROM emb_power_rho(10, power := 1.5)", "power must be in (0, 1)"),
])
def test_power_checks_hold_for_every_projection(con, query, words):
    assert words in sql_error(con, query)


def retrieval_tables(con, positive="d2", query_vector=(1.0, 0.0)):
    con.register("q", pa.table({"qid": ["q1", "q2"], "group": ["a", "a"], "positive": ["d1", positive],
                                "vector": [list(query_vector), [0.0, 1.0]]}))
    con.register("docs", pa.table({"doc_id": ["d1", "d2", "d3"], "group": ["a", "a", "b"],
                                   "vector": [[1.0, 0.1], [0.1, 1.0], [0.7, 0.7]]}))


def plain_sql():
    """A connection with only sql/embsql.sql, as the stock CLI has it (plain-SQL margins, no UDFs)."""
    con = duckdb.connect()
    con.execute(sql_entry_file().read_text(encoding="utf-8"))
    return con


@pytest.fixture(params=["registered", "plain SQL"])
def route(request):
    connection = embsql.connect() if request.param == "registered" else plain_sql()
    yield connection
    connection.close()


@pytest.mark.parametrize("column", ["qid", "d_pos2", "margin", "top1", "count(*)"])
def test_margin_checks_hold_for_every_projection(route, column):
    con = route
    retrieval_tables(con, positive="nope")
    assert "nope" in sql_error(con, f"SELECT {column} FROM emb_margins('q', 'docs')")
    assert "which is not a doc_id" in sql_error(con, f"SELECT {column} FROM emb_margins('q', 'docs')")
    retrieval_tables(con, query_vector=(0.0, 0.0))
    assert "zero-length" in sql_error(con, f"SELECT {column} FROM emb_margins('q', 'docs')")


@pytest.mark.parametrize("column", ["queries", "top1", "m_p05", "scope"])
def test_retrieval_summary_checks_hold_for_every_projection(route, column):
    con = route
    retrieval_tables(con)
    con.register("q", pa.table({"qid": ["q1", "q2"], "group": ["a", None], "positive": ["d1", "d2"],
                                "vector": [[1.0, 0.0], [0.0, 1.0]]}))
    assert "group column \"group\" is NULL" in sql_error(con, f"SELECT {column} FROM emb_retrieval_summary('q', 'docs')")


def test_scaled_vectors_give_the_same_margins():
    """The plain-SQL margins (the stock CLI's; a registered connection runs a UDF instead)."""
    con = plain_sql()
    retrieval_tables(con)
    plain = con.sql("SELECT qid, margin, m, rank FROM emb_margins('q', 'docs')").fetchall()
    con.register("q", pa.table({"qid": ["q1", "q2"], "group": ["a", "a"], "positive": ["d1", "d2"],
                                "vector": [[1e200, 0.0], [0.0, 1e-160]]}))
    scaled = con.sql("SELECT qid, margin, m, rank FROM emb_margins('q', 'docs')").fetchall()
    assert [r[0] for r in scaled] == [r[0] for r in plain] and [r[3] for r in scaled] == [r[3] for r in plain]
    assert np.allclose([r[1:3] for r in scaled], [r[1:3] for r in plain], rtol=1e-13, atol=0)


# ---- registration writes nothing into the user's database ----------------------------------

def test_register_leaves_a_file_database_unchanged_and_works_read_only(tmp_path):
    path = str(tmp_path / "user.duckdb")
    with duckdb.connect(path) as con:
        con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]), "
                    "('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) v(g, v)")
        embsql.register(con)
        assert one(con, "SELECT round(r2, 4) FROM emb_anova('t', 'g', 'v')") == (0.8182,)
    with duckdb.connect(path) as plain:
        assert one(plain, "SELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'emb%'") == (0,)
        assert one(plain, "SELECT count(*) FROM duckdb_tables()") == (1,)
    with duckdb.connect(path, read_only=True) as read_only:
        embsql.register(read_only)
        assert one(read_only, "SELECT round(r2, 4) FROM emb_anova('t', 'g', 'v')") == (0.8182,)
        assert one(read_only, "SELECT p_value > 0 FROM emb_permanova('t', 'g', 'v', permutations := 9)") == (True,)


@pytest.mark.parametrize("name", ["rows", "counts", "blocks", "items"])
def test_a_source_named_like_a_macros_step_is_read_and_its_bad_vector_named(name):
    """The refusal of a bad vector reads the source again inside the macro, after its first steps:
    a source named like one of them (rows, counts ...) is still the user's table.  The figures are
    numpy's sums of squares; the bad vector is row 3 (counted from 1)."""
    import embsql

    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]])
    con = embsql.connect()
    con.register(f"{name}_arrow", pa.table({"g": list("AABB"), "v": pa.array(vectors.tolist(), pa.list_(pa.float64()))}))
    con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM {name}_arrow')
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ss_w = sum(((unit[i:i + 2] - unit[i:i + 2].mean(axis=0)) ** 2).sum() for i in (0, 2))
    for function in ("emb_anova", "emb_permanova"):
        extra = ", permutations := 9" if function == "emb_permanova" else ""
        got = con.sql(f"SELECT ss_w FROM {function}('{name}', 'g', 'v'{extra})").fetchall()[0][0]
        assert got == pytest.approx(ss_w, rel=1e-12)
    holed = vectors.tolist()
    holed[2] = None
    con.register(f"{name}_holed", pa.table({"g": list("AABB"), "v": pa.array(holed, pa.list_(pa.float64()))}))
    con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM {name}_holed')
    for function in ("emb_anova", "emb_groups", "emb_permanova"):
        extra = ", permutations := 9" if function == "emb_permanova" else ""
        with pytest.raises(duckdb.Error, match=r'vector column "v" has a NULL vector at row 3 \(group \'B\'\)'):
            con.sql(f"SELECT * FROM {function}('{name}', 'g', 'v'{extra})").fetchall()
