"""Spark as an engine: run one query (Arrow back), load a table (a view over a Parquet file), and
stage 1 on Spark (the per-(model, group) sums of the unit vectors).

Stage 1 on Spark is not the portable wide aggregate of embsql.io.portable_sums (one SUM and one VAR_POP
per coordinate: about 4 d aggregate buffers, far over whole-stage codegen's
spark.sql.codegen.maxFields, 100, so Spark interprets ~1500 buffer updates per row, 25x DuckDB at
1M x 384).  ``group_sums`` hands each partition's rows to a Python worker as Arrow batches
(``DataFrame.mapInArrow``), where numpy does what embsql does on DuckDB's rows (embsql.core.sums:
the unit vector, then per group n_g, s_g and the within-group sum of squares, two-pass per block
of rows and merged by Chan et al.'s update); each partition returns one small table of partial
sums and the driver merges them the same way.  The workers need what the driver has: numpy,
pyarrow and embsql itself (in local mode they are the driver's own Python).  The previous route
(the unit vector from higher-order functions, summed by pyspark.ml's Summarizer: 2.2x slower side
by side at 1M x 384) is kept in bench/engines.py as "spark-summarizer".
"""

from __future__ import annotations

import atexit
import contextlib
import re
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlglot import exp

from embsql.core.sums import HUGE_SQUARED, STAGE1, TINY_SQUARED, Accumulator
from embsql.engines.tables import is_listlike, loadable
from embsql.errors import EngineError
from embsql.io.columns import B, G, V
from embsql.io.portable_sums import BAD, FIGURES, LEN_MAX, LEN_MIN, NULLS, SUM_PREFIX, WITHIN, Dimensions, N

if TYPE_CHECKING:   # optional dependency: only for the annotations
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    from pyspark.sql.types import DataType

    Session: TypeAlias = "SparkSession | ConnectSession"   # a classic session or a Spark Connect one


def fetch(session: Session, sql: str) -> pa.Table:
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


def load(session: Session, name: str, table: pa.Table) -> None:
    # a Parquet file read back by Spark: bounded memory on both sides, unlike a driver-side
    # DataFrame of the whole table; the view lives as long as the session (and the file)
    table, _ = loadable(table, "spark")
    path = _spark_directory() / f"{uuid.uuid4().hex}.parquet"
    # row groups of ~64 MB: Spark reads (and splits work) by row group, and a 1M-row group of
    # 384-d vectors (pyarrow's default) is 3 GB for one task
    rows = max(1, int(64_000_000 * table.num_rows / max(table.nbytes, 1)))
    # the vectors neither dictionary-encoded nor compressed: embedding coordinates do not repeat and
    # hardly compress, and decoding them was most of Spark's read (3.4x slower, 200k x 384)
    vectors = [name for name, type_ in zip(table.column_names, table.schema.types) if is_listlike(type_)]
    others = [name for name in table.column_names if name not in vectors]
    pq.write_table(table, path, row_group_size=rows, use_dictionary=others,
                   compression={name: "none" if name in vectors else "snappy" for name in table.column_names})
    session.read.parquet(str(path)).createOrReplaceTempView(name)


# ---------------------------------------------------------------- stage 1: partial sums in Python workers

GOOD = "__emb_good"        # rows in a partial's sums (non-NULL, of the model's d, finite, non-zero)
NAN = "__emb_nan"          # rows with a NaN or infinite coordinate (their group's figures are NaN)
SUMS = "__emb_sums"        # the d coordinate sums as one array


def rows_query(table: exp.Expression, group: str, vector: str, model: str | None = None) -> str:
    """What the workers read: the model value, the group label and the vector of every row."""
    value: exp.Expression = exp.column(model, quoted=True) if model else exp.cast(exp.null(), "STRING")
    return exp.select(exp.alias_(value, B, quoted=True), exp.alias_(exp.column(group, quoted=True), G, quoted=True),
                      exp.alias_(exp.column(vector, quoted=True), V, quoted=True)).from_(table.copy()).sql("spark")


