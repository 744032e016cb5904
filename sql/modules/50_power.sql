-- ---------------------------------------------------------------------------
-- Power: groups needed to detect a correlation rho between a per-group figure (W_g)
-- and a per-group score, by Fisher's z:
--   G = ((z_{1-alpha/2} + z_{power}) / atanh(rho))^2 + 3,   and inversely
--   |rho| = tanh((z_{1-alpha/2} + z_{power}) / sqrt(G - 3)).
-- ---------------------------------------------------------------------------

-- The standard normal quantile: Wichura's algorithm AS241 (PPND16, Applied Statistics 37,
-- 1988), relative accuracy about 1e-16.  Split into helpers because a macro has no variables.
-- A(r)/B(r): for |q| <= 0.425 with q = p - 0.5, z = q A(r)/B(r) where r = 0.180625 - q^2
CREATE OR REPLACE TEMP MACRO emb__ppnd16_central(r) AS
    (((((((r * 2509.0809287301226727e0 + 33430.575583588128105e0) * r + 67265.770927008700853e0)
        * r + 45921.953931549871457e0) * r + 13731.693765509461125e0)
        * r + 1971.5909503065514427e0) * r + 133.14166789178437745e0)
        * r + 3.387132872796366608e0)
    / (((((((r * 5226.495278852545925e0 + 28729.085735721942674e0) * r + 39307.89580009271061e0)
        * r + 21213.794301586595867e0) * r + 5394.1960214247511077e0)
        * r + 687.1870074920579083e0) * r + 42.313330701600911252e0)
        * r + 1.0e0);

