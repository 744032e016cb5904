# vegan::protest on the unit-vector tables written by make_inputs.py.
# Run from this folder:  Rscript protest.R > protest.Rout 2>&1
library(vegan)
cat("R", R.version$major, R.version$minor, "vegan", as.character(packageVersion("vegan")), "\n")
set.seed(1)
for (name in c("small", "wide", "weak")) {
  x <- as.matrix(read.csv(paste0(name, "_x.csv"), header = FALSE))
  y <- as.matrix(read.csv(paste0(name, "_y.csv"), header = FALSE))
  # protest pads the matrix with fewer columns; it wants X to have at least as many
  if (ncol(x) < ncol(y)) p <- protest(y, x, permutations = 9999) else p <- protest(x, y, permutations = 9999)
  cat(sprintf("case %s n %d r %.17g ss %.17g p %.17g permutations %d\n", name, nrow(x), p$t0, p$ss, p$signif,
              p$permutations))
}