def note(table: exp.Expression, group: str, vector: str, model: str | None = None) -> str:
    """For Report.sql(dialect="spark"): comment lines saying what embsql.run_on runs on Spark instead
    of the printed aggregate (the same result columns, from the rows query it shows)."""
    lines = ["On Spark, embsql.run_on does not run the stage-1 aggregate printed below (it runs there and",
             "gives the same columns, but its ~4 d aggregate buffers are over Spark's whole-stage codegen",
             "limit: about 25x slower).  After the probes it reads the rows with this query, and a Python",
             "worker per partition (DataFrame.mapInArrow; numpy, embsql.core.sums) sums the unit vectors",
             f"per ({'model, ' if model else ''}group); the driver merges the partitions' sums",
             "(embsql.engines.spark.group_sums).  The workers need numpy, pyarrow and embsql.",
             *rows_query(table, group, vector, model).splitlines()]
    return "".join(f"-- {line}\n" for line in lines)


NAN_LABEL = float("nan")     # every NaN label as this one object: a dict finds it (identity), so NaN rows are one group


def label_key(value: object) -> object:
    """A group or model value as a dict key: one NaN (stage 2 refuses it, counting all its rows), and
    -0.0 as 0.0, as GROUP BY on the other engines groups them."""
    if isinstance(value, float) and (value != value or value == 0.0):
        return NAN_LABEL if value != value else 0.0
    return value


class PartialSums:
    """One worker's running figures per (model, group): an Accumulator per model (n_g, s_g,
    within) and the checks stage 2 reads (rows, NULL vectors, lengths, bad and NaN rows)."""

    def __init__(self, dims: dict[object, int | None]) -> None:
        self.dims = dims
        # model value -> (Accumulator, checks {name: array})
        self.models: dict[object, tuple[Accumulator, dict[str, np.ndarray]]] = {}

    def _model(self, value: object) -> tuple[Accumulator, dict[str, np.ndarray]]:
        if value not in self.models:
            d = self.dims.get(value)
            self.models[value] = (Accumulator(dim=d or 1), {})
        return self.models[value]

    def add(self, batch: pa.RecordBatch) -> None:
        models = pc.dictionary_encode(batch.column(0), null_encoding="encode")
        model_codes = models.indices.to_numpy(zero_copy_only=False)
        for j, value in enumerate(label_key(v) for v in models.dictionary.to_pylist()):
            rows = None if len(models.dictionary) == 1 else np.flatnonzero(model_codes == j)
            part = batch if rows is None else batch.take(pa.array(rows))
            self._add_model(value, part.column(1), part.column(2))

    def _add_model(self, value: object, labels: pa.Array, vectors: pa.Array) -> None:
        accumulator, checks = self._model(value)
        d = self.dims.get(value)
        encoded = pc.dictionary_encode(labels, null_encoding="encode")
        labels_seen = [label_key(v) for v in encoded.dictionary.to_pylist()]
        codes = accumulator.codes(labels_seen)[encoded.indices.to_numpy(zero_copy_only=False)]
        size = len(accumulator.labels)
        for name, fill in ((N, 0), (NULLS, 0), (BAD, 0), (NAN, 0), (LEN_MIN, np.iinfo(np.int64).max),
                           (LEN_MAX, -1)):
            old = checks.get(name, np.zeros(0, np.int64))
            if len(old) < size:
                checks[name] = np.concatenate([old, np.full(size - len(old), fill, np.int64)])
        checks[N] += np.bincount(codes, minlength=size)
        null = np.asarray(vectors.is_null())
        lengths = np.asarray(pc.list_value_length(vectors).fill_null(0), dtype=np.int64)
        present = codes[~null]
        checks[NULLS] += np.bincount(codes[null], minlength=size)
        np.minimum.at(checks[LEN_MIN], present, lengths[~null])
        np.maximum.at(checks[LEN_MAX], present, lengths[~null])
        fits = ~null & (lengths == d) if d else np.zeros(len(codes), bool)
        if not fits.all():       # a row of another length stays out of the sums (stage 2 names it)
            vectors, codes = vectors.filter(pa.array(fits)), codes[fits]
        if not d or not len(codes):     # a model the probes did not see (d None) only counts its rows
            return
        flat = vectors.flatten()
        if not pa.types.is_floating(flat.type):       # integers, decimals: as the SQL's CAST(x AS DOUBLE)
            flat = flat.cast(pa.float64())
        x = flat.to_numpy(zero_copy_only=False).reshape(len(codes), d)
        norms2 = np.einsum("ij,ij->i", x, x, dtype=np.float64)
        awkward = np.flatnonzero(~((norms2 > TINY_SQUARED) & (norms2 < HUGE_SQUARED)))
        if flat.null_count or len(awkward):
            # a NULL element or a zero vector is counted as bad (no unit vector); a NaN or infinite
            # coordinate makes its group's figures NaN; a finite vector of any magnitude is scaled
            missing = np.asarray(flat.is_null()).reshape(len(codes), d).any(axis=1) if flat.null_count \
                else np.zeros(len(codes), bool)
            largest = np.zeros(len(codes))
            largest[awkward] = np.max(np.abs(x[awkward]), axis=1)
            zero = np.zeros(len(codes), bool)
            zero[awkward] = largest[awkward] == 0
            nan = np.zeros(len(codes), bool)
            nan[awkward] = ~np.isfinite(largest[awkward])
            bad = missing | zero
            nan &= ~bad
            checks[BAD] += np.bincount(codes[bad], minlength=size)
            checks[NAN] += np.bincount(codes[nan], minlength=size)
            keep = ~(bad | nan)
            x, codes = x[keep], codes[keep]
        accumulator.add(codes, x, where=lambda i: "")

    def tables(self, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """One record batch per model: the partial figures of each of its groups."""
        for value, (accumulator, checks) in self.models.items():
            size = len(accumulator.labels)
            d = accumulator.dim
            within = accumulator.within[:size].copy()
            within[checks[NAN][:size] > 0] = np.nan
            offsets = pa.array(np.arange(0, size * d + 1, d, dtype=np.int32))
            sums = pa.ListArray.from_arrays(offsets, pa.array(accumulator.sums[:size].ravel()))
            length_min = pa.array(checks[LEN_MIN][:size], mask=checks[LEN_MAX][:size] < 0)
            length_max = pa.array(checks[LEN_MAX][:size], mask=checks[LEN_MAX][:size] < 0)
            yield pa.record_batch([pa.array([value] * size, schema.field(B).type),
                                   pa.array(accumulator.labels, schema.field(G).type),
                                   pa.array(checks[N][:size]), pa.array(checks[NULLS][:size]), length_min, length_max,
                                   pa.array(checks[BAD][:size]), pa.array(checks[NAN][:size]),
                                   pa.array(accumulator.counts[:size]), pa.array(within), sums], schema=schema)


def partial_schema(key_types: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(B, key_types.field(B).type), pa.field(G, key_types.field(G).type),
                      *(pa.field(name, pa.int64()) for name in (N, NULLS, LEN_MIN, LEN_MAX, BAD, NAN, GOOD)),
                      pa.field(WITHIN, pa.float64()), pa.field(SUMS, pa.list_(pa.float64()))])


