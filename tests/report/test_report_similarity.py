"""The report's similarity sections (pairs=, --pairs): their figures are embsql.similarity_eval's and
embsql.compare_similarity's (which tests/api/test_similarity.py pins to scipy), the per-pair cosines
are scipy's Spearman input, the scatter is drawn, the verdict says who agrees with people more
only when the paired test says so, and bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers import assert_same_rows
from scipy import stats

import embsql
from embsql.errors import ColumnNotFoundError, InputError
from embsql.render.plots import report_plots
from embsql.reporting import labels
from embsql.reporting.verdict import similarity_sentence

ITEMS, DIM, PAIRS = 60, 8, 240


def _write(folder, noise: dict[str, float], seed: int = 3):
    """An embeddings table (items in 10 topics, one row per model and item) and a pairs table whose
    gold score is the latent cosine plus noise; items recur across pairs (some in many)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(ITEMS, DIM)) + np.repeat(rng.normal(size=(10, DIM)), ITEMS // 10, axis=0)
    rows = []
    for model, sd in noise.items():
        vectors = latent + sd * rng.normal(size=latent.shape)
        rows += [(model, f"w{i:02d}", f"t{i // 6}", vectors[i].tolist()) for i in range(ITEMS)]
    pq.write_table(pa.table({"model": [r[0] for r in rows], "item": [r[1] for r in rows],
                             "topic": [r[2] for r in rows], "vector": [r[3] for r in rows]}), folder / "emb.parquet")
    weights = np.arange(1, ITEMS + 1) ** -0.8                 # hubs: a few items in many pairs
    weights /= weights.sum()
    a = rng.choice(ITEMS, PAIRS, p=weights)
    b = rng.choice(ITEMS, PAIRS)
    keep = a != b
    unit = latent / np.linalg.norm(latent, axis=1, keepdims=True)
    gold = np.einsum("ij,ij->i", unit[a[keep]], unit[b[keep]]) + 0.15 * rng.normal(size=int(keep.sum()))
    pq.write_table(pa.table({"item_a": [f"w{i:02d}" for i in a[keep]], "item_b": [f"w{j:02d}" for j in b[keep]],
                             "score": np.round(5 * (gold + 1) / 2, 2)}), folder / "pairs.parquet")
    return str(folder / "emb.parquet"), str(folder / "pairs.parquet")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("similarity"), {"close": 0.3, "far": 1.5})


def _report(emb, pairs, **options):
    settings = {"vector": "vector", "group": "topic", "model": "model", "sections": ("decomposition",),
                "permutations": 0, "pairs": pairs, **options}
    return embsql.report(emb, **settings).run(embsql.connect())



def test_the_sections_are_the_faces_figures(data):
    emb, pairs = data
    result = _report(emb, pairs)
    con = embsql.connect()
    assert_same_rows(result["similarity"].to_dicts(), embsql.similarity_eval(con, pairs, emb, vector="vector", model="model",
                                                                             item="item").to_dicts())
    assert_same_rows(result["similarity_compare"].to_dicts(), embsql.compare_similarity(con, pairs, emb, vector="vector",
                                                                                        model="model", item="item").to_dicts())
    per_pair = embsql.similarity_eval(con, pairs, emb, per_pair=True, vector="vector", model="model", item="item").to_dicts()
    points = result["similarity_pairs"].to_dicts()
    assert [(p["model"], p["item_a"], p["item_b"], p["score"]) for p in points] == \
        [(p["model"], p["item_a"], p["item_b"], p["score"]) for p in per_pair]
    assert [p["cosine"] for p in points] == pytest.approx([p["cosine"] for p in per_pair], abs=1e-15)
    for model in ("close", "far"):   # and the independent reference, on the section's own points
        mine = [p for p in points if p["model"] == model]
        rho = stats.spearmanr([p["cosine"] for p in mine], [p["score"] for p in mine]).statistic
        row = next(r for r in result["similarity"].to_dicts() if r["model"] == model)
        assert row["spearman"] == pytest.approx(rho, abs=1e-12)
        assert row["pearson"] == pytest.approx(stats.pearsonr([p["cosine"] for p in mine],
                                                              [p["score"] for p in mine]).statistic, abs=1e-12)
    assert result.meta["pairs"] == pairs


