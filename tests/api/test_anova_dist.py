"""embsql.anova_dist (numpy, embsql.core.decomposition.distance_anova_row) and the SQL function
emb_anova_dist (registered, and the stock SQL file the DuckDB CLI reads) against an explicit loop
over the pairs, on Euclidean and non-Euclidean dissimilarities, unbalanced groups, pairs given once
(in either order, rows shuffled) and both ways; and against embsql.anova on the vectors whose cosine
distances they are."""

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql.errors import sql_message
from embsql.io.resources import sql_entry_file

COLUMNS = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f")


def by_definition(pairs, labels) -> dict:
    """The decomposition by its definition, one pair at a time: SS_T = (1/n) sum_{i<j} d², SS_W =
    sum_g (1/n_g) sum_{i<j in g} d², each unordered pair counted once however often it is given."""
    group = dict(labels)
    sizes = {}
    for g in group.values():
        sizes[g] = sizes.get(g, 0) + 1
    distance = {}
    for a, b, d in pairs:
        if a != b:
            distance[frozenset((a, b))] = d
    n, groups = len(group), len(sizes)
    ss_t = ss_w = 0.0
    for pair, d in distance.items():
        a, b = tuple(pair)
        ss_t += d * d / n
        if group[a] == group[b]:
            ss_w += d * d / sizes[group[a]]
    ss_b = ss_t - ss_w
    return {"n": n, "groups": groups, "ss_t": ss_t, "ss_w": ss_w, "ss_b": ss_b, "r2": ss_b / ss_t,
            "r2_null": (groups - 1) / (n - 1), "f": (ss_b / (groups - 1)) / (ss_w / (n - groups))}


def case(name: str, rng: np.random.Generator):
    """(pairs, labels) of one kind of table."""
    sizes = {"unbalanced": [2, 5, 9], "non-Euclidean": [3, 6, 2, 4], "once, either order": [4, 1, 7],
             "both ways": [3, 3, 5], "text ids, self distances": [6, 2, 3]}[name]
    codes = np.repeat(np.arange(len(sizes)), sizes)
    n = len(codes)
    ids = [f"item{k:02d}" for k in rng.permutation(n)] if name.startswith("text") else \
        [int(k) for k in rng.permutation(1000)[:n]]
    spread = 0.0 if name == "non-Euclidean" else 2.0      # of the group centres
    points = rng.normal(size=(n, 3)) + spread * rng.normal(size=(len(sizes), 3))[codes]
    dist = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    if name == "non-Euclidean":      # within-group dissimilarities far above those between: SS_W > SS_T
        dist = np.where(codes[:, None] == codes[None], dist + 5.0, dist)
    pairs = [(ids[a], ids[b], float(dist[a, b])) for a in range(n) for b in range(a + 1, n)]
    if name == "once, either order":
        pairs = [(b, a, d) if rng.random() < 0.5 else (a, b, d) for a, b, d in pairs]
    if name == "both ways":
        pairs += [(b, a, d) for a, b, d in pairs]
    if name.startswith("text"):
        pairs += [(item, item, 0.0) for item in ids[::2]]
    pairs = [pairs[k] for k in rng.permutation(len(pairs))]
    return pairs, [(ids[k], f"g{codes[k]}") for k in range(n)]


def tables(pairs, labels) -> dict:
    return {"dist": pa.table({"i": [p[0] for p in pairs], "j": [p[1] for p in pairs], "d": [p[2] for p in pairs]}),
            "lab": pa.table({"id": [x[0] for x in labels], "g": [x[1] for x in labels]})}


@pytest.fixture(scope="module")
def stock():
    connection = duckdb.connect()
    connection.execute(sql_entry_file().read_text())
    yield connection
    connection.close()


