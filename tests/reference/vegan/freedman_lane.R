## Reference numbers for embsql's permute = 'residuals' (Freedman-Lane) and permute = 'rows' (adonis2),
## with the permutations fixed: every permuted F can be compared, not only the p-value.
## Run from this directory (after python freedman_lane_data.py):
##   Rscript freedman_lane.R > freedman_lane.Rout 2>&1
## Writes freedman_lane.json (read by tests/core/test_permanova_terms.py).
##
## rows: adonis2(d ~ terms, by = "terms" / "margin", permutations = P): F and F.perm per term.
## residuals: vegan's Freedman-Lane is the permutation test of a partial db-RDA under the reduced
## model, anova(dbrda(d ~ term + Condition(reduced terms)), permutations = P, model = "reduced"):
## the residuals of the Condition() model are permuted (rows and columns of its Gower matrix) and the
## partial model refitted, and F's denominator is the residual of term + conditions.  That is
## embsql's F*_k where term + reduced = the full model: every marginal term, and the last
## sequential term (earlier sequential terms have later terms in their denominator: no vegan
## counterpart; the first sequential term permutes rows, compared through adonis2).
suppressPackageStartupMessages({library(vegan); library(jsonlite)})
options(digits = 17)

perms <- function(name) as.matrix(read.csv(paste0("data/fl_perms_", name, ".csv"), header = FALSE))

units <- read.csv("data/fl_units.csv", stringsAsFactors = TRUE)
x <- as.matrix(units[, grep("^x[0-9]+$", names(units))])
d_units <- dist(x)

env <- read.csv("data/dune_env.csv", stringsAsFactors = TRUE)
env$Moisture <- factor(env$Moisture); env$Manure <- factor(env$Manure)
order <- scan("data/fl_dune_order.csv", quiet = TRUE)
data(dune)
env <- env[order, ]
d_dune <- vegdist(dune[order, ], "bray")

one_f <- function(r) r$F[!is.na(r$F)]

rows_test <- function(formula, data, by, P) {
  r <- adonis2(formula, data = data, by = by, permutations = P)
  # I(): jsonlite writes a one-term model's vectors as arrays too
  list(terms = I(rownames(r)[!is.na(r$F)]), f = I(one_f(r)), f_perm = attr(r, "F.perm"),
       p_value = I(r[["Pr(>F)"]][!is.na(r$F)]))
}

fl_test <- function(d, term, conditions, data, P) {
  formula <- as.formula(paste("d ~", term, "+ Condition(", paste(conditions, collapse = " + "), ")"))
  m <- dbrda(formula, data = data)
  a <- anova(m, permutations = P, model = "reduced")
  list(term = term, df = a$Df[1], f = a$F[1], f_perm = as.vector(attr(a, "F.perm")), p_value = a[["Pr(>F)"]][1])
}

case <- function(d, data, rhs, by, perm_name, residual_tests) {
  P <- perms(perm_name)
  formula <- as.formula(paste("d ~", rhs))
  environment(formula) <- environment()
  out <- list(formula = rhs, by = by, permutations = perm_name,
              rows = rows_test(formula, data, by, P),
              residuals = lapply(residual_tests, function(t) fl_test(d, t[1], t[-1], data, P)))
  cat("\n==== ", rhs, " by = ", by, ", permutations ", perm_name, " ====\n", sep = "")
  print(data.frame(term = out$rows$terms, F = out$rows$f, p_rows = out$rows$p_value))
  for (t in out$residuals) cat("Freedman-Lane", t$term, ": df", t$df, " F", t$f, " p", t$p_value, "\n")
  out
}

out <- list(R = R.version.string, vegan = as.character(packageVersion("vegan")))
for (strata in c("free", "strata")) {
  p <- paste0("units_", strata)
  out[[paste("units a + b terms", strata)]] <- case(d_units, units, "a + b", "terms", p, list(c("b", "a")))
  out[[paste("units a + b margin", strata)]] <- case(d_units, units, "a + b", "margin", p, list(c("a", "b"), c("b", "a")))
  out[[paste("units a * b terms", strata)]] <- case(d_units, units, "a * b", "terms", p, list(c("a:b", "a", "b")))
  out[[paste("units a + b + c margin", strata)]] <- case(d_units, units, "a + b + c", "margin", p,
                                                         list(c("a", "b", "c"), c("b", "a", "c"), c("c", "a", "b")))
  out[[paste("units a + b + c terms", strata)]] <- case(d_units, units, "a + b + c", "terms", p, list(c("c", "a", "b")))
  p <- paste0("dune_", strata)
  out[[paste("dune Management + A1 terms", strata)]] <- case(d_dune, env, "Management + A1", "terms", p,
                                                             list(c("A1", "Management")))
  out[[paste("dune Management + A1 margin", strata)]] <- case(d_dune, env, "Management + A1", "margin", p,
                                                              list(c("Management", "A1"), c("A1", "Management")))
  out[[paste("dune Use * Management margin", strata)]] <- case(d_dune, env, "Use * Management", "margin", p,
                                                               list(c("Use:Management", "Use", "Management")))
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = FALSE, na = "null"), "freedman_lane.json")
cat("\n"); print(sessionInfo())
