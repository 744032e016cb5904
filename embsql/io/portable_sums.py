"""Stage 1 as portable SQL: reduce an embedding table to per-group sufficient statistics.

One aggregate query, built as a sqlglot AST and written in any dialect sqlglot knows, returns per
(model value, group) the count n_g, the d per-coordinate sums of the unit vectors (the "wide" form:
one SUM per coordinate, so the output is O(G * d) whatever n is) and the within-group sum of
squares, n_g * sum_k VAR_POP(u_k).  VAR_POP is computed stably by every engine here (Welford-type
updates: DuckDB, Spark, Trino; Youngs-Cramer: PostgreSQL), where n_g - ||s_g||^2 / n_g would lose
every digit for vectors close together.  (It costs about 1.25x the plain sums on DuckDB.)  Stage 2
(embsql.core.decomposition, embsql.core.resampling) then runs on those sums in Python, the same code for
every engine.  sqlglot writes each dialect's array index base (DuckDB and Postgres count from 1,
Spark and Snowflake from 0) and its array-length function.

The query is three nested SELECTs so each coordinate is read once:
    x_k   = CAST(v[k] AS DOUBLE)                 (k = 1..d; zero past a shorter model's length)
    ss    = sum_k x_k^2,  peak = max_k |x_k| (only where ss is outside [1e-290, 1e290])
    inv   = 1 / sqrt(ss), or where ss under- or overflows 1 / sqrt(sum_k (x_k / peak)^2)
            (NULL when ss is NULL or the vector is zero: counted, not dropped)
    u_k   = (x_k / peak) * inv  (peak = 1 where ss is in range; a subnormal peak has no finite 1 / peak)
    s_k   = SUM(u_k),  within = n_g * sum_k VAR_POP(u_k)
A NaN or infinite coordinate makes inv, and so the sums, NaN, which stage 2 reports instead of a
silent wrong sum; a finite vector of any magnitude (1e-310 or 1e300) gets its unit vector.

d comes first from cheap probes (the distinct model values, then one vector of each: no pass over
the vectors), so a model of d = 384 and one of d = 768 can share a table and one pass; the
aggregate then counts NULL vectors and the shortest and longest vector per group, and stage 2
checks them against d.

On Spark, embsql.run_on does not run this aggregate: its ~4 d aggregate buffers are far over
Spark's codegen limit, and embsql.engines.spark.group_sums computes the same columns in Python
workers instead (mapInArrow).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
from sqlglot import exp

from embsql.core.labels import bad_label, sort_key
from embsql.core.sums import HUGE_SQUARED, STAGE1, TINY_SQUARED, GroupSums
from embsql.errors import BadLabelError, BadVectorError, ColumnTypeError, InputError
from embsql.io.columns import B, G


class VectorTypes(Protocol):
    """What vector_form needs of an engine (embsql.engines.dialects.Engine has it; the engines import
    this module, so it names the methods rather than the class)."""

    @property
    def name(self) -> str: ...

    @property
    def wanted(self) -> str: ...

    def vector_type_query(self, table: exp.Expression, vector: str) -> str | None: ...

    def is_number_array(self, type_name: str) -> bool: ...


def column_name(name: str) -> str:
    """A stage-1 figure's column (core.sums.STAGE1 names the figures)."""
    return f"__emb_{name}"


FIGURES = {q.name: column_name(q.name) for q in STAGE1 if q.combine != "vectors"}   # one column each
N, NULLS, LEN_MIN, LEN_MAX, BAD, WITHIN = FIGURES.values()
SUM_PREFIX = column_name(next(q.name for q in STAGE1 if q.combine == "vectors"))


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _sum_name(k: int) -> str:
    return f"{SUM_PREFIX}{k}"


def _length(vector: exp.Expression) -> exp.Expression:
    return exp.ArraySize(this=vector)


def _model_or_null(model: str | None) -> exp.Expression:
    return _col(model) if model else exp.null()


def models_query(table: exp.Expression, model: str) -> exp.Select:
    """The distinct model values: reads only the model column."""
    return exp.select(exp.alias_(_col(model), B, quoted=True)).distinct().from_(table.copy())


