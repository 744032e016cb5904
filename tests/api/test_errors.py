"""Bad input: a clear error naming the column and the row or value, never a NaN or a crash.

Python raises embsql's own classes; the SQL macros raise DuckDB errors whose message starts
with "embsql: [kind]" (embsql.run_sql turns those into the kind's class, which is also an
embsql.SqlInputError; tests/api/test_catalogue.py holds the two routes to one class per kind).
"""

import helpers
import pyarrow as pa
import pytest

import embsql
from embsql.errors import VECTOR_KINDS, sql_message

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

GOOD = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]]


def table(vectors, groups=("A", "A", "B", "B"), **extra):
    return pa.table({"id": list(range(len(vectors))), "g": list(groups),
                     "v": pa.array(vectors, type=pa.list_(pa.float64())), **extra})


def sql_error(con, query):
    return helpers.sql_error(con, query, prefixed=False)


BAD_VECTORS = [
    ("zero-length", [0.0, 0.0]),
    ("NULL", None),
    ("NaN", [float("nan"), 1.0]),
    ("infinite", [float("inf"), 1.0]),
    ("NULL-element", [None, 1.0]),
]


@pytest.mark.parametrize("word,bad", BAD_VECTORS)
def test_bad_vector_python_names_column_row_and_key(con, word, bad):
    con.register("t", table(GOOD[:2] + [bad] + GOOD[3:]))
    with pytest.raises(embsql.BadVectorError,
                       match=rf"^vector column 'v' has a {word} vector at row 3 \(item 2, group 'B'\)"):   # counted from 1
        embsql.anova(con, "t", group="g", vector="v", item="id")


@pytest.mark.parametrize("word,bad", BAD_VECTORS)
def test_bad_vector_sql_names_column_group_and_kind(con, word, bad):
    con.register("t", table(GOOD[:2] + [bad] + GOOD[3:]))
    for function in ("emb_anova", "emb_groups"):
        message = sql_error(con, f"SELECT * FROM {function}('t', 'g', 'v')")
        assert message.startswith(f"embsql: [{VECTOR_KINDS[word]}] vector column \"v\" has a {word} vector at row 3 "
                                  "(group 'B');"), message          # counted from 1, as the Python face counts


def test_vectors_of_different_lengths(con):
    con.register("t", table(GOOD[:3] + [[0.1, 0.2, 0.3]]))
    with pytest.raises(embsql.BadVectorError, match=r"^vector column 'v' has a vector of length 3 at row 4 \(group 'B'\); "
                                                    r"other vectors have length 2, and every vector must have the same length$"):
        embsql.anova(con, "t", group="g", vector="v")
    assert sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v')").startswith(
        "embsql: [vector.length] vector column \"v\" mixes vectors of length 2 and 3")


def test_null_group_label(con):
    con.register("t", table(GOOD, groups=("A", None, "B", "B")))
    with pytest.raises(embsql.BadLabelError, match=r"^group column 'g' has a NULL label at row 2; every row needs a label"):
        embsql.anova(con, "t", group="g", vector="v")
    assert sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v')") == \
        ('embsql: [label.null] group column "g" has a NULL label; every row needs a label (filter those rows out, '
         'or give them one)')


def test_missing_table(con):
    with pytest.raises(embsql.SourceNotFoundError, match=r"^source 'nope' cannot be read"):
        embsql.anova(con, "nope", group="g", vector="v")
    with pytest.raises(embsql.SourceNotFoundError, match=r"^source 'missing.parquet' cannot be read"):
        embsql.anova(con, "missing.parquet", group="g", vector="v")


@pytest.mark.parametrize("group,vector,role,missing", [("x", "v", "group", "x"), ("g", "w", "vector", "w")])
def test_missing_column(con, group, vector, role, missing):
    con.register("t", table(GOOD))
    with pytest.raises(embsql.ColumnNotFoundError,
                       match=rf"^{role} column '{missing}' not found in 't'; its columns are: id, g, v$"):
        embsql.anova(con, "t", group=group, vector=vector)
    assert sql_error(con, f"SELECT * FROM emb_anova('t', '{group}', '{vector}')") == \
        f'embsql: [column.missing] {role} column "{missing}" not found in t'


def test_missing_by_column(con):
    con.register("t", table(GOOD))
    with pytest.raises(embsql.ColumnNotFoundError, match=r"^model column 'model' not found in 't'"):
        embsql.anova(con, "t", group="g", vector="v", model="model")


