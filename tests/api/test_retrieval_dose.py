"""Dose (SPEC S23, S24): W~_q per paraphrase level against numpy, jackknife SEs by explicit loops,
and the permutation trend test: it detects a planted monotone increase and does not flag a flat
design more often than its level (simulation)."""

import helpers
import numpy as np
import pyarrow as pa
import pytest
import retrieval_data as rd

import embsql
from embsql.core.dose import analyse
from embsql.errors import DesignError, InputError


def cell_w_tilde(z: np.ndarray) -> float:
    return len(z) / (len(z) - 1) * float(np.mean(np.sum((z - z.mean(0)) ** 2, axis=1)))


def reference_levels(groups, levels, vectors):
    """Per level: mean over groups of W~ of the group's queries at that level, the jackknife SE (loop
    over deleted groups) and the replicates, for the paired step SE."""
    z = rd.unit(vectors)
    names = sorted(set(groups.tolist()))
    out = {}
    for level in sorted(set(levels.tolist())):
        cells = {g: cell_w_tilde(z[(groups == g) & (levels == level)]) for g in names}
        estimate = np.mean(list(cells.values()))
        replicates = np.array([np.mean([w for h, w in cells.items() if h != g]) for g in names])
        se = np.sqrt((len(names) - 1) / len(names) * np.sum((replicates - replicates.mean()) ** 2))
        out[level] = (estimate, se, replicates)
    return out


def simulate(seed, groups=12, levels=3, per_cell=3, dim=16, slope=0.0):
    """Paraphrase groups whose noise grows with the level by ``slope`` (0: flat)."""
    rng = np.random.default_rng(seed)
    labels, level_of, keys, vectors = [], [], [], []
    for g in range(groups):
        centre = rd.unit(rng.normal(size=dim))
        for lv in range(levels):
            for r in range(per_cell):
                vectors.append(centre + 0.6 * (1 + slope * lv) * rng.normal(size=dim) / np.sqrt(dim))
                labels.append(f"g{g}")
                level_of.append(lv)
                keys.append(f"q{g}_{lv}_{r}")
    return np.array(labels, dtype=object), np.array(level_of, dtype=object), np.array(keys, dtype=object), \
        rd.unit(np.array(vectors))


def test_dose_per_level_against_numpy():
    queries, docs = rd.make(21, models=("a",), topics=4, docs_per_topic=3, questions=8, paraphrases=3, levels=3,
                            dose=0.5, dim=12)
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    table = embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), "d", model="model", permutations=199)
    assert table.columns[0] == "model"
    q, d = rd.arrays(queries, "a"), rd.arrays(docs, "a")
    reference = reference_levels(q["group"], q["level"], q["vector"])
    z_docs = rd.unit(d["vector"])
    w_g = np.mean([cell_w_tilde(z_docs[d["group"] == g]) for g in sorted(set(d["group"]))])
    rows = table.to_dicts()
    assert [r["strength"] for r in rows] == [0, 1, 2]
    for k, row in enumerate(rows):
        estimate, se, replicates = reference[k]
        assert (row["queries"], row["groups"]) == (24, 8)
        assert row["w_tilde_q"] == pytest.approx(estimate, rel=1e-10)
        assert row["se"] == pytest.approx(se, rel=1e-9)
        assert row["w_tilde_g"] == pytest.approx(w_g, rel=1e-10)
        assert row["ratio"] == pytest.approx(estimate / w_g, rel=1e-10)
        if k == 0:
            assert row["step"] is None and row["step_se"] is None
        else:
            diff = replicates - reference[k - 1][2]
            assert row["step"] == pytest.approx(estimate - reference[k - 1][0], rel=1e-9)
            assert row["step_se"] == pytest.approx(np.sqrt(7 / 8 * np.sum((diff - diff.mean()) ** 2)), rel=1e-9)
        assert 0 < row["p_value"] <= 1 and row["permutations"] == 199


def test_trend_statistic_is_the_contrast_of_the_reported_levels():
    groups, levels, keys, unit = simulate(3, slope=0.3)
    result = analyse(groups, levels, keys, unit, permutations=9)
    w = np.array([lv.w_tilde_q for lv in result.levels])
    assert result.statistic == pytest.approx(w @ np.array([-1.0, 0.0, 1.0]), rel=1e-10)


def test_planted_monotone_increase_is_detected():
    for seed in range(5):
        result = analyse(*simulate(seed, slope=0.5), permutations=199, seed=seed)
        assert result.monotone and result.p_value <= 0.05, (seed, result)


