"""The report's sections on human judgements and labels: similarity (``pairs``) and classification
(``label``).

* similarity: per model, Spearman's and Pearson's correlation of the cosine of two items with the
  gold score of their pair, with intervals that account for items recurring across pairs; every
  pair of models compared on the same pairs; and the pairs themselves (cosine beside gold score,
  for the scatter), at most SCATTER_PAIRS of them.  The figures are those of
  embsql.similarity_eval and embsql.compare_similarity (the same code, embsql.io.similarity_pairs).
* classification: per model, leave-one-out k-NN (k = ``classification["k"]``, default 10) and
  nearest-centroid accuracy and macro-F1 with intervals, and every pair of models compared on the
  same items (embsql.knn_classify, embsql.centroid_classify and embsql.compare_classification's
  code: embsql.io.labelled_rows and embsql.core.classification).

Which items are independent.  The report's group column clusters the items (paraphrases of one
source, texts of one topic) in both the classification intervals and its paired comparison when
it is not the label column: then the intervals resample groups, and the comparison is the cluster
sign-flip test.  When the label is the group column, the groups are the classes themselves: they
are fixed by the design, not sampled, and a cluster of one class would make the units the classes;
then items are the units (Wilson interval, mid-p McNemar).

The items of both sections are named by the report's item column (``item``), or by a column
called ``item`` when the report names none; the pairs table refers to them, and models are
paired on them.  Both sections read the rows, so they run on DuckDB only.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np

from embsql.core.classification import CLASSIFY_COLUMNS, align, paired_rows
from embsql.core.classification import COMPARE_COLUMNS as ACCURACY_COLUMNS
from embsql.core.model_ranking import RANK_CALIBRATED_FROM, retrieval_rows
from embsql.core.ranking import check_k
from embsql.core.similarity import COMPARE_COLUMNS as CORRELATION_COLUMNS
from embsql.core.similarity import EVAL_COLUMNS
from embsql.errors import EmbsqlError, InputError
from embsql.io.labelled_rows import classify_models, read_labelled
from embsql.io.similarity_pairs import comparison_rows, evaluation_rows, ranking_rows, read_models
from embsql.io.sources import resolve, shown_name
from embsql.io.table_stream import Skipped, skip_note
from embsql.reporting import cautions
from embsql.reporting.rank_sets import Blocks
from embsql.reporting.report_result import Section
from embsql.result_table import ResultTable

SIMILARITY_SETTINGS = ("a", "b", "score", "missing")
SIMILARITY_DEFAULTS = {"a": "item_a", "b": "item_b", "score": "score", "missing": "error"}
CLASSIFICATION_SETTINGS = ("k",)
KNN_K = 10
SCATTER_PAIRS = 2000          # pairs per model kept for the scatter (evenly spaced over the pairs table)
COMPARE_PERMUTATIONS = 10_000  # the cluster sign-flip test's random sign vectors (embsql.compare_classification's)
PAIR_COLUMNS = ("model", "item_a", "item_b", "score", "cosine")
CLASSIFICATION_COLUMNS = ("model",) + CLASSIFY_COLUMNS
COMPARE_ACCURACY_COLUMNS = ("model_a", "model_b", "classifier") + ACCURACY_COLUMNS[2:]


def item_column(con: duckdb.DuckDBPyConnection, source: str, item: str | None, needs: str) -> str | None:
    """The report's item column, or the source's column ``item`` when the report names none (None
    when there is neither); ``needs`` says what the caller cannot do without one (then an error)."""
    if item is not None:
        return item
    if "item" in resolve(con, source).columns:
        return "item"
    if needs:
        raise InputError(f"{needs} needs the item column that names the rows' items: give item=... (--item COLUMN)")
    return None


def similarity_sections(con: duckdb.DuckDBPyConnection, pairs: str, embeddings: str, *, model: str | None,
                        item: str | None, vector: str, settings: dict[str, Any], level: float,
                        ranks: Blocks | None = None, replicates: int = 2000, seed: int = 42,
                        bad_rows: str = "error", notes: list[str] | None = None) -> list[Section]:
    """The similarity, similarity_compare (two or more models) and similarity_pairs sections; with
    two or more models, ``ranks`` gets their rank confidence sets by Spearman.  With
    ``bad_rows="skip"`` the embeddings' rows with an unusable vector are left out (their items then
    have no vector in that model: ``missing`` says what becomes of their pairs), and ``notes`` gets
    their count per model and reason unless it already has that note (the report's stage 1 reads
    the same rows)."""
    options = {**SIMILARITY_DEFAULTS, **settings}
    used_item = item_column(con, embeddings, item, "the similarity section (pairs=...)")
    assert used_item is not None
    skip = Skipped.asked(bad_rows)
    column, judgements, scored = read_models(con, pairs, embeddings, model=model, a=options["a"], b=options["b"],
                                             score=options["score"], item=used_item, vector=vector,
                                             missing=options["missing"], output=(),
                                             function="the report's similarity section", skip=skip)
    if skip is not None and notes is not None and (said := skip_note(skip.table(model), model)) and said not in notes:
        notes.append(said)
    rows = [{"model": value, **figures}
            for value, figures in evaluation_rows(judgements, scored, level, one_model=column is None)]
    sections = [Section("similarity", "Agreement with human similarity judgements",
                        ResultTable.from_dicts("similarity", ("model",) + EVAL_COLUMNS, rows),
                        cautions.SIMILARITY.format(pairs=shown_name(pairs)))]
    if len(scored) >= 2:
        sections.append(Section("similarity_compare", "Paired comparison of models on the similarity judgements",
                                ResultTable.from_dicts("similarity_compare", CORRELATION_COLUMNS,
                                                       comparison_rows(judgements, scored, level)),
                                cautions.SIMILARITY_COMPARE))
        if ranks is not None:
            ranks.add(ranking_rows(judgements, scored, "spearman", level=level, replicates=replicates, seed=seed))
    total = len(judgements.score)
    kept = np.unique(np.round(np.linspace(0, total - 1, SCATTER_PAIRS)).astype(np.int64)) \
        if total > SCATTER_PAIRS else np.arange(total)
    raw = [judgements.raw.column(i).to_pylist() for i in range(3)]
    points = []
    for value, used in scored.items():
        at = np.flatnonzero(np.isin(used.rows, kept))
        points += [{"model": value, "item_a": raw[0][r], "item_b": raw[1][r], "score": raw[2][r], "cosine": c}
                   for r, c in zip(used.rows[at].tolist(), used.cosine[at].tolist())]
    shown = "every pair" if total <= SCATTER_PAIRS else f"{len(kept)} of the {total} pairs, evenly spaced in the table"
    sections.append(Section("similarity_pairs", "Cosine and gold score per pair",
                            ResultTable.from_dicts("similarity_pairs", PAIR_COLUMNS, points),
                            cautions.SIMILARITY_PAIRS.format(shown=shown)))
    return sections


def clusters_of(label: str, group: str) -> str | None:
    """The column that clusters the items for the classification: the report's group column, unless
    it is the label column (then the groups are the classes, and items are the units)."""
    return None if group == label else group


def classification_sections(con: duckdb.DuckDBPyConnection, source: str, *, label: str, model: str | None,
                            item: str | None, group: str, vector: str, settings: dict[str, Any], level: float,
                            permutations: int, seed: int, bad_rows: str = "error", ranks: Blocks | None = None,
                            replicates: int = 2000) -> tuple[list[Section], list[str]]:
    """The classification section and, for two or more models, classification_compare; and notes.
    With two or more models paired on their items, ``ranks`` gets their rank confidence sets by
    k-NN accuracy (each item's 0/1 answer, the items clustered as in the comparison)."""
    k = check_k(settings.get("k", KNN_K))
    table = resolve(con, source)
    cluster = clusters_of(label, group)
    used_item = item_column(con, source, item, "")
    models = read_labelled(con, table, vector, {"model": model, "item": used_item, "label": label, "split": None,
                                                "group": cluster}, skip=Skipped.asked(bad_rows))
    results = {name: classify_models(models, classifier=name, label=label, k=k if name == "knn" else None,
                                     level=level, item=used_item, split=None, group=cluster, named=model is not None)
               for name in ("knn", "centroid")}
    rows = [{"model": value, **figures} for pair in zip(results["knn"][0], results["centroid"][0])
            for value, figures in pair]
    unit = f"groups of the {group!r} column" if cluster else "items"
    sections = [Section("classification", f"Classification by the {label!r} labels",
                        ResultTable.from_dicts("classification", CLASSIFICATION_COLUMNS, rows),
                        cautions.CLASSIFICATION.format(k=k, unit=unit,
                                                       why=cautions.CLUSTERED_ITEMS if cluster else
                                                       cautions.LABEL_IS_GROUP if group == label else
                                                       cautions.UNCLUSTERED_ITEMS))]
    notes: list[str] = []
    if len(models) < 2:
        return sections, notes
    if used_item is None:
        notes.append("no paired comparison of accuracy: the models are paired on their items, and the source has "
                     "no item column (give item=..., --item COLUMN)")
        return sections, notes
    if ranks is not None:
        per_item = results["knn"][1]
        try:
            paired, clusters = align([value for value, _ in per_item], [r["item"] for _, r in per_item],
                                     [r["correct"] for _, r in per_item],
                                     [r["group"] for _, r in per_item] if cluster else None,
                                     f"the classification of {shown_name(source)!r}")
            correct = np.stack([p.correct.astype(np.float64) for p in paired], axis=1)
            ranks.add(retrieval_rows([p.model for p in paired], correct,
                                     np.arange(len(correct)) if clusters is None else clusters, "accuracy",
                                     replicates=replicates, seed=seed, level=level,
                                     calibrated_from=RANK_CALIBRATED_FROM["accuracy"]))
        except EmbsqlError as error:     # e.g. an item one model lacks: the other blocks stand
            notes.append(f"no ranking by accuracy: {error}")
    if cluster and not permutations:
        notes.append("no paired comparison of accuracy: the cluster sign-flip test needs permutations > 0 "
                     "(0 were asked for)")
        return sections, notes
    compared = []
    for name in ("knn", "centroid"):
        per_item = results[name][1]
        paired, clusters = align([value for value, _ in per_item], [r["item"] for _, r in per_item],
                                 [r["correct"] for _, r in per_item],
                                 [r["group"] for _, r in per_item] if cluster else None,
                                 f"the classification of {shown_name(source)!r}")
        compared += [{"classifier": name, **row} for row in
                     paired_rows(paired, clusters, level=level, p_adjust="holm",
                                 permutations=max(permutations, COMPARE_PERMUTATIONS), seed=seed)]
    sections.append(Section("classification_compare", "Paired comparison of models' accuracy",
                            ResultTable.from_dicts("classification_compare", COMPARE_ACCURACY_COLUMNS, compared),
                            cautions.CLASSIFICATION_COMPARE.format(
                                how=cautions.CLUSTER_TEST.format(group=group) if cluster else cautions.MCNEMAR)))
    return sections, notes
