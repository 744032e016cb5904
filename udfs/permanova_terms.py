"""UDF kernel of the multi-term PERMANOVA, called by sql/python/65_permanova_terms.sql.

Each row of the Arrow chunk is one model value: the term columns of its items arrive as one JSON
object per item (so a numeric column stays a number, a covariate, and text a factor), the vectors
as lists.  The numerics are embsql.core.permanova_terms, the same code embsql.permanova(...,
terms=...) runs from Python, with the same canonical row order (embsql.api.permanova_terms).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.api.permanova_terms import ordered_design, record_columns
from embsql.core.permanova_terms import gower_matrix, permanova_terms, squared_from_pairs
from embsql.core.terms import columns_of, parse_terms
from embsql.io.interrupts import Watch
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

ROW = "STRUCT(term VARCHAR, df BIGINT, ss DOUBLE, r2 DOUBLE, f DOUBLE, p_value DOUBLE)[]"


@sql_errors(stopped="the permutation test")
def emb__permanova_terms_test(records, vectors, strata, terms, vector_col, sums, permute, permutations, seed,
                              use_strata, table, rows, model):
    out = []
    for row in range(len(records)):
        specs = terms[row].as_py()
        names = columns_of(parse_terms(specs))
        columns = record_columns(records[row].as_py(), names, table[row].as_py())
        # a bad vector is named by its row in the table, counted from 1 (rows: the 0-based row numbers),
        # then its model (of_model: ' (model ...)', or '' without a model column)
        numbers, of_model = rows[row].values.to_numpy(zero_copy_only=False), model[row].as_py()
        def name(i, numbers=numbers, of_model=of_model):
            return f"row {int(numbers[i]) + 1}{of_model}"
        unit = unit_vectors(vectors[row].values, name, vector_col[row].as_py(), None)
        plan_, ordered_unit, ordered_strata = ordered_design(
            specs, columns, unit, strata[row].as_py() if use_strata[row].as_py() else None, sums[row].as_py())
        result = permanova_terms(plan_, ordered_strata, unit=ordered_unit, permutations=permutations[row].as_py(),
                                 seed=seed[row].as_py(), progress=Watch(), permute=permute[row].as_py())
        out.append(result.rows())
    return pa.array(out)


@sql_errors(stopped="the permutation test")
def emb__permanova_terms_dist_test(first, second, distance, ids, records, strata, terms, sums, permute,
                                   permutations, seed, use_strata, table):
    out = []
    for row in range(len(ids)):
        specs = terms[row].as_py()
        names = columns_of(parse_terms(specs))
        id_list = ids[row].as_py()
        columns = record_columns(records[row].as_py(), names, table[row].as_py())
        squared = squared_from_pairs(first[row].as_py(), second[row].as_py(), distance[row].as_py(), id_list)
        plan_, order, ordered_strata = ordered_design(
            specs, columns, np.arange(len(id_list))[:, None], strata[row].as_py() if use_strata[row].as_py()
            else None, sums[row].as_py(), ids=id_list)
        order = order[:, 0]
        result = permanova_terms(plan_, ordered_strata, gower=gower_matrix(squared[np.ix_(order, order)]),
                                 permutations=permutations[row].as_py(), seed=seed[row].as_py(), progress=Watch(),
                                 permute=permute[row].as_py())
        out.append(result.rows())
    return pa.array(out)


SPECS = [
    {"name": "emb__permanova_terms_test", "function": emb__permanova_terms_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "BIGINT",
                    "BIGINT", "BOOLEAN", "VARCHAR", "BIGINT[]", "VARCHAR"],
     "return_type": result_type(ROW)},
    {"name": "emb__permanova_terms_dist_test", "function": emb__permanova_terms_dist_test,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR",
                    "VARCHAR", "BIGINT", "BIGINT", "BOOLEAN", "VARCHAR"],
     "return_type": result_type(ROW)},
]
