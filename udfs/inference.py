"""UDF kernels for the permutation tests, called by the macros in sql/python/60_inference.sql.

DuckDB hands each call one Arrow chunk; every row of it is one by value, whose items arrive as
lists (labels, vectors, strata).  The numerics are embsql's own (embsql.permutation,
embsql.dispersion), the same code embsql.permanova runs from Python.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.dispersion import dispersion_test
from embsql.errors import EmbsqlError
from embsql.permutation import canonical_order, design, permanova_distances, permanova_vectors
from embsql.sufficient import _unit_vectors

PERMANOVA = "STRUCT(statistic DOUBLE, p_value DOUBLE, permutations BIGINT, method VARCHAR)"
DISPERSION = ("STRUCT(groups BIGINT, f DOUBLE, p_value DOUBLE, permutations BIGINT, "
              "labels VARCHAR[], sizes BIGINT[], mean_distance DOUBLE[])")


def _sql_error(error: Exception) -> ValueError:
    return ValueError(f"embsql: {error}")


def _unit(vectors: pa.Array, labels: list, vector_col: str) -> np.ndarray:
    return _unit_vectors(vectors, lambda i: f"an item of group {labels[i]!r}", vector_col, None)


def _labels(labels: list, group: str = "group") -> np.ndarray:
    if any(x is None for x in labels):
        raise EmbsqlError(f"the {group} column has a NULL label")
    return np.asarray(labels, dtype=object)


def _position(position: dict, item) -> int:
    """Where id ``item`` of the distance table is among the labelled ids (an embsql error if nowhere)."""
    if item not in position:
        raise EmbsqlError(f"id {item} in the distance table has no label in the labels table")
    return position[item]


def _row(test) -> dict:
    return {"statistic": test.statistic, "p_value": test.p_value, "permutations": test.permutations,
            "method": test.method}


def _scalar(array: pa.Array, row: int):
    return array[row].as_py()


def emb__permanova_test(labels, vectors, strata, vector_col, permutations, seed, use_strata):
    out = []
    for row in range(len(labels)):
        try:
            names = _labels(_scalar(labels, row))
            unit = _unit(vectors[row].values, names, _scalar(vector_col, row))
            blocks = np.asarray(_scalar(strata, row), dtype=object) if _scalar(use_strata, row) else None
            order = canonical_order(names, blocks, unit)
            test = permanova_vectors(unit[order], design(names[order], None if blocks is None else blocks[order]),
                                     permutations=_scalar(permutations, row), seed=_scalar(seed, row))
        except EmbsqlError as error:
            raise _sql_error(error) from None
        out.append(_row(test))
    return pa.array(out)


def emb__permanova_dist_test(first, second, distance, ids, labels, strata, permutations, seed, use_strata):
    out = []
    for row in range(len(ids)):
        try:
            names = _labels(_scalar(labels, row))
            id_list = _scalar(ids, row)
            position = {item: k for k, item in enumerate(id_list)}
            squared = np.zeros((len(id_list), len(id_list)))
            a = np.fromiter((_position(position, x) for x in _scalar(first, row)), np.int64)
            b = np.fromiter((_position(position, x) for x in _scalar(second, row)), np.int64)
            d = np.asarray(_scalar(distance, row), dtype=float)
            squared[a, b] = squared[b, a] = d * d
            blocks = np.asarray(_scalar(strata, row), dtype=object) if _scalar(use_strata, row) else None
            order = canonical_order(names, blocks, ids=id_list)
            test = permanova_distances(squared[np.ix_(order, order)],
                                       design(names[order], None if blocks is None else blocks[order]),
                                       permutations=_scalar(permutations, row), seed=_scalar(seed, row))
        except EmbsqlError as error:
            raise _sql_error(error) from None
        out.append(_row(test))
    return pa.array(out)


def emb__dispersion_test(labels, vectors, vector_col, permutations, seed):
    out = []
    for row in range(len(labels)):
        try:
            names = _labels(_scalar(labels, row))
            unit = _unit(vectors[row].values, names, _scalar(vector_col, row))
            order = canonical_order(names, None, unit)
            result = dispersion_test(unit[order], design(names[order]),
                                     permutations=_scalar(permutations, row), seed=_scalar(seed, row))
        except EmbsqlError as error:
            raise _sql_error(error) from None
        out.append({"groups": result.groups, "f": result.test.statistic, "p_value": result.test.p_value,
                    "permutations": result.test.permutations,
                    "labels": sorted(set(str(x) for x in names)),
                    "sizes": result.sizes.tolist(), "mean_distance": result.mean_distance.tolist()})
    return pa.array(out)


SPECS = [
    {"name": "emb__permanova_test", "function": emb__permanova_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR", "BIGINT", "BIGINT", "BOOLEAN"],
     "return_type": PERMANOVA},
    {"name": "emb__permanova_dist_test", "function": emb__permanova_dist_test,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "BIGINT", "BIGINT",
                    "BOOLEAN"],
     "return_type": PERMANOVA},
    {"name": "emb__dispersion_test", "function": emb__dispersion_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR", "BIGINT", "BIGINT"], "return_type": DISPERSION},
]
