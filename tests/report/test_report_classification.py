"""The report's classification sections (label=, --label): their figures are embsql.knn_classify's,
embsql.centroid_classify's and embsql.compare_classification's (which tests/api/test_classification.py
pins to scikit-learn and scipy), clustered by the report's group column unless the label is the
group; the verdict says which model classifies better only when the paired test says so; bad
input is one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import assert_same_rows
from scipy import stats
from sklearn.neighbors import KNeighborsClassifier

import embsql
from embsql.errors import ColumnNotFoundError, DesignError
from embsql.render.plots import report_plots
from embsql.reporting.verdict import classification_sentence

GROUPS, SIZE, LABELS, DIM = 40, 3, 4, 6


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Items in paraphrase groups of 3 (one label per group, 4 labels); model 'sharp' keeps the
    label signal, 'blurred' drowns it in noise."""
    rng = np.random.default_rng(11)
    centres = 1.3 * rng.normal(size=(LABELS, DIM))
    label = np.repeat(rng.integers(0, LABELS, GROUPS), SIZE)
    source = np.repeat(rng.normal(size=(GROUPS, DIM)), SIZE, axis=0)
    rows = []
    for model, noise in (("sharp", 0.6), ("blurred", 2.5)):
        vectors = centres[label] + 0.5 * source + noise * rng.normal(size=source.shape)
        rows += [(model, f"x{i:03d}", f"g{i // SIZE:02d}", f"c{label[i]}", vectors[i].tolist())
                 for i in range(GROUPS * SIZE)]
    path = tmp_path_factory.mktemp("classification") / "emb.parquet"
    pq.write_table(pa.table({"model": [r[0] for r in rows], "item": [r[1] for r in rows], "source": [r[2] for r in rows],
                             "label": [r[3] for r in rows], "vector": [r[4] for r in rows]}), path)
    return str(path)


def _report(path, group="source", label="label", **options):
    return embsql.report(path, vector="vector", group=group, model="model", sections=("decomposition",),
                         permutations=99, label=label, **options).run(embsql.connect())



def test_the_sections_are_the_faces_figures_clustered_by_the_group(data):
    """The label is not the group column: the groups cluster the intervals and the comparison."""
    result = _report(data)
    con = embsql.connect()
    rows = result["classification"].to_dicts()
    knn = embsql.knn_classify(con, data, label="label", item="item", group="source", vector="vector", model="model").to_dicts()
    centroid = embsql.centroid_classify(con, data, label="label", item="item", group="source", vector="vector",
                                        model="model").to_dicts()
    assert_same_rows([r for r in rows if r["classifier"] == "knn"], knn)
    assert_same_rows([r for r in rows if r["classifier"] == "centroid"], centroid)
    assert [r["model"] for r in rows] == ["blurred", "blurred", "sharp", "sharp"]
    assert all(r["groups"] == GROUPS for r in rows)
    compared = result["classification_compare"].to_dicts()
    for name in ("knn", "centroid"):
        face = embsql.knn_classify if name == "knn" else embsql.centroid_classify
        per_item = face(con, data, label="label", item="item", group="source", per_item=True, vector="vector", model="model")
        expected = embsql.compare_classification(con, per_item, group="group", permutations=10_000, seed=42, model="model",
                                                 item="item").to_dicts()
        assert_same_rows([r for r in compared if r["classifier"] == name], expected)
    assert {r["method"] for r in compared} == {"cluster sign-flip"}
    assert "groups of the 'source' column" in result.section("classification").caution


def test_knn_accuracy_is_scikit_learns_leave_one_out(data):
    result = _report(data)
    table = pq.read_table(data).to_pylist()
    for model in ("sharp", "blurred"):
        mine = [r for r in table if r["model"] == model]
        x = np.array([r["vector"] for r in mine])
        y = np.array([r["label"] for r in mine])
        predicted = KNeighborsClassifier(n_neighbors=10, metric="cosine", algorithm="brute").fit(x, y).predict(None)
        row = next(r for r in result["classification"].to_dicts() if r["model"] == model and r["classifier"] == "knn")
        assert row["accuracy"] == pytest.approx(float(np.mean(predicted == y)), abs=1e-15)


