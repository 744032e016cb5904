"""Write the inputs of adonis2_terms.R: dune (from vegan) needs nothing; the bundled example
(examples/embeddings.parquet, model mini-384) goes to a CSV the R script reads, with two derived
columns: parity (item number mod 2, a factor 'even'/'odd') and position (item number / 600, a
covariate).  The test derives the same columns (tests/core/test_permanova_terms.py: example_table).

    python terms_data.py /tmp/terms_example.csv && Rscript adonis2_terms.R /tmp/terms_example.csv > adonis2_terms.Rout
"""

import sys
from pathlib import Path

import duckdb

PARQUET = Path(__file__).resolve().parents[3] / "examples" / "embeddings.parquet"
QUERY = f"""SELECT item, topic, CASE WHEN CAST(right(item, 4) AS INTEGER) % 2 = 0 THEN 'even' ELSE 'odd' END AS parity,
       CAST(right(item, 4) AS INTEGER) / 600.0 AS position, embedding
FROM '{PARQUET}' WHERE model = 'mini-384' ORDER BY item"""

if __name__ == "__main__":
    rows = duckdb.sql(QUERY).fetchall()
    with open(sys.argv[1], "w") as out:
        out.write("item,topic,parity,position," + ",".join(f"x{k + 1}" for k in range(len(rows[0][4]))) + "\n")
        for item, topic, parity, position, vector in rows:
            # float32 values printed with 9 significant digits round-trip exactly
            out.write(f"{item},{topic},{parity},{position!r}," + ",".join(f"{v:.9g}" for v in vector) + "\n")
