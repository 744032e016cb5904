"""emb_permanova reads the vectors once: its UDF returns the decomposition's parts with the test
(emb_permanova_welch runs the same UDF and returns the Welch test's columns only).

Its emb_anova columns must equal the pure-SQL decomposition (emb_anova, a separate code path) and
embsql.permanova's (the Python route) to 1e-12 relative, and the long-double sums of squares of the
unit vectors (numpy, independent of both); its errors for bad input must be emb_anova's, word for word
and of the same kind, whichever columns a query reads.
"""

from __future__ import annotations

import datetime
import math
import re
import warnings

import numpy as np
import pyarrow as pa
import pytest
from helpers import sql_error, vectors_table

import embsql

pytestmark = pytest.mark.shared_connection

ANOVA = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v", "mean_resultant_length", "w_bar")
TEST = ("p_value", "permutations")
WELCH = ("n", "groups", "w_d", "p_value", "permutations", "null_method", "groups_left_out", "items_left_out", "note")
TYPES = ["BIGINT", "BIGINT"] + ["DOUBLE"] * 9 + ["DOUBLE", "BIGINT"]
WELCH_TYPES = ["BIGINT", "BIGINT", "DOUBLE", "DOUBLE", "BIGINT", "VARCHAR", "BIGINT", "BIGINT", "VARCHAR"]
EPS = float(np.finfo(np.float64).eps)
RNG = np.random.default_rng(2026)


def two_models() -> pa.Table:
    """A by column with two models of different d (4 and 7) and different groups."""
    a, b = RNG.standard_normal((30, 4)), RNG.standard_normal((24, 7))
    return pa.table({"m": ["m1"] * 30 + ["m2"] * 24, "mi": pa.array([1] * 30 + [2] * 24, pa.int32()),
                     "s": RNG.integers(0, 3, 54).tolist(),
                     "g": list(RNG.choice(["x", "y", "z"], 30)) + list(RNG.choice(["x", "y"], 24)),
                     "v": pa.array([list(r) for r in a] + [list(r) for r in b], pa.list_(pa.float64()))})


TABLES = {
    "equal": vectors_table(RNG.standard_normal((40, 5)), list("ABCD") * 10, s=RNG.integers(0, 2, 40).tolist()),
    "unequal": vectors_table(RNG.standard_normal((50, 6)), ["A"] * 30 + ["B"] * 12 + ["C"] * 8, s=["p", "q"] * 25),
    "integer labels": vectors_table(RNG.standard_normal((36, 3)), pa.array([10, 2, 33] * 12, pa.int32())),
    "float labels": vectors_table(RNG.standard_normal((24, 3)), [0.0, -0.0, 1.5, 2.5] * 6),
    "boolean labels": vectors_table(RNG.standard_normal((20, 3)), [True, False, False, True] * 5),
    "date labels": vectors_table(RNG.standard_normal((16, 3)), [datetime.date(2020, 1, 1), datetime.date(2021, 6, 1)] * 8),
    "float32": vectors_table(RNG.standard_normal((40, 5)), list("ABCD") * 10, dtype=pa.float32()),
    "fixed size": vectors_table(RNG.standard_normal((30, 4)), list("ABC") * 10, fixed=True),
    "small groups (welch)": vectors_table(RNG.standard_normal((40, 4)), ["A"] * 20 + ["B"] * 15 + ["C"] * 3 + ["D"] * 2),
    "two models": two_models(),
}
CALLS = {
    "": "",
    "strata": ", strata := 's'",
    "welch": "",
    "welch, permutation": ", null_method := 'permutation'",
    "by": ", model := 'm'",
    "by integer": ", model := 'mi'",
    "by, strata, welch": ", model := 'm', strata := 's'",
}


def applies(table: str, call: str) -> bool:
    columns = TABLES[table].column_names
    return ("by" not in call or "m" in columns) and ("strata" not in call or "s" in columns) and \
        ("by" in call or table != "two models")       # without by, two models mix lengths (an error, below)


CASES = [(t, c) for t in TABLES for c in CALLS if applies(t, c)]


@pytest.fixture(scope="module")
def con(module_con):
    for name, table in TABLES.items():
        module_con.register(name.replace(" ", "_").replace("(", "").replace(")", ""), table)
    return module_con


def name(table: str) -> str:
    return table.replace(" ", "_").replace("(", "").replace(")", "")


def permanova_sql(con, table: str, call: str, columns: str = "*") -> list[dict]:
    function = "emb_permanova_welch" if "welch" in call else "emb_permanova"
    rel = con.sql(f"SELECT {columns} FROM {function}('{name(table)}', 'g', 'v', permutations := 99{CALLS[call]})")
    return rel.to_arrow_table().to_pylist()


def anova_sql(con, table: str, call: str) -> list[dict]:
    by = ", model := 'mi'" if "by integer" in call else ", model := 'm'" if "by" in call else ""
    return con.sql(f"SELECT * FROM emb_anova('{name(table)}', 'g', 'v'{by})").to_arrow_table().to_pylist()