def test_with_the_group_as_label_items_are_the_units_and_mcnemar_is_exact(data):
    """The label is the group column: the classes are fixed, so no clusters; McNemar equals scipy's
    binomial test on the discordant items."""
    result = _report(data, group="label")
    rows = result["classification"].to_dicts()
    assert all(r["groups"] is None for r in rows)
    assert_same_rows([r for r in rows if r["classifier"] == "knn"],
          embsql.knn_classify(embsql.connect(), data, label="label", item="item", vector="vector", model="model").to_dicts())
    row = next(r for r in result["classification_compare"].to_dicts() if r["classifier"] == "knn")
    assert row["method"] == "mid-p McNemar"
    discordant, low = row["a_only"] + row["b_only"], min(row["a_only"], row["b_only"])
    expected = stats.binomtest(row["a_only"], discordant, 0.5).pvalue
    assert row["p_exact"] == pytest.approx(expected, rel=1e-12)
    mid = min(1.0, 2 * stats.binom.cdf(low - 1, discordant, 0.5) + stats.binom.pmf(low, discordant, 0.5))
    assert row["p_value"] == pytest.approx(mid, rel=1e-12)
    assert "the label is the report's group column" in result.section("classification").caution


def test_the_verdict_and_the_figure(data):
    result = _report(data, group="label")
    sentence = next(s for s in result.verdict if "k-NN" in s)
    assert sentence.startswith("sharp classifies the label labels better by k-NN (k = 10) than blurred: accuracy")
    assert "mid-p McNemar, 120 items" in sentence
    plots = [p for p in report_plots(result) if p.anchor == "classification"]
    assert len(plots) == 1 and plots[0].figure.axes[0].get_title() == "Accuracy per model"


ROW = {"classifier": "knn", "items": 200, "groups": None, "method": "mid-p McNemar", "level": 0.95,
       "calibrated": True, "p_adjust": "holm"}
KNN = [{"model": "a", "classifier": "knn", "k": 10, "accuracy": 0.8}, {"model": "b", "classifier": "knn", "k": 10,
                                                                        "accuracy": 0.7}]


@pytest.mark.parametrize("difference, p, expected", [
    (0.1, 0.002, "a classifies the topic labels better by k-NN (k = 10) than b: accuracy 0.800 against 0.700, 0.100 "
                 "higher (p = 0.002, 95% interval 0.040 to 0.160; mid-p McNemar, 200 items)."),
    (-0.1, 0.002, "b classifies the topic labels better by k-NN (k = 10) than a: accuracy 0.800 against 0.700, "
                  "0.100 higher (p = 0.002, 95% interval 0.040 to 0.160; mid-p McNemar, 200 items)."),
    (0.02, 0.5, "a and b are not told apart on k-NN (k = 10) accuracy for the topic labels: accuracy 0.720 against "
                "0.700, a gap of 0.020 within chance (p = 0.500, 95% interval −0.040 to 0.080; mid-p McNemar, 200 "
                "items)."),
])
def test_the_verdict_in_the_three_cases(difference, p, expected):
    high, low = 0.7 + abs(difference), 0.7
    row = {**ROW, "model_a": "a", "model_b": "b", "accuracy_a": high if difference > 0 else low,
           "accuracy_b": low if difference > 0 else high, "difference": difference, "p_value": p, "p_adjusted": p,
           "ci_low": difference - 0.06, "ci_high": difference + 0.06}
    assert classification_sentence([row], KNN, "topic") == expected


def test_one_model_gets_its_accuracy(data):
    result = _report(data, where="model = 'sharp'")
    assert "classification_compare" not in [s.name for s in result.sections]
    row = next(r for r in result["classification"].to_dicts() if r["classifier"] == "knn")
    sentence = next(s for s in result.verdict if "k-NN" in s)
    assert sentence == (f"k-NN (k = 10) with sharp predicts the label label of {row['accuracy']:.1%} of the 120 "
                        f"items (95% interval {row['ci_low']:.1%} to {row['ci_high']:.1%}).")


def test_k_from_the_settings_and_bad_input(data):
    result = _report(data, classification={"k": 3})
    assert {r["k"] for r in result["classification"].to_dicts() if r["classifier"] == "knn"} == {3}
    with pytest.raises(DesignError, match="k"):
        _report(data, classification={"k": 500})
    with pytest.raises(ColumnNotFoundError, match="label column 'nothing'"):
        _report(data, label="nothing")


def test_cli_label_flag_and_its_one_line_error(data):
    environment = {**os.environ, "NO_COLOR": "1"}
    base = [sys.executable, "-m", "embsql", "report", data, "--vector", "vector", "--group", "source", "--model",
            "model", "--sections", "decomposition", "--permutations", "99"]
    done = subprocess.run(base + ["--label", "label", "--format", "markdown"], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "## Classification by the 'label' labels" in done.stdout
    assert "## Paired comparison of models' accuracy" in done.stdout
    bad = subprocess.run(base + ["--label", "nothing"], capture_output=True, text=True, env=environment, timeout=300)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert "'nothing'" in bad.stderr
