-- stage 1: n_g and coordinate sums of the unit vectors per (model, group)
SELECT
  `__emb_b`,
  `__emb_g`,
  COUNT(*) AS `__emb_n`,
  SUM(`is_null`) AS `__emb_nulls`,
  MIN(`len`) AS `__emb_len_min`,
  MAX(`len`) AS `__emb_len_max`,
  SUM(CASE WHEN `inv` IS NULL THEN 1 ELSE 0 END) AS `__emb_bad`,
  COUNT(*) * (
    VAR_POP((
      `x1` / NULLIF(`peak`, 0)
    ) * `inv`) + (
      VAR_POP((
        `x2` / NULLIF(`peak`, 0)
      ) * `inv`) + VAR_POP((
        `x3` / NULLIF(`peak`, 0)
      ) * `inv`)
    )
  ) AS `__emb_within`,
  SUM((
    `x1` / NULLIF(`peak`, 0)
  ) * `inv`) AS `__emb_s1`,
  SUM((
    `x2` / NULLIF(`peak`, 0)
  ) * `inv`) AS `__emb_s2`,
  SUM((
    `x3` / NULLIF(`peak`, 0)
  ) * `inv`) AS `__emb_s3`
FROM (
  SELECT
    `__emb_b`,
    `__emb_g`,
    `is_null`,
    `len`,
    `x1`,
    `x2`,
    `x3`,
    `peak`,
    CASE
      WHEN `ss` > 1e-290 AND `ss` < 1e+290
      THEN 1 / SQRT(`ss`)
      WHEN `peak` > 0
      THEN 1 / SQRT(
        (
          `x1` / `peak`
        ) * (
          `x1` / `peak`
        ) + (
          (
            `x2` / `peak`
          ) * (
            `x2` / `peak`
          ) + (
            `x3` / `peak`
          ) * (
            `x3` / `peak`
          )
        )
      )
    END AS `inv`
  FROM (
    SELECT
      `__emb_b`,
      `__emb_g`,
      `is_null`,
      `len`,
      `x1`,
      `x2`,
      `x3`,
      `ss`,
      CASE
        WHEN `ss` > 1e-290 AND `ss` < 1e+290
        THEN 1
        ELSE GREATEST(ABS(`x1`), ABS(`x2`), ABS(`x3`))
      END AS `peak`
    FROM (
      SELECT
        `__emb_b`,
        `__emb_g`,
        `is_null`,
        `len`,
        `x1`,
        `x2`,
        `x3`,
        `x1` * `x1` + (
          `x2` * `x2` + `x3` * `x3`
        ) AS `ss`
      FROM (
        SELECT
          `model` AS `__emb_b`,
          `topic` AS `__emb_g`,
          CASE WHEN `emb` IS NULL THEN 1 ELSE 0 END AS `is_null`,
          ARRAY_LENGTH(`emb`) AS `len`,
          CAST(`emb`[SAFE_ORDINAL(1)] AS FLOAT64) AS `x1`,
          CAST(`emb`[SAFE_ORDINAL(2)] AS FLOAT64) AS `x2`,
          CASE
            WHEN ARRAY_LENGTH(`emb`) >= 3
            THEN CAST(`emb`[SAFE_ORDINAL(3)] AS FLOAT64)
            ELSE 0
          END AS `x3`
        FROM (
          SELECT
            *
          FROM `emb`
          WHERE
            `split` = 'test'
        ) AS __emb_source
      ) AS __emb_x
    ) AS __emb_ss
  ) AS __emb_peak
) AS __emb_unit_rows
GROUP BY
  `__emb_b`,
  `__emb_g`;