def permanova_python(con, table: str, call: str) -> list[dict]:
    """The Python face of the same call: permanova, or permanova_welch for emb_permanova_welch."""
    options: dict = {"permutations": 99, "progress": False}
    if "strata" in call:
        options["strata"] = "s"
    if "by" in call:
        options["model"] = "mi" if "integer" in call else "m"
    if "welch" in call:
        if "permutation" in call:
            options["null_method"] = "permutation"
        return embsql.permanova_welch(con, name(table), group="g", vector="v", **options).to_dicts()
    return embsql.permanova(con, name(table), group="g", vector="v", check_dispersion=False, **options).to_dicts()


def close(a, b, rtol: float) -> bool:
    if a is None or b is None or isinstance(a, str):
        return a == b
    return math.isclose(a, b, rel_tol=rtol, abs_tol=0.0) or a == b


@pytest.mark.parametrize("table,call", CASES)
def test_the_anova_columns_equal_both_other_routes(con, table, call):
    sql = permanova_sql(con, table, call)
    welch = "welch" in call
    columns = WELCH if welch else ANOVA + TEST
    for row, other in zip(sql, anova_sql(con, table, call), strict=True):
        assert list(row)[-len(columns):] == list(columns)
        for column in ANOVA:
            if column in row:
                assert close(row[column], other[column], 1e-12), (column, row[column], other[column])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python = permanova_python(con, table, call)
    for row, other in zip(sql, python, strict=True):
        assert list(other)[-len(columns):] == list(columns)     # one schema per function, the same in SQL and Python
        for column in columns:   # the same kernel on the same canonical order: the same p-value
            if isinstance(row[column], float) and column not in TEST + ("w_d",):
                assert close(row[column], other[column], 1e-12), (column, row[column], other[column])
            else:
                assert row[column] == other[column] or close(row[column], other[column], 1e-12), column


def long_double_reference(x: np.ndarray, labels) -> dict:
    """SS_T and SS_W of the unit vectors, summed in long double about the exact means."""
    z = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.longdouble)
    labels = np.asarray(labels)
    ss_w = sum(((z[labels == g] - z[labels == g].mean(axis=0)) ** 2).sum() for g in np.unique(labels))
    return {"ss_t": float(((z - z.mean(axis=0)) ** 2).sum()), "ss_w": float(ss_w)}


@pytest.mark.parametrize("spread", [1.0, 1e-3, 1e-6])
def test_near_identical_vectors_keep_their_digits(con, spread):
    """Issue 11's near-duplicates: one base vector plus spread * (group offset + noise).  Routes that
    normalise in different arithmetic (SQL, numpy) differ by the rounding of the unit vectors, about
    eps / r relative for a root-mean-square spread r; embsql.permanova runs the very same sums (1e-12)."""
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 3, 90)
    x = rng.standard_normal(8) + spread * (rng.standard_normal((3, 8))[labels] + rng.standard_normal((90, 8)))
    con.register("near", vectors_table(x, labels.tolist()))
    row = con.sql("SELECT * FROM emb_permanova('near', 'g', 'v', permutations := 99)").to_arrow_table().to_pylist()[0]
    anova = con.sql("SELECT * FROM emb_anova('near', 'g', 'v')").to_arrow_table().to_pylist()[0]
    python = embsql.permanova(con, "near", group="g", vector="v", permutations=99, check_dispersion=False).to_dicts()[0]
    rounding = max(1e-12, 10 * EPS / math.sqrt(row["v"]))
    reference = long_double_reference(x, labels)
    for column in ANOVA:
        assert close(row[column], python[column], 1e-12), column
        assert close(row[column], anova[column], rounding), (column, row[column], anova[column])
    for column in ("ss_t", "ss_w"):
        assert close(row[column], reference[column], rounding), (column, row[column], reference[column])
    assert row["p_value"] == python["p_value"] and 0 < row["p_value"] <= 1


