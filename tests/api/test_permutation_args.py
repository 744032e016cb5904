"""Bad arguments, labels and interrupts for every permutation test, in Python and in SQL.

Arguments follow embsql/core/arguments.py (check_permutations, check_seed): the same refusal, naming the
argument and the value, from embsql.permanova / dispersion / mantel / dose and from emb_permanova,
emb_permanova_dist, emb_dispersion(_groups), emb_mantel and emb_retrieval_dose -- never a binder
error naming an internal function, a NULL p-value, or numpy's error.  Labels follow
embsql/core/labels.py.  embsql.interrupt(con), and Ctrl-C on a connection opened with interrupt=True,
stop a running permutation UDF within a second; without interrupt=True embsql changes nothing
process-wide (no patched DuckDB method, no replaced SIGINT handler).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import retrieval_data as rd
from helpers import ROOT, sql_error, sql_rows, vectors_table

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
    "permanova": lambda con, **kw: embsql.permanova(con, "t", group="g", vector="v", check_dispersion=False, **kw),
    "permanova_welch": lambda con, **kw: embsql.permanova_welch(con, "t", group="g", vector="v", **kw),
    "dispersion": lambda con, **kw: embsql.dispersion(con, "t", group="g", vector="v", **kw),
    "mantel": lambda con, **kw: embsql.mantel(con, "models", item="item", model="model", vector="v", **kw),
    "retrieval_dose": lambda con, **kw: embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), model="model", **kw),
}
SQL = {
    "emb_permanova": "SELECT * FROM emb_permanova('t', 'g', 'v', {})",
    "emb_permanova welch": "SELECT * FROM emb_permanova_welch('t', 'g', 'v', {})",
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
    """Each statistic is its own function, in Python and in SQL: statistic= is not an argument of permanova."""
    with pytest.raises(TypeError, match=r"^permanova\(\) got an unexpected keyword argument 'statistic'$"):
        embsql.permanova(con, "t", group="g", vector="v", permutations=9, statistic="F")  # type: ignore[call-arg]
    for function, query in (("emb_permanova", SQL["emb_permanova"]), ("emb_permanova_dist", SQL["emb_permanova_dist"])):
        unknown = rf"^embsql: \[argument\.unknown\] {function} has no argument statistic :=; it takes: "
        with pytest.raises(embsql.ArgumentError, match=unknown):
            embsql.run_sql(con, query.format("statistic := 'F'"))


# ----------------------------------------------------------------------------------------------
# labels: NaN refused naming the column, 0.0 and -0.0 one group (embsql/core/labels.py), as emb_anova

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
    assert embsql.permanova(con, "f", group="g", vector="v", permutations=9, check_dispersion=False).to_dicts()[0]["groups"] == 3
    result = embsql.dispersion(con, "f", group="g", vector="v", permutations=9)
    tests, groups = result.test, result.groups
    assert tests.to_dicts()[0]["groups"] == 3 and sorted(groups.column("n_g")) == [10, 10, 10]
    assert sql_rows(con, "SELECT groups FROM emb_permanova('f', 'g', 'v', permutations := 9)") == [{"groups": 3}]
    assert sql_rows(con, "SELECT groups FROM emb_dispersion('f', 'g', 'v', permutations := 9)") == [{"groups": 3}]
    assert sorted(r["n_g"] for r in sql_rows(con, "SELECT * FROM emb_dispersion_groups('f', 'g', 'v', "
                                                  "permutations := 9)")) == [10, 10, 10]
    # the Python and SQL p-values agree: the same groups, the same canonical order
    assert embsql.dispersion(con, "f", group="g", vector="v", permutations=99).test.to_dicts()[0]["p_value"] == \
        sql_rows(con, "SELECT p_value FROM emb_dispersion('f', 'g', 'v', permutations := 99)")[0]["p_value"]


def test_nan_label_is_an_error_naming_the_column(float_labels):
    con = float_labels
    message = "group column 'g' has a NaN label"
    for run in (lambda: embsql.permanova(con, "nan", group="g", vector="v", permutations=9),
                lambda: embsql.dispersion(con, "nan", group="g", vector="v", permutations=9)):
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
    for run in (lambda: embsql.permanova(con, "same", group="g", vector="v", permutations=9),
                lambda: embsql.permanova_welch(con, "same", group="g", vector="v", permutations=9),
                lambda: embsql.dispersion(con, "same", group="g", vector="v", permutations=9)):
        with pytest.raises(embsql.DesignError, match=message):
            run()
    for query in ("SELECT * FROM emb_dispersion('same', 'g', 'v', permutations := 9)",):
        assert message in sql_error(con, query)


# ----------------------------------------------------------------------------------------------
# interrupts

@pytest.mark.parametrize("query", [
    "SELECT * FROM emb_permanova('big', 'g', 'v', permutations := 999999)",
    "SELECT * FROM emb_permanova_welch('big', 'g', 'v', permutations := 999999)",
    "SELECT * FROM emb_dispersion('big', 'g', 'v', permutations := 999999)",
])
def test_interrupt_stops_the_kernel(query):
    """A thread calls embsql.interrupt(con) 0.5 s into a run that would take minutes: the query ends
    with an error within 1 s of the interrupt, and the connection answers the next query."""
    con = embsql.connect()
    rng = np.random.default_rng(3)
    con.register("big", vectors_table(rng.standard_normal((3000, 16)), list(rng.integers(0, 4, 3000).astype(str))))
    fired = {}

    def interrupt():
        time.sleep(0.5)
        fired["at"] = time.perf_counter()
        embsql.interrupt(con)

    thread = threading.Thread(target=interrupt)
    thread.start()
    with pytest.raises(duckdb.Error) as info:
        con.sql(query).fetchall()
    stopped = time.perf_counter()
    thread.join()
    assert stopped - fired["at"] < 1.0, stopped - fired["at"]
    assert "embsql: [query.interrupted] the query was interrupted; the permutation test stopped" in str(info.value)
    assert con.sql("SELECT 42").fetchall() == [(42,)]


def test_interrupt_of_a_query_running_no_kernel_is_query_interrupted_through_run_sql():
    """embsql.interrupt(con) while DuckDB itself runs (no embsql function): run_sql raises query.interrupted."""
    con = embsql.connect()
    threading.Timer(0.3, embsql.interrupt, [con]).start()
    started = time.perf_counter()
    with pytest.raises(embsql.EmbsqlError, match="the query was interrupted") as info:
        embsql.run_sql(con, "SELECT count(*) FROM range(10000000000) a(i) WHERE hash(i) % 7 = 3")
    assert info.value.kind == "query.interrupted"
    assert time.perf_counter() - started < 3.0
    assert con.sql("SELECT 42").fetchall() == [(42,)]


def test_interrupt_of_an_idle_moment_does_not_stop_later_runs(con):
    """An interrupt counted before a kernel starts does not stop it."""
    embsql.interrupt(con)
    assert sql_rows(con, "SELECT permutations FROM emb_dispersion('t', 'g', 'v', permutations := 99)") == \
        [{"permutations": 99}]


SIGINT_SCRIPT = """
import os, signal, sys, threading, time
import numpy as np, pyarrow as pa, duckdb, embsql
con = embsql.connect(interrupt=True)
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