def test_vector_column_of_wrong_type(con):
    con.register("t", pa.table({"g": ["A", "B"], "v": ["x", "y"]}))
    with pytest.raises(embsql.ColumnTypeError, match=r"^vector column 'v' in 't' has type VARCHAR"):
        embsql.anova(con, "t", group="g", vector="v")


def test_one_group(con):
    con.register("t", table(GOOD, groups=("A",) * 4))
    with pytest.raises(embsql.DesignError, match=r"^the group column has only one group: the decomposition needs at least two$"):
        embsql.anova(con, "t", group="g", vector="v")
    assert sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v')") == \
        'embsql: [design.one_group] group column "g" has only one group: the decomposition needs at least two'


def test_every_group_a_singleton(con):
    con.register("t", table(GOOD, groups=("A", "B", "C", "D")))
    with pytest.raises(embsql.DesignError, match=r"n = G = 4.*F are undefined"):
        embsql.anova(con, "t", group="g", vector="v")
    assert "(n = G = 4): no within-group degrees of freedom" in sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v')")
    # per-group spread is still defined: W = 0 and no W~ for singletons
    rows = con.sql("SELECT * FROM emb_groups('t', 'g', 'v')").fetchall()
    assert rows == [("A", 1, 0.0, None, True), ("B", 1, 0.0, None, True), ("C", 1, 0.0, None, True), ("D", 1, 0.0, None, True)]


def test_identical_vectors(con):
    con.register("t", table([[1.0, 0.0]] * 4))
    with pytest.raises(embsql.DesignError, match=r"identical to within floating-point precision .*R² and F are undefined"):
        embsql.anova(con, "t", group="g", vector="v")
    assert sql_error(con, "SELECT * FROM emb_anova('t', 'g', 'v')") == (
        "embsql: [design.identical] the vectors are identical to within floating-point precision "
        "(root-mean-square spread 0 < 1.5e-08); "
        "R² and F are undefined")


def test_sql_errors_become_embsql_errors_in_python(con):
    con.register("t", table(GOOD, groups=("A",) * 4))
    with pytest.raises(embsql.SqlInputError, match=r"^embsql: \[design.one_group\] group column \"g\" has only one group"):
        embsql.run_sql(con, "SELECT * FROM emb_anova('t', 'g', 'v')")


# ---- the distance route -------------------------------------------------------------------
# embsql.anova_dist reads the tables in Python (embsql.io.distance_tables) and emb_anova_dist checks
# them in SQL: each refusal is tested on both, with one message ("embsql: [kind] ..." in SQL, the
# kind's class with the same words in Python).

LABELS = pa.table({"id": [1, 2, 3, 4], "g": ["A", "A", "B", "B"]})
PAIRS = [(1, 2, 0.2), (1, 3, 1.0), (1, 4, 1.1), (2, 3, 0.9), (2, 4, 1.2), (3, 4, 0.3)]


def dist_error(con, pairs, labels=LABELS, error=embsql.InputError):
    """The refusal of anova_dist, as "embsql: [kind] message", after checking that emb_anova_dist
    refuses the same tables with the same text."""
    con.register("dist", pa.table({"i": [p[0] for p in pairs], "j": [p[1] for p in pairs],
                                   "d": pa.array([p[2] for p in pairs], type=pa.float64())}))
    con.register("lab", labels)
    with pytest.raises(error) as info:
        embsql.anova_dist(con, "dist", labels="lab", group="g", item="id")
    assert not isinstance(info.value, embsql.SqlInputError)      # raised by Python, not by a SQL function
    message = sql_message(info.value)
    assert sql_error(con, "SELECT * FROM emb_anova_dist('dist', 'lab', 'g')") == message
    return message


@pytest.mark.parametrize("others", [PAIRS[1:], PAIRS[1:-2]], ids=["every pair", "pairs missing too"])
def test_distance_both_orders_disagree(con, others):
    """Named before a missing pair, whether the table has a row for every pair or fewer rows than pairs."""
    assert dist_error(con, [(2, 1, 0.25)] + others + [PAIRS[0]], error=embsql.DistanceTableError) == \
        "embsql: [distance.asymmetric] pair (1, 2) is given in both orders with different distances (0.2 and 0.25)"


def test_distance_both_orders_agree_is_fine(con):
    con.register("dist", pa.table({"i": [p[0] for p in PAIRS] + [2], "j": [p[1] for p in PAIRS] + [1],
                                   "d": [p[2] for p in PAIRS] + [0.2]}))
    con.register("lab", LABELS)
    assert embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").n == 4