def partial_sums(dims: dict[object, int | None],
                 schema: pa.Schema) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function each worker runs over its partition's Arrow batches (mapInArrow)."""
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partial = PartialSums(dims)
        for batch in batches:
            partial.add(batch)
        yield from partial.tables(schema)
    return run


def merge(partials: pa.Table, dims: Dimensions) -> pa.Table:
    """The workers' partial figures merged per (model, group), in group_sums_query's columns.

    Within-group sums of squares merge as M2 = sum_i M2_i + sum_i n_i ||mean_i - mean||^2 (Chan et
    al., for any number of parts): deviations of means, never a difference of large squares."""
    keys: dict = {}
    models = [label_key(v) for v in partials.column(B).to_pylist()]
    labels = [label_key(v) for v in partials.column(G).to_pylist()]
    codes = np.fromiter((keys.setdefault((b, g), len(keys)) for b, g in zip(models, labels)), np.int64, len(labels))
    size = len(keys)

    def column(name: str) -> np.ndarray:
        return np.asarray(partials.column(name).to_numpy(zero_copy_only=False))

    high = dims.high
    lists = partials.column(SUMS).combine_chunks()
    offsets = np.asarray(lists.offsets)
    values = np.asarray(lists.values.to_numpy(zero_copy_only=False))
    lengths = np.diff(offsets)
    if (lengths == high).all():       # one d: a reshape, not a Python float per coordinate
        sums = values[offsets[0]:offsets[-1]].reshape(len(partials), high)
    else:                             # models of several d: a shorter model's sums padded with zeros
        sums = np.zeros((len(partials), high))
        for i, (low, length) in enumerate(zip(offsets[:-1], lengths)):
            sums[i, :length] = values[low:low + length]
    good = column(GOOD).astype(np.float64)
    total = np.zeros((size, high))
    np.add.at(total, codes, sums)
    count = np.bincount(codes, weights=good, minlength=size)
    mean = total / np.maximum(count, 1.0)[:, None]
    delta = sums / np.maximum(good, 1.0)[:, None] - mean[codes]
    spread = good * np.einsum("ij,ij->i", delta, delta)
    within = np.bincount(codes, weights=column(WITHIN) + spread, minlength=size)

    def summed(name: str) -> pa.Array:
        return pa.array(np.bincount(codes, weights=column(name), minlength=size).astype(np.int64))

    def extreme(name: str, ufunc: np.ufunc, fill: int) -> pa.Array:
        values = partials.column(name).fill_null(fill).to_numpy(zero_copy_only=False).astype(np.int64)
        out = np.full(size, fill, np.int64)
        ufunc.at(out, codes, values)
        return pa.array(out, mask=out == fill)

    big = np.iinfo(np.int64).max
    columns = {B: pa.array([key[0] for key in keys], partials.schema.field(B).type),
               G: pa.array([key[1] for key in keys], partials.schema.field(G).type)}
    for q in STAGE1:        # each figure merged as core.sums declares it combines
        if q.combine == "vectors":
            columns.update({f"{SUM_PREFIX}{k}": pa.array(total[:, k - 1]) for k in range(1, high + 1)})
        elif q.combine == "spread":
            columns[FIGURES[q.name]] = pa.array(within)
        elif q.combine in ("min", "max"):
            columns[FIGURES[q.name]] = extreme(FIGURES[q.name], *((np.minimum, big) if q.combine == "min"
                                                                   else (np.maximum, -1)))
        else:
            columns[FIGURES[q.name]] = summed(FIGURES[q.name])
    return pa.table(columns)


