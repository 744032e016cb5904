"""Sources where embeddings are kept: a Lance dataset, a LanceDB table, a Hugging Face Dataset, a
polars LazyFrame and a directory of hive-partitioned Parquet files, each through the real library.
Every one gives DuckDB's figures for the same rows, from the Python API and the command line."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import embsql
from embsql.errors import SourceNotFoundError
from embsql.io.sources import arrow_view

lance = pytest.importorskip("lance")
lancedb = pytest.importorskip("lancedb")
datasets = pytest.importorskip("datasets")
pl = pytest.importorskip("polars")


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(7)
    rows = [(m, f"g{g}", f"i{g}_{i}", (rng.normal(size=6) + g * (1 + (m == "b"))).tolist())
            for m in ("a", "b") for g in range(8) for i in range(4 + g % 3)]
    return pa.table({"model": [r[0] for r in rows], "g": [r[1] for r in rows], "item": [r[2] for r in rows],
                     "v": pa.array([r[3] for r in rows], pa.list_(pa.float32()))})


@pytest.fixture(scope="module")
def stores(table, tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    for m in ("a", "b"):
        (root / "hive" / f"model={m}").mkdir(parents=True)
        pq.write_table(table.filter(pc.equal(table["model"], m)).drop(["model"]), root / "hive" / f"model={m}" / "part-0.parquet")
    lance.write_dataset(table, str(root / "emb.lance"))
    lancedb.connect(str(root / "db")).create_table("emb", table)
    datasets.Dataset(table).save_to_disk(str(root / "hf"))
    return root


def figures(con, source) -> list[dict]:
    rows = embsql.anova(con, source, group="g", vector="v", model="model").to_dicts()
    rows += embsql.bootstrap(con, source, group="g", vector="v", model="model", replicates=99).to_dicts()
    return rows


def same(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(b[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12), key
            else:
                assert a[key] == b[key], key


@pytest.mark.parametrize("kind", ["lance dataset", "lance path", "lance uri", "lancedb table", "lancedb uri",
                                  "hf dataset", "hf directory", "lazy frame", "hive directory"])
def test_every_store_gives_duckdbs_figures(table, stores, kind):
    with embsql.connect() as con:
        expected = figures(con, table)
        source = {
            "lance dataset": lambda: lance.dataset(str(stores / "emb.lance")),
            "lance path": lambda: str(stores / "emb.lance"),
            "lance uri": lambda: f"lance://{stores / 'emb.lance'}",
            "lancedb table": lambda: lancedb.connect(str(stores / "db")).open_table("emb"),
            "lancedb uri": lambda: f"lance://{stores / 'db'}?table=emb",
            "hf dataset": lambda: datasets.load_from_disk(str(stores / "hf")),
            "hf directory": lambda: str(stores / "hf"),
            "lazy frame": lambda: pl.from_arrow(table).lazy(),
            "hive directory": lambda: str(stores / "hive"),
        }[kind]()
        same(figures(con, source), expected)
        assert con.sql("SELECT count(*) FROM duckdb_tables() WHERE NOT internal").fetchall() == [(0,)]
        assert con.sql("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall() == [(0,)]


def test_arrow_objects_are_scanned_without_a_copy(stores):
    dataset = lance.dataset(str(stores / "emb.lance"))
    assert arrow_view(dataset) is dataset                      # DuckDB scans the Lance dataset in place
    hf = datasets.load_from_disk(str(stores / "hf"))
    assert arrow_view(hf) is hf.data.table                    # the memory-mapped Arrow table itself
    shuffled = hf.shuffle(seed=1)                              # a view through an index: its rows in order
    assert arrow_view(shuffled).column("item").to_pylist() == shuffled["item"]


def test_the_report_names_the_store(stores):
    result = embsql.report(f"lance://{stores / 'emb.lance'}", vector="v", group="g", model="model").run()
    assert result.meta["source"] == f"lance://{stores / 'emb.lance'}"
    hive = embsql.report(str(stores / "hive"), vector="v", group="g", model="model").run()
    assert [r["model"] for r in hive.summary.to_dicts()] == ["a", "b"]        # the partition key is a column
    assert result.summary.to_dicts()[0]["r2"] == pytest.approx(hive.summary.to_dicts()[0]["r2"], rel=1e-12)


@pytest.mark.parametrize("form", ["lance://{root}/db?table=emb", "{root}/hf"])   # the other forms: the Python tests
def test_the_command_line_reads_each_store(stores, form):
    source = form.format(root=stores)
    done = subprocess.run([sys.executable, "-m", "embsql", "report", source, "--vector", "v", "--group", "g",
                           "--model", "model", "--format", "json", "--sections", "decomposition"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f'"source": "{source}"' in done.stdout


@pytest.mark.parametrize("form, message", [
    ("lance://{root}/missing.lance", "cannot be opened: Dataset at path"),
    ("lance://{root}/db?table=missing", "cannot be opened: Table 'missing' was not found"),
])
def test_a_missing_store_is_one_line_naming_it(stores, form, message):
    source = form.format(root=stores)
    with embsql.connect() as con, pytest.raises(SourceNotFoundError, match=message) as caught:
        embsql.anova(con, source, group="g", vector="v")
    assert source in str(caught.value) and "\n" not in str(caught.value)
    if "table=" not in source:
        return          # one command-line run is enough to show the exit code and the one line
    done = subprocess.run([sys.executable, "-m", "embsql", "report", source, "--vector", "v", "--group", "g"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and source in done.stderr


def test_a_dataset_dict_asks_for_one_split(table):
    splits = datasets.DatasetDict({"train": datasets.Dataset(table), "test": datasets.Dataset(table)})
    with embsql.connect() as con, pytest.raises(SourceNotFoundError, match=r"several splits \('train', 'test'\)"):
        embsql.anova(con, splits, group="g", vector="v")
