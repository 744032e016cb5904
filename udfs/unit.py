"""UDF kernel: scale vectors to unit length, as DuckDB sees it: one Arrow chunk per call.

Loaded by embsql.registration, which reads SPECS; nothing here imports embsql, so the
kernel can be tested on plain Arrow arrays.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def emb_unit(vectors: pa.Array) -> pa.Array:
    """Return each vector divided by its Euclidean norm (rows keep their length).

    >>> emb_unit(pa.array([[3.0, 4.0]])).to_pylist()
    [[0.6, 0.8]]
    """
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    if vectors.null_count:
        raise ValueError("embsql: emb_unit got a NULL vector; filter NULL vectors out first")
    lengths = np.diff(np.asarray(vectors.offsets))
    flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float64)
    row = np.repeat(np.arange(len(lengths)), lengths)
    norms = np.sqrt(np.bincount(row, weights=flat * flat, minlength=len(lengths)))
    bad = ~np.isfinite(norms) | (norms == 0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"embsql: emb_unit cannot scale vector {first} of this chunk to unit length "
                         f"(its norm is {norms[first]})")
    return pa.ListArray.from_arrays(vectors.offsets, pa.array(flat / norms[row]))


# name, kernel, parameter types, return type (DuckDB type strings); see embsql.registration
SPECS = [
    {"name": "emb_unit", "function": emb_unit, "parameters": ["DOUBLE[]"], "return_type": "DOUBLE[]",
     "null_handling": "default", "side_effects": False},
]
