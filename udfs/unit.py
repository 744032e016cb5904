"""UDF kernel of emb_unit (sql/python/50_udf_results.sql): scale vectors to unit length, as DuckDB
sees it: one Arrow chunk per call.

Loaded by embsql.io.registration, which reads SPECS; the kernel takes and returns plain Arrow
arrays, and its errors reach SQL as "embsql: [vector.*] ..." (embsql.io.udf_errors).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.errors import BadVectorError
from embsql.io.udf_errors import result_type, sql_errors


@sql_errors
def emb__unit(vectors: pa.Array) -> pa.Array:
    """Return each vector divided by its Euclidean norm (rows keep their length), as the value of
    the STRUCT(error, value) every kernel returns.

    >>> emb__unit(pa.array([[3.0, 4.0]])).field("value").to_pylist()
    [[0.6, 0.8]]
    """
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    if vectors.null_count:
        raise BadVectorError("emb_unit got a NULL vector; filter NULL vectors out first", kind="vector.null")
    lengths = np.diff(np.asarray(vectors.offsets))
    flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float64)
    row = np.repeat(np.arange(len(lengths)), lengths)
    with np.errstate(over="ignore", under="ignore"):  # out-of-range rows are rescaled just below
        norms = np.sqrt(np.bincount(row, weights=flat * flat, minlength=len(lengths)))
    _rescale_out_of_range(norms, flat, np.asarray(vectors.offsets))
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise BadVectorError(f"emb_unit cannot scale vector {first} of this chunk to unit length "
                             f"(its norm is {norms[first]})",
                             kind="vector.zero" if norms[first] == 0 else "vector.nonfinite")
    return pa.ListArray.from_arrays(vectors.offsets, pa.array(flat / norms[row]))


def _rescale_out_of_range(norms: np.ndarray, flat: np.ndarray, offsets: np.ndarray) -> None:
    """Recompute, in place, the norms whose squares overflowed or underflowed (1e200 * x, 1e-160 * x).

    Such a norm is max|x| * ||x / max|x|||, whose squares are in range; NaN and infinite
    coordinates keep their NaN or infinite norm.  Only the few rows out of range are looped over.
    """
    for i in np.flatnonzero(~((norms >= 1e-135) & (norms <= 1e150))):
        segment = flat[offsets[i]:offsets[i + 1]]
        scale = np.max(np.abs(segment)) if len(segment) else 0.0
        if np.isfinite(scale) and scale > 0:
            norms[i] = scale * np.sqrt(np.sum((segment / scale) ** 2))


# name, kernel, parameter types, return type (DuckDB type strings); see embsql.io.registration
SPECS = [
    {"name": "emb__unit", "function": emb__unit, "parameters": ["DOUBLE[]"], "return_type": result_type("DOUBLE[]"),
     "null_handling": "default", "side_effects": False},
]
