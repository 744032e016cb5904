#!/usr/bin/env python3
"""Reference ICC(1) numbers from pingouin.intraclass_corr for tests/core/test_icc.py.

Run from this directory:  python make_reference.py > make_reference.out 2>&1
Writes data/*.csv (the inputs) and reference.json (the numbers).  Deterministic.

Datasets (both balanced, which pingouin requires):
  * wine      pingouin's own example, pingouin.read_dataset("icc"): 8 wines (targets = groups)
              rated by 4 judges; scores are small integers.  Copied to data/icc_wine.csv.
  * correct01 a 0/1 "correctness" table made here with numpy (fixed seed): 12 items (groups)
              x 5 paraphrases; each item has its own probability of being answered correctly.

ICC(1) is pingouin's row Type "ICC(1,1)" (named "ICC1" in pingouin < 0.6).  pingouin does not
report the mean squares; ms_b and ms_w below are computed exactly as inside intraclass_corr
(pingouin.anova on the long table, two-way between = [targets, raters], ss_type = 2):
ms_b = MS(targets), ms_w = (SS(raters) + SS(residual)) / (DF(raters) + DF(residual)).
"""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg

HERE = Path(os.path.dirname(os.path.abspath(__file__)))


def correct01() -> pd.DataFrame:
    rng = np.random.default_rng(20240515)
    items, paraphrases = 12, 5
    p_item = rng.beta(1.2, 1.0, size=items)
    rows = []
    for i in range(items):
        for j in range(paraphrases):
            rows.append({"item": f"q{i + 1:02d}", "paraphrase": f"p{j + 1}",
                         "correct": int(rng.random() < p_item[i])})
    return pd.DataFrame(rows)


def reference(data: pd.DataFrame, targets: str, raters: str, ratings: str) -> dict:
    table = pg.intraclass_corr(data=data, targets=targets, raters=raters, ratings=ratings)
    row = table.set_index("Type").loc["ICC(1,1)"]
    aov = pg.anova(data=data, dv=ratings, between=[targets, raters], ss_type=2, detailed=True)
    ms_b = float(aov.at[0, "MS"])
    ms_w = float((aov.at[1, "SS"] + aov.at[2, "SS"]) / (aov.at[1, "DF"] + aov.at[2, "DF"]))
    print(f"--- {targets} x {raters} -> {ratings}")
    print(table.to_string())
    print(aov.to_string())
    return {
        "groups_col": targets, "raters_col": raters, "value_col": ratings,
        "icc": float(row["ICC"]), "f": float(row["F"]),
        "df1": int(row["df1"]), "df2": int(row["df2"]),
        "ms_b": ms_b, "ms_w": ms_w,
        "groups": int(data[targets].nunique()), "n": int(len(data)),
        "k": int(data[raters].nunique()),
    }


def main() -> None:
    (HERE / "data").mkdir(exist_ok=True)
    wine = pg.read_dataset("icc")
    wine.to_csv(HERE / "data" / "icc_wine.csv", index=False)
    binary = correct01()
    binary.to_csv(HERE / "data" / "correct01.csv", index=False)
    out = {
        "versions": {"pingouin": pg.__version__, "pandas": pd.__version__, "numpy": np.__version__},
        "wine": reference(wine, "Wine", "Judge", "Scores"),
        "correct01": reference(binary, "item", "paraphrase", "correct"),
    }
    (HERE / "reference.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
