"""UDF kernel of the multi-term PERMANOVA, called by sql/python/65_permanova_terms.sql.

Each row of the Arrow chunk is one model value: the term columns of its items arrive as one JSON
object per item (so a numeric column stays a number, a covariate, and text a factor), the vectors
as lists.  The numerics are embsql.core.permanova_terms, the same code embsql.permanova(...,
terms=...) runs from Python, with the same canonical row order (embsql.api.permanova_terms).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from embsql.api.permanova_terms import ordered_design
from embsql.core.permanova_terms import centred, permanova_terms
from embsql.core.terms import columns_of, parse_terms
from embsql.errors import EmbsqlError
from embsql.io.interrupts import Watch, install
from embsql.io.reading import unit_vectors

ROW = "STRUCT(term VARCHAR, df BIGINT, ss DOUBLE, r2 DOUBLE, f DOUBLE, p_value DOUBLE)[]"
install()   # so that con.interrupt() reaches the kernel (embsql.io.interrupts)


def _columns(records: list, names: list, table: str) -> dict:
    rows = [json.loads(r) for r in records]
    present = set(rows[0]) if rows else set()
    for name in names:
        if name not in present:
            raise EmbsqlError(f"term column {name!r} not found in {table}")
    return {name: [row[name] for row in rows] for name in names}


def emb__permanova_terms_test(records, vectors, strata, terms, vector_col, by_terms, permutations, seed, use_strata,
                              table):
    out = []
    for row in range(len(records)):
        try:
            specs = terms[row].as_py()
            names = columns_of(parse_terms(specs))
            columns = _columns(records[row].as_py(), names, table[row].as_py())
            unit = unit_vectors(vectors[row].values, lambda i: f"row {i}", vector_col[row].as_py(), None)
            plan_, ordered_unit, ordered_strata = ordered_design(
                specs, columns, unit, strata[row].as_py() if use_strata[row].as_py() else None, by_terms[row].as_py())
            result = permanova_terms(plan_, ordered_strata, y=centred(ordered_unit),
                                     permutations=permutations[row].as_py(), seed=seed[row].as_py(), progress=Watch())
        except (EmbsqlError, KeyboardInterrupt) as error:
            if isinstance(error, KeyboardInterrupt):
                raise ValueError("embsql: the query was interrupted; the permutation test stopped") from None
            raise ValueError(f"embsql: {error}") from None
        out.append(result.rows())
    return pa.array(out)


SPECS = [
    {"name": "emb__permanova_terms_test", "function": emb__permanova_terms_test,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "BIGINT", "BIGINT",
                    "BOOLEAN", "VARCHAR"],
     "return_type": ROW},
]