def test_the_scatter_is_drawn_per_model_beside_the_correlations(data):
    emb, pairs = data
    result = _report(emb, pairs)
    plots = [p for p in report_plots(result) if p.anchor == "similarity"]
    assert len(plots) == 1 and plots[0].caution_from == "similarity_pairs"
    panels = [ax for ax in plots[0].figure.axes if ax.get_visible()]
    assert [ax.get_title().splitlines()[0] for ax in panels] == ["close", "far"]
    count = len(result["similarity_pairs"].to_dicts()) // 2
    assert [len(ax.collections[0].get_offsets()) for ax in panels] == [count, count]
    assert "Spearman" in panels[0].get_title()
    html = result.to_html()
    assert 'id="section-similarity"' in html and 'id="section-similarity_compare"' in html
    assert html.count("<img") == len(report_plots(result))


def test_the_scatter_keeps_at_most_so_many_pairs(data, monkeypatch):
    emb, pairs = data
    monkeypatch.setattr(labels, "SCATTER_PAIRS", 50)
    result = _report(emb, pairs)
    points = result["similarity_pairs"].to_dicts()
    assert len(points) == 100 and "50 of the" in result.section("similarity_pairs").caution
    assert result["similarity"].to_dicts()[0]["pairs"] > 50      # the figures use every pair


def test_the_verdict_names_the_model_that_agrees_more(data):
    emb, pairs = data
    sentence = " ".join(_report(emb, pairs).verdict)
    assert "close agrees with the human similarity judgements more than far: Spearman" in sentence
    assert "Holm-adjusted" in sentence and "95% interval" in sentence


ROW = {"correlation": "spearman", "pairs": 300, "items": 120, "level": 0.95, "calibrated": True}


@pytest.mark.parametrize("difference, p, expected", [
    (0.12, 0.001, "a agrees with the human similarity judgements more than b: Spearman 0.700 against 0.580, "
                  "0.120 higher (p = 0.001, Holm-adjusted, 95% interval 0.050 to 0.190; 300 pairs of 120 items"),
    (-0.12, 0.001, "b agrees with the human similarity judgements more than a: Spearman 0.700 against 0.580, "
                   "0.120 higher (p = 0.001, Holm-adjusted, 95% interval 0.050 to 0.190; 300 pairs of 120 items"),
    (0.03, 0.40, "a and b are not told apart on agreement with the human similarity judgements: Spearman 0.610 "
                 "against 0.580, a gap of 0.030 within chance (p = 0.400, Holm-adjusted, 95% interval"),
])
def test_the_verdict_in_the_three_cases(difference, p, expected):
    """A better, B better, no difference: a winner only when the adjusted p is at most 0.05."""
    high, low = 0.58 + abs(difference), 0.58
    row = {**ROW, "model_a": "a", "model_b": "b", "estimate_a": high if difference > 0 else low,
           "estimate_b": low if difference > 0 else high, "difference": difference, "p_value": p / 2, "p_adjusted": p,
           "ci_low": difference - 0.07, "ci_high": difference + 0.07}
    sentence = similarity_sentence([row], [])
    assert sentence.startswith(expected), sentence
    assert "pearson" not in sentence.lower()
    rough = similarity_sentence([{**row, "calibrated": False}], [])
    assert rough.endswith("the intervals are rough.")


