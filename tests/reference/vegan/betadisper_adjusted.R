## Reference numbers for embsql's dispersion test and its Welch-type PERMANOVA statistic.
## Run from this directory:  Rscript betadisper_adjusted.R > betadisper_adjusted.Rout 2>&1
## Reads data/unit_*.csv (made by make_data.py), writes betadisper_adjusted.json.
##
## 1. betadisper(dist(X), group, type = "centroid", bias.adjust = TRUE) on the groups with at least
##    4 items (embsql leaves smaller groups out of the dispersion test), its anova F, the adjusted
##    distances, and permutest's p (999 permutations, set.seed(1)).
## 2. W*_d (Hamidi, Wallace, Vinzant and Alekseyenko 2019, Microbiome 7:51, eq. 4) and, for two
##    groups, Tw^2 (Alekseyenko 2016, Bioinformatics 32:2974), written out here from the published
##    formulas on the coordinates (group means and variances), not from distances.
suppressPackageStartupMessages({
  library(vegan)
  library(jsonlite)
})
options(digits = 17)

rd <- function(f) read.csv(file.path("data", f), stringsAsFactors = FALSE)
xcols <- function(df) as.matrix(df[, grep("^x[0-9]+$", names(df))])

adjusted <- function(name) {
  df <- rd(paste0(name, ".csv"))
  sizes <- table(df$group)
  keep <- df$group %in% names(sizes)[sizes >= 4]
  df <- df[keep, ]
  x <- xcols(df)
  g <- factor(df$group)
  bd <- betadisper(dist(x), g, type = "centroid", bias.adjust = TRUE)
  a <- anova(bd)
  set.seed(1)
  pt <- permutest(bd, permutations = 999)
  cat("\n==== betadisper (centroid, bias.adjust = TRUE), groups of 4 or more:", name, "====\n")
  print(bd); print(a); print(pt)
  list(groups = levels(g), f = a["Groups", "F value"], df_b = as.integer(a["Groups", "Df"]),
       df_w = as.integer(a["Residuals", "Df"]), p_value = pt$tab["Groups", "Pr(>F)"],
       permutations = as.integer(pt$control$nperm), ids = df$id,
       distances = unname(as.numeric(bd$distances)))
}

wd_star <- function(x, g) {
  g <- factor(g)
  k <- nlevels(g)
  n <- as.numeric(table(g))
  means <- t(sapply(levels(g), function(l) colMeans(x[g == l, , drop = FALSE])))
  s2 <- sapply(levels(g), function(l) {
    y <- x[g == l, , drop = FALSE]
    sum(sweep(y, 2, colMeans(y))^2) / (nrow(y) - 1)
  })
  w <- n / s2
  W <- sum(w)
  centre <- colSums(w * means) / W
  numerator <- sum(w * rowSums(sweep(means, 2, centre)^2)) / (k - 1)
  h <- sum((1 - w / W)^2 / (n - 1))
  numerator / (1 + 2 * (k - 2) / (k^2 - 1) * h)
}

tw2 <- function(x, g) {
  g <- factor(g)
  a <- x[g == levels(g)[1], , drop = FALSE]
  b <- x[g == levels(g)[2], , drop = FALSE]
  va <- sum(sweep(a, 2, colMeans(a))^2) / (nrow(a) - 1)
  vb <- sum(sweep(b, 2, colMeans(b))^2) / (nrow(b) - 1)
  sum((colMeans(a) - colMeans(b))^2) / (va / nrow(a) + vb / nrow(b))
}

out <- list()
out$versions <- list(R = R.version.string, vegan = as.character(packageVersion("vegan")),
                     jsonlite = as.character(packageVersion("jsonlite")))
out$betadisper_adjusted_unit_balanced <- adjusted("unit_balanced")
out$betadisper_adjusted_unit_unbalanced <- adjusted("unit_unbalanced")

u <- rd("unit_unbalanced.csv")
two <- u[u$group %in% c("a", "b"), ]
out$welch <- list(
  unit_unbalanced = list(w_d = wd_star(xcols(u), u$group)),
  unit_balanced = list(w_d = wd_star(xcols(rd("unit_balanced.csv")), rd("unit_balanced.csv")$group)),
  two_groups_ab = list(groups = c("a", "b"), w_d = wd_star(xcols(two), two$group), tw2 = tw2(xcols(two), two$group)))
cat("\n==== W*_d and Tw^2 from the published formulas ====\n")
str(out$welch)

writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "betadisper_adjusted.json")
cat("\n"); print(sessionInfo())
