"""The README's Python examples of the statistics faces run as written.

Each block under the headings below runs statement by statement in a namespace that holds what
the README assumes a user has: a connection ``con`` is made by the block itself; ``emb`` (topic,
language, model, item_id, embedding), ``my_arrow_table_or_dataframe`` and ``df`` (the same rows),
``store.duckdb`` with table ``emb`` in the working directory, and the ``distances`` and ``labels``
tables of the first model are there as a user's own data would be.  The data are small (2 models x
48 items), so the README's own settings (999 permutations, 2000 replicates) run as written.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import embsql

ROOT = Path(__file__).resolve().parent.parent
HEADINGS = ("## From Python", "### Is it real, and how sure are we (inference)", "### Beyond one factor, beyond one model")


def blocks() -> dict[str, str]:
    """heading -> the first ```python block under it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = {}
    for heading in HEADINGS:
        after = text[text.index(heading + "\n"):]
        match = re.search(r"```python\n(.*?)```", after, re.S)
        assert match is not None, heading
        found[heading] = match.group(1)
    return found


def user_data() -> pa.Table:
    rng = np.random.default_rng(21)
    rows = []
    for model, d in (("mini", 6), ("base", 9)):
        centres = rng.standard_normal((4, d))
        for i in range(48):
            rows.append({"topic": f"t{i % 4}", "language": ("en", "fr")[i // 4 % 2], "model": model,
                         "item_id": f"doc{i:02d}", "embedding": (centres[i % 4] + rng.standard_normal(d)).tolist()})
    return pa.Table.from_pylist(rows)


@pytest.fixture
def namespace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    table = user_data()
    store = duckdb.connect("store.duckdb")
    store.register("t", table.filter(pa.compute.equal(table["model"], "mini")))
    store.execute("CREATE TABLE emb AS SELECT * FROM t")
    store.close()
    original = embsql.connect

    def connect(*args, **kwargs):        # the README's own connection, holding the user's tables
        con = original(*args, **kwargs)
        con.register("emb", table)
        con.execute("CREATE TABLE labels AS SELECT item_id AS id, topic FROM emb WHERE model = 'mini'")
        con.execute("CREATE TABLE distances AS SELECT a.item_id AS i, b.item_id AS j, "
                    "list_cosine_distance(a.embedding, b.embedding) AS d FROM emb a JOIN emb b "
                    "ON a.model = b.model AND a.model = 'mini' AND a.item_id < b.item_id")
        return con

    monkeypatch.setattr(embsql, "connect", connect)
    mini = table.filter(pa.compute.equal(table["model"], "mini"))
    return {"embsql": embsql, "my_arrow_table_or_dataframe": table, "df": mini.to_pandas(),
            "con": connect()}


@pytest.mark.parametrize("heading", HEADINGS)
def test_the_readme_example_runs_as_written(namespace, heading):
    code = blocks()[heading]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # permanova's spread warning may fire on these data
        for node in ast.parse(code).body:
            exec(compile(ast.Module([node], []), "<README.md>", "exec"), namespace)
    if heading == "## From Python":
        assert namespace["result"].columns[0] == "model"
        attached = "SELECT count(*) FROM duckdb_databases() WHERE path LIKE '%store.duckdb'"
        assert namespace["con"].sql(attached).fetchall() == [(0,)]      # the file was attached for the call only
