"""Spark's stage 1 without Spark: the numpy side of embsql.engines.spark (what each mapInArrow worker
computes over its partition's Arrow batches, and the driver's merge of the partitions' partial sums).

References are independent of the accumulator: per group, n, the sums of the unit vectors and the
within-group sum of squares computed directly from all of the group's rows, in mpmath at 50 digits
for the nearly identical vectors (where n - ||s||^2 / n in float64 would lose every digit)."""

import mpmath
import numpy as np
import pyarrow as pa
import pytest

from embsql.engines import spark
from embsql.errors import BadLabelError, BadVectorError
from embsql.io.columns import B, G, V
from embsql.io.portable_sums import BAD, LEN_MAX, LEN_MIN, NULLS, WITHIN, Dimensions, N, group_sums_from_result


def batches_of(models, labels, vectors, size):
    """Arrow batches of ``size`` rows, as mapInArrow hands them to a worker."""
    table = pa.table({B: pa.array(models, pa.string()), G: pa.array(labels, pa.string()),
                      V: pa.array(vectors, pa.list_(pa.float64()))})
    return table.to_batches(max_chunksize=size)


def run(dims: dict, parts: list[list[pa.RecordBatch]]) -> pa.Table:
    """Each part is one partition (one worker); the partials merged as group_sums merges them."""
    schema = spark.partial_schema(pa.schema([pa.field(B, pa.string()), pa.field(G, pa.string())]))
    partials = [batch for part in parts for batch in spark.partial_sums(dims, schema)(iter(part))]
    return spark.merge(pa.Table.from_batches(partials, schema), Dimensions(dims))


def direct(vectors: list) -> tuple[int, list, mpmath.mpf]:
    """n, the sums of the unit vectors and sum_i ||u_i - mean||^2, at 50 digits from the rows."""
    with mpmath.workdps(50):
        units = []
        for v in vectors:
            x = [mpmath.mpf(float(c)) for c in v]
            norm = mpmath.sqrt(sum(c * c for c in x))
            units.append([c / norm for c in x])
        n = len(units)
        sums = [sum(u[k] for u in units) for k in range(len(units[0]))]
        mean = [s / n for s in sums]
        within = sum(sum((u[k] - mean[k]) ** 2 for k in range(len(mean))) for u in units)
        return n, sums, within


def by_key(result: pa.Table) -> dict:
    rows = result.to_pylist()
    return {(row[B], row[G]): row for row in rows}


@pytest.mark.parametrize("batch", [1, 7, 1000])
def test_partials_over_batches_and_partitions_merge_to_the_direct_figures(batch):
    """Two models of different d, groups spread over three partitions and over batches of any size,
    one group of nearly identical vectors (spread 1e-7) and vectors of magnitude 1e-300 and 1e300."""
    rng = np.random.default_rng(3)
    rows = []
    for model, d in (("m1", 4), ("m2", 6)):
        for g in range(5):
            for _ in range(int(rng.integers(1, 9))):
                rows.append((model, f"g{g}", rng.standard_normal(d) + 0.3))
    base = rng.standard_normal(4)
    rows += [("m1", "close", base + 1e-7 * rng.standard_normal(4)) for _ in range(30)]
    rows += [("m2", "scaled", rng.standard_normal(6) * scale) for scale in (1e-300, 1e300, 1.0, 1e-160)]
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    thirds = [rows[i::3] for i in range(3)]
    parts = [batches_of([r[0] for r in part], [r[1] for r in part], [list(r[2]) for r in part], batch)
             for part in thirds]
    result = by_key(run({"m1": 4, "m2": 6}, parts))
    keys = {(r[0], r[1]) for r in rows}
    assert set(result) == keys
    for key in keys:
        vectors = [r[2] for r in rows if (r[0], r[1]) == key]
        n, sums, within = direct(vectors)
        got = result[key]
        d = len(vectors[0])
        assert got[N] == n and got[NULLS] == 0 and got[BAD] == 0 and got[LEN_MIN] == got[LEN_MAX] == d
        for k in range(d):
            assert got[f"__emb_s{k + 1}"] == pytest.approx(float(sums[k]), rel=1e-12, abs=1e-13), (key, k)
        assert got[WITHIN] == pytest.approx(float(within), rel=1e-9, abs=1e-15), key
    close = float(direct([r[2] for r in rows if r[1] == "close"])[2])
    assert 1e-13 < close < 1e-11        # nearly identical: the naive formula's rounding (~1e-14 n) would swamp it