def length_query(table: exp.Expression, vector: str, model: str | None = None, value: object = None,
                 pgvector: bool = False) -> exp.Select:
    """The length of one non-NULL vector (of one model value): stops at the first such row.

    One vector per model sets d; the aggregate then checks every vector's length against it, so
    this probe never reads the whole vector column.  A pgvector column is read as real[] (its cast)."""
    condition: exp.Condition = exp.Not(this=exp.Is(this=_col(vector), expression=exp.null()))
    if model is not None:
        match = exp.Is(this=_col(model), expression=exp.null()) if value is None else exp.EQ(
            this=_col(model), expression=exp.convert(value))
        condition = exp.and_(match, condition)
    read = exp.Cast(this=_col(vector), to=exp.DataType.build("REAL[]", dialect="postgres")) if pgvector else _col(vector)
    return exp.select(exp.alias_(_length(read), LEN_MIN, quoted=True)).from_(table.copy()).where(
        condition).limit(1)


@dataclass(frozen=True)
class Dimensions:
    """The vector length of each model value (one entry, key None, without a model column)."""

    by_value: dict

    @property
    def low(self) -> int:
        return min(self.by_value.values())

    @property
    def high(self) -> int:
        return max(self.by_value.values())


def dimensions_from_lengths(lengths: dict, vector: str, model: str | None) -> Dimensions:
    """{model value: the length_query result (an Arrow table of at most one row)} -> Dimensions."""
    if not lengths:
        raise InputError("the source has no rows")
    dims = {}
    for value, result in lengths.items():
        where = "" if model is None else f" for {model} = {value!r}"
        found = result.column(LEN_MIN).to_pylist() if result.num_rows else []
        if not found:
            raise (BadVectorError(f"vector column {vector!r} has only NULL vectors{where}") if model else
                   InputError("the source has no rows with a vector"))
        if not found[0]:
            raise BadVectorError(f"vector column {vector!r} has an empty vector{where}")
        dims[value] = int(found[0])
    return Dimensions(dims)


