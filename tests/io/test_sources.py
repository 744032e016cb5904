"""Sources every Python function accepts: names, files, FILE.duckdb:TABLE, and in-memory objects
(pandas and polars DataFrames, Arrow tables and datasets), registered for one call only."""

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import retrieval_data as rd
from test_report import model_table

import embsql


def _frames(table: pa.Table):
    import polars

    return {"pandas": table.to_pandas(), "polars": polars.from_arrow(table), "arrow": table,
            "dataset": ds.dataset(table), "batch": table.combine_chunks().to_batches()[0],
            "lazy": polars.from_arrow(table).lazy()}


def _private_views(con) -> list:
    return [name for (name,) in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
            if name.startswith("__embsql")] + \
        [name for (name,) in con.sql("SHOW TABLES").fetchall() if name.startswith("__embsql")]


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "dataset", "batch", "lazy"])
def test_every_face_takes_a_frame_and_leaves_nothing_behind(kind):
    table = model_table()
    con = embsql.connect()
    con.register("named", table)
    frame = _frames(table)[kind]
    by_name = embsql.anova(con, "named", group="topic", vector="emb", model="model").to_dicts()
    assert embsql.anova(con, frame, group="topic", vector="emb", model="model").to_dicts() == by_name
    assert embsql.groups(con, frame, group="topic", vector="emb", model="model").to_dicts() == \
        embsql.groups(con, "named", group="topic", vector="emb", model="model").to_dicts()
    assert embsql.jackknife(con, frame, group="topic", vector="emb", model="model").to_dicts() == \
        embsql.jackknife(con, "named", group="topic", vector="emb", model="model").to_dicts()
    assert embsql.permanova(con, frame, group="topic", vector="emb", model="model", permutations=19).to_dicts() == \
        embsql.permanova(con, "named", group="topic", vector="emb", model="model", permutations=19).to_dicts()
    assert _private_views(con) == []


def test_a_report_runs_on_a_dataframe_and_names_it():
    table = model_table()
    con = embsql.connect()
    result = embsql.report(table.to_pandas(), vector="emb", group="topic", model="model", permutations=0).run(con)
    assert result.meta["source"] == f"pandas DataFrame ({table.num_rows} rows)"
    assert result.title == f"embsql report: pandas DataFrame ({table.num_rows} rows)"
    con.register("named", table)
    named = embsql.report("named", vector="emb", group="topic", model="model", permutations=0).run(con)
    assert result.summary.to_dicts() == named.summary.to_dicts()
    assert _private_views(con) == []
    with pytest.raises(embsql.InputError, match="only DuckDB reads"):
        embsql.report(table, vector="emb", group="topic").sql("spark")


def test_retrieval_takes_frames_for_queries_and_docs():
    queries, docs = rd.make(2, models=("m1",))
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    assert embsql.margins(con, queries.to_pandas(), docs, model="model").to_dicts() == \
        embsql.margins(con, "q", "d", model="model").to_dicts()
    assert _private_views(con) == []


def test_a_missing_column_names_the_frame_not_a_private_name():
    table = model_table()
    con = embsql.connect()
    with pytest.raises(embsql.ColumnNotFoundError) as error:
        embsql.anova(con, table.to_pandas(), group="nope", vector="emb")
    assert f"pandas DataFrame ({table.num_rows} rows)" in str(error.value) and "__embsql" not in str(error.value)
    assert _private_views(con) == []           # unregistered after an error too


@pytest.mark.parametrize("thing, kind", [(np.zeros((3, 2)), "numpy.ndarray"), ({"a": [1]}, "dict"), (42, "int"),
                                         (None, "NoneType")])
def test_an_unsupported_object_gets_a_short_message_naming_its_type(thing, kind):
    con = embsql.connect()
    with pytest.raises(embsql.SourceNotFoundError) as error:
        embsql.anova(con, thing, group="topic", vector="emb")
    message = str(error.value)
    assert f"not a {kind}" in message and len(message) < 200