def test_distance_missing_pair(con):
    assert dist_error(con, PAIRS[:-1], error=embsql.DistanceTableError).startswith(
        "embsql: [distance.incomplete] distance table dist has 5 distinct pairs, but 4 labelled ids need 6: "
        "missing pair(s), e.g. (3, 4)")


def test_distance_missing_pair_names_the_first_by_id(con):
    """Text ids: the example is the smallest missing pair of ids, whatever order the rows come in."""
    labels = pa.table({"id": ["d", "b", "a", "c"], "g": ["y", "x", "x", "y"]})
    assert dist_error(con, [("c", "b", 1.0), ("a", "b", 1.0), ("a", "c", 1.0)], labels) == (
        "embsql: [distance.incomplete] distance table dist has 3 distinct pairs, but 4 labelled ids need 6: "
        "missing pair(s), e.g. (a, d)")


def test_distance_id_without_label(con):
    assert dist_error(con, PAIRS + [(4, 5, 1.0)], error=embsql.DistanceTableError) == \
        "embsql: [distance.unlabelled] id 5 in distance table dist has no label in lab"


def test_distance_null_id(con):
    assert dist_error(con, PAIRS + [(None, 2, 1.0)], error=embsql.DistanceTableError) == \
        'embsql: [distance.null_id] distance table dist has a NULL id in "i" or "j"'


@pytest.mark.parametrize("value,word", [(-0.5, "is negative (-0.5)"), (None, "is NULL or NaN"),
                                        (float("nan"), "is NULL or NaN"), (float("inf"), "is infinite")])
def test_distance_invalid_value(con, value, word):
    assert dist_error(con, PAIRS[:-1] + [(3, 4, value)], error=embsql.DistanceTableError) == \
        f'embsql: [distance.invalid] distance for pair (3, 4) in column "d" {word}'


def test_distance_to_itself_not_zero(con):
    assert dist_error(con, PAIRS + [(2, 2, 0.1)], error=embsql.DistanceTableError) == \
        "embsql: [distance.self] distance of id 2 to itself is 0.1, not 0"


def test_distance_missing_column(con):
    """Both routes name the column's role, as the docstring does."""
    con.register("lab", LABELS)
    for columns, role, missing in ((("a", "j", "d"), "first item", "i"), (("i", "b", "d"), "second item", "j"),
                                   (("i", "j", "x"), "distance", "d")):
        con.register("dist", pa.table({name: [value] for name, value in zip(columns, (1, 2, 0.1))}))
        with pytest.raises(embsql.ColumnNotFoundError, match=rf'^{role} column "{missing}" not found in dist$'):
            embsql.anova_dist(con, "dist", labels="lab", group="g", item="id")
        assert sql_error(con, "SELECT * FROM emb_anova_dist('dist', 'lab', 'g')") == \
            f'embsql: [column.missing] {role} column "{missing}" not found in dist'
    con.register("dist", pa.table({"i": [1], "j": [2], "d": [0.1]}))
    for labels, role, missing in ((pa.table({"key": [1], "g": ["A"]}), "id", "id"),
                                  (pa.table({"id": [1], "h": ["A"]}), "group", "g")):
        assert dist_error(con, [(1, 2, 0.1)], labels, error=embsql.ColumnNotFoundError) == \
            f'embsql: [column.missing] {role} column "{missing}" not found in lab'


def test_distance_null_label_and_duplicate_id(con):
    null_label = pa.table({"id": [1, 2, 3, 4], "g": ["A", None, "B", "B"]})
    assert dist_error(con, PAIRS, null_label, error=embsql.BadLabelError) == (
        'embsql: [label.null] group column "g" has a NULL label for id 2; every row needs a '
        'label (filter those rows out, or give them one)')
    null_id = pa.table({"id": [1, None, 3, 4], "g": ["A", "A", "B", "B"]})
    con.register("lab", null_id)
    with pytest.raises(embsql.BadLabelError, match=r'^id column "id" has a NULL label at row 2 of lab; every row'):
        embsql.anova_dist(con, "dist", labels="lab", group="g", item="id")
    duplicate = pa.table({"id": [1, 2, 3, 4, 4], "g": ["A", "A", "B", "B", "B"]})
    assert dist_error(con, PAIRS, duplicate, error=embsql.BadLabelError) == \
        "embsql: [label.duplicate] id 4 appears more than once in lab"


