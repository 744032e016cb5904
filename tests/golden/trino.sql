-- stage 1: n_g and coordinate sums of the unit vectors per (model, group)
SELECT
  "__emb_b",
  "__emb_g",
  COUNT(*) AS "__emb_n",
  SUM("is_null") AS "__emb_nulls",
  MIN("len") AS "__emb_len_min",
  MAX("len") AS "__emb_len_max",
  SUM(CASE WHEN "inv" IS NULL THEN 1 ELSE 0 END) AS "__emb_bad",
  COUNT(*) * (
    VAR_POP((
      CAST("x1" AS DOUBLE) / NULLIF("peak", 0)
    ) * "inv") + (
      VAR_POP((
        CAST("x2" AS DOUBLE) / NULLIF("peak", 0)
      ) * "inv") + VAR_POP((
        CAST("x3" AS DOUBLE) / NULLIF("peak", 0)
      ) * "inv")
    )
  ) AS "__emb_within",
  SUM((
    CAST("x1" AS DOUBLE) / NULLIF("peak", 0)
  ) * "inv") AS "__emb_s1",
  SUM((
    CAST("x2" AS DOUBLE) / NULLIF("peak", 0)
  ) * "inv") AS "__emb_s2",
  SUM((
    CAST("x3" AS DOUBLE) / NULLIF("peak", 0)
  ) * "inv") AS "__emb_s3"
FROM (
  SELECT
    "__emb_b",
    "__emb_g",
    "is_null",
    "len",
    "x1",
    "x2",
    "x3",
    "peak",
    CASE
      WHEN "ss" > 1e-290 AND "ss" < 1e+290
      THEN CAST(1 AS DOUBLE) / SQRT("ss")
      WHEN "peak" > 0
      THEN CAST(1 AS DOUBLE) / SQRT(
        (
          CAST("x1" AS DOUBLE) / "peak"
        ) * (
          CAST("x1" AS DOUBLE) / "peak"
        ) + (
          (
            CAST("x2" AS DOUBLE) / "peak"
          ) * (
            CAST("x2" AS DOUBLE) / "peak"
          ) + (
            CAST("x3" AS DOUBLE) / "peak"
          ) * (
            CAST("x3" AS DOUBLE) / "peak"
          )
        )
      )
    END AS "inv"
  FROM (
    SELECT
      "__emb_b",
      "__emb_g",
      "is_null",
      "len",
      "x1",
      "x2",
      "x3",
      "ss",
      CASE
        WHEN "ss" > 1e-290 AND "ss" < 1e+290
        THEN 1
        ELSE GREATEST(ABS("x1"), ABS("x2"), ABS("x3"))
      END AS "peak"
    FROM (
      SELECT
        "__emb_b",
        "__emb_g",
        "is_null",
        "len",
        "x1",
        "x2",
        "x3",
        "x1" * "x1" + (
          "x2" * "x2" + "x3" * "x3"
        ) AS "ss"
      FROM (
        SELECT
          "model" AS "__emb_b",
          "topic" AS "__emb_g",
          CASE WHEN "emb" IS NULL THEN 1 ELSE 0 END AS "is_null",
          CARDINALITY("emb") AS "len",
          CAST(ELEMENT_AT("emb", 1) AS DOUBLE) AS "x1",
          CAST(ELEMENT_AT("emb", 2) AS DOUBLE) AS "x2",
          CASE
            WHEN CARDINALITY("emb") >= 3
            THEN CAST(ELEMENT_AT("emb", 3) AS DOUBLE)
            ELSE 0
          END AS "x3"
        FROM (
          SELECT
            *
          FROM "emb"
          WHERE
            "split" = 'test'
        ) AS __emb_source
      ) AS __emb_x
    ) AS __emb_ss
  ) AS __emb_peak
) AS __emb_unit_rows
GROUP BY
  "__emb_b",
  "__emb_g";
