"""The bundled example, examples/embeddings.parquet: what examples/make_example.py generates,
with the documented columns, and the real-looking properties its docstring promises (checked
with numpy, independently of embsql)."""

import importlib.util

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest
from helpers import ROOT

import embsql

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

EXAMPLES = ROOT / "examples"
PARQUET = EXAMPLES / "embeddings.parquet"


def _script():
    spec = importlib.util.spec_from_file_location("make_example", EXAMPLES / "make_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stored() -> pa.Table:
    return pq.read_table(PARQUET)


def test_file_is_small_and_has_the_documented_columns(stored):
    assert PARQUET.stat().st_size < 3_000_000
    assert stored.schema.names == ["item", "topic", "model", "embedding"]
    assert stored.schema.field("item").type == pa.string()
    assert stored.schema.field("topic").type == pa.string()
    assert stored.schema.field("model").type == pa.string()
    assert stored.schema.field("embedding").type == pa.list_(pa.float32())
    assert stored.num_rows == 1200 and stored.to_pandas().notna().all().all()


@pytest.mark.slow
def test_file_is_what_the_script_generates(stored):
    fresh = _script().build_table()
    assert fresh.schema == stored.schema
    for name in ("item", "topic", "model"):
        assert fresh[name].to_pylist() == stored[name].to_pylist()
    # float32 values; another BLAS may round the last bit differently, so compare with a tolerance
    a = np.concatenate([c.values.to_numpy() for c in fresh["embedding"].chunks])
    b = np.concatenate([c.values.to_numpy() for c in stored["embedding"].chunks])
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def per_model(stored) -> dict:
    """model -> (item ids, topic labels, unit vectors as float64), in file order."""
    out = {}
    for model in dict.fromkeys(stored["model"].to_pylist()):
        part = stored.filter(pa.compute.equal(stored["model"], model))
        flat = part["embedding"].combine_chunks().flatten().to_numpy()
        out[model] = (part["item"].to_pylist(), np.array(part["topic"].to_pylist()),
                      flat.astype(np.float64).reshape(part.num_rows, -1))
    return out


def _r2_and_v(z, labels):
    mu = z.mean(axis=0)
    ss_t = ((z - mu) ** 2).sum()
    ss_w = sum(((z[labels == g] - z[labels == g].mean(axis=0)) ** 2).sum() for g in set(labels))
    return 1 - ss_w / ss_t, ss_t / len(z)


def test_design_two_models_same_items_unequal_topics(per_model):
    models = per_model
    assert list(models) == ["mini-384", "base-768"]
    (items_a, topics_a, za), (items_b, topics_b, zb) = models.values()
    assert items_a == items_b and len(set(items_a)) == 600
    assert (topics_a == topics_b).all()
    assert za.shape == (600, 384) and zb.shape == (600, 768)
    np.testing.assert_allclose(np.linalg.norm(za, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(zb, axis=1), 1, atol=1e-5)
    sizes = np.unique(topics_a, return_counts=True)[1]
    assert 20 <= len(sizes) <= 40 and sizes.min() >= 2 and sizes.max() >= 4 * sizes.min()


def test_real_looking_statistics(per_model):
    (_, labels, za), (_, _, zb) = per_model.values()
    r2_a, v_a = _r2_and_v(za, labels)
    r2_b, v_b = _r2_and_v(zb, labels)
    assert 0.2 < r2_a < r2_b < 0.5            # moderate topic structure, stronger in base-768
    assert v_a > v_b                          # ... while V says the opposite: the comparison embsql is for
    for z in (za, zb):
        assert np.linalg.norm(z.mean(axis=0)) > 0.3                   # anisotropic: a common direction
        eig = np.linalg.eigvalsh(np.cov(z.T))[::-1]
        assert eig[:10].sum() / eig.sum() > 0.4 and eig[0] > 5 * eig[20]  # decaying spectrum
    # the two models agree on which items are close, but not perfectly
    i, j = np.triu_indices(600, 1)
    agreement = np.corrcoef((za @ za.T)[i, j], (zb @ zb.T)[i, j])[0, 1]
    assert 0.2 < agreement < 0.95


def test_embsql_reads_it_through_duckdb(con, per_model):
    table = embsql.anova(con, str(PARQUET), group="topic", vector="embedding", model="model")
    by_model = {row["model"]: row for row in table.to_dicts()}
    for model, (_, labels, z) in per_model.items():
        r2, v = _r2_and_v(z, labels)
        assert by_model[model]["r2"] == pytest.approx(r2, rel=1e-9)
        assert by_model[model]["v"] == pytest.approx(v, rel=1e-9)
