# one-off: Spark's stage 1 on a Parquet file written with pyarrow's defaults (snappy, dictionary)
import sys, runpy
sys.path.insert(0, "bench")
import pyarrow.parquet as pq
import embsql.engines.spark as spark
real = pq.write_table
def default_write(table, path, row_group_size=None, **_):
    return real(table, path, row_group_size=row_group_size)
spark.pq.write_table = default_write
sys.argv = ["bench/engines.py", "--engines", "duckdb,spark"]
runpy.run_path("bench/engines.py", run_name="__main__")