def _store(path: Path, table: pa.Table | None = None, name: str = "emb") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = duckdb.connect(str(path))
    writer.register("t", model_table() if table is None else table)
    writer.execute(f"CREATE TABLE {name} AS SELECT * FROM t")
    writer.close()
    return path


def _databases(con) -> list:
    return sorted(con.sql("SELECT database_name, path FROM duckdb_databases() WHERE NOT internal").fetchall(),
                  key=str)


def test_a_table_in_a_duckdb_file(tmp_path):
    path = _store(tmp_path / "store.duckdb")
    con = embsql.connect()
    con.register("named", model_table())
    assert embsql.anova(con, f"{path}:emb", group="topic", vector="emb", model="model").to_dicts() == \
        embsql.anova(con, "named", group="topic", vector="emb", model="model").to_dicts()
    with pytest.raises(embsql.SourceNotFoundError, match="does not exist"):
        embsql.anova(con, f"{tmp_path / 'nope.duckdb'}:emb", group="topic", vector="emb")
    report = embsql.report(f"{path}:emb", vector="emb", group="topic", model="model", permutations=0).run(con)
    assert report.meta["source"] == f"{path}:emb"


# every face that reads a vector table, called on a FILE.duckdb:TABLE source
FILE_FACES = {
    "anova": lambda con, src: embsql.anova(con, src, group="topic", vector="emb", model="model"),
    "groups": lambda con, src: embsql.groups(con, src, group="topic", vector="emb", model="model"),
    "permanova": lambda con, src: embsql.permanova(con, src, group="topic", vector="emb", model="model", permutations=9,
                                                   check_dispersion=False),
    "permanova_welch": lambda con, src: embsql.permanova_welch(con, src, group="topic", vector="emb", model="model",
                                                               permutations=9),
    "permanova_terms": lambda con, src: embsql.permanova_terms(con, src, terms=["topic"], vector="emb", model="model",
                                                                       permutations=9),
    "dispersion": lambda con, src: embsql.dispersion(con, src, group="topic", vector="emb", model="model",
                                                             permutations=9),
    "jackknife": lambda con, src: embsql.jackknife(con, src, group="topic", vector="emb", model="model"),
    "bootstrap": lambda con, src: embsql.bootstrap(con, src, group="topic", vector="emb", model="model",
                                                           replicates=20),
    "compare_structure": lambda con, src: embsql.compare_structure(con, src, group="topic", vector="emb", model="model",
                                                                   item="item",
                                               replicates=20),
    "pairwise_permanova": lambda con, src: embsql.pairwise_permanova(con, src, group="topic", vector="emb",
                                                                     model="model", permutations=0),
    "knn_agreement": lambda con, src: embsql.knn_agreement(con, src, item="item", model="model", vector="emb", k=3),
    "mantel": lambda con, src: embsql.mantel(con, src, item="item", model="model", vector="emb", permutations=9),
    "cka": lambda con, src: embsql.cka(con, src, item="item", model="model", vector="emb", permutations=0),
    "procrustes": lambda con, src: embsql.procrustes(con, src, item="item", model="model", vector="emb", permutations=0),
}


@pytest.mark.parametrize("face", sorted(FILE_FACES))
def test_a_duckdb_file_is_attached_for_the_call_only(tmp_path, face):
    """Attached read-only under a private name for the length of the call, detached after it, also
    when the call fails; the result is the one the same table gives by name."""
    path = _store(tmp_path / "store.duckdb")
    con = embsql.connect()
    con.register("named", model_table())
    before = _databases(con)
    assert FILE_FACES[face](con, f"{path}:emb") == FILE_FACES[face](con, "named")
    assert _databases(con) == before
    bad = _store(tmp_path / "bad.duckdb", model_table().drop(["emb"]))
    with pytest.raises(embsql.ColumnNotFoundError):
        FILE_FACES[face](con, f"{bad}:emb")
    assert _databases(con) == before