def routes(con, stock, pairs, labels) -> dict:
    """The row of each route: the Python face, emb_anova_dist registered, and from the stock SQL file."""
    for c in (con, stock):
        for name, table in tables(pairs, labels).items():
            c.register(name, table)
    got = {"python": embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").to_dicts()[0]}
    for route, c in (("registered", con), ("stock", stock)):
        got[route] = c.sql("SELECT * FROM emb_anova_dist('dist', 'lab', 'g')").to_arrow_table().to_pylist()[0]
    return got


@pytest.mark.parametrize("name", ["unbalanced", "non-Euclidean", "once, either order", "both ways",
                                  "text ids, self distances"])
def test_every_route_gives_the_decomposition_by_its_definition(con, stock, name):
    pairs, labels = case(name, np.random.default_rng(30))
    want = by_definition(pairs, labels)
    assert (want["ss_b"] < 0) == (name == "non-Euclidean")     # the signed SS_B is exercised, and only there
    for route, row in routes(con, stock, pairs, labels).items():
        assert tuple(row) == COLUMNS, route
        assert row == pytest.approx(want, rel=1e-12, abs=1e-14), route


def test_groups_whose_items_coincide_give_an_infinite_f_on_every_route(con, stock):
    """SS_W = 0 (every within-group distance 0): R² = 1 and F infinite, not an error."""
    labels = [(1, "A"), (2, "A"), (3, "B"), (4, "B"), (5, "B")]
    pairs = [(a, b, 0.0 if (a < 3) == (b < 3) else 1.5) for a in range(1, 6) for b in range(a + 1, 6)]
    for route, row in routes(con, stock, pairs, labels).items():
        assert (row["ss_w"], row["r2"], row["f"]) == (0.0, 1.0, float("inf")), route
        assert row["ss_t"] == pytest.approx(6 * 1.5 ** 2 / 5, rel=1e-15), route


def test_cosine_distances_give_anova_on_the_vectors(con):
    """d² = 2 (1 - cos) = ||u_i - u_j||² for unit vectors u: anova_dist on those distances is
    embsql.anova on the vectors (three unbalanced groups)."""
    rng = np.random.default_rng(7)
    codes = np.repeat(np.arange(3), [4, 9, 6])
    vectors = rng.normal(size=(len(codes), 5)) + 1.5 * rng.normal(size=(3, 5))[codes]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = np.clip(unit @ unit.T, -1.0, 1.0)
    a, b = np.triu_indices(len(codes), 1)
    con.register("emb", pa.table({"g": codes, "v": pa.array(list(vectors), type=pa.list_(pa.float64()))}))
    con.register("dist", pa.table({"i": a, "j": b, "d": np.sqrt(2.0 * (1.0 - cosine[a, b]))}))
    con.register("lab", pa.table({"id": np.arange(len(codes)), "g": codes}))
    from_vectors = embsql.anova(con, "emb", group="g", vector="v").to_dicts()[0]
    from_distances = embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").to_dicts()[0]
    assert from_vectors["r2"] == pytest.approx(0.5, abs=0.45)      # neither 0 nor 1: a test that can fail
    assert from_distances == pytest.approx({k: from_vectors[k] for k in COLUMNS}, rel=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_a_missing_pair_is_named_as_the_smallest_missing_pair_of_ids(con, stock, seed):
    """Random pairs left out of a table whose other pairs come once or both ways (so that a table
    can have more rows than pairs and still lack one): both routes name the smallest missing pair of
    ids, as a brute-force search finds it, and count the distinct pairs."""
    rng = np.random.default_rng(seed)
    ids = sorted(int(k) for k in rng.choice(100, size=7, replace=False))
    every = [(a, b) for a in ids for b in ids if a < b]
    missing = {every[k] for k in rng.choice(len(every), size=int(rng.integers(1, 4)), replace=False)}
    if seed == 0:
        missing = {every[-1]}                      # the last pair in row order
    pairs = []
    for a, b in every:
        if (a, b) not in missing:
            d = float(rng.uniform(0.1, 2.0))
            pairs += [(a, b, d), (b, a, d)] if rng.random() < 0.6 else [(b, a, d)]
    pairs = [pairs[k] for k in rng.permutation(len(pairs))]
    labels = [(item, "AB"[k % 2]) for k, item in enumerate(ids)]
    expected = (f"embsql: [distance.incomplete] distance table dist has {len(every) - len(missing)} distinct pairs, "
                f"but 7 labelled ids need 21: missing pair(s), e.g. ({min(missing)[0]}, {min(missing)[1]})")
    for c in (con, stock):
        for name, table in tables(pairs, labels).items():
            c.register(name, table)
    with pytest.raises(embsql.DistanceTableError) as info:
        embsql.anova_dist(con, "dist", labels="lab", group="g", item="id")
    assert sql_message(info.value) == expected
    for c in (con, stock):
        with pytest.raises(duckdb.Error) as raised:
            c.sql("SELECT * FROM emb_anova_dist('dist', 'lab', 'g')").fetchall()
        assert expected in str(raised.value)