def test_one_model_gets_its_correlation_and_interval(data):
    emb, pairs = data
    result = _report(emb, pairs, where="model = 'close'")
    assert "similarity_compare" not in [s.name for s in result.sections]
    row = result["similarity"].to_dicts()[0]
    sentence = next(s for s in result.verdict if "similarity" in s)
    assert sentence.startswith(f"close's cosine agrees with the human similarity judgements at Spearman "
                               f"{row['spearman']:.3f} (95% interval {row['ci_low']:.3f} to {row['ci_high']:.3f}")


def test_config_file_keys_and_their_errors(data, tmp_path):
    emb, pairs = data
    renamed = tmp_path / "renamed.parquet"
    pq.write_table(pq.read_table(pairs).rename_columns(["left", "right", "gold"]), renamed)
    config = tmp_path / "report.toml"
    config.write_text(f'[report]\nsource = "{emb}"\nvector = "vector"\ngroup = "topic"\nmodel = "model"\n'
                      f'permutations = 0\nsections = ["decomposition"]\npairs = "{renamed}"\n\n'
                      '[report.similarity]\na = "left"\nb = "right"\nscore = "gold"\n')
    result = embsql.Report.from_file(config).run(embsql.connect())
    assert_same_rows(result["similarity"].to_dicts(), _report(emb, pairs)["similarity"].to_dicts())
    with pytest.raises(InputError, match="unknown setting 'left'"):
        embsql.report(emb, vector="vector", group="topic", pairs=pairs, similarity={"left": "a"})
    with pytest.raises(ColumnNotFoundError, match="'item_a'"):
        _report(emb, str(renamed))


def test_off_duckdb_the_section_is_refused(data):
    emb, pairs = data
    report = embsql.report(emb, vector="vector", group="topic", pairs=pairs, permutations=0)
    with pytest.raises(InputError, match="similarity section needs the rows"):
        report.finish([], con=None)


def _cli(*extra: str):
    environment = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "embsql", "report", *extra], capture_output=True, text=True,
                          env=environment, timeout=300)


def test_cli_pairs_flag_and_its_one_line_errors(data, tmp_path):
    emb, pairs = data
    base = [emb, "--vector", "vector", "--group", "topic", "--model", "model", "--sections", "decomposition",
            "--permutations", "0"]
    done = _cli(*base, "--pairs", pairs, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"similarity"' in done.stdout and '"similarity_compare"' in done.stdout and '"similarity_pairs"' in done.stdout
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"item_a": ["w01", "w02", "w03"], "item_b": ["w04", "nobody", "w05"],
                             "score": [1.0, 2.0, 3.0]}), bad)
    failed = _cli(*base, "--pairs", str(bad))
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.count("\n") == 1 and "'nobody'" in failed.stderr and "row 2 " in failed.stderr
    absent = _cli(*base, "--pairs", str(tmp_path / "absent.parquet"))
    assert absent.returncode == 2 and absent.stderr.count("\n") == 1


def test_cli_one_model_with_its_own_item_column(data, tmp_path):
    """--item names the items the pairs refer to, with no model column too."""
    emb, pairs = data
    one = pq.read_table(emb).filter(pc.equal(pq.read_table(emb).column("model"), "close"))
    renamed = tmp_path / "one.parquet"
    pq.write_table(one.drop_columns(["model"]).rename_columns(["word", "topic", "vector"]), renamed)
    base = [str(renamed), "--vector", "vector", "--group", "topic", "--sections", "decomposition",
            "--permutations", "0", "--pairs", pairs]
    done = _cli(*base, "--item", "word", "--format", "json")
    assert done.returncode == 0, done.stderr
    expected = embsql.similarity_eval(embsql.connect(), pairs, str(renamed), item="word", vector="vector",
                                      model="model").to_dicts()[0]
    section = next(s for s in json.loads(done.stdout)["sections"] if s["name"] == "similarity")
    got = dict(zip(section["columns"], section["rows"][0]))
    assert got["model"] is None and got["spearman"] == pytest.approx(expected["spearman"], abs=1e-12)
    missing = _cli(*base)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "--item" in missing.stderr