def group_sums_query(table: exp.Expression, group: str, vector: str, dims: Dimensions,
                     model: str | None = None, fence: bool = False) -> exp.Select:
    """The stage-1 aggregate: one row per (model, group) with the figures of core.sums.STAGE1: n_g,
    the checks, the within-group sum of squares and the d coordinate sums.

    ``fence`` (PostgreSQL) guards against two O(d^2)-per-row costs there.  PostgreSQL pulls plain
    subqueries up into their parent and has no common-subexpression elimination, so the subqueries
    that compute max |x_k| and 1/||x|| get OFFSET 0, or each of the d sums would recompute the
    d-term norm (and the scaled norm would repeat the d-term maximum d times).  And
    a vector over 2 kB is stored compressed out of line (TOAST), and every v[k] would decompress it
    again: a slice v[1:d] in an OFFSET 0 subquery decompresses it once per row (46x faster at
    d = 384, 2000 rows).  Spark, Trino and DuckDB neither inline a reused expression nor re-read."""
    # Every node is built fresh and every builder call passes copy=False: at d = 768 the tree has
    # tens of thousands of nodes, and sqlglot's default (a deep copy per chained call) cost seconds.
    def vec() -> exp.Expression:
        return _col("__emb_v") if fence else _col(vector)

    length = _length(_col(vector))       # of the vector as stored (a slice would hide a longer one)
    if fence:
        sliced = exp.Bracket(this=_col(vector), expressions=[exp.Slice(
            this=exp.Literal.number(1), expression=exp.Literal.number(dims.high))], offset=1)
        table = exp.select("*", exp.alias_(sliced, "__emb_v", quoted=True, copy=False), copy=False).from_(
            table.copy(), copy=False).offset(0, copy=False).subquery("__emb_detoasted", copy=False)
    else:
        table = table.copy()
    coordinates = []
    for k in range(1, dims.high + 1):
        # safe: a vector shorter than d reads NULL (Spark, Trino and BigQuery would raise), which the
        # length check of stage 2 then names
        element: exp.Expr = exp.Cast(this=exp.Bracket(this=vec(), expressions=[exp.Literal.number(k)], offset=1, safe=True),
                           to=exp.DataType.build("DOUBLE"))
        if k > dims.low:  # only a longer model has coordinate k; read it only where it exists
            element = exp.Case(ifs=[exp.If(this=exp.GTE(this=_length(vec()), expression=exp.Literal.number(k)),
                                           true=element)], default=exp.Literal.number(0))
        coordinates.append(exp.alias_(element, f"x{k}", quoted=True, copy=False))
    keys = [exp.alias_(_model_or_null(model), B, quoted=True, copy=False), exp.alias_(_col(group), G, quoted=True, copy=False)]
    # NULL vectors and each vector's length travel up to the aggregate, which checks them per group
    checks = [exp.alias_(exp.Case(ifs=[exp.If(this=exp.Is(this=vec(), expression=exp.null()),
                                              true=exp.Literal.number(1))], default=exp.Literal.number(0)),
                         "is_null", quoted=True, copy=False),
              exp.alias_(length, "len", quoted=True, copy=False)]
    inner = exp.select(*keys, *checks, *coordinates, copy=False).from_(table, copy=False)
    if fence:   # each v[k] once per row: PostgreSQL would inline x_k into ss, peak and every sum
        inner = inner.offset(0, copy=False)

    def xs() -> list[exp.Column]:
        return [_col(f"x{k}") for k in range(1, dims.high + 1)]

    def carried() -> list[exp.Column]:
        return [_col(B), _col(G), _col("is_null"), _col("len"), *xs()]

    def plain() -> exp.Expr:
        return exp.and_(exp.GT(this=_col("ss"), expression=exp.Literal.number(repr(TINY_SQUARED))),
                        exp.LT(this=_col("ss"), expression=exp.Literal.number(repr(HUGE_SQUARED))), copy=False)

    def select(*columns: exp.Expr, source: exp.Select, alias: str) -> exp.Select:
        return exp.select(*columns, copy=False).from_(source.subquery(alias, copy=False), copy=False)

    # the largest |x_k|, read only for a vector whose ||x||^2 under- or overflows
    absolute = [exp.Abs(this=x) for x in xs()]
    peak = exp.Case(ifs=[exp.If(this=plain(), true=exp.Literal.number(1))],
                    default=exp.Greatest(this=absolute[0], expressions=absolute[1:]))
    middle = select(*carried(), exp.alias_(_sum_of_squares(xs), "ss", quoted=True, copy=False),
                    source=inner, alias="__emb_x")
    middle = select(*carried(), _col("ss"), exp.alias_(peak, "peak", quoted=True, copy=False),
                    source=middle, alias="__emb_ss")
    if fence:
        middle = middle.offset(0, copy=False)
    scaled = _sum_of_squares(lambda: [exp.Paren(this=exp.Div(this=x, expression=_col("peak"))) for x in xs()])
    inverse = exp.Case(ifs=[exp.If(this=plain(), true=exp.Div(this=exp.Literal.number(1),
                                                               expression=exp.Sqrt(this=_col("ss")))),
                            exp.If(this=exp.GT(this=_col("peak"), expression=exp.Literal.number(0)),
                                   true=exp.Div(this=exp.Literal.number(1), expression=exp.Sqrt(this=scaled)))])
    normed = select(*carried(), _col("peak"), exp.alias_(inverse, "inv", quoted=True, copy=False),
                    source=middle, alias="__emb_peak")
    if fence:
        normed = normed.offset(0, copy=False)

    # (x_k / peak) * inv: peak is 1 (exact) for a plain vector; for a scaled one, 1 / (peak * ||x / peak||)
    # would overflow for a subnormal peak (1e-310 x v), and x_k / peak never does.  A zero vector has
    # peak 0 and inv NULL: NULLIF keeps its terms NULL (PostgreSQL raises on a division by zero)
    def units() -> list[exp.Expression]:
        peak = exp.Nullif(this=_col("peak"), expression=exp.Literal.number(0))
        return [exp.Mul(this=exp.Paren(this=exp.Div(this=x, expression=peak)), expression=_col("inv"))
                for x in xs()]

    per_row = {"nulls": _col("is_null"), "len_min": _col("len"), "len_max": _col("len"),
               "bad": exp.Case(ifs=[exp.If(this=exp.Is(this=_col("inv"), expression=exp.null()),
                                           true=exp.Literal.number(1))], default=exp.Literal.number(0))}
    spread = exp.Mul(this=exp.Count(this=exp.Star()),          # n_g * sum_k VAR_POP(u_k)
                     expression=exp.Paren(this=_plus([exp.VariancePop(this=u) for u in units()])))
    figures = stage1_figures(per_row, {"spread": [spread], "vectors": [exp.Sum(this=u) for u in units()]})
    return (exp.select(_col(B), _col(G), *figures, copy=False)
            .from_(normed.subquery("__emb_unit_rows", copy=False), copy=False)
            .group_by(_col(B), _col(G), copy=False))