def test_flat_dose_is_not_flagged_more_often_than_the_level():
    """No dose: p <= 0.05 in about 5% of designs (at most 6 of 40: P = 0.004 under the null)."""
    flagged, works = 0, 0
    for seed in range(40):
        result = analyse(*simulate(100 + seed, slope=0.0), permutations=99, seed=seed)
        flagged += result.p_value <= 0.05
        works += result.monotone and result.p_value <= 0.05
        assert 0 < result.p_value <= 1
    assert flagged <= 6 and works <= flagged


def test_same_seed_same_p_whatever_the_row_order():
    queries, _ = rd.make(22, questions=6, paraphrases=3, levels=3, dose=0.2)
    con = embsql.connect()
    con.register("q", queries)
    first = embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), model="model", permutations=99, seed=5).to_dicts()
    con.register("q", queries.take(np.random.default_rng(0).permutation(len(queries))))
    shuffled = embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), model="model", permutations=99,
                           seed=5).to_dicts()
    for a, b in zip(first, shuffled):
        assert a["p_value"] == b["p_value"] and a["w_tilde_q"] == pytest.approx(b["w_tilde_q"], rel=1e-12)
    assert first[0]["w_tilde_g"] is None and first[0]["ratio"] is None         # no documents given


def test_a_level_of_single_queries_has_no_w_tilde():
    """Level 0 holds the original question only (one query per group): no W~ there; the trend runs
    over the other levels."""
    groups, levels, keys, unit = simulate(4, levels=3, slope=0.5)
    keep = np.array([not (lv == 0 and k.endswith(("_1", "_2"))) for lv, k in zip(levels, keys)])
    result = analyse(groups[keep], levels[keep], keys[keep], unit[keep], permutations=99)
    assert result.levels[0].w_tilde_q is None and result.levels[0].groups == 0 and result.levels[0].se is None
    assert result.levels[1].step is None and result.levels[2].step is not None
    assert result.statistic == pytest.approx(0.5 * (result.levels[2].w_tilde_q - result.levels[1].w_tilde_q))


def test_design_errors():
    groups, levels, keys, unit = simulate(5)
    with pytest.raises(DesignError, match="only one level"):
        analyse(groups, np.zeros(len(groups), dtype=object), keys, unit)
    single = np.array([k.endswith("_0") for k in keys])
    with pytest.raises(DesignError, match="fewer than two levels"):
        analyse(groups[single], levels[single], keys[single], unit[single])
    with pytest.raises(InputError, match="permutations"):
        analyse(groups, levels, keys, unit, permutations=0)
    con = embsql.connect()
    con.register("q", pa.table({"qid": ["a"], "group": ["g"], "vector": [[1.0, 0.0]]}))
    with pytest.raises(InputError, match=r"dose needs the queries' paraphrase-strength column: pass Queries\(source, "
                                         r"strength='column'\)"):
        embsql.retrieval_dose(con, "q")


def test_sql_dose_equals_python_with_numeric_labels():
    """emb_retrieval_dose (UDF) and embsql.retrieval_dose give the same figures and the same p; group labels
    are numbers, whose order as text would differ (so would the seeded permutations)."""
    queries, _ = rd.make(23, models=("a", "b"), questions=12, paraphrases=3, levels=3, dose=0.1, dim=8)
    number = {f"question{k}": k for k in range(12)}
    queries = queries.set_column(2, "group", pa.array([number[g] for g in queries.column("group").to_pylist()]))
    con = embsql.connect()
    con.register("q", queries)
    python = embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), model="model", permutations=199, seed=3).to_dicts()
    sql = con.sql("SELECT * FROM emb_retrieval_dose('q', model := 'model', permutations := 199, seed := 3)"
                  ).to_arrow_table()
    assert sql.column_names == ["model", "strength", "queries", "groups", "w_tilde_q", "se", "step", "step_se",
                                "monotone", "p_value", "permutations", "dose_works"]
    assert 0.01 < python[0]["p_value"] < 1            # not at its floor: equality below says something
    for a, b in zip(sql.to_pylist(), python, strict=True):
        for key, value in a.items():
            mine = b[key]
            assert value == pytest.approx(mine, rel=1e-12) if isinstance(value, float) else value == mine, key


def test_sql_dose_errors():
    queries, _ = rd.make(24, questions=4, levels=2)
    con = embsql.connect()
    con.register("q", queries)
    assert 'strength column "strength" not found' in helpers.sql_error(
        con, "SELECT * FROM emb_retrieval_dose('q', strength := 'strength')")
    levels = queries.column("level").to_pylist()
    levels[3] = None
    con.register("q", queries.set_column(3, "level", pa.array(levels)))
    assert 'strength column "level" is NULL at row 4 ' in helpers.sql_error(
        con, "SELECT * FROM emb_retrieval_dose('q', model := 'model')")
    con.register("q", queries)
    assert "alpha must be between 0 and 1" in helpers.sql_error(
        con, "SELECT * FROM emb_retrieval_dose('q', alpha := 2.0)")
