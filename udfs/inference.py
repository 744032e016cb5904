"""UDF kernels for the permutation tests, called by the macros in sql/python/60_inference.sql.

DuckDB hands each call one Arrow chunk; every row of it is one by value, whose items arrive as
lists (labels, vectors, strata).  The numerics are embsql's own (embsql.core.permutation,
embsql.core.dispersion), the same code embsql.permanova runs from Python.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.dispersion import dispersion_test
from embsql.core.labels import clean_label
from embsql.core.permutation import canonical_order, design, permanova_distances, permanova_vectors
from embsql.core.row_tests import anova_parts
from embsql.errors import fail
from embsql.io.interrupts import Watch
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

TEST_FIELDS = ("statistic DOUBLE, p_value DOUBLE, permutations BIGINT, method VARCHAR, statistic_name VARCHAR, "
               "w_d DOUBLE, null_method VARCHAR, groups_left_out BIGINT, items_left_out BIGINT, note VARCHAR")
PERMANOVA = f"STRUCT({TEST_FIELDS})"
# the vector route also returns the decomposition's parts, from which emb__permanova derives emb_anova's columns
PARTS_FIELDS = "n BIGINT, groups BIGINT, ss_w DOUBLE, ss_b DOUBLE, mean_resultant_length DOUBLE"
PERMANOVA_VECTORS = f"STRUCT({TEST_FIELDS}, {PARTS_FIELDS})"
# ... as an Arrow type, so that a chunk whose first row has no test (NULLs) keeps the declared types
_ARROW_TYPES = {"DOUBLE": pa.float64(), "BIGINT": pa.int64(), "VARCHAR": pa.string()}
PERMANOVA_VECTORS_ARROW = pa.struct([(name, _ARROW_TYPES[kind]) for name, kind in
                                     (field.split() for field in f"{TEST_FIELDS}, {PARTS_FIELDS}".split(", "))])
DISPERSION = ("STRUCT(groups BIGINT, f DOUBLE, p_value DOUBLE, permutations BIGINT, groups_left_out BIGINT, "
              "items_left_out BIGINT, note VARCHAR, labels VARCHAR[], sizes BIGINT[], mean_distance DOUBLE[], "
              "in_test BOOLEAN[])")
FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")


def _unit(vectors: pa.Array, labels: list, vector_col: str) -> np.ndarray:
    return unit_vectors(vectors, lambda i: f"an item of group {labels[i]!r}", vector_col, None)


def _labels(labels: list, column: str, sql_type: str | None) -> np.ndarray:
    """The labels as text, under embsql.core.labels' rule: NULL and NaN refused, -0.0 is 0.0.  They arrive
    as VARCHAR; a float column's NaN and -0.0 are recognised from its SQL type."""
    out = np.empty(len(labels), dtype=object)
    for i, text in enumerate(labels):
        value = float(text) if text is not None and sql_type in FLOAT_TYPES else text
        clean_label(value, column)
        out[i] = "0.0" if sql_type in FLOAT_TYPES and value == 0.0 else text
    return out


def _position(position: dict, item) -> int:
    """Where id ``item`` of the distance table is among the labelled ids (an embsql error if nowhere)."""
    if item not in position:
        fail("distance.unlabelled", id=item, source="the distance table", labels="the labels table")
    return position[item]


def _row(test, statistic: str) -> dict:
    return {"statistic": test.statistic, "p_value": test.p_value, "permutations": test.permutations,
            "method": test.method, "statistic_name": statistic, "w_d": test.statistic if statistic == "welch" else None,
            "null_method": test.null,
            "groups_left_out": test.groups_left_out, "items_left_out": test.items_left_out, "note": test.note}


def _scalar(array: pa.Array, row: int):
    return array[row].as_py()


@sql_errors(stopped="the permutation test")
def emb__permanova_test(labels, vectors, strata, vector_col, permutations, seed, use_strata, statistic, group_col,
                        label_type, null_method):
    out = []
    for row in range(len(labels)):
        names = _labels(_scalar(labels, row), _scalar(group_col, row), _scalar(label_type, row))
        unit = _unit(vectors[row].values, names, _scalar(vector_col, row))
        blocks = np.asarray(_scalar(strata, row), dtype=object) if _scalar(use_strata, row) else None
        order = canonical_order(names, blocks, unit)
        names, unit = names[order], unit[order]   # sorted once, for both the sums and the test
        parts, defined = anova_parts(names, unit)
        if not defined:   # no test: emb__permanova refuses the design in emb_anova's words
            out.append(parts)   # (the test fields are NULL)
            continue
        test = permanova_vectors(unit, design(names, None if blocks is None else blocks[order]),
                                 permutations=_scalar(permutations, row), seed=_scalar(seed, row),
                                 statistic=_scalar(statistic, row), progress=Watch(),
                                 null=_scalar(null_method, row))
        out.append({**_row(test, _scalar(statistic, row)), **parts})
    return pa.array(out, type=PERMANOVA_VECTORS_ARROW)


@sql_errors(stopped="the permutation test")
def emb__permanova_dist_test(first, second, distance, ids, labels, strata, permutations, seed, use_strata, statistic,
                             group_col, label_type, null_method):
    out = []
    for row in range(len(ids)):
        names = _labels(_scalar(labels, row), _scalar(group_col, row), _scalar(label_type, row))
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
                                   permutations=_scalar(permutations, row), seed=_scalar(seed, row),
                                   statistic=_scalar(statistic, row), progress=Watch(),
                                   null=_scalar(null_method, row))
        out.append(_row(test, _scalar(statistic, row)))
    return pa.array(out)


@sql_errors(stopped="the permutation test")
def emb__dispersion_test(labels, vectors, vector_col, permutations, seed, group_col, label_type):
    out = []
    for row in range(len(labels)):
        names = _labels(_scalar(labels, row), _scalar(group_col, row), _scalar(label_type, row))
        unit = _unit(vectors[row].values, names, _scalar(vector_col, row))
        order = canonical_order(names, None, unit)
        result = dispersion_test(unit[order], design(names[order]), permutations=_scalar(permutations, row),
                                 seed=_scalar(seed, row), progress=Watch())
        test = result.test
        out.append({"groups": result.groups, "f": None if test is None else test.statistic,
                    "p_value": None if test is None else test.p_value,
                    "permutations": None if test is None else test.permutations,
                    "groups_left_out": result.groups_left_out, "items_left_out": result.items_left_out,
                    "note": result.note, "labels": sorted(set(str(x) for x in names)),
                    "sizes": result.sizes.tolist(), "mean_distance": result.mean_distance.tolist(),
                    "in_test": result.tested.tolist()})
    return pa.array(out)


SPECS = [
    {"name": "emb__permanova_test", "function": emb__permanova_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR", "BIGINT", "BIGINT", "BOOLEAN", "VARCHAR",
                    "VARCHAR", "VARCHAR", "VARCHAR"],
     "return_type": result_type(PERMANOVA_VECTORS)},
    {"name": "emb__permanova_dist_test", "function": emb__permanova_dist_test,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "BIGINT", "BIGINT",
                    "BOOLEAN", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR"],
     "return_type": result_type(PERMANOVA)},
    {"name": "emb__dispersion_test", "function": emb__dispersion_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR", "BIGINT", "BIGINT", "VARCHAR", "VARCHAR"],
     "return_type": result_type(DISPERSION)},
]