AGGREGATES: dict[str, type[exp.AggFunc]] = {"sum": exp.Sum, "min": exp.Min, "max": exp.Max}


def stage1_figures(per_row: dict[str, exp.Expression], computed: dict[str, list[exp.Expression]]) -> list[exp.Expr]:
    """The select list of core.sums.STAGE1's figures, in its order and columns: COUNT(*) for the
    count, the declared aggregate (SUM, MIN, MAX) of ``per_row[name]`` for the checks, and
    ``computed[combine]`` as given for the spread and the coordinate sums (empty where an engine
    returns something else in their place: pgvector's mean)."""
    figures: list[exp.Expr] = []
    for q in STAGE1:
        if q.combine == "count":
            figures.append(exp.alias_(exp.Count(this=exp.Star()), FIGURES[q.name], quoted=True, copy=False))
        elif q.combine in AGGREGATES:
            figures.append(exp.alias_(AGGREGATES[q.combine](this=per_row[q.name]), FIGURES[q.name], quoted=True,
                                      copy=False))
        elif q.combine == "vectors":
            figures += [exp.alias_(value, _sum_name(k), quoted=True, copy=False)
                        for k, value in enumerate(computed[q.combine], start=1)]
        else:
            figures += [exp.alias_(value, FIGURES[q.name], quoted=True, copy=False) for value in computed[q.combine]]
    return figures


def _plus(terms: list[exp.Expression]) -> exp.Expression:
    """t_1 + ... + t_d as a balanced tree, a + b + (c + d): depth log2(d), not d.

    DuckDB's common-subexpression pass is quadratic in the depth of a left-deep chain: at d = 768
    it took 9 of the aggregate's 10.7 s (1200 rows; the execution itself 0.1 s), the balanced tree
    0.1 s.  Only a composite right operand needs its parentheses (+ is left-associative)."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    right = _plus(terms[half:])
    return exp.Add(this=_plus(terms[:half]), expression=exp.Paren(this=right) if len(terms) - half > 1 else right)


def _sum_of_squares(terms: Callable[[], Sequence[exp.Expression]]) -> exp.Expression:
    """sum_k t_k * t_k, from ``terms()``, which builds the d terms afresh (each node has one parent)."""
    return _plus([exp.Mul(this=a, expression=b) for a, b in zip(terms(), terms())])


def group_sums_from_result(result: pa.Table, group: str, vector: str, dims: Dimensions,
                           model: str | None = None) -> list[tuple[object, GroupSums]]:
    """Stage 2's input: [(model value, GroupSums)] in model order, after checking what stage 1 counted."""
    by_values = result.column(B).to_pylist()
    labels = result.column(G).to_pylist()
    counts = np.asarray(result.column(N).to_pylist(), dtype=np.int64)
    bad = np.asarray(result.column(BAD).to_pylist(), dtype=np.int64)
    within = np.asarray(result.column(WITHIN).to_pylist(), dtype=np.float64)
    nulls = result.column(NULLS).to_pylist()
    shortest, longest = result.column(LEN_MIN).to_pylist(), result.column(LEN_MAX).to_pylist()
    sums = np.column_stack([np.asarray(result.column(_sum_name(k)).to_numpy(zero_copy_only=False), dtype=np.float64)
                            for k in range(1, dims.high + 1)]) if len(result) else np.zeros((0, dims.high))
    out = []
    for value in sorted(set(by_values), key=sort_key):
        rows = [i for i, b in enumerate(by_values) if b == value or (b is None and value is None)]
        where = "" if model is None else f" for {model} = {value!r}"
        d = dims.by_value[value if model else None]
        for i in rows:
            if bad_label(labels[i]):       # the label rule: NULL and NaN labels are errors
                raise BadLabelError(f"group column {group!r} has {counts[i]} {bad_label(labels[i])} label(s){where}")
            if nulls[i]:
                raise BadVectorError(f"vector column {vector!r} has {nulls[i]} NULL vector(s) in group {labels[i]!r}"
                                     f"{where}; vectors must be non-NULL, finite and of non-zero length")
            if shortest[i] != d or longest[i] != d:
                odd = shortest[i] if shortest[i] != d else longest[i]
                raise BadVectorError(
                    f"vector column {vector!r} has a vector of length {odd} in group {labels[i]!r}{where}; other "
                    f"vectors have length {d}, and every vector of a model must have the same length"
                    + ("" if model else " (if the table holds several models, name their column: model=...)"))
            if bad[i]:
                raise BadVectorError(f"vector column {vector!r} has {bad[i]} vector(s) with a NULL element or of zero "
                                     f"length in group {labels[i]!r}{where}; vectors must be non-NULL, finite and of "
                                     "non-zero length")
            if not np.isfinite(within[i]) or not np.isfinite(sums[i]).all():
                raise BadVectorError(f"vector column {vector!r} has a NaN or infinite coordinate (or a norm that "
                                     f"overflows) in group {labels[i]!r}{where}; vectors must be finite")
        order = sorted(rows, key=lambda i: sort_key(labels[i]))
        group_labels = np.empty(len(order), dtype=object)
        group_labels[:] = [labels[i] for i in order]
        out.append((value if model else None, GroupSums(group_labels, counts[order], sums[order, :d],
                                                     np.maximum(within[order], 0.0))))
    return out


