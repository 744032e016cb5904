"""Bad arguments, labels and interrupts for every permutation test, in Python and in SQL.

Arguments follow embsql/arguments.py (check_permutations, check_seed): the same refusal, naming the
argument and the value, from embsql.permanova / dispersion / mantel / dose and from emb_permanova,
emb_permanova_dist, emb_dispersion(_groups), emb_mantel and emb_retrieval_dose -- never a binder
error naming an internal function, a NULL p-value, or numpy's error.  Labels follow
embsql/labels.py.  con.interrupt() stops a running permutation UDF within a second.
"""

from __future__ import annotations

import re
import threading
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import retrieval_data as rd
from helpers import sql_error, sql_rows, vectors_table

import embsql
from embsql.core.arguments import MAX_PERMUTATIONS

BAD_PERMUTATIONS = [(99.5, "99.5"), (None, "NULL"), ("abc", "'abc'"), (True, "true"), (0, "0"), (-1, "-1"),
                    (10 ** 9, "1000000000")]
BAD_SEEDS = [(None, "NULL"), ("abc", "'abc'"), (1.5, "1.5"), (-1, "-1")]


@pytest.fixture(scope="module")
def con():
    con = embsql.connect()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 4))
    labels = np.repeat(["a", "b", "c"], 8)
    con.register("t", vectors_table(x, labels))
    i, j = np.triu_indices(24, 1)
    con.register("dist", pa.table({"i": [str(a) for a in i], "j": [str(b) for b in j],
                                   "d": np.linalg.norm(x[i] - x[j], axis=1)}))
    con.register("lab", pa.table({"id": [str(k) for k in range(24)], "g": list(labels)}))
    con.register("models", pa.table({"item": list(range(12)) * 2, "model": ["m1"] * 12 + ["m2"] * 12,
                                     "v": list(rng.standard_normal((24, 3)))}))
    queries, _ = rd.make(23, models=("a",), questions=6, paraphrases=3, levels=3, dose=0.1, dim=8)
    con.register("q", queries)
    return con


PYTHON = {
    "permanova": lambda con, **kw: embsql.permanova(con, "t", "g", "v", check_dispersion=False, **kw),
    "permanova welch": lambda con, **kw: embsql.permanova(con, "t", "g", "v", statistic="welch", **kw),
    "dispersion": lambda con, **kw: embsql.dispersion(con, "t", "g", "v", **kw),
    "mantel": lambda con, **kw: embsql.mantel(con, "models", "item", "model", "v", **kw),
    "dose": lambda con, **kw: embsql.dose(con, "q", model="model", **kw),
}
SQL = {
    "emb_permanova": "SELECT * FROM emb_permanova('t', 'g', 'v', {})",
    "emb_permanova welch": "SELECT * FROM emb_permanova('t', 'g', 'v', statistic := 'welch', {})",
    "emb_permanova_dist": "SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', {})",
    "emb_dispersion": "SELECT * FROM emb_dispersion('t', 'g', 'v', {})",
    "emb_dispersion_groups": "SELECT * FROM emb_dispersion_groups('t', 'g', 'v', {})",
    "emb_mantel": "SELECT * FROM emb_mantel('models', 'item', 'model', 'v', {})",
    "emb_retrieval_dose": "SELECT * FROM emb_retrieval_dose('q', model := 'model', {})",
}


def python_message(name, value):
    return (f"{name} must be a whole number from 1 to {MAX_PERMUTATIONS:,}, not {value!r}" if name == "permutations"
            else f"seed must be a whole number (0 or more), not {value!r}" if value is not None
            else "seed must be a whole number (0 or more), not None: results are reproducible only from a fixed seed")


@pytest.mark.parametrize("function", sorted(PYTHON))
def test_python_refuses_bad_permutations_and_seeds(con, function):
    for value, _ in BAD_PERMUTATIONS:
        with pytest.raises(embsql.InputError) as info:
            PYTHON[function](con, permutations=value)
        assert str(info.value) == python_message("permutations", value), function
    for value, _ in BAD_SEEDS:
        with pytest.raises(embsql.InputError) as info:
            PYTHON[function](con, permutations=9, seed=value)
        assert str(info.value) == python_message("seed", value), function


