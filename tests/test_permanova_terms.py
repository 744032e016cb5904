"""Multi-term PERMANOVA (embsql.permanova(..., terms=...), emb_permanova_terms, emb_permanova_terms_dist)
against vegan's adonis2 (tests/reference/vegan/adonis2_terms.R, its output adonis2_terms.Rout and
adonis2_terms.json): SS, R², F to 1e-9, p within Monte Carlo error.

p tolerance: vegan ran R permutations (9,999 on dune, 999 on the example), embsql runs N; the two
estimates of the same p differ by a normal error of SD sqrt(p (1 - p) (1/R + 1/N)), plus up to
1/(N+1) because embsql's p is (b + 1)/(N + 1).  We allow 4.5 SD + 1/(N+1): a correct implementation fails a given check with
probability below 1e-5.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from helpers import sql_error, sql_rows

import embsql
from embsql.errors import DesignError, EmbsqlError, InputError

HERE = Path(__file__).parent / "reference" / "vegan"


def reference() -> dict:
    return json.loads((HERE / "adonis2_terms.json").read_text())

N = 1999
CASES = {"Management + A1": ["Management", "A1"], "Use * Management": ["Use*Management"]}


def p_tolerance(p: float, reference_permutations: int, permutations: int = N) -> float:
    sd = math.sqrt(max(p * (1 - p), 1e-4) * (1 / reference_permutations + 1 / permutations))
    return 4.5 * sd + 1 / (permutations + 1)


def dune(con):
    env = duckdb.sql(f"SELECT * FROM read_csv('{HERE / 'data' / 'dune_env.csv'}', all_varchar = true)").to_arrow_table()
    env = env.set_column(env.schema.get_field_index("A1"), "A1", pa.array([float(x) for x in env.column("A1").to_pylist()]))
    con.register("dune_env", env)
    path = HERE / "data" / "dune_bray.csv"
    dist = duckdb.sql(f"SELECT i::VARCHAR AS i, j::VARCHAR AS j, d::DOUBLE AS d FROM read_csv('{path}')")
    con.register("dune_bray", dist.to_arrow_table())


def example_table(con):
    spec = importlib.util.spec_from_file_location("terms_data", HERE / "terms_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    con.register("example", duckdb.sql(module.QUERY).to_arrow_table())


def check(rows, reference, permutations=N):
    expected = reference["rows"]
    assert [r["term"] for r in rows] == [e["term"] for e in expected]
    for got, want in zip(rows, expected):
        assert got["df"] == want["df"], got["term"]
        for key in ("ss", "r2", "f"):
            if want[key] is None:
                assert got[key] is None
            else:
                assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), (got["term"], key)
        if want["p_value"] is not None:
            tolerance = p_tolerance(want["p_value"], reference["permutations"], permutations)
            assert abs(got["p_value"] - want["p_value"]) <= tolerance, got


@pytest.mark.parametrize("strata", [None, "Moisture"])
@pytest.mark.parametrize("by", ["terms", "margin"])
@pytest.mark.parametrize("case", list(CASES))
def test_dune_matches_adonis2(con, case, by, strata):
    """Bray-Curtis distances of dune: the distance route against adonis2, with and without strata."""
    dune(con)
    key = f"dune {case}{' strata ' + strata if strata else ''} {by}"
    terms = ", ".join(f"'{t}'" for t in CASES[case])
    rows = sql_rows(con, f"SELECT * FROM emb_permanova_terms_dist('dune_bray', 'dune_env', [{terms}], "
                         f"sums := '{'sequential' if by == 'terms' else 'margin'}', permutations := {N}, seed := 7"
                         + (f", strata := '{strata}')" if strata else ")"))
    check(rows, reference()[key])


@pytest.mark.parametrize("by", ["terms", "margin"])
@pytest.mark.parametrize("case,terms", [("topic + position", ["topic", "position"]),
                                        ("topic * parity", ["topic*parity"])])
def test_example_matches_adonis2(con, case, terms, by):
    """The bundled example (unit vectors, Euclidean distances in R): Python face and SQL route."""
    example_table(con)
    expected = reference()[f"example {case} {by}"]
    by_terms = "sequential" if by == "terms" else "margin"
    got = embsql.permanova_terms(con, "example", terms=terms, vector="embedding", sums=by_terms, permutations=999,
                           seed=3, progress=False).to_dicts()
    check(got, expected, 999)
    listed = ", ".join(f"'{t}'" for t in terms)
    sql = sql_rows(con, f"SELECT * FROM emb_permanova_terms('example', [{listed}], 'embedding', "
                        f"sums := '{by_terms}', permutations := 999, seed := 3)")
    assert sql == got


def _table(n=40, seed=0, d=8):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n // 4), 4)
    x = rng.standard_normal((n, d)) + rng.standard_normal((n // 4, d))[g]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return pa.table({"g": [f"g{k}" for k in g], "lang": [f"l{k % 4}" for k in range(n)],
                     "pair": [f"p{k // 8}" for k in g], "cov": rng.random(n), "one": ["x"] * n,
                     "cov_null": [None if k == 5 else float(k) for k in range(n)], "s": [f"s{k % 2}" for k in g],
                     "v": [list(r) for r in x]})


@pytest.mark.parametrize("strata", [None, "s"])
def test_one_term_equals_the_one_factor_call(con, strata):
    """permanova(con, src, group, vector) and permanova(..., terms=[group]) give the same numbers."""
    con.register("t", _table())
    one = embsql.permanova(con, "t", group="g", vector="v", permutations=499, seed=5, strata=strata,
                           check_dispersion=False, progress=False).to_dicts()[0]
    rows = embsql.permanova_terms(con, "t", terms=["g"], vector="v", permutations=499, seed=5, strata=strata,
                            progress=False).to_dicts()
    assert rows[0]["ss"] == pytest.approx(one["ss_b"], rel=1e-12)
    assert rows[1]["ss"] == pytest.approx(one["ss_w"], rel=1e-12)
    assert rows[2]["ss"] == pytest.approx(one["ss_t"], rel=1e-12)
    assert rows[0]["f"] == pytest.approx(one["f"], rel=1e-12)
    assert rows[0]["r2"] == pytest.approx(one["r2"], rel=1e-12)
    assert rows[0]["p_value"] == one["p_value"]
    assert [r["df"] for r in rows] == [one["groups"] - 1, one["n"] - one["groups"], one["n"] - 1]


def test_star_expands_and_orders_like_r(con):
    con.register("t", _table())
    star = embsql.permanova_terms(con, "t", terms=["lang*cov"], vector="v", permutations=99, progress=False).to_dicts()
    assert [r["term"] for r in star] == ["lang", "cov", "lang:cov", "Residual", "Total"]
    assert [r["df"] for r in star] == [3, 1, 3, 32, 39]
    spelled = embsql.permanova_terms(con, "t", terms=["lang:cov", "lang", "cov"], vector="v", permutations=99,
                               progress=False).to_dicts()
    assert [r["term"] for r in spelled] == [r["term"] for r in star]
    assert [r["ss"] for r in spelled] == pytest.approx([r["ss"] for r in star], rel=1e-12)
    # the marginal test leaves out terms contained in an interaction, as vegan's drop.scope does
    margin = embsql.permanova_terms(con, "t", terms=["lang*cov"], vector="v", sums="margin", permutations=99,
                              progress=False).to_dicts()
    assert [r["term"] for r in margin] == ["lang:cov", "Residual", "Total"]


def test_sequential_ss_add_up_and_margin_is_order_free(con):
    con.register("t", _table())
    seq = embsql.permanova_terms(con, "t", terms=["cov", "g", "lang"], vector="v", permutations=99,
                           progress=False).to_dicts()
    assert sum(r["ss"] for r in seq[:-1]) == pytest.approx(seq[-1]["ss"], rel=1e-12)
    a = embsql.permanova_terms(con, "t", terms=["cov", "g", "lang"], vector="v", sums="margin", permutations=199,
                         progress=False).to_dicts()
    b = embsql.permanova_terms(con, "t", terms=["lang", "cov", "g"], vector="v", sums="margin", permutations=199,
                         progress=False).to_dicts()
    by_term = {r["term"]: r for r in b}
    for r in a:
        assert r["ss"] == pytest.approx(by_term[r["term"]]["ss"], rel=1e-10)
        assert r["p_value"] == by_term[r["term"]]["p_value"]    # the canonical row order ignores term order


def test_vectors_and_distances_agree(con):
    """The projection route on vectors and the Gower route on their Euclidean distances."""
    table = _table()
    con.register("t", table)
    x = np.array(table.column("v").to_pylist())
    i, j = np.triu_indices(len(x), 1)
    con.register("dist", pa.table({"i": [str(a) for a in i], "j": [str(b) for b in j],
                                   "d": np.linalg.norm(x[i] - x[j], axis=1)}))
    con.register("labels", table.drop(["v"]).append_column("id", pa.array([str(k) for k in range(len(x))])))
    for by_terms in ("sequential", "margin"):
        vec = embsql.permanova_terms(con, "t", terms=["lang", "g", "cov"], vector="v", sums=by_terms,
                               permutations=99, progress=False).to_dicts()
        dist = sql_rows(con, "SELECT * FROM emb_permanova_terms_dist('dist', 'labels', ['lang', 'g', 'cov'], "
                             f"sums := '{by_terms}', permutations := 99)")
        for a, b in zip(vec, dist):
            assert a["term"] == b["term"] and a["df"] == b["df"]
            assert a["ss"] == pytest.approx(b["ss"], rel=1e-9)


def test_bad_input_names_the_term_or_column(con):
    con.register("t", _table())
    with pytest.raises(DesignError, match="'one'"):
        embsql.permanova_terms(con, "t", terms=["g", "one"], vector="v", progress=False)
    with pytest.raises(DesignError, match="'pair'.*zero df"):
        embsql.permanova_terms(con, "t", terms=["g", "pair"], vector="v", progress=False)
    with pytest.raises(InputError, match="'cov_null'"):
        embsql.permanova_terms(con, "t", terms=["g", "cov_null"], vector="v", progress=False)
    with pytest.raises(InputError, match="by_terms"):
        embsql.permanova_terms(con, "t", terms=["g"], vector="v", sums="type3", progress=False)
    with pytest.raises(EmbsqlError, match="'nope'"):
        embsql.permanova_terms(con, "t", terms=["nope"], vector="v", progress=False)
    con.register("tiny", _table().slice(0, 2))
    with pytest.raises(DesignError, match="at least 3 items"):
        embsql.permanova_terms(con, "tiny", terms=["lang"], vector="v", progress=False)
    for query, kind, words in (("'t', ['g', 'one'], 'v'", "design", "'one' has one level"),
                               ("'t', ['g', 'pair'], 'v'", "design", "'pair' adds nothing"),
                               ("'t', ['cov_null'], 'v'", "input", "'cov_null'"),
                               ("'t', ['nope'], 'v'", "column.missing", "term column 'nope' not found"),
                               ("'tiny', ['lang'], 'v'", "design", "at least 3 items"),
                               ("'t', ['g'], 'v', sums := 'type3'", "argument.sums",
                                "sums must be 'sequential' or 'margin', not 'type3'")):
        message = sql_error(con, f"SELECT * FROM emb_permanova_terms({query})")
        assert message.startswith(f"embsql: [{kind}] ") and words in message, message


def test_p_values_in_range_and_r2_sum_to_one(con):
    con.register("t", _table(seed=3))
    rows = embsql.permanova_terms(con, "t", terms=["lang", "cov"], vector="v", permutations=49, progress=False).to_dicts()
    assert all(0 < r["p_value"] <= 1 for r in rows if r["p_value"] is not None)
    assert sum(r["r2"] for r in rows[:-1]) == pytest.approx(1.0, rel=1e-12)