def group_sums(session: Session, table: exp.Expression, group: str, vector: str, dims: Dimensions,
               model: str | None = None) -> pa.Table:
    """Stage 1 on Spark: per (model, group) the counts, the checks, the within-group sum of squares
    and the d coordinate sums, in group_sums_query's columns (see the module's docstring).

    The rows are coalesced to one partition per core (spark.default.parallelism; no shuffle), so
    each worker sends back at most one partial row per (model, group) it saw."""
    rows = session.sql(rows_query(table, group, vector, model))
    classic = type(session).__module__ == "pyspark.sql.session"     # Spark Connect has no SparkContext
    parallelism = session.sparkContext.defaultParallelism if classic else None
    if parallelism and rows.rdd.getNumPartitions() > parallelism:
        rows = rows.coalesce(parallelism)
    keys = pa.schema([pa.field(B, _arrow_type(rows.schema[B].dataType)), pa.field(G, _arrow_type(rows.schema[G].dataType))])
    schema = partial_schema(keys)
    from pyspark.sql.pandas.types import from_arrow_schema

    with warnings.catch_warnings():   # pyspark's pandas version check; mapInArrow never uses pandas
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
        out = rows.mapInArrow(partial_sums(dims.by_value, schema), from_arrow_schema(schema))
    with batch_rows(session, max(1, BATCH_BYTES // (8 * dims.high))):
        try:
            partials = out.toArrow() if hasattr(out, "toArrow") else \
                pa.Table.from_pandas(out.toPandas(), preserve_index=False)
        except Exception as error:        # the worker's traceback arrives as the JVM's error text
            missing = re.search(r"ModuleNotFoundError: No module named '([^']+)'", str(error))
            if missing:
                raise EngineError(f"spark: the Python workers cannot import {missing.group(1)!r}; stage 1 runs "
                                  "numpy there, so the workers' Python (spark.pyspark.python) needs numpy, pyarrow "
                                  "and embsql installed") from None
            if "Python worker" in str(error):   # the traceback's last line says what went wrong there
                last = re.findall(r"^\w+(?:Error|Exception): .*$", str(error), re.MULTILINE)
                raise EngineError(f"spark: a stage-1 worker failed: {last[-1] if last else str(error).splitlines()[0]}"
                                  ) from None
            raise
    return merge(partials, dims)


BATCH_BYTES = 128_000_000     # of vector coordinates per Arrow batch (41,666 rows at d = 384)


@contextlib.contextmanager
def batch_rows(session: Session, rows: int) -> Iterator[None]:
    """spark.sql.execution.arrow.maxRecordsPerBatch set to ``rows`` for a while (restored after).

    Spark's default, 10,000 rows, leaves about 2 rows per group in a batch at G = 5,000, and the
    numpy work is then mostly per-run overhead: 50,000 rows per batch ran the workers 2x faster."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = session.conf.get(key, None)
    session.conf.set(key, str(rows))
    try:
        yield
    finally:
        if before is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, before)


def _arrow_type(spark_type: DataType) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type)