@pytest.mark.parametrize("groups,kind,words", [
    ("AAAA", "design.one_group", 'group column "g" has only one group: the decomposition needs at least two'),
    ("ABCD", "design.no_residual_df", 'every group in "g" has one id (n = G = 4): no within-group degrees of '
                                      "freedom, so SS_W and F are undefined"),
])
def test_distance_design_refusals(con, groups, kind, words):
    labels = pa.table({"id": [1, 2, 3, 4], "g": list(groups)})
    assert dist_error(con, PAIRS, labels, error=embsql.DesignError) == f"embsql: [{kind}] {words}"


def test_distance_every_distance_zero_and_no_labels(con):
    assert dist_error(con, [(a, b, 0.0) for a, b, _ in PAIRS], error=embsql.DesignError) == \
        "embsql: [design.zero_distances] every distance is 0 (SS_T = 0): R2 and F are undefined"
    empty = pa.table({"id": pa.array([], pa.int64()), "g": pa.array([], pa.string())})
    con.register("lab", empty)
    con.register("dist", pa.table({"i": empty["id"], "j": empty["id"], "d": pa.array([], pa.float64())}))
    with pytest.raises(embsql.InputError) as info:
        embsql.anova_dist(con, "dist", labels="lab", group="g", item="id")
    assert sql_message(info.value) == "embsql: [source.empty] source 'lab' has no rows" == \
        sql_error(con, "SELECT * FROM emb_anova_dist('dist', 'lab', 'g')")


# ---- a message that suggests an argument spells it as the surface the call came through does:
# Python name=value, SQL name := value, the command line its flag (issue 32)
SPELLING_TABLES = [
    "CREATE TABLE e AS SELECT m AS model, 'i' || i AS item, [1.0 + i, (i * 7 % 5)::DOUBLE] AS vector "
    "FROM range(6) r(i), (VALUES ('x'), ('y')) s(m)",
    "CREATE TABLE p AS SELECT 'i' || i AS item_a, 'i' || (i + 1) AS item_b, i * 1.0 AS score FROM range(6) r(i)",
    "CREATE TABLE q AS SELECT 'q' || i AS qid, [1.0 + i, 1.0] AS vector FROM range(4) r(i)",
    "CREATE TABLE d AS SELECT 'd' || i AS doc_id, [1.0, 1.0 + i] AS vector FROM range(4) r(i)",
    "CREATE TABLE qr AS SELECT * FROM (VALUES ('q0', 'd0', 1), ('q9', 'd1', 1), ('q1', 'd1', 1)) t(qid, doc_id, relevance)",
]


def test_a_suggested_argument_is_spelled_as_each_surface_spells_it(con):
    for statement in SPELLING_TABLES:
        con.execute(statement)
    # item i6 (of the last pair) has no vector
    with pytest.raises(embsql.errors.InputError, match=r"; pass missing='skip' to leave out"):
        embsql.similarity_eval(con, "p", "e", vector="vector", model="model", item="item")
    for query in ("SELECT * FROM emb_similarity_eval('p', 'e')", "SELECT * FROM emb_similarity_pearson('p', 'e')"):
        message = sql_error(con, query)
        assert "; pass missing := 'skip' to leave out" in message and "missing='skip'" not in message, message
    # a qrels row whose qid is not a query: its row counted from 1 (q9 is the second row)
    message = sql_error(con, "SELECT * FROM emb_retrieval_eval('q', 'd', 'qr', k := 2)")
    assert "qrels 'qr' row 2: qid 'q9' is not in" in message, message
    assert "pass unknown := 'skip' to leave them out" in message, message


def test_the_one_spelling_of_an_argument_per_surface():
    from embsql.errors import option, spoken_in

    assert [option("common", True), option("missing", "skip"), option("k", 3)] == \
        ["common=True", "missing='skip'", "k=3"]
    with spoken_in("sql"):
        assert [option("common", True), option("missing", "it's")] == ["common := true", "missing := 'it''s'"]
    with spoken_in("cli"):
        assert option("bad_rows", "skip") == "--skip-bad-rows"
        assert option("missing", "skip") == 'missing = "skip" in the --config file\'s [report.similarity]'
        assert option("unknown", "skip") == 'unknown = "skip" in the --config file'
    assert option("common", True) == "common=True"     # (the surface is restored after the block)
    with pytest.raises(ValueError):
        with spoken_in("R"):
            pass
