"""Spark as an engine: run one query (Arrow back), load a table (a view over a Parquet file)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from embsql.engines.tables import loadable

# (module, class) of the connections and of the errors, looked up only once they are imported
CONNECTIONS = (("pyspark.sql.session", "SparkSession"), ("pyspark.sql.connect.session", "SparkSession"))
ERRORS = (("pyspark.errors", "PySparkException"), ("py4j.protocol", "Py4JError"))


def fetch(session, sql: str) -> pa.Table:
    frame = session.sql(sql)
    if hasattr(frame, "toArrow"):  # pyspark >= 4
        return frame.toArrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)


_spark_files: Path | None = None


def _spark_directory() -> Path:
    """A directory for the Parquet files behind Spark views, removed when Python exits."""
    global _spark_files
    if _spark_files is None:
        _spark_files = Path(tempfile.mkdtemp(prefix="embsql-spark-"))
        atexit.register(shutil.rmtree, _spark_files, ignore_errors=True)
    return _spark_files


def load(session, name: str, table: pa.Table) -> None:
    # a Parquet file read back by Spark: bounded memory on both sides, unlike a driver-side
    # DataFrame of the whole table; the view lives as long as the session (and the file)
    table, _ = loadable(table, "spark")
    path = _spark_directory() / f"{uuid.uuid4().hex}.parquet"
    # row groups of ~64 MB: Spark reads (and splits work) by row group, and a 1M-row group of
    # 384-d vectors (pyarrow's default) is 3 GB for one task
    rows = max(1, int(64_000_000 * table.num_rows / max(table.nbytes, 1)))
    pq.write_table(table, path, row_group_size=rows)
    session.read.parquet(str(path)).createOrReplaceTempView(name)
