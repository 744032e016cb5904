"""read_ahead: the batches in their order, a fetch error raised at its batch, and an early stop that
leaves no thread reading the connection."""

import threading

import duckdb
import pyarrow as pa
import pytest

from embsql.io.read_ahead import read_ahead


def _numbers(con: duckdb.DuckDBPyConnection, n: int) -> pa.RecordBatchReader:
    return con.sql(f"SELECT range AS i FROM range({n})").to_arrow_reader(100)


@pytest.mark.parametrize("ahead", [1, 2, 5])
def test_every_batch_in_order(ahead: int) -> None:
    con = duckdb.connect()
    got = [batch.column(0).to_pylist() for batch in read_ahead(_numbers(con, 1234), ahead)]
    assert [i for batch in got for i in batch] == list(range(1234))
    assert len(got) > ahead  # more batches than the queue holds, so the worker had to wait


def test_a_fetch_error_is_raised_after_the_batches_before_it() -> None:
    def batches():
        yield 1
        yield 2
        raise duckdb.ConversionException("the third batch failed")

    seen = []
    with pytest.raises(duckdb.ConversionException, match="third batch"):
        for batch in read_ahead(batches()):
            seen.append(batch)
    assert seen == [1, 2]


def test_stopping_early_joins_the_worker_and_frees_the_connection() -> None:
    con = duckdb.connect()
    before = threading.active_count()
    stream = read_ahead(_numbers(con, 100_000), 2)
    next(stream)
    stream.close()    # what a break or an error in the caller's loop does
    assert threading.active_count() == before
    assert con.execute("SELECT 41 + 1").fetchall() == [(42,)]
