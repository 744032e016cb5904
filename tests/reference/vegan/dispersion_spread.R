## Reference numbers for embsql's dispersion statistic (issue 23), computed here independently of embsql.
## Run from this directory:  Rscript dispersion_spread.R > dispersion_spread.Rout 2>&1
## Reads data/unit_*.csv (made by make_data.py), writes dispersion_spread.json.
##
## On the groups with at least 4 items:
## 1. W~_g as the mean of the squared distances of betadisper(dist(X), group, type = "centroid",
##    bias.adjust = TRUE), the adjusted distances to the group centroid;
## 2. the same W~_g as the mean over ordered pairs i != j of (1 - z_i.z_j);
## 3. Q2 = mean_{i != j} c_ij^2, Q3 = mean over distinct (i, j, k) of c_ij c_jk,
##    Q4 = mean over distinct (i, j, k, l) of c_ij c_kl, by explicit loops over the index tuples
##    (c = the group's Gram matrix); a_g = Q3 - Q4, b_g = Q2 - 2 Q3 + Q4;
## 4. pooled a, b (weights n_g), V_g = 4 a / n_g + 2 b / (n_g (n_g - 1)) and
##    F = sum_g (W~_g - W_bar)^2 / V_g / (G - 1), W_bar the 1/V_g-weighted mean.
suppressPackageStartupMessages({
  library(vegan)
  library(jsonlite)
})
options(digits = 17)

tuples <- function(n, k) {           # every ordered k-tuple of distinct indices 1..n
  grid <- as.matrix(expand.grid(rep(list(seq_len(n)), k)))
  grid[apply(grid, 1, function(r) length(unique(r)) == k), , drop = FALSE]
}

moments <- function(z) {
  c <- z %*% t(z)
  n <- nrow(z)
  t2 <- tuples(n, 2); t3 <- tuples(n, 3); t4 <- tuples(n, 4)
  q2 <- mean(c[t2]^2)
  q3 <- mean(c[t3[, 1:2]] * c[t3[, 2:3]])
  q4 <- mean(c[t4[, 1:2]] * c[t4[, 3:4]])
  c(spread_pairs = mean(1 - c[t2]), q2 = q2, q3 = q3, q4 = q4, a = q3 - q4, b = q2 - 2 * q3 + q4)
}

spread <- function(name) {
  df <- read.csv(file.path("data", paste0(name, ".csv")), stringsAsFactors = FALSE)
  sizes <- table(df$group)
  df <- df[df$group %in% names(sizes)[sizes >= 4], ]
  x <- as.matrix(df[, grep("^x[0-9]+$", names(df))])
  g <- factor(df$group)
  bd <- betadisper(dist(x), g, type = "centroid", bias.adjust = TRUE)
  per <- t(sapply(levels(g), function(l) moments(x[g == l, , drop = FALSE])))
  n <- as.numeric(table(g))
  w_betadisper <- tapply(bd$distances^2, g, mean)
  a <- max(sum(n * per[, "a"]) / sum(n), 0)
  b <- max(sum(n * per[, "b"]) / sum(n), 0)
  v <- 4 * a / n + 2 * b / (n * (n - 1))
  centre <- sum(per[, "spread_pairs"] / v) / sum(1 / v)
  f <- sum((per[, "spread_pairs"] - centre)^2 / v) / (nlevels(g) - 1)
  cat("\n==== ", name, ": groups of 4 or more ====\n")
  print(cbind(n = n, w_betadisper = w_betadisper, per))
  cat("pooled a =", a, " b =", b, " F =", f, "\n")
  list(groups = levels(g), sizes = n, spread_betadisper = unname(as.numeric(w_betadisper)),
       spread_pairs = unname(per[, "spread_pairs"]), q2 = unname(per[, "q2"]), q3 = unname(per[, "q3"]),
       q4 = unname(per[, "q4"]), a = a, b = b, f = f)
}

out <- list()
out$versions <- list(R = R.version.string, vegan = as.character(packageVersion("vegan")),
                     jsonlite = as.character(packageVersion("jsonlite")))
out$unit_balanced <- spread("unit_balanced")
out$unit_unbalanced <- spread("unit_unbalanced")
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "dispersion_spread.json")
cat("\n"); print(sessionInfo())