# ---------------------------------------------------------------- the vector column's type (engines)

TYPE, VERSION, MEAN = "__emb_type", "__emb_version", "__emb_mean"
PGVECTOR_TYPES = ("vector", "halfvec")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def pgvector_sums_query(table: exp.Expression, group: str, vector: str, dims: Dimensions, *,
                        model: str | None = None, version: str = "0.6.2", halfvec: bool = False) -> str:
    """Stage 1 on a pgvector column: per (model, group) the counts, the checks and the mean unit vector.

    pgvector's ``avg(vector)`` adds in double precision and rounds the mean to float32 once;
    its ``sum(vector)`` adds in float32 (a rounding per row: at n_g = 1000 the sums would carry
    about 1e-5 relative error), so the sums are n_g times the mean (sums_from_means).  The unit
    vector: pgvector 0.7 has ``l2_normalize``; 0.6 has neither it nor a vector-times-scalar, so
    it is v * array_fill(1 / ||v||)::vector, element-wise in float32 (||v|| from vector_norm, in
    double), through a power-of-ten scale where 1 / ||v|| would leave float32's normal range.
    A vector of another length than its model's d stays out of the mean and is counted by the
    length check (pgvector's avg would otherwise stop at the first such row with its own error);
    a zero vector is counted as bad.  halfvec (pgvector 0.7) is read as vector."""
    def v() -> exp.Column:
        return _col("__emb_v")

    def length() -> exp.Column:
        return _col("__emb_len")

    def norm() -> exp.Column:
        return _col("__emb_norm")

    def number(x: object) -> exp.Expression:
        return exp.Literal.number(str(x))

    def as_vector(x: exp.Expression) -> exp.Cast:
        return exp.Cast(this=x, to=exp.DataType.build("vector", dialect="postgres"))

    def source() -> exp.Expression:
        return as_vector(_col(vector)) if halfvec else _col(vector)

    def call(name: str, *args: exp.Expression) -> exp.Anonymous:      # pgvector's own functions
        return exp.Anonymous(this=name, expressions=list(args))

    unit: exp.Expression
    if version_tuple(version) >= (0, 7):
        unit = call("l2_normalize", v())
    else:
        def scaled(x: exp.Expression, factor: exp.Expression) -> exp.Expression:
            fill = call("array_fill", exp.Cast(this=exp.Paren(this=factor), to=exp.DataType.build("REAL")),
                        exp.Array(expressions=[length()]))
            return exp.Mul(this=x, expression=as_vector(fill))

        def below_one(then: str, otherwise: str) -> exp.Case:
            return exp.Case(ifs=[exp.If(this=exp.LT(this=norm(), expression=number(1)), true=number(then))],
                            default=number(otherwise))

        unit = exp.Case(ifs=[exp.If(this=exp.Between(this=norm(), low=number("1e-30"), high=number("1e30")),
                                    true=scaled(v(), exp.Div(this=number(1), expression=norm())))],
                        default=scaled(scaled(v(), below_one("1e30", "1e-30")),
                                       exp.Div(this=below_one("1e-30", "1e30"), expression=norm())))
    d: exp.Expression = number(dims.high) if dims.low == dims.high else exp.Case(
        this=_col(B), ifs=[exp.If(this=exp.convert(value), true=number(n)) for value, n in dims.by_value.items()])

    def flag(condition: exp.Expr) -> exp.Case:
        return exp.Case(ifs=[exp.If(this=condition, true=number(1))], default=number(0))

    per_row = {"nulls": flag(exp.Is(this=v(), expression=exp.null())), "len_min": length(), "len_max": length(),
               "bad": flag(exp.and_(exp.Not(this=exp.Is(this=v(), expression=exp.null())),
                                    exp.Not(this=exp.GT(this=norm(), expression=number(0)))))}
    usable = exp.and_(exp.EQ(this=length(), expression=d), exp.GT(this=norm(), expression=number(0)))
    mean = exp.Cast(this=exp.Avg(this=exp.Case(ifs=[exp.If(this=usable, true=unit)])),
                    to=exp.DataType.build("REAL[]", dialect="postgres"))
    rows = exp.select(exp.alias_(_model_or_null(model), B, quoted=True), exp.alias_(_col(group), G, quoted=True),
                      exp.alias_(source(), "__emb_v", quoted=True),
                      exp.alias_(call("vector_dims", source()), "__emb_len", quoted=True),
                      exp.alias_(call("vector_norm", source()), "__emb_norm", quoted=True)).from_(table.copy())
    # the mean stands for the spread and the coordinate sums, which sums_from_means derives from it
    figures = stage1_figures(per_row, {"spread": [], "vectors": []})
    return (exp.select(_col(B), _col(G), *figures, exp.alias_(mean, MEAN, quoted=True))
            .from_(rows.subquery("__emb_rows")).group_by(_col(B), _col(G)).sql("postgres", normalize_functions=False))


