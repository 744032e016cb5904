-- What every Python UDF returns, and emb_unit.  Loaded by embsql.register(con) after the UDFs
-- (udfs/*.py), before the macros built on them.
--
-- DuckDB 2.0 wraps any exception a Python UDF raises, whatever its type, as
--   Invalid Input Error: Python exception occurred while executing the UDF: ValueError: <message>
-- so an embsql error raised in a UDF would not read as the macros' errors do.  A UDF kernel
-- therefore returns STRUCT(error VARCHAR, value <its result>) (embsql/io/udf_errors.py): error is
-- NULL, or the 'embsql: [kind] message' of the check that failed, which the macro raises with
-- error() in a filter (never pruned, whatever columns a query reads), so that it reads
--   Invalid Input Error: embsql: [kind] message
-- like every other embsql error.
CREATE OR REPLACE TEMP MACRO emb__udf_ok(result) AS
    CASE WHEN result.error IS NOT NULL THEN error(result.error) ELSE true END;

-- @function emb_unit(vector)
-- The vector scaled to unit length (by way of its largest coordinate when the squared norm would
-- overflow or underflow).  A scalar function: one value per row.
-- @param vector a vector (`DOUBLE[]`, or any list of numbers)
-- @returns DOUBLE[] the unit vector
-- @notes
-- Errors: a NULL, zero-length or non-finite vector (`vector.null`, `vector.zero`,
-- `vector.nonfinite`).
-- @example
-- SELECT emb_unit([3.0, 4.0]) AS z;
-- -- [0.6, 0.8]
CREATE OR REPLACE TEMP MACRO emb_unit(vector) AS
    -- a lambda over a one-element list evaluates the UDF once, and checks its result
    list_transform([emb__unit(vector)], lambda r: CASE WHEN r.error IS NOT NULL THEN error(r.error) ELSE r.value END)[1];
