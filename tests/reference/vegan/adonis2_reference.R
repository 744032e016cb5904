## Reference numbers from R's vegan for embsql tests.
## Run from this directory:  Rscript adonis2_reference.R > adonis2_reference.Rout 2>&1
## Reads data/*.csv (made by make_data.py), writes reference.json and data/bray_dist.csv.
suppressPackageStartupMessages({
  library(vegan)
  library(permute)
  library(jsonlite)
})
options(digits = 17)

rd <- function(f) read.csv(file.path("data", f), stringsAsFactors = FALSE)
xcols <- function(df, prefix) as.matrix(df[, grep(paste0("^", prefix, "[0-9]+$"), names(df))])

npermOf <- function(res) {
  ## vegan stores the permutation matrix / control on the result; fall back to heading
  ctrl <- attr(res, "control")
  if (!is.null(ctrl)) return(as.integer(ctrl$nperm))
  as.integer(sub(".*Number of permutations: ([0-9]+).*", "\\1",
                 paste(attr(res, "heading"), collapse = " ")))
}

adonis_fields <- function(res) {
  list(ss_b = res[1, "SumOfSqs"], ss_w = res["Residual", "SumOfSqs"],
       ss_t = res["Total", "SumOfSqs"], r2 = res[1, "R2"], f = res[1, "F"],
       df_b = as.integer(res[1, "Df"]), df_w = as.integer(res["Residual", "Df"]),
       df_t = as.integer(res["Total", "Df"]),
       p_value = res[1, "Pr(>F)"], permutations = npermOf(res))
}

run_adonis <- function(name, d, df, ...) {
  set.seed(1)
  res <- adonis2(d ~ group, data = df, ...)
  cat("\n==== adonis2:", name, "====\n")
  print(res)
  adonis_fields(res)
}

run_betadisper <- function(name, d, df) {
  g <- factor(df$group)
  bd <- betadisper(d, g, type = "centroid")
  a <- anova(bd)
  set.seed(1)
  pt <- permutest(bd, permutations = 999)
  cat("\n==== betadisper (centroid):", name, "====\n")
  print(bd)
  print(a)
  print(pt)
  cat("group.distances:\n"); print(bd$group.distances)
  cat("distances:\n"); print(bd$distances)
  list(f = a["Groups", "F value"], df_b = as.integer(a["Groups", "Df"]),
       df_w = as.integer(a["Residuals", "Df"]),
       p_value = pt$tab["Groups", "Pr(>F)"],
       permutations = as.integer(pt$control$nperm),
       group_distances = as.list(bd$group.distances),
       distances = unname(as.numeric(bd$distances)))
}

out <- list()
out$versions <- list(R = R.version.string,
                     vegan = as.character(packageVersion("vegan")),
                     permute = as.character(packageVersion("permute")),
                     jsonlite = as.character(packageVersion("jsonlite")))

## unit-vector data sets, Euclidean distance
for (nm in c("unit_balanced", "unit_unbalanced")) {
  df <- rd(paste0(nm, ".csv"))
  df <- df[order(df$id), ]
  df$group <- factor(df$group)
  X <- xcols(df, "x")
  d <- dist(X)
  out[[nm]] <- run_adonis(nm, d, df, permutations = 999)
  out[[paste0("betadisper_", nm)]] <- run_betadisper(nm, d, df)
}

## Bray-Curtis
df <- rd("bray.csv"); df <- df[order(df$id), ]; df$group <- factor(df$group)
X <- xcols(df, "s")
db <- vegdist(X, "bray")
out$bray <- run_adonis("bray", db, df, permutations = 999)
m <- as.matrix(db)
ij <- which(upper.tri(m), arr.ind = TRUE)
ij <- ij[order(ij[, 1], ij[, 2]), , drop = FALSE]
long <- data.frame(i = df$id[ij[, 1]], j = df$id[ij[, 2]],
                   d = sprintf("%.17g", m[ij]))
write.csv(long, file.path("data", "bray_dist.csv"), row.names = FALSE, quote = FALSE)

## Strata: blocked vs unrestricted permutations
df <- rd("strata.csv"); df <- df[order(df$id), ]
df$group <- factor(df$group); df$block <- factor(df$block)
X <- xcols(df, "x")
ds <- dist(X)
out$strata_blocked <- run_adonis("strata_blocked", ds, df,
                                 permutations = how(blocks = df$block, nperm = 9999))
out$strata_unrestricted <- run_adonis("strata_unrestricted", ds, df,
                                      permutations = 9999)

## jsonlite caps numeric output at 15 significant digits, so doubles are
## pre-formatted with the shortest of %.15g/%.16g/%.17g that round-trips exactly
## and inserted verbatim.
num17 <- function(v) vapply(v, function(x) {
  for (k in 15:17) { s <- sprintf(paste0("%.", k, "g"), x); if (as.numeric(s) == x) return(s) }
  sprintf("%.17g", x)
}, "")
fullprec <- function(x) {
  if (is.list(x)) return(lapply(x, fullprec))
  if (is.double(x) && !is.null(x)) {
    s <- num17(x)
    return(structure(if (length(x) == 1) s else paste0("[", paste(s, collapse = ", "), "]"),
                     class = "json"))
  }
  x
}
writeLines(toJSON(fullprec(out), auto_unbox = TRUE, json_verbatim = TRUE, pretty = TRUE),
           "reference.json")
cat("\nwrote reference.json\n")
print(sessionInfo())
