"""Acceptance (issue 11 §2, §3): on the registered SQL route, every design check holds whatever
column a query selects; an empty table, a NULL or NaN label and a bad argument are `embsql:` errors
that name the problem. The references are the documented error lists in sql/README.md (errors: a NULL
group label; one group only; n = G; all vectors identical) and the Python route, which refuses each of
these cases with an embsql exception today."""

import duckdb
import numpy as np
import pytest

import embsql

COLUMNS = ["n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v", "mean_resultant_length",
           "w_bar", "count(*)"]


def make(labels, x, label_type="VARCHAR"):
    con = duckdb.connect()
    embsql.register(con)
    con.execute(f"CREATE TABLE t (grp {label_type}, emb DOUBLE[])")
    if len(labels):  # executemany refuses an empty list; the empty case keeps the empty table
        con.executemany("INSERT INTO t VALUES (?, ?)", [(g, [float(c) for c in row]) for g, row in zip(labels, x)])
    return con


rng = np.random.default_rng(0)
DESIGNS = {
    "one group": (["a"] * 10, rng.normal(size=(10, 4)), "VARCHAR"),
    "n = G": (list("abcdef"), rng.normal(size=(6, 4)), "VARCHAR"),
    "identical": (["a"] * 5 + ["b"] * 5, np.tile(rng.normal(size=4), (10, 1)), "VARCHAR"),
    "NULL label": (["a"] * 6 + ["b"] * 6 + [None] * 6, rng.normal(size=(18, 4)), "VARCHAR"),
    "NaN label": ([0.0] * 6 + [1.0] * 6 + [float("nan")] * 6, rng.normal(size=(18, 4)), "DOUBLE"),
    "empty": ([], np.zeros((0, 4)), "VARCHAR"),
}
CALLS = ["emb_anova('t', 'grp', 'emb')", "emb_permanova('t', 'grp', 'emb', permutations := 9)"]


@pytest.fixture(scope="module")
def design_con():
    """design -> its connection, made once for the module: the projection tests only read."""
    made = {}

    def get(design):
        if design not in made:
            made[design] = make(*DESIGNS[design])
        return made[design]

    yield get
    for con in made.values():
        con.close()


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("column", COLUMNS)
def test_check_survives_projection(design_con, design, call, column):
    con = design_con(design)
    with pytest.raises(duckdb.Error, match="embsql:"):
        con.execute(f"SELECT {column} FROM {call}").fetchall()


@pytest.mark.parametrize("design", ["NULL label", "NaN label"])
def test_groups_refuses_missing_labels_like_python(design):
    labels, x, label_type = DESIGNS[design]
    con = make(labels, x, label_type)
    with pytest.raises(embsql.errors.EmbsqlError):
        embsql.groups(con, "t", group="grp", vector="emb")          # Python: refused
    with pytest.raises(duckdb.Error, match="embsql:"):   # SQL today: 3 groups, NULL/NaN one of them
        con.execute("SELECT count(*) FROM emb_groups('t', 'grp', 'emb')").fetchall()


@pytest.mark.parametrize("argument,value", [("replicates", "99.5"), ("replicates", "NULL"),
                                            ("replicates", "'x'"), ("replicates", "true"),
                                            ("level", "NULL"), ("level", "'x'")])
def test_emb_bootstrap_refuses_bad_argument(argument, value):
    """Today: a binder error naming the internal emb__bootstrap, a conversion error, or NULL silently."""
    x = rng.normal(size=(24, 5))
    con = make([f"g{i % 4}" for i in range(24)], x)
    extra = "" if argument == "replicates" else ", replicates := 50"
    with pytest.raises(duckdb.Error, match=f"embsql:.*{argument}"):
        con.execute(f"SELECT ci_low FROM emb_bootstrap('t', 'grp', 'emb', {argument} := {value}{extra})").fetchall()
