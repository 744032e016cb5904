## Reference numbers for embsql's multi-term PERMANOVA (tests/core/test_permanova_terms.py).
## Run from this directory:
##   python terms_data.py /tmp/terms_example.csv && Rscript adonis2_terms.R /tmp/terms_example.csv > adonis2_terms.Rout 2>&1
## Writes adonis2_terms.json and data/dune_env.csv, data/dune_bray.csv (the inputs of the dune cases).
suppressPackageStartupMessages({library(vegan); library(jsonlite)})
options(digits = 17)
args <- commandArgs(trailingOnly = TRUE)
PERMS <- 9999   # dune: vegan's p with 9999 permutations, its MC error small beside embsql's
PERMS_EXAMPLE <- 999   # n = 600: adonis2 takes minutes per 1000 permutations

data(dune); data(dune.env)
bray <- vegdist(dune, "bray")
write.csv(data.frame(id = seq_len(nrow(dune.env)), dune.env), "data/dune_env.csv", row.names = FALSE)
m <- as.matrix(bray); ij <- which(upper.tri(m), arr.ind = TRUE)
write.csv(data.frame(i = ij[, 1], j = ij[, 2], d = sprintf("%.17g", m[ij])), "data/dune_bray.csv",
          row.names = FALSE, quote = FALSE)

rows <- function(res) {
  lapply(seq_len(nrow(res)), function(k) list(term = rownames(res)[k], df = res$Df[k], ss = res$SumOfSqs[k],
                                             r2 = res$R2[k], f = res$F[k], p_value = res[["Pr(>F)"]][k]))
}
run <- function(name, formula, data, by, strata = NULL, perms = PERMS) {
  set.seed(1)
  res <- if (is.null(strata)) adonis2(formula, data = data, by = by, permutations = perms)
         else adonis2(formula, data = data, by = by, permutations = perms, strata = strata)
  cat("\n==== ", name, " (by = ", by, ") ====\n", sep = ""); print(res)
  list(permutations = perms, rows = rows(res))
}
out <- list(R = R.version.string, vegan = as.character(packageVersion("vegan")))
for (by in c("terms", "margin")) {
  out[[paste0("dune Management + A1 ", by)]] <- run("dune Management + A1", bray ~ Management + A1, dune.env, by)
  out[[paste0("dune Use * Management ", by)]] <- run("dune Use * Management", bray ~ Use * Management, dune.env, by)
  out[[paste0("dune Management + A1 strata Moisture ", by)]] <-
    run("dune Management + A1, strata Moisture", bray ~ Management + A1, dune.env, by, strata = dune.env$Moisture)
  out[[paste0("dune Use * Management strata Moisture ", by)]] <-
    run("dune Use * Management, strata Moisture", bray ~ Use * Management, dune.env, by, strata = dune.env$Moisture)
}
if (length(args) > 0) {
  ex <- read.csv(args[1], stringsAsFactors = TRUE)
  x <- as.matrix(ex[, grep("^x[0-9]+$", names(ex))])
  x <- x / sqrt(rowSums(x^2))
  d <- dist(x)
  for (by in c("terms", "margin")) {
    out[[paste0("example topic + position ", by)]] <- run("example topic + position", d ~ topic + position, ex, by, perms = PERMS_EXAMPLE)
    out[[paste0("example topic * parity ", by)]] <- run("example topic * parity", d ~ topic * parity, ex, by, perms = PERMS_EXAMPLE)
  }
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, na = "null"), "adonis2_terms.json")
cat("\n"); print(sessionInfo())