@pytest.mark.parametrize("function", sorted(SQL))
def test_sql_refuses_bad_permutations_and_seeds(con, function):
    """An embsql: error naming the argument: the type is checked in the macro, the range by the UDF
    under the same rule as Python."""
    for value, text in BAD_PERMUTATIONS:
        message = sql_error(con, SQL[function].format(f"permutations := {text}"))
        whole = isinstance(value, int) and not isinstance(value, bool)
        expected = ("embsql: [argument.permutations] permutations must be a whole number"
                    + (f" from 1 to {MAX_PERMUTATIONS:,}, not {value}" if whole else f", not {text}"))
        assert message == expected, (function, text)
    for value, text in BAD_SEEDS:
        message = sql_error(con, SQL[function].format(f"permutations := 9, seed := {text}"))
        expected = ("embsql: [argument.seed] seed must be a whole number (0 or more), not -1" if value == -1
                    else f"embsql: [argument.seed] seed must be a whole number, not {text}")
        assert message == expected, (function, text)


def test_statistic_is_checked(con):
    with pytest.raises(embsql.InputError, match=r"^statistic must be 'pseudo-f' or 'welch', not 'F'$"):
        embsql.permanova(con, "t", "g", "v", permutations=9, statistic="F")
    for query in (SQL["emb_permanova"], SQL["emb_permanova_dist"]):
        assert sql_error(con, query.format("statistic := 'F'")) == \
            "embsql: [argument.statistic] statistic must be 'pseudo-f' or 'welch', not 'F'"
        assert sql_error(con, query.format("statistic := NULL")) == \
            "embsql: [argument.statistic] statistic must be 'pseudo-f' or 'welch', not NULL"


# ----------------------------------------------------------------------------------------------
# labels: NaN refused naming the column, 0.0 and -0.0 one group (embsql/labels.py), as emb_anova

@pytest.fixture()
def float_labels():
    con = embsql.connect()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((30, 4))
    labels = [0.0, -0.0] * 5 + [1.0] * 10 + [2.0] * 10
    con.register("f", pa.table({"g": labels, "v": list(x)}))
    con.register("nan", pa.table({"g": labels[:-1] + [float("nan")], "v": list(x)}))
    i, j = np.triu_indices(30, 1)
    con.register("dist", pa.table({"i": i.astype(str), "j": j.astype(str), "d": np.linalg.norm(x[i] - x[j], axis=1)}))
    con.register("lab", pa.table({"id": np.arange(30).astype(str), "g": labels}))
    con.register("lab_nan", pa.table({"id": np.arange(30).astype(str), "g": labels[:-1] + [float("nan")]}))
    return con


def test_zero_and_negative_zero_are_one_group(float_labels):
    con = float_labels
    assert embsql.permanova(con, "f", "g", "v", permutations=9, check_dispersion=False).to_dicts()[0]["groups"] == 3
    tests, groups = embsql.dispersion(con, "f", "g", "v", permutations=9)
    assert tests.to_dicts()[0]["groups"] == 3 and sorted(groups.column("n_g")) == [10, 10, 10]
    assert sql_rows(con, "SELECT groups FROM emb_permanova('f', 'g', 'v', permutations := 9)") == [{"groups": 3}]
    assert sql_rows(con, "SELECT groups FROM emb_dispersion('f', 'g', 'v', permutations := 9)") == [{"groups": 3}]
    assert sorted(r["n_g"] for r in sql_rows(con, "SELECT * FROM emb_dispersion_groups('f', 'g', 'v', "
                                                  "permutations := 9)")) == [10, 10, 10]
    # the Python and SQL p-values agree: the same groups, the same canonical order
    assert embsql.dispersion(con, "f", "g", "v", permutations=99)[0].to_dicts()[0]["p_value"] == \
        sql_rows(con, "SELECT p_value FROM emb_dispersion('f', 'g', 'v', permutations := 99)")[0]["p_value"]


def test_nan_label_is_an_error_naming_the_column(float_labels):
    con = float_labels
    message = "group column 'g' has a NaN label"
    for run in (lambda: embsql.permanova(con, "nan", "g", "v", permutations=9),
                lambda: embsql.dispersion(con, "nan", "g", "v", permutations=9)):
        with pytest.raises(embsql.BadLabelError, match=message):
            run()
    for query in ("SELECT * FROM emb_dispersion('nan', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_dispersion_groups('nan', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_permanova('nan', 'g', 'v', permutations := 9)",
                  "SELECT * FROM emb_permanova_dist('dist', 'lab_nan', 'g', permutations := 9)"):
        # SQL names columns as SQL does, in double quotes (the rule and its words are the same)
        assert re.match(r"""embsql: \[label.null\] group column ['"]g['"] has a NaN label""", sql_error(con, query)), query


def test_distance_route_labels(float_labels):
    """emb_permanova_dist: 0.0 and -0.0 one group (3 groups of 10)."""
    assert sql_rows(float_labels, "SELECT groups FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 9)") \
        == [{"groups": 3}]


