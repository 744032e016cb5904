## vegan's dispersion test on the data sets validation/dispersion_validity.py writes: for each,
## betadisper(dist(X), group, type = "centroid", bias.adjust = TRUE) and permutest(..., permutations = B).
## Usage: Rscript dispersion_vegan.R FILE B SEED   (prints one p-value per data set)
## FILE: little-endian records, each: n, d (int32), n group codes (int32), n * d coordinates (float64, row-major).
suppressPackageStartupMessages(library(vegan))
args <- commandArgs(trailingOnly = TRUE)
con <- file(args[1], "rb")
B <- as.integer(args[2])
set.seed(as.integer(args[3]))
repeat {
  head <- readBin(con, "integer", 2, size = 4, endian = "little")
  if (length(head) < 2) break
  n <- head[1]; d <- head[2]
  g <- factor(readBin(con, "integer", n, size = 4, endian = "little"))
  x <- matrix(readBin(con, "double", n * d, size = 8, endian = "little"), n, d, byrow = TRUE)
  bd <- betadisper(dist(x), g, type = "centroid", bias.adjust = TRUE)
  cat(permutest(bd, permutations = B)$tab["Groups", "Pr(>F)"], "\n")
}
close(con)
