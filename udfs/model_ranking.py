"""UDF kernels of emb_rank_models (sql/python/72_model_ranking.sql): the group sums of every model
in one call, ranked by embsql.core.model_ranking (the kernel of embsql.rank_models); and of
emb_rank_cka (sql/python/97_model_ranking_families.sql), read as the declared agreement statistics
read their table (udfs/declared.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.geometry import rank_cka_rows
from embsql.core.model_comparison import canonical, check_same_groups
from embsql.core.model_ranking import RANK_SQL_TYPE, structure_rows
from embsql.core.sums import GroupSums
from embsql.errors import fail
from embsql.io.model_item_inputs import INPUTS, read_models
from embsql.io.udf_errors import result_type, sql_errors


@sql_errors
def emb__rank_models(models, labels, counts, within, sums, stat, replicates, seed, level):
    out = []
    for row in range(len(models)):
        model_of = np.asarray(models[row].as_py(), dtype=object)
        label_of = np.asarray(labels[row].as_py(), dtype=object)
        count_of = np.asarray(counts[row].as_py(), dtype=np.int64)
        within_of = np.asarray(within[row].as_py(), dtype=float)
        vectors = sums[row].values
        names = sorted(set(model_of.tolist()), key=str)
        if len(names) < 2:
            fail("model.too_few", column="the model column", models=len(names), needs="a ranking")
        parts = []
        for m in names:
            rows = np.flatnonzero(model_of == m)
            matrix = np.array([vectors[int(i)].values.to_numpy(zero_copy_only=False) for i in rows], dtype=float)
            parts.append(canonical(GroupSums(label_of[rows], count_of[rows], matrix, within=within_of[rows])))
        for name, part in zip(names[1:], parts[1:]):
            check_same_groups(names[0], parts[0], name, part)
        out.append(structure_rows(names, parts, stat[row].as_py(), replicates=replicates[row].as_py(),
                                  seed=seed[row].as_py(), level=level[row].as_py()))
    return pa.array([[{**r, "model": str(r["model"])} for r in rows] for rows in out])


@sql_errors(stopped="the CKA ranking")
def emb__rank_cka(tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows,
                  reference, level, replicates, seed):
    inputs = (tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows)
    out = []
    for row in range(len(inputs[0])):
        data, labels, group = read_models(row, *inputs)
        found = rank_cka_rows(data, reference[row].as_py(), groups=labels, group=group or "group",
                              model=inputs[4][row].as_py(), level=level[row].as_py(),
                              replicates=replicates[row].as_py(), seed=seed[row].as_py())
        out.append([{**r, "model": str(r["model"])} for r in found])
    return pa.array(out)


SPECS = [
    {"name": "emb__rank_models", "function": emb__rank_models,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "BIGINT[]", "DOUBLE[]", "DOUBLE[][]", "VARCHAR", "BIGINT", "BIGINT",
                    "DOUBLE"],
     "return_type": result_type(RANK_SQL_TYPE)},
    {"name": "emb__rank_cka", "function": emb__rank_cka, "parameters": INPUTS + ["VARCHAR", "DOUBLE", "BIGINT", "BIGINT"],
     "return_type": result_type(RANK_SQL_TYPE), "null_handling": "special"},
]