def test_bad_rows_are_counted_and_named_by_stage_2():
    """A NULL vector, a vector of another length, a zero vector, a NULL element and a NaN coordinate:
    counted as the SQL aggregate counts them, so group_sums_from_result names each."""
    def one(vectors, message):
        labels = ["a"] * len(vectors)
        result = run({"m": 2}, [batches_of(["m"] * len(vectors), labels, vectors, 2)])
        with pytest.raises(BadVectorError, match=message):
            group_sums_from_result(result, "topic", "vec", Dimensions({"m": 2}), "model")
        return by_key(result)[("m", "a")]

    row = one([[1.0, 0.0], None, [0.5, 0.5]], "1 NULL vector")
    assert (row[N], row[NULLS]) == (3, 1)
    row = one([[1.0, 0.0], [1.0, 2.0, 3.0]], "a vector of length 3")
    assert (row[LEN_MIN], row[LEN_MAX]) == (2, 3)
    assert one([[1.0, 0.0], [0.0, 0.0]], "1 vector.s. with a NULL element or of zero length")[BAD] == 1
    assert one([[1.0, None], [0.0, 1.0]], "NULL element")[BAD] == 1
    assert np.isnan(one([[1.0, float("nan")], [0.0, 1.0]], "NaN or infinite")[WITHIN])
    assert np.isnan(one([[1.0, float("inf")], [0.0, 1.0]], "NaN or infinite")[WITHIN])


def test_a_group_split_over_partitions_keeps_its_digits():
    """30 nearly identical vectors, 10 per partition: the merge adds the partitions' spreads about
    their own means and n_i ||mean_i - mean||^2, never a difference of large squares."""
    rng = np.random.default_rng(8)
    base = rng.standard_normal(5)
    vectors = [list(base + 1e-8 * rng.standard_normal(5)) for _ in range(30)]
    parts = [batches_of(["m"] * 10, ["a"] * 10, vectors[i::3], 4) for i in range(3)]
    got = by_key(run({"m": 5}, parts))[("m", "a")][WITHIN]
    assert got == pytest.approx(float(direct(vectors)[2]), rel=1e-9)


@pytest.mark.parametrize("value_type", [pa.float32(), pa.int64(), pa.decimal128(10, 2)])
def test_other_number_arrays_are_read_as_doubles(value_type):
    """array<float>, array<bigint> and array<decimal> give the figures of the same values as doubles."""
    vectors = [[1, 2, 3], [3, 1, 0], [2, 2, 5], [-1, 4, 2]]
    schema = spark.partial_schema(pa.schema([pa.field(B, pa.string()), pa.field(G, pa.string())]))

    def figures(type_):
        batch = pa.record_batch({B: pa.array(["m"] * 4), G: pa.array(["a", "a", "b", "a"]),
                                 V: pa.array(vectors, pa.list_(pa.float64())).cast(pa.list_(type_))})
        partials = list(spark.partial_sums({"m": 3}, schema)(iter([batch])))
        return spark.merge(pa.Table.from_batches(partials, schema), Dimensions({"m": 3})).to_pylist()

    assert figures(value_type) == figures(pa.float64())
    assert figures(pa.float64())[0][WITHIN] > 0


def test_nan_labels_are_one_refused_group_and_signed_zeros_one_group():
    """As GROUP BY on the other engines: NaN rows over several batches and partitions are one group
    (refused by stage 2 with all its rows counted), and 0.0 and -0.0 are one group, 0.0."""
    schema = spark.partial_schema(pa.schema([pa.field(B, pa.string()), pa.field(G, pa.float64())]))
    labels = [1.0, float("nan"), float("nan"), 2.0, -0.0, 0.0, float("nan")]
    vectors = pa.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 1.0], [1.0, 2.0], [2.0, 1.0], [3.0, 1.0]],
                       pa.list_(pa.float64()))
    batch = pa.record_batch({B: pa.array([None] * 7, pa.string()), G: pa.array(labels), V: vectors})
    partials = [b for part in (batch.slice(0, 2), batch.slice(2, 3), batch.slice(5))
                for b in spark.partial_sums({None: 2}, schema)(iter([part]))]
    merged = spark.merge(pa.Table.from_batches(partials, schema), Dimensions({None: 2}))
    counts = dict(zip(["nan" if g != g else g for g in merged.column(G).to_pylist()], merged.column(N).to_pylist()))
    assert counts == {1.0: 1, "nan": 3, 2.0: 1, 0.0: 2}
    assert [str(g) for g in merged.column(G).to_pylist()].count("-0.0") == 0
    with pytest.raises(BadLabelError, match="group column 'g' has 3 NaN label"):
        group_sums_from_result(merged, "g", "vec", Dimensions({None: 2}))
