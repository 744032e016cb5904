"""Sources every Python function accepts: names, files, FILE.duckdb:TABLE, and in-memory objects
(pandas and polars DataFrames, Arrow tables and datasets), registered for one call only."""

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
    by_name = embsql.anova(con, "named", "topic", "emb", model="model").to_dicts()
    assert embsql.anova(con, frame, "topic", "emb", model="model").to_dicts() == by_name
    assert embsql.groups(con, frame, "topic", "emb", model="model").to_dicts() == \
        embsql.groups(con, "named", "topic", "emb", model="model").to_dicts()
    assert embsql.jackknife(con, frame, "topic", "emb", model="model").to_dicts() == \
        embsql.jackknife(con, "named", "topic", "emb", model="model").to_dicts()
    assert embsql.permanova(con, frame, "topic", "emb", model="model", permutations=19).to_dicts() == \
        embsql.permanova(con, "named", "topic", "emb", model="model", permutations=19).to_dicts()
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
        embsql.anova(con, table.to_pandas(), "nope", "emb")
    assert f"pandas DataFrame ({table.num_rows} rows)" in str(error.value) and "__embsql" not in str(error.value)
    assert _private_views(con) == []           # unregistered after an error too


@pytest.mark.parametrize("thing, kind", [(np.zeros((3, 2)), "numpy.ndarray"), ({"a": [1]}, "dict"), (42, "int"),
                                         (None, "NoneType")])
def test_an_unsupported_object_gets_a_short_message_naming_its_type(thing, kind):
    con = embsql.connect()
    with pytest.raises(embsql.SourceNotFoundError) as error:
        embsql.anova(con, thing, "topic", "emb")
    message = str(error.value)
    assert f"not a {kind}" in message and len(message) < 200


def test_a_table_in_a_duckdb_file(tmp_path):
    path = tmp_path / "store.duckdb"
    writer = duckdb.connect(str(path))
    writer.register("t", model_table())
    writer.execute("CREATE TABLE emb AS SELECT * FROM t")
    writer.close()
    con = embsql.connect()
    con.register("named", model_table())
    assert embsql.anova(con, f"{path}:emb", "topic", "emb", model="model").to_dicts() == \
        embsql.anova(con, "named", "topic", "emb", model="model").to_dicts()
    assert embsql.anova(con, f"{path}:emb", "topic", "emb", model="model").to_dicts()        # attached once, reused
    with pytest.raises(embsql.SourceNotFoundError, match="does not exist"):
        embsql.anova(con, f"{tmp_path / 'nope.duckdb'}:emb", "topic", "emb")
    report = embsql.report(f"{path}:emb", vector="emb", group="topic", model="model", permutations=0).run(con)
    assert report.meta["source"] == f"{path}:emb"


def test_a_warning_points_at_the_callers_line():
    con = embsql.connect()
    with pytest.warns(UserWarning, match="dispersion test is significant") as caught:
        embsql.permanova(con, model_table(), "topic", "emb", model="model", permutations=19)
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}


def test_a_record_batch_reader_is_read_once_for_the_whole_call():
    table = model_table()
    con = embsql.connect()
    con.register("named", table)
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert embsql.anova(con, reader, "topic", "emb", model="model").to_dicts() == \
        embsql.anova(con, "named", "topic", "emb", model="model").to_dicts()
