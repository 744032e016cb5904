"""Write examples/embeddings.parquet: a small, real-looking embedding table for two models.

    python examples/make_example.py            # rewrites examples/embeddings.parquet

Columns: item (string id), topic (group label), model ('mini-384' or 'base-768'), embedding
(FLOAT[]: 384 or 768 floats).  600 items in 30 topics of unequal size (4 to about 50 items);
every item is embedded by both models, so the two models can be compared item by item.

The vectors are synthetic, made to behave like sentence embeddings rather than like random
points:
- anisotropy: every vector shares a strong common direction (real models' mean cosine between
  unrelated sentences is well above 0), stronger in base-768;
- a decaying eigen-spectrum: a few directions carry most of the variance (power law);
- topic structure of realistic strength: R² is moderate (about 0.3 for mini-384, 0.4 for
  base-768), not the near-perfect separation of toy clusters;
- the models are related: both see the same item meaning (topic centre + the item's own
  deviation), through different random maps and with their own noise.
So V (spread) says mini-384 spreads more while R² says base-768 separates topics better: the
comparison embsql exists for.  Seeded and deterministic (numpy's PCG64 streams); float32 values.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20240611
ITEMS = 600
LATENT = 48                      # dimension of the shared "meaning" space
TOPICS = ("astronomy", "baking", "basketball", "beekeeping", "chess", "climate", "coffee", "cycling",
          "databases", "dinosaurs", "economics", "electronics", "film", "gardening", "genetics", "hiking",
          "jazz", "knitting", "law", "linguistics", "medicine", "mythology", "origami", "painting",
          "photography", "poetry", "sailing", "tax", "volcanoes", "wine")
# name, dimension, item noise (within-topic spread), own noise, common direction strength, spectrum decay
MODELS = (("mini-384", 384, 1.6, 1.3, 0.45, 0.35),
          ("base-768", 768, 1.1, 1.3, 0.75, 0.35))
OUTPUT = Path(__file__).with_name("embeddings.parquet")


def topic_sizes(rng: np.random.Generator) -> np.ndarray:
    """Unequal sizes (a few big topics, a long tail), at least 4 items each, summing to ITEMS."""
    weights = rng.dirichlet(np.full(len(TOPICS), 1.2))
    return 4 + rng.multinomial(ITEMS - 4 * len(TOPICS), weights)


def embed(meaning: np.ndarray, rng: np.random.Generator, dim: int, own_noise: float, common: float,
          decay: float) -> np.ndarray:
    """One model's unit vectors: a random map of the meanings with a power-law spectrum, the
    model's own noise (also power-law, in a random basis), a common direction; then normalised."""
    n = len(meaning)
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0]          # random orthonormal basis
    scale = np.arange(1, dim + 1) ** -decay
    signal = (meaning @ rng.standard_normal((LATENT, LATENT))) / np.sqrt(LATENT)
    coords = np.zeros((n, dim))
    coords[:, :LATENT] = signal * scale[:LATENT] * 4.0
    coords += own_noise * rng.standard_normal((n, dim)) * scale
    # the common direction, as a multiple of the typical length of the rest: |mean| of the unit
    # vectors is then about common / sqrt(1 + common^2)
    typical = np.sqrt(np.mean(np.sum(coords ** 2, axis=1)))
    x = coords @ basis.T + common * typical * _unit(rng.standard_normal(dim))
    return _unit(x)


def build_table() -> pa.Table:
    rng = np.random.default_rng(SEED)
    sizes = topic_sizes(rng)
    topic = np.repeat(np.arange(len(TOPICS)), sizes)
    order = rng.permutation(ITEMS)            # items are not listed topic by topic
    topic = topic[order]
    centres = rng.standard_normal((len(TOPICS), LATENT))
    deviation = rng.standard_normal((ITEMS, LATENT))   # the item's own meaning, shared by both models

    items = [f"item-{k:04d}" for k in range(ITEMS)]
    columns = {"item": [], "topic": [], "model": [], "embedding": []}
    for k, (name, dim, item_noise, own_noise, common, decay) in enumerate(MODELS):
        model_rng = np.random.default_rng([SEED, k + 1])
        meaning = centres[topic] + item_noise * deviation
        z = embed(meaning, model_rng, dim, own_noise, common, decay).astype(np.float32)
        columns["item"] += items
        columns["topic"] += [TOPICS[t] for t in topic]
        columns["model"] += [name] * ITEMS
        columns["embedding"] += list(z)
    flat = np.concatenate(columns["embedding"])
    offsets = np.cumsum([0] + [len(v) for v in columns["embedding"]]).astype(np.int32)
    embedding = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.float32()))
    return pa.table({"item": columns["item"], "topic": columns["topic"], "model": columns["model"],
                     "embedding": embedding})


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def write(path: Path = OUTPUT) -> Path:
    # byte-stream-split floats compress by a quarter (random mantissas do not compress at all);
    # DuckDB, pyarrow and polars all read it
    pq.write_table(build_table(), path, compression="zstd", row_group_size=4096,
                   use_dictionary=["item", "topic", "model"], use_byte_stream_split=["embedding.list.element"])
    return path


if __name__ == "__main__":
    target = write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)
    print(f"wrote {target} ({target.stat().st_size / 1e6:.2f} MB)")
