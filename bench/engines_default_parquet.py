"""bench/engines.py --engines duckdb,spark, with the Spark table written as pyarrow writes Parquet by default.

    python bench/engines_default_parquet.py

embsql.engines.spark.load (tests and benchmarks only) writes the vectors uncompressed and without
dictionary encoding, which Spark reads 3.4x faster; users' tables are more often snappy-compressed
with dictionaries, so this run shows Spark's ratio on such a file.
"""

import runpy
import sys
from pathlib import Path

import pyarrow.parquet as pq

import embsql.engines.spark as spark

HERE = Path(__file__).resolve().parent
write_table = pq.write_table


def default_write(table, path, row_group_size=None, **_):
    """pyarrow's defaults (snappy, dictionary), the row groups kept."""
    return write_table(table, path, row_group_size=row_group_size)


if __name__ == "__main__":
    spark.pq.write_table = default_write
    sys.path.insert(0, str(HERE))
    sys.argv = [str(HERE / "engines.py"), "--engines", "duckdb,spark", *sys.argv[1:]]
    runpy.run_path(str(HERE / "engines.py"), run_name="__main__")
