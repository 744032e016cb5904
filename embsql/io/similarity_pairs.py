"""The reading side of similarity (STS) evaluation: the pairs table checked and coded, each
model's vectors matched to its items, and the per-model and per-pair-of-models rows built from the
core kernels (embsql.core.similarity).  embsql.similarity_eval and embsql.compare_similarity
(embsql.api.similarity) and the report's similarity section (embsql.reporting.labels) share them,
so the report's figures are the faces' figures."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.arguments import check_replicates, check_seed
from embsql.core.labels import sort_key
from embsql.core.model_ranking import check_intervals, simultaneous_intervals
from embsql.core.retrieval_comparison import adjust
from embsql.core.similarity import (
    Pairs,
    calibrated,
    check_pairs,
    difference,
    eval_row,
    pair_cosines,
    similarity_family,
    similarity_rows,
)
from embsql.errors import fail, option
from embsql.io.columns import first_bad_label, require_number
from embsql.io.sources import Source, TableLike, opened
from embsql.io.table_stream import Skipped
from embsql.io.vectors import Vectors, read_vectors
from embsql.vocabulary import check_model_name

DEFAULT_MODEL = "model"      # used when the embeddings have it; a table without it is one model


@dataclass(frozen=True)
class Judgements:
    """The pairs table as read: the distinct items as text (to match the embeddings' ids), each
    pair's two items as codes into them, the gold scores, and the a, b and score values as stored
    (for per_pair).  Items are hashed once here; each model then matches only the distinct items."""

    items: pa.Array
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    raw: pa.Table
    source: str


def read_pairs(con: duckdb.DuckDBPyConnection, source: Source, a: str, b: str, score: str) -> Judgements:
    """Read the pairs table (its columns checked first) and check its rows (judgements)."""
    for column, role in ((a, "a"), (b, "b"), (score, "score")):
        source.require(column, role)
    require_number(score, source.columns[score], source.name)
    query = exp.select(*(exp.column(c, quoted=True).as_(f"__emb_{i}", quoted=True) for i, c in enumerate((a, b, score)))
                       ).from_(source.table.copy())
    return judgements(con.sql(query.sql("duckdb")).to_arrow_table(), source.name, (a, b, score))


def judgements(table: pa.Table, name: str, columns: tuple[str, str, str]) -> Judgements:
    """The checked pairs from a table of three columns (a, b, score values as stored) read from the
    pairs table ``name`` whose columns are ``columns``: no NULL item, no NULL or non-finite score, no
    pair of one item (each error names the column and the row)."""
    a, b, score = columns
    where = lambda row: f" at row {row + 1} of pairs {name!r}"      # counted from 1
    for i, column in enumerate((a, b)):
        bad = first_bad_label(table.column(i))
        if bad is not None:
            fail("label.null", role="item", column=repr(column), word=bad[1], where=where(bad[0]))
    values = table.column(2).combine_chunks()
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        fail("value.null", role="score", column=repr(score), count=values.null_count, where=f" (first{where(row)})")
    scores = values.to_numpy(zero_copy_only=False).astype(np.float64)
    if not np.isfinite(scores).all():
        bad_rows = np.flatnonzero(~np.isfinite(scores))
        word = "NaN or infinite" if len(bad_rows) > 1 else "NaN" if np.isnan(scores[bad_rows[0]]) else "infinite"
        fail("value.nonfinite", role="score", column=repr(score), count=len(bad_rows), word=word,
             where=f" (first{where(int(bad_rows[0]))}: {scores[bad_rows[0]]})")
    text_a, text_b = (table.column(i).combine_chunks().cast(pa.string()) for i in range(2))
    same = pc.equal(text_a, text_b).to_numpy(zero_copy_only=False)
    if same.any():
        row = int(np.flatnonzero(same)[0])
        fail("pair.same_item", row=row + 1, source=repr(name), item=repr(text_a[row].as_py()), a=repr(a), b=repr(b))
    both = pa.concat_arrays([text_a, text_b]).dictionary_encode()
    codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return Judgements(both.dictionary, codes[:len(text_a)], codes[len(text_a):], scores, table, name)


@dataclass(frozen=True)
class Scored:
    """One model's usable pairs: which pairs of the table (``rows``), their cosines, and how many
    were left out for want of a vector (missing='skip')."""

    rows: np.ndarray
    cosine: np.ndarray
    skipped: int


def score_model(pairs: Judgements, vectors: Vectors, value: object, missing: str, columns: tuple[str, str],
                 embeddings: str) -> Scored:
    """Cosines of the pairs whose two items have a vector in this model."""
    position = pc.fill_null(pc.index_in(pairs.items, value_set=vectors.ids), -1).to_numpy(zero_copy_only=False)
    ia, ib = position[pairs.a], position[pairs.b]
    known = (ia >= 0) & (ib >= 0)
    if not known.all() and missing == "error":
        row = int(np.flatnonzero(~known)[0])
        code, column = (pairs.a[row], columns[0]) if ia[row] < 0 else (pairs.b[row], columns[1])
        fail("pair.no_vector", item=repr(pairs.items[int(code)].as_py()), column=repr(column), row=row + 1,
             source=repr(pairs.source), model=repr(value), embeddings=repr(embeddings),
             option=option("missing", "skip"))
    rows = np.flatnonzero(known)
    if len(rows) < len(known):
        ia, ib = ia[rows], ib[rows]
    return Scored(rows, pair_cosines(vectors.vectors, vectors.inv_norms, ia, ib), len(known) - len(rows))


def coded_pairs(pairs: Judgements, rows: np.ndarray) -> Pairs:
    """The kernel's view of ``rows`` of the pairs: scores and items coded 0 .. items - 1."""
    if len(rows) == len(pairs.a):                    # every pair: every item occurs, codes as read
        return Pairs(pairs.score, pairs.a, pairs.b, len(pairs.items))
    a, b = pairs.a[rows], pairs.b[rows]
    present = np.bincount(np.r_[a, b], minlength=len(pairs.items)) > 0
    recode = np.cumsum(present) - 1
    return Pairs(pairs.score[rows], recode[a], recode[b], int(present.sum()))


def read_models(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *, model: str | None, a: str,
          b: str, score: str, item: str, vector: str, missing: str,
          output: tuple[str, ...], function: str,
          skip: Skipped | None = None) -> tuple[str | None, Judgements, dict[object, Scored]]:
    """(the model column or None, the pairs, {model value: Scored} in model order).  With ``skip``
    (bad_rows="skip"), the embeddings' rows with an unusable vector are left out and counted there:
    their items then have no vector in that model (``missing`` says what becomes of their pairs)."""
    if missing not in ("error", "skip"):
        fail("argument.missing", name="missing", rule="'error' or 'skip'", value=repr(missing))
    with opened(con, pairs) as pair_source:
        judgements = read_pairs(con, pair_source, a, b, score)
    with opened(con, embeddings) as emb_source:
        column = emb_source.model_column(model, DEFAULT_MODEL)
        check_model_name(column, output, function)
        models = read_vectors(con, emb_source, "embeddings", id_col=item, id_role="item", vector=vector, model=column,
                              skip=skip)
        name = emb_source.name
    scored = {value: score_model(judgements, models[value], value, missing, (a, b), name)
              for value in sorted(models, key=sort_key)}
    return column, judgements, scored


def evaluation_rows(judgements: Judgements, scored: dict[object, Scored], level: float,
                    one_model: bool = False) -> list[tuple[object, dict]]:
    """(model value, its EVAL_COLUMNS figures) per model."""
    rows, coded_by_rows = [], {}
    for value, used in scored.items():
        # models that score the same pairs share one coding (and its sort of the gold scores)
        key = used.rows.tobytes()
        if key not in coded_by_rows:
            coded_by_rows[key] = coded_pairs(judgements, used.rows)
        coded = coded_by_rows[key]
        check_pairs(coded.score, used.cosine, "the pairs" if one_model else f"model {value!r}")
        rows.append((value, eval_row(coded, used.cosine, level, used.skipped)))
    return rows


def comparison_rows(judgements: Judgements, scored: dict[object, Scored], level: float, *,
                    intervals: str = "marginal", replicates: int = 2000, seed: int = 42) -> list[dict]:
    """COMPARE_COLUMNS rows and ``interval``: per pair of models (in model order), Spearman's then
    Pearson's.  Marginal: each pair of models on the pairs both score.  With
    ``intervals='simultaneous'`` every row is computed on the pairs every model scores (as
    rank_models ranks them: one family of intervals is about one set of pairs), and each
    correlation's K(K-1)/2 intervals hold together: difference -/+ c se, c the single-step max-|t|
    of the models' joint normal draws (similarity_family)."""
    intervals = check_intervals(intervals)
    if intervals == "simultaneous":
        replicates, seed = check_replicates(replicates), check_seed(seed)
        scored = on_shared_pairs(scored)
    rows: dict[str, list[dict]] = {"spearman": [], "pearson": []}
    for first, second in combinations(scored, 2):
        shared, at_a, at_b = np.intersect1d(scored[first].rows, scored[second].rows, return_indices=True)
        coded = coded_pairs(judgements, shared)
        cos_a, cos_b = scored[first].cosine[at_a], scored[second].cosine[at_b]
        what = f"models {first!r} and {second!r}"
        if intervals == "simultaneous":
            what += " on the pairs every model scores"
        check_pairs(coded.score, cos_a, what)
        check_pairs(coded.score, cos_b, what)
        for name, d in difference(coded, cos_a, cos_b, level).items():
            rows[name].append({"model_a": first, "model_b": second, "correlation": name, "estimate_a": d.estimate_a,
                               "estimate_b": d.estimate_b, "difference": d.difference, "se": d.se,
                               "ci_low": d.ci_low, "ci_high": d.ci_high, "p_value": d.p_value,
                               "pairs": len(shared), "items": coded.items, "level": level,
                               "calibrated": calibrated(coded), "interval": intervals})
    for family in rows.values():
        for row, p in zip(family, adjust([r["p_value"] for r in family], "holm")):
            row["p_adjusted"] = p
    if intervals == "simultaneous":
        first_model = next(iter(scored.values()))
        coded = coded_pairs(judgements, first_model.rows)
        cosines = [used.cosine for used in scored.values()]
        for name, family in rows.items():
            _, fam = similarity_family(coded, cosines, name, replicates=replicates, seed=seed)
            low, high = simultaneous_intervals(fam, level)
            for p, row in enumerate(family):
                row.update(ci_low=float(low[p]), ci_high=float(high[p]))
    return [r for pair in zip(*rows.values()) for r in pair]


def on_shared_pairs(scored: dict[object, Scored]) -> dict[object, Scored]:
    """Each model's Scored on the pairs every model scores (the same rows, in table order)."""
    models = list(scored.values())
    shared = models[0].rows
    for used in models[1:]:
        shared = np.intersect1d(shared, used.rows)
    return {value: Scored(shared, used.cosine[np.searchsorted(used.rows, shared)], used.skipped + len(used.rows)
                          - len(shared)) for value, used in scored.items()}


def ranking_rows(judgements: Judgements, scored: dict[object, Scored], statistic: str, *, level: float,
                 replicates: int, seed: int) -> list[dict]:
    """The models' rank confidence sets by ``statistic`` (spearman or pearson) on the pairs every
    model scores (embsql.core.similarity.similarity_rows), one row per model in model order."""
    shared = on_shared_pairs(scored)
    names = list(shared)
    coded = coded_pairs(judgements, shared[names[0]].rows)
    cosines = []
    for value in names:
        check_pairs(coded.score, shared[value].cosine, f"model {value!r} on the pairs every model scores")
        cosines.append(shared[value].cosine)
    return [{**row, "model": value} for value, row in
            zip(names, similarity_rows(names, coded, cosines, statistic, level=level, replicates=replicates,
                                       seed=seed))]