def run_script(tmp_path, text, *args):
    """Run a script in a subprocess (so that a signal cannot reach pytest) on this checkout."""
    script = tmp_path / "script.py"
    script.write_text(text)
    root = ROOT
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})


@pytest.mark.parametrize("delay", [0.3, 1.0, 2.0])
def test_ctrl_c_stops_the_kernel(tmp_path, delay):
    """SIGINT at different moments (before or during the UDF, which may run on a worker thread,
    where Python raises no KeyboardInterrupt): on a connection opened with interrupt=True the query
    stops within 1 s with an interrupt error and the connection still answers."""
    done = run_script(tmp_path, SIGINT_SCRIPT, str(delay))
    lines = done.stdout.split("\n")
    assert lines[0].startswith("stopped"), done.stdout + done.stderr
    _, seconds, named = lines[0].split()
    assert float(seconds) < 1.0 and named == "True", lines[0]
    assert lines[1] == "[(42,)]", done.stdout


UNTOUCHED_SCRIPT = """
import asyncio, signal, duckdb
method, handler = duckdb.DuckDBPyConnection.__dict__["interrupt"], signal.getsignal(signal.SIGINT)
import embsql
con = embsql.connect()
con.execute("CREATE TABLE t AS SELECT (i % 3)::VARCHAR AS g, [i * 1.0, 1.0] AS v FROM range(30) r(i)")
con.sql("SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 9)").fetchall()
print(duckdb.DuckDBPyConnection.__dict__["interrupt"] is method, signal.getsignal(signal.SIGINT) is handler)
async def main():
    return signal.getsignal(signal.SIGINT)
print(asyncio.run(main()).func.__name__)   # asyncio.run chains its own only over Python's default
embsql.connect(interrupt=True)
print(signal.getsignal(signal.SIGINT) is handler, duckdb.DuckDBPyConnection.__dict__["interrupt"] is method)
"""


def test_connect_changes_nothing_process_wide(tmp_path):
    """embsql.connect() and a kernel run leave DuckDB's interrupt method and the SIGINT handler as
    they were (asyncio.run then installs its own Ctrl-C handling, which it skips over any other
    handler); interrupt=True chains a handler, still without touching DuckDB's class."""
    done = run_script(tmp_path, UNTOUCHED_SCRIPT)
    assert done.stdout.split("\n")[:3] == ["True True", "_on_sigint", "False True"], done.stdout + done.stderr


CHAINED_SCRIPT = """
import os, signal, threading, time
import embsql
calls = []
signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))   # the user's own, which does not raise
con = embsql.connect(interrupt=True)
con.execute("CREATE TABLE big AS SELECT (i % 4)::VARCHAR AS g, [random(), random(), random()] AS v FROM range(3000) r(i)")
done = threading.Event()
def press():   # Ctrl-C every half second until the query ends (one before the kernel starts stops nothing)
    while not done.wait(0.5):
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=press).start()
try:
    con.sql("SELECT * FROM emb_permanova('big', 'g', 'v', permutations := 999999)").fetchall()
    print("finished")
except Exception as error:
    print("[query.interrupted]" in str(error), len(calls) > 0 and set(calls) == {signal.SIGINT})
done.set()
"""


def test_ctrl_c_runs_the_users_handler_too(tmp_path):
    """interrupt=True chains in front of the handler that was there: the user's handler still runs,
    and the kernel stops although that handler raises nothing (so DuckDB itself does not stop)."""
    done = run_script(tmp_path, CHAINED_SCRIPT)
    assert done.stdout.split("\n")[0] == "True True", done.stdout + done.stderr
