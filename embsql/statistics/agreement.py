"""The declarations of cross-model agreement on the same items: k-NN agreement (per pair of models
and per item) and the Mantel test.  Kernels: embsql.core.agreement."""

from __future__ import annotations

from embsql.core.agreement import knn_agreement_rows, knn_item_rows, mantel_rows
from embsql.statistics.declaration import PAIR, PAIR_INPUTS, SEED, Option, Output, Statistic

K = Option("k", 10, "how many neighbours, between 1 and n − 2")

KNN_AGREEMENT = Statistic(
    name="knn_agreement",
    kernel=knn_agreement_rows,
    inputs=PAIR_INPUTS,
    options=(K, Option("common", False)),
    outputs=(*PAIR, Output("k", "BIGINT"),
             Output("overlap", "DOUBLE", "the mean over items of |N_A(i) ∩ N_B(i)| / k"),
             Output("se", "DOUBLE", "the delete-one-item jackknife SE"),
             Output("chance", "DOUBLE", "k / (n − 1), what unrelated neighbour sets would give"),
             Output("items", "BIGINT")),
    summary="""\
k-NN agreement of models that embedded the same items: one row per pair of models.  For item i,
N_M(i) is the set of its k nearest *other* items under model M by cosine distance on unit
vectors; `overlap` is the mean over items of |N_A(i) ∩ N_B(i)| / k, in [0, 1].""",
    notes="""\
The overlap depends on each model only through the order of its similarities, so it is the
same for a rotated or rescaled copy.

- **Ties.** Similarities are compared on a grid of 2⁻⁴⁰ (float64 rounding noise is far
  smaller), and among items tied at the k-th neighbour the one that comes first in the canonical
  item order (items sorted by their text) counts as nearer; so the result does not depend on the
  row order of the table.
- **`se`** is the delete-one-item jackknife SE, and it is honest about what deleting an item does:
  the items that had it among their k nearest take their (k + 1)-th neighbour instead (computed
  in closed form, O(n k)).  In simulations it was 1.4–1.9 × the actual spread of the overlap
  across independent samples of items (conservative; holding neighbour sets fixed gave
  0.67–0.89 ×, too small; `python bench/knn_agreement.py --calibration`).
- **Items** must match across models: an item a model lacks, an item twice in one model, or a
  NULL item or model is an error naming the item and model; `common := true` uses only the
  items every model has.  A NULL, zero-length or non-finite vector is an error naming its row
  in the table (from 1), its model and its item, as the Python faces do (`bad_rows := 'skip'`
  leaves it out).
- **Cost.** O(n² d) time per model (float32 Gram products in blocks of 512 rows; the final choice
  among candidates is made in float64, and rows where float32 rounding could matter are redone in
  float64), O(n d) memory.  20,000 items run in under a minute; see bench/README.md.""",
    caution="""\
What it says: how far two models agree on *local* neighbourhoods (what a retriever returns).
What it cannot say: which model is right, or agreement on the global layout (that is
`emb_mantel`).  From Python: `embsql.knn_agreement`.""",
    example="""\
SELECT * FROM emb_knn_agreement('neighbours', 'item_id', 'model', 'embedding', k := 3);
-- large  small  3  0.8333  0.1535  0.2727  12""",
)

KNN_AGREEMENT_ITEMS = Statistic(
    name="knn_agreement_items",
    kernel=knn_item_rows,
    inputs=PAIR_INPUTS,
    options=(K, Option("common", False)),
    outputs=(*PAIR, Output("item", "VARCHAR", "the item (as text)"),
             Output("overlap", "DOUBLE", "|N_A(i) ∩ N_B(i)| / k")),
    summary="""\
The per-item table behind `emb_knn_agreement`: one row per pair of models and item, items in
canonical (text) order.  Useful to find the items on which two models disagree most.""",
    notes="From Python: `embsql.knn_agreement(..., per_item=True)`.",
    caution="",
    example="""\
SELECT * FROM emb_knn_agreement_items('neighbours', 'item_id', 'model', 'embedding', k := 3)
ORDER BY overlap LIMIT 5;""",
)

MANTEL = Statistic(
    name="mantel",
    kernel=mantel_rows,
    inputs=PAIR_INPUTS,
    options=(Option("permutations", 999, "the number of permutations, a whole number from 1 to 1,000,000",
                    sql_value="emb__whole_argument({name}, 'permutations')"),
             SEED, Option("common", False)),
    outputs=(*PAIR,
             Output("r", "DOUBLE", "the Spearman correlation of the two models' cosine distances over all item pairs "
                                   "i < j; 1 for a similarity transform"),
             Output("p_value", "DOUBLE", "one-sided (upper tail) permutation p, (b + 1)/(B + 1)"),
             Output("permutations", "BIGINT"), Output("items", "BIGINT")),
    summary="""\
Mantel test of models that embedded the same items: one row per pair of models, the Spearman
correlation of the two models' cosine distances over all item pairs and its permutation p-value.""",
    notes="""\
Tied distances get average ranks, as `scipy.stats.spearmanr` (the same tie grid as
`emb_knn_agreement`).  `p_value` permutes the items of `model_b` against those of `model_a`,
with b the permutations whose r reaches the observed one (within sqrt(machine epsilon)), so p is
in (0, 1].  The same seed gives the same p for any row order.  Items are matched as in
`emb_knn_agreement`; every pair of items at one distance is an error (r undefined).

Cost: ranks once, O(n² log n); then O(n²) per permutation (a re-indexing of the rank matrix and
one dot product, float32 products summed in float64 per block of rows; permutations within 1e-5
of the observed r are recomputed in float64 before they are counted).  Memory O(n²): at most
10,000 items (run it on a sample of items beyond that).  2,000 items with 999 permutations take
tens of seconds; see bench/README.md.""",
    caution="""\
The p-value says the two distance structures are related beyond chance under exchangeability of
items; with many items it is tiny even for weak agreement, so read `r`, not p, as the size.""",
    example="""\
SELECT * FROM emb_mantel('neighbours', 'item_id', 'model', 'embedding', permutations := 199);
-- large  small  0.9925  0.005  199  12""",
    progress="Mantel permutations",
)