def test_anova_dist_reads_two_files_of_the_same_name_from_two_folders(tmp_path):
    """The distances in one x.duckdb and the labels in another: each attached under its own private
    name (a name taken from the file's stem would collide), both detached after the call."""
    labels = pa.table({"id": [1, 2, 3, 4], "g": ["A", "A", "B", "B"]})
    pairs = pa.table({"i": [1, 1, 1, 2, 2, 3], "j": [2, 3, 4, 3, 4, 4], "d": [0.5, 1.5, 1.5, 1.5, 1.5, 0.5]})
    first, second = _store(tmp_path / "one" / "x.duckdb", pairs, "dist"), _store(tmp_path / "two" / "x.duckdb", labels,
                                                                                 "labels")
    con = embsql.connect()
    con.execute("ATTACH ':memory:' AS x")          # the user's own database named like both files' stem
    before = _databases(con)
    got = embsql.anova_dist(con, f"{first}:dist", labels=f"{second}:labels", group="g", item="id")
    assert got.r2 == pytest.approx(1 - 0.25 / 2.375, rel=1e-12)         # SS_T = (2 x 0.25 + 4 x 2.25) / 4, SS_W = 0.25
    assert _databases(con) == before


def test_two_duckdb_files_of_the_same_name_give_their_own_numbers(tmp_path):
    a = _store(tmp_path / "a" / "emb.duckdb", model_table(seed=1))
    b = _store(tmp_path / "b" / "emb.duckdb", model_table(seed=2))
    con = embsql.connect()
    con.register("one", model_table(seed=1))
    con.register("two", model_table(seed=2))
    for path, name in ((a, "one"), (b, "two"), (a, "one")):
        assert embsql.anova(con, f"{path}:emb", group="topic", vector="emb", model="model") == \
            embsql.anova(con, name, group="topic", vector="emb", model="model")
    assert [row for row in _databases(con) if row[1] is not None] == []


def test_a_file_the_user_attached_is_read_where_it_is_and_left_attached(tmp_path):
    path = _store(tmp_path / "store.duckdb")
    con = embsql.connect()
    con.execute(f"ATTACH '{path}' AS mine")        # read-write: DuckDB will not attach it a second time
    before = _databases(con)
    got = embsql.anova(con, f"{path}:emb", group="topic", vector="emb", model="model")
    assert got == embsql.anova(con, "mine.emb", group="topic", vector="emb", model="model")
    assert _databases(con) == before


WRITER = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute('CREATE TABLE written AS SELECT 42 AS x'); c.close()"


def test_another_process_can_write_the_file_after_the_call(tmp_path):
    """A real second process opens the file read-write after the call (DuckDB allows one writer, and no
    writer while another process has the file open): so nothing of the call holds it any more."""
    path = _store(tmp_path / "store.duckdb")
    con = embsql.connect()
    embsql.anova(con, f"{path}:emb", group="topic", vector="emb", model="model")
    with pytest.raises(embsql.ColumnNotFoundError):
        embsql.anova(con, f"{path}:emb", group="nope", vector="emb")
    written = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    assert duckdb.connect(str(path), read_only=True).sql("SELECT x FROM written").fetchall() == [(42,)]
    # the check can fail: while this process holds the file attached, the writer cannot open it
    con.execute(f"ATTACH '{path}' AS held (READ_ONLY)")
    blocked = subprocess.run([sys.executable, "-c", WRITER.replace("written", "again"), str(path)], capture_output=True,
                             text=True, timeout=120)
    assert blocked.returncode != 0 and "lock" in blocked.stderr.lower()


def test_a_warning_points_at_the_callers_line():
    con = embsql.connect()
    with pytest.warns(UserWarning, match="dispersion test is significant") as caught:
        embsql.permanova(con, model_table(), group="topic", vector="emb", model="model", permutations=19)
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}


def test_a_record_batch_reader_is_read_once_for_the_whole_call():
    table = model_table()
    con = embsql.connect()
    con.register("named", table)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert embsql.anova(con, reader, group="topic", vector="emb", model="model").to_dicts() == \
        embsql.anova(con, "named", group="topic", vector="emb", model="model").to_dicts()