def test_string_label_nan_is_a_label(con):
    """Only a float NaN is refused: the text 'nan' is an ordinary label."""
    rng = np.random.default_rng(2)
    con.register("s", vectors_table(rng.standard_normal((12, 3)), ["nan"] * 6 + ["b"] * 6))
    assert sql_rows(con, "SELECT groups FROM emb_dispersion('s', 'g', 'v', permutations := 9)") == [{"groups": 2}]


# ----------------------------------------------------------------------------------------------
# identical vectors: refused as emb_anova refuses them

def test_identical_vectors_are_refused(con):
    con.register("same", vectors_table(np.tile([1.0, 2.0, 3.0], (12, 1)), ["a"] * 6 + ["b"] * 6))
    message = "the vectors are identical to within floating-point precision"
    for run in (lambda: embsql.permanova(con, "same", "g", "v", permutations=9),
                lambda: embsql.permanova(con, "same", "g", "v", permutations=9, statistic="welch"),
                lambda: embsql.dispersion(con, "same", "g", "v", permutations=9)):
        with pytest.raises(embsql.DesignError, match=message):
            run()
    for query in ("SELECT * FROM emb_dispersion('same', 'g', 'v', permutations := 9)",):
        assert message in sql_error(con, query)


# ----------------------------------------------------------------------------------------------
# interrupts

@pytest.mark.parametrize("query", [
    "SELECT * FROM emb_permanova('big', 'g', 'v', permutations := 999999)",
    "SELECT * FROM emb_permanova('big', 'g', 'v', permutations := 999999, statistic := 'welch')",
    "SELECT * FROM emb_dispersion('big', 'g', 'v', permutations := 999999)",
])
def test_interrupt_stops_the_kernel(query):
    """A thread calls con.interrupt() 0.5 s into a run that would take minutes: the query ends with
    an error within 1 s of the interrupt, and the connection answers the next query."""
    con = embsql.connect()
    rng = np.random.default_rng(3)
    con.register("big", vectors_table(rng.standard_normal((3000, 16)), list(rng.integers(0, 4, 3000).astype(str))))
    fired = {}

    def interrupt():
        time.sleep(0.5)
        fired["at"] = time.perf_counter()
        con.interrupt()

    thread = threading.Thread(target=interrupt)
    thread.start()
    with pytest.raises(duckdb.Error) as info:
        con.sql(query).fetchall()
    stopped = time.perf_counter()
    thread.join()
    assert stopped - fired["at"] < 1.0, stopped - fired["at"]
    assert "interrupt" in str(info.value).lower()
    assert con.sql("SELECT 42").fetchall() == [(42,)]


def test_interrupt_of_an_idle_moment_does_not_stop_later_runs(con):
    """An interrupt counted before a kernel starts does not stop it."""
    con.interrupt()
    assert sql_rows(con, "SELECT permutations FROM emb_dispersion('t', 'g', 'v', permutations := 99)") == \
        [{"permutations": 99}]


SIGINT_SCRIPT = """
import os, signal, sys, threading, time
import numpy as np, pyarrow as pa, duckdb, embsql
con = embsql.connect()
rng = np.random.default_rng(3)
con.register("big", pa.table({"g": rng.integers(0, 4, 3000).astype(str), "v": list(rng.standard_normal((3000, 16)))}))
fired = {}
def fire():
    time.sleep(float(sys.argv[1])); fired["at"] = time.perf_counter(); os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=fire).start()
try:
    con.sql("SELECT * FROM emb_permanova('big', 'g', 'v', permutations := 999999)").fetchall()
    print("finished")
except (duckdb.Error, RuntimeError, KeyboardInterrupt) as error:
    print("stopped", round(time.perf_counter() - fired["at"], 3), "interrupt" in str(error).lower() or
          isinstance(error, KeyboardInterrupt))
print(con.sql("SELECT 42").fetchall())
"""


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0])
def test_ctrl_c_stops_the_kernel(tmp_path, delay):
    """SIGINT at different moments (before or during the UDF, which may run on a worker thread):
    the query stops within 1 s with an interrupt error and the connection still answers (in a
    subprocess, so the signal cannot reach pytest)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    script = tmp_path / "sigint.py"
    script.write_text(SIGINT_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(script), str(delay)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    lines = done.stdout.split("\n")
    assert lines[0].startswith("stopped"), done.stdout + done.stderr
    _, seconds, named = lines[0].split()
    assert float(seconds) < 1.0 and named == "True", lines[0]
    assert lines[1] == "[(42,)]", done.stdout
