"""estimate_bc (and the report's r2_corrected) is what the documentation says it is: the jackknife bias
correction computed on the logit scale for R² (log for F) and mapped back,
h^-1(G h(theta) - (G - 1) mean_g h(theta_(-g))), not G theta - (G - 1) mean(theta_(-g)) on R² itself."""

import helpers
import numpy as np
import pytest

import embsql
from embsql import sql_reference

SCALES = {"r2": (lambda p: np.log(p / (1 - p)), lambda x: 1 / (1 + np.exp(-x))), "f": (np.log, np.exp)}


def leave_one_out(con, statistic):
    groups = [g for (g,) in con.sql("SELECT DISTINCT topic FROM many WHERE model = 'm0' ORDER BY 1").fetchall()]
    full = embsql.anova(con, "many_m0", group="topic", vector="embedding").to_dicts()[0][statistic]
    out = []
    for g in groups:
        con.execute(f"CREATE OR REPLACE TEMP VIEW loo AS SELECT * FROM many_m0 WHERE topic <> '{g}'")
        out.append(embsql.anova(con, "loo", group="topic", vector="embedding").to_dicts()[0][statistic])
    return full, np.array(out)


@pytest.mark.parametrize("statistic", ["r2", "f"])
def test_estimate_bc_is_the_jackknife_correction_on_the_documented_scale(statistic):
    con = helpers.example_connection()
    con.execute("CREATE TEMP VIEW many_m0 AS SELECT * FROM many WHERE model = 'm0'")
    theta, replicates = leave_one_out(con, statistic)
    forward, back = SCALES[statistic]
    g = len(replicates)
    want = back(g * forward(theta) - (g - 1) * forward(replicates).mean())
    plain = g * theta - (g - 1) * replicates.mean()
    assert abs(want - plain) > 1e-4 * abs(want)   # the two readings differ here, so the test tells them apart
    python = embsql.bootstrap(con, "many_m0", group="topic", vector="embedding", statistic=statistic,
                              replicates=200, seed=1).to_dicts()[0]["estimate_bc"]
    sql = con.sql(f"SELECT estimate_bc FROM emb_bootstrap('many_m0', 'topic', 'embedding', statistic := '{statistic}', "
                  "replicates := 200, seed := 1)").fetchall()[0][0]
    assert python == pytest.approx(want, rel=1e-9) and sql == pytest.approx(want, rel=1e-9)


def test_the_documentation_names_the_scale():
    block = next(f for f in sql_reference.functions() if f.name == "emb_bootstrap")
    meaning = next(c.meaning for c in block.columns if c.name == "estimate_bc")
    assert "logit" in meaning and "log for `f`" in meaning and "h⁻¹(G·h(θ)" in meaning
    assert "logit scale" in embsql.bootstrap.__doc__