-- C(s)/D(s): the tails, r = sqrt(-ln(min(p, 1-p))) <= 5, s = r - 1.6; z = +-C(s)/D(s)
CREATE OR REPLACE TEMP MACRO emb__ppnd16_near(s) AS
    (((((((s * 7.7454501427834140764e-4 + 0.0227238449892691845833e0) * s + 0.24178072517745061177e0)
        * s + 1.27045825245236838258e0) * s + 3.64784832476320460504e0)
        * s + 5.7694972214606914055e0) * s + 4.6303378461565452959e0)
        * s + 1.42343711074968357734e0)
    / (((((((s * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * s + 0.0151986665636164571966e0)
        * s + 0.14810397642748007459e0) * s + 0.68976733498510000455e0)
        * s + 1.6763848301838038494e0) * s + 2.05319162663775882187e0)
        * s + 1.0e0);

-- E(s)/F(s): the far tails (p or 1-p below about 1e-11), r > 5, s = r - 5
CREATE OR REPLACE TEMP MACRO emb__ppnd16_far(s) AS
    (((((((s * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * s + 0.0012426609473880784386e0)
        * s + 0.026532189526576123093e0) * s + 0.29656057182850489123e0)
        * s + 1.7848265399172913358e0) * s + 5.4637849111641143699e0)
        * s + 6.6579046435011037772e0)
    / (((((((s * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * s + 1.8463183175100546818e-5)
        * s + 7.868691311456132591e-4) * s + 0.0148753612908506148525e0)
        * s + 0.13692988092273580531e0) * s + 0.59983220655588793769e0)
        * s + 1.0e0);

CREATE OR REPLACE TEMP MACRO emb__ppnd16(p) AS
    CASE
        WHEN abs(p - 0.5e0) <= 0.425e0
            THEN (p - 0.5e0) * emb__ppnd16_central(0.180625e0 - (p - 0.5e0) * (p - 0.5e0))
        WHEN p < 0.5e0 AND sqrt(-ln(p)) <= 5.0e0 THEN -emb__ppnd16_near(sqrt(-ln(p)) - 1.6e0)
        WHEN p < 0.5e0 THEN -emb__ppnd16_far(sqrt(-ln(p)) - 5.0e0)
        WHEN sqrt(-ln(1.0e0 - p)) <= 5.0e0 THEN emb__ppnd16_near(sqrt(-ln(1.0e0 - p)) - 1.6e0)
        ELSE emb__ppnd16_far(sqrt(-ln(1.0e0 - p)) - 5.0e0)
    END;

-- @function emb_normal_quantile(p)
-- The standard normal quantile z_p (the inverse of the normal CDF), by Wichura's algorithm AS241
-- (PPND16): about 16 significant digits over the whole of 0 < p < 1.  NULL gives NULL.
-- @param p a probability, 0 < p < 1 (outside, including NaN, is an error)
-- @returns DOUBLE z_p
-- @example
-- SELECT emb_normal_quantile(0.975) AS z, emb_normal_quantile(1e-12) AS tail;
-- -- z 1.959963984540054, tail -7.034483825301132
CREATE OR REPLACE TEMP MACRO emb_normal_quantile(p) AS
    CASE
        WHEN p IS NULL THEN NULL::DOUBLE
        WHEN NOT (p::DOUBLE > 0 AND p::DOUBLE < 1) THEN error(format(
            'embsql: [argument.range] normal quantile needs 0 < p < 1, got p = {}', p))
        ELSE emb__ppnd16(p::DOUBLE)
    END;

-- The checks shared by both power macros; what names the failing argument and value.
CREATE OR REPLACE TEMP MACRO emb__power_check(alpha, power) AS
    CASE
        WHEN alpha IS NULL OR NOT (alpha::DOUBLE > 0 AND alpha::DOUBLE < 1) THEN error(format(
            'embsql: [argument.range] alpha must be in (0, 1), got alpha = {}', coalesce(alpha::VARCHAR, 'NULL')))
        WHEN power IS NULL OR NOT (power::DOUBLE > 0 AND power::DOUBLE < 1) THEN error(format(
            'embsql: [argument.range] power must be in (0, 1), got power = {}', coalesce(power::VARCHAR, 'NULL')))
        ELSE emb_normal_quantile(1.0 - alpha::DOUBLE / 2.0) + emb_normal_quantile(power::DOUBLE)
    END;

-- In both table macros the checked figure is also a filter, so the checks hold whatever columns a
-- query reads (a column that is not read is pruned, a filter never is).
-- @function emb_power_groups(rho, alpha := 0.05, power := 0.8)
-- The number of groups needed to detect a correlation `rho` between a per-group figure (W_g) and a
-- per-group score with a two-sided test at level `alpha` with the given `power` (Fisher's z):
-- G = ((z_{1−alpha/2} + z_{power}) / artanh(rho))² + 3.  One row.
-- @param rho the correlation to detect, 0 < rho < 1
-- @param alpha the significance level of the two-sided test, 0 < alpha < 1
-- @param power the power the design should reach, 0 < power < 1
-- @column groups_exact G as computed
-- @column groups G rounded up: the number to plan for
-- @column rho the input rho
-- @column alpha the input alpha
-- @column power the input power
-- @notes
-- Errors: `rho`, `alpha` or `power` NULL or outside (0, 1).  rho = 0.3 with the defaults gives
-- 84.93, 85; with `power := 0.9` 112.68, 113.
-- @example
-- SELECT * FROM emb_power_groups(0.5);
-- -- groups_exact 29.0123, groups 30, rho 0.5, alpha 0.05, power 0.8
CREATE OR REPLACE TEMP MACRO emb_power_groups(rho, alpha := 0.05, power := 0.8) AS TABLE
SELECT
    __emb_g AS groups_exact,
    ceil(__emb_g)::BIGINT AS groups,
    rho::DOUBLE AS rho,
    alpha::DOUBLE AS alpha,
    power::DOUBLE AS power
FROM (
    SELECT
        CASE
            WHEN rho IS NULL OR NOT (rho::DOUBLE > 0 AND rho::DOUBLE < 1) THEN error(format(
                'embsql: [argument.range] rho must be in (0, 1), got rho = {}', coalesce(rho::VARCHAR, 'NULL')))
            ELSE pow(emb__power_check(alpha, power) / atanh(rho::DOUBLE), 2) + 3.0
        END AS __emb_g
)
WHERE __emb_g IS NOT NULL;

-- @function emb_power_rho(groups, alpha := 0.05, power := 0.8)
-- The inverse of `emb_power_groups`: the smallest |rho| that `groups` groups detect,
-- tanh((z_{1−alpha/2} + z_{power}) / √(G − 3)).  One row.
-- @param groups the number of groups, a whole number greater than 3
-- @param alpha the significance level of the two-sided test, 0 < alpha < 1
-- @param power the power the design should reach, 0 < power < 1
-- @column rho the smallest detectable |rho|
-- @column groups the input groups
-- @column alpha the input alpha
-- @column power the input power
-- @notes
-- Errors: `groups` NULL, not a whole number, or not greater than 3; `alpha` or `power` NULL or
-- outside (0, 1).  With `alpha := 0.01`, 20 groups detect rho 0.6799.
-- @example
-- SELECT * FROM emb_power_rho(20);
-- -- rho 0.5912, groups 20, alpha 0.05, power 0.8
CREATE OR REPLACE TEMP MACRO emb_power_rho(groups, alpha := 0.05, power := 0.8) AS TABLE
SELECT * FROM (
SELECT
    CASE
        WHEN groups IS NULL OR NOT (groups::DOUBLE > 3 AND groups::DOUBLE < 'infinity'::DOUBLE)
          OR groups::DOUBLE <> floor(groups::DOUBLE) THEN error(format(
            'embsql: [argument.range] groups must be a whole number greater than 3, got groups = {}', coalesce(groups::VARCHAR, 'NULL')))
        ELSE tanh(emb__power_check(alpha, power) / sqrt(groups::DOUBLE - 3.0))
    END AS rho,
    groups::BIGINT AS groups,
    alpha::DOUBLE AS alpha,
    power::DOUBLE AS power
)
WHERE rho IS NOT NULL;
