-- Conventions
--   * Public macros are emb_*; helpers are emb__* and may change.
--   * Internal column names start with __emb_ so they cannot collide with user columns.
--   * Bad input raises an error whose message starts with "embsql: [kind]" (the kinds: embsql/errors.py).
--   * Column names arrive as strings.  A column that does not exist must still *bind*
--     (so that we can raise our own error instead of a binder error), hence the
--     pattern  coalesce(*COLUMNS(lambda c: c IN (name, '__emb_null')))  over a source
--     that has a NULL sentinel column appended: it expands to coalesce(col, NULL)
--     when the column exists and to coalesce(NULL) when it does not, and counting
--     the expansion tells which.
--   * Arguments are named as everywhere in embsql (embsql/vocabulary.py): source, "group", vector,
--     model, ...; GROUP is a keyword, so a call writes "group" := 'topic'.  A public macro is a thin
--     wrapper: its body only hands its arguments to an emb__ macro (whose parameters keep internal
--     names), because a parameter named like a column (qid, "group", value ...) would stand for
--     that column in the body.
--   * The optional model column keeps its own name in the output (as GROUP BY would): without one,
--     a constant column __emb_all takes its place and is dropped at the end.
--   * Each public macro is documented in a block of '-- @' comment lines just above it (see
--     embsql/sql_reference.py): the one source of sql/README.md and of the reference.


-- ---------------------------------------------------------------------------
-- The model argument, checked before anything is read.  by := (its old name) is refused, and so
-- is a model column whose name is one of the function's output columns (the output keeps the model
-- column's name; emb__output_columns is generated from the reference blocks by sql/build.py).
-- A public macro cross-joins emb__model_checks (one row, true) with its result, so the refusal
-- comes first (DuckDB builds the one-row side of the join before it reads the other), and hands
-- emb__model_column on, which is NULL for a refused call so that the rest binds whatever the name.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__model_collides(function, model) AS
    model IS NOT NULL AND list_contains(emb__output_columns(function), lower(model));

CREATE OR REPLACE TEMP MACRO emb__model_checks(function, model, "by") AS TABLE
SELECT CASE
    WHEN "by" IS NOT NULL THEN emb__fail_argument_renamed('by :=', 'model :=', function)
    WHEN emb__model_collides(function, model) THEN emb__fail_column_collision(format('"{}"', model), function)
    ELSE true
END AS __emb_ok;

CREATE OR REPLACE TEMP MACRO emb__model_column(function, model, "by") AS
    CASE WHEN "by" IS NULL AND NOT emb__model_collides(function, model) THEN model END;