BAD = {
    "identical": vectors_table(np.tile(RNG.standard_normal(8), (12, 1)) + 1e-17, list("AABBCCAABBCC")),
    "identical_within": vectors_table(np.repeat(RNG.standard_normal((3, 8)), 4, axis=0), list("AAAABBBBCCCC")),
    "identical_by": vectors_table(np.vstack([RNG.standard_normal((4, 3)), np.tile(RNG.standard_normal(3), (4, 1))]),
                                  list("AABBAABB"), m=list("xxxxyyyy")),
    "identical_by_integer": vectors_table(np.vstack([RNG.standard_normal((4, 3)), np.tile(RNG.standard_normal(3), (4, 1))]),
                                          list("AABBAABB"), m=[7] * 4 + [9] * 4),
    "one_group": vectors_table(RNG.standard_normal((6, 3)), ["A"] * 6),
    "one_group_by": vectors_table(RNG.standard_normal((8, 3)), list("AABBAAAA"), m=list("xxxxyyyy")),
    "no_df": vectors_table(RNG.standard_normal((4, 3)), list("ABCD")),
    "empty": vectors_table(np.zeros((0, 3)), pa.array([], pa.string())),
    "mixed": pa.table({"g": list("AABBAABB"), "v": [[1.0, 0.0, 2.0]] * 3 + [[0.5, 1.0, 0.0]] * 4 + [[1.0, 2.0]]}),
    "mixed_groups": pa.table({"g": list("BBAACCAB"), "v": [[1.0, 0.0, 2.0]] * 4 + [[0.5, 1.0]] * 4}),
}
for word, bad in (("NULL", None), ("zero", [0.0, 0.0, 0.0]), ("NaN", [float("nan"), 1, 0]),
                  ("inf", [float("inf"), 1, 0]), ("NULL_element", [None, 1.0, 0.0])):
    BAD[f"bad_{word}"] = pa.table({"g": list("AABBCCBB"), "v": pa.array(
        [[1.0, 0.0, 2.0], [0.0, 1.0, 1.0], [2.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0],
         bad, bad], pa.list_(pa.float64()))})


@pytest.mark.parametrize("table", sorted(BAD))
@pytest.mark.parametrize("columns", ["*", "p_value", "n", "ss_w, f"])
def test_bad_input_is_refused_in_emb_anovas_words(con, table, columns):
    con.register(table, BAD[table])
    by = ", model := 'm'" if "_by" in table else ""
    expected = sql_error(con, f"SELECT * FROM emb_anova('{table}', 'g', 'v'{by})")
    if table == "mixed_groups":   # groups A and B both have the short length: either may be named
        expected = re.escape(expected).replace("'B'", "'[AB]'").replace("'A'", "'[AB]'")
    for function, extra in (("emb_permanova", ""), ("emb_permanova_welch", ""), ("emb_permanova", ", strata := 'g'")):
        read = "w_d" if function == "emb_permanova_welch" and columns == "ss_w, f" else columns   # its own columns
        query = f"SELECT {read} FROM {function}('{table}', 'g', 'v', permutations := 9{by}{extra})"
        message = sql_error(con, query)
        assert re.fullmatch(expected, message) if table == "mixed_groups" else message == expected, (query, message)


def test_the_degeneracy_error_is_a_design_error_naming_the_model(con):
    con.register("identical_by", BAD["identical_by"])
    con.register("identical_by_integer", BAD["identical_by_integer"])
    with pytest.raises(embsql.DesignError, match="the vectors of model 'y' are identical to within floating-point "
                                                 r"precision \(root-mean-square spread 0 < 1\.5e-08\); R² and F are undefined"):
        embsql.run_sql(con, "SELECT p_value FROM emb_permanova('identical_by', 'g', 'v', model := 'm')")
    with pytest.raises(embsql.DesignError, match="the vectors of model 9 are identical"):
        embsql.run_sql(con, "SELECT n FROM emb_permanova('identical_by_integer', 'g', 'v', model := 'm')")


@pytest.mark.parametrize("by,by_type", [("", None), (", model := 'm'", "VARCHAR"), (", model := 'mi'", "INTEGER")])
@pytest.mark.parametrize("function", ["emb_permanova", "emb_permanova_welch"])
def test_the_output_columns_and_types(con, by, by_type, function):
    described = con.sql(f"DESCRIBE SELECT * FROM {function}('two_models', 'g', 'v'{by})").fetchall() if by else \
        con.sql(f"DESCRIBE SELECT * FROM {function}('equal', 'g', 'v')").fetchall()
    columns, types = (WELCH, WELCH_TYPES) if function == "emb_permanova_welch" else (ANOVA + TEST, TYPES)
    expected = ([(by.split("'")[1], by_type)] if by else []) + list(zip(columns, types))
    assert [(row[0], row[1]) for row in described] == expected


def test_a_bad_argument_is_refused_whatever_columns_are_read(con):
    """The test runs for every query now (the ANOVA columns come from it), so its arguments are checked
    even when only emb_anova's columns are read."""
    for columns in ("*", "n", "r2, f"):
        unknown = (r"^embsql: \[argument\.unknown\] emb_permanova has no argument null_method :=; it takes: "
                   r"source, \"group\", vector, permutations, seed, strata, model, bad_rows$")
        with pytest.raises(embsql.ArgumentError, match=unknown):
            embsql.run_sql(con, f"SELECT {columns} FROM emb_permanova('equal', 'g', 'v', null_method := 'wild bootstrap')")
        assert sql_error(con, f"SELECT {columns} FROM emb_permanova('equal', 'g', 'v', permutations := 0)") == \
            "embsql: [argument.permutations] permutations must be a whole number from 1 to 1,000,000, not 0"


def test_the_model_rows_keep_their_order(con):
    rows = con.sql("SELECT m, n, groups FROM emb_permanova('two_models', 'g', 'v', model := 'm', permutations := 9)")
    assert rows.fetchall() == [("m1", 30, 3), ("m2", 24, 2)]
