"""The figure of the report's "models compared" section: a matrix of model pairs per measure.

One panel per measure (CKA, Procrustes r, k-NN overlap, Mantel r), each a models x models grid
whose cell (A, B) is the measure for that pair (symmetric; the diagonal is a model against itself,
1 by definition, left blank), on one colour scale from 0 to 1, with the value written in the cell.
The panel title carries the measure's level of the invariance hierarchy.
"""

from __future__ import annotations

import math

from embsql.render.document import Document
from embsql.render.figures import Plot, new_figure
from embsql.result_table import model_label

SECTION = "models"


def models_plot(result: Document) -> Plot | None:
    """The matrix of model pairs per measure, or None when the report has no models section."""
    if not any(section.name == SECTION for section in result.sections):
        return None
    rows = [r for r in result[SECTION].to_dicts() if isinstance(r.get("value"), float) and math.isfinite(r["value"])]
    if not rows:
        return None
    measures = list(dict.fromkeys(r["measure"] for r in rows))
    levels = {r["measure"]: r["invariance"] for r in rows}
    models = list(dict.fromkeys([r["model_a"] for r in rows] + [r["model_b"] for r in rows]))
    names = [model_label(m) for m in models]
    index = {m: i for i, m in enumerate(models)}
    size = len(models)
    cell = 0.55 + 0.05 * max(len(n) for n in names)
    figure = new_figure(figsize=(min(1.2 + len(measures) * (1.0 + cell * size), 11.0), 1.6 + cell * size),
                    layout="constrained")
    axes = figure.subplots(1, len(measures), squeeze=False)[0]
    image = None
    for ax, measure in zip(axes, measures):
        grid = [[math.nan] * size for _ in range(size)]
        for r in rows:
            if r["measure"] == measure:
                i, j = index[r["model_a"]], index[r["model_b"]]
                grid[i][j] = grid[j][i] = r["value"]
        image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis")
        for i in range(size):
            for j in range(size):
                if not math.isnan(grid[i][j]):
                    ax.text(j, i, f"{grid[i][j]:.2f}", ha="center", va="center", fontsize="small",
                            color="white" if grid[i][j] < 0.6 else "black")
        ax.set_xticks(range(size), names, rotation=30 if size > 2 else 0, ha="right" if size > 2 else "center")
        ax.set_yticks(range(size), names)
        ax.set_title(f"{measure}\n({levels[measure]} level)", fontsize="medium")
    assert image is not None                      # one image per measure, and there is one
    figure.colorbar(image, ax=list(axes), shrink=0.8)
    figure.suptitle("Models compared on the same items", fontsize="medium")
    caption = ("Each cell is one pair of models under one measure, its value written in it (colours from 0 to 1; "
               "a negative Mantel r shows as 0; the diagonal, a model against itself, is left blank). CKA and "
               "Procrustes r are similarity-level (rotation, uniform scale and extra "
               "dimensions ignored); k-NN overlap and Mantel r are monotone-level (any order-keeping change of the "
               "similarities ignored too).")
    return Plot(SECTION, SECTION, caption, figure)