def sums_from_means(result: pa.Table, dims: Dimensions) -> pa.Table:
    """pgvector_sums_query's result in group_sums_query's columns: s_k = n_g * mean_k and the
    within-group sum of squares n_g (1 - ||mean||^2) (for unit vectors sum_i ||u_i - mean||^2)."""
    counts = np.asarray(result.column(N).to_pylist(), dtype=np.float64)
    means = np.full((len(result), dims.high), np.nan)
    for i, mean in enumerate(result.column(MEAN).to_pylist()):
        if mean is not None:
            means[i, :len(mean)] = mean
            means[i, len(mean):] = 0.0            # a shorter model's coordinates past its d
    sums = means * counts[:, None]
    within = counts * (1.0 - np.einsum("ij,ij->i", means, means))
    columns = {B: result.column(B), G: result.column(G)}
    for q in STAGE1:     # the counts and checks as pgvector's query returned them
        if q.combine == "spread":
            columns[WITHIN] = pa.array(within)
        elif q.combine == "vectors":
            columns.update({_sum_name(k): pa.array(sums[:, k - 1]) for k in range(1, dims.high + 1)})
        else:
            columns[FIGURES[q.name]] = result.column(FIGURES[q.name])
    return pa.table(columns)


@dataclass(frozen=True)
class VectorForm:
    """How an engine stores the vector column: its type name there (None on DuckDB, which reads
    its sources itself) and, for pgvector's types, the extension's version."""

    type_name: str | None = None
    pgvector_version: str | None = None

    @property
    def pgvector(self) -> bool:
        return self.type_name in PGVECTOR_TYPES


def vector_form(fetch: Callable[[str], pa.Table], table: exp.Expression, vector: str, engine: VectorTypes,
                name: str) -> VectorForm:
    """The vector column's form on ``engine`` (one row read through ``fetch``); a column that is
    not an array of numbers (or a pgvector vector) is refused naming the engine and the column."""
    sql = engine.vector_type_query(table, vector)
    rows = fetch(sql).to_pylist() if sql else []
    if not rows:               # DuckDB, or no rows (the probes say so)
        return VectorForm()
    type_name = rows[0][TYPE]
    if not engine.is_number_array(type_name):
        raise ColumnTypeError(f"{engine.name}: vector column {vector!r} of {name!r} is {type_name}; "
                              f"it must be {engine.wanted}")
    return VectorForm(type_name.strip().lower(), rows[0][VERSION])
