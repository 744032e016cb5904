-- Conventions
--   * Public macros are emb_*; helpers are emb__* and may change.
--   * Internal column names start with __emb_ so they cannot collide with user columns; a model column
--     (the one user column carried beside them) whose name starts with __emb_ is refused
--     (embsql: [column.reserved]) by emb__checked_source, which every public macro with a model
--     argument hands its source through; the Python faces refuse it too (embsql/io/columns.py
--     holds the prefix, emb__reserved_prefix() is generated from it).
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
-- The model argument, checked before anything is read: a model column whose name is one of the
-- function's output columns is refused (the output keeps the model column's name; outputs is the
-- function's emb__outputs_<function>(), generated from its reference block by sql/build.py).  A public macro hands its source table through this: query_table() needs
-- its argument when the query is bound, so the refusal is raised then, before any row is read
-- (a check in a filter or a join could come after another error from the data).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__checked_source(source, function, model, outputs) AS
    CASE
        WHEN list_contains(outputs, lower(model))     -- (the column quoted as SQL names it, for the message's SELECT ... AS)
            THEN emb__fail_column_collision('"' || replace(model, '"', '""') || '"', function)
        -- the prefix of the macros' own columns, which carry the model column beside them (see above)
        WHEN starts_with(lower(model), emb__reserved_prefix())
            THEN emb__fail_column_reserved('model', '"' || replace(model, '"', '""') || '"', 'starts with __emb_', function)
        ELSE source
    END;

-- ---------------------------------------------------------------------------
-- The column arguments ([role, name] pairs, a NULL name for one not given), checked as the model
-- argument is, before anything is read: the macros read every source with two stand-in columns
-- appended, __emb_null (for a column that may be missing) and __emb_all (a constant in place of a
-- missing model column), so a column of either name cannot be read and is refused, naming it
-- (rather than a binder error or a wrong refusal).  Wraps emb__checked_source's value.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__checked_names(source, function, columns) AS
    CASE
        WHEN len(list_filter(columns, lambda c: lower(c[2]) IN ('__emb_null', '__emb_all'))) > 0
            THEN emb__fail_column_reserved(
                list_filter(columns, lambda c: lower(c[2]) IN ('__emb_null', '__emb_all'))[1][1],
                '"' || replace(list_filter(columns, lambda c: lower(c[2]) IN ('__emb_null', '__emb_all'))[1][2], '"', '""') || '"',
                'has a name (__emb_null or __emb_all)', function)
        ELSE source
    END;

-- ---------------------------------------------------------------------------
-- Column names match exactly, case included, on every route (the Python faces and the UDFs too:
-- embsql.io.sources.Source.require).  A model column named in another case than the table's
-- ("Model" for model) is never taken for "no model column" (the functions whose model column is
-- optional, emb_knn_classify and the similarity functions, would pool the models): it is refused,
-- naming the column the table has.  A filter's value (true), for a WHERE.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__model_case(source, model) AS (
    SELECT CASE
        WHEN model IS NOT NULL AND __emb_exact = 1 AND __emb_any > 1
            THEN emb__fail_column_missing('model', format('''{}''', model), format('''{}''', source),
                     format('; its column ''{}'' differs only in case (column names match exactly, case included)',
                            __emb_names[1]))
        ELSE true
    END
    -- (the columns' names, from one row or none: a table, a view or a file; the __emb_null stand-in
    -- makes each COLUMNS match one column at least)
    FROM (SELECT len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) AS __emb_exact,
                 len(list_value(*COLUMNS(lambda c: lower(c) = lower(model) OR c = '__emb_null'))) AS __emb_any,
                 [alias(COLUMNS(lambda c: lower(c) = lower(model) OR c = '__emb_null'))] AS __emb_names
          FROM (SELECT 1 AS __emb_one) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true));
