"""Builders of small Arrow tables for the tests."""

import numpy as np
import pyarrow as pa


def vectors_table(vectors: np.ndarray, labels, *, fixed: bool = False, dtype=pa.float64(), **extra) -> pa.Table:
    """An Arrow table with a group column 'g' and a vector column 'v' (list or fixed-size list)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    flat = pa.array(vectors.ravel(), type=dtype)
    if fixed:
        column = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
    else:
        column = pa.ListArray.from_arrays(pa.array(np.arange(0, vectors.size + 1, vectors.shape[1]), pa.int32()), flat)
    return pa.table({**extra, "g": pa.array(list(labels)), "v": column})


def distance_table(points: np.ndarray) -> tuple[pa.Table, pa.Table]:
    """Euclidean distances of ``points`` as an (i, j, d) table for i < j."""
    diff = points[:, None, :] - points[None, :, :]
    dist = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    i, j = np.triu_indices(len(points), 1)
    return pa.table({"i": i, "j": j, "d": dist[i, j]})
