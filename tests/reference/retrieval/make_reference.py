"""Reference values for tests/api/test_evaluation.py: pytrec_eval (trec_eval's code) and ranx on one
seeded run.  Run from the checkout: python tests/reference/retrieval/make_reference.py
It writes reference.json beside itself: the qrels, the run, and the per-query values.

The run has ties (scores on a coarse grid), graded relevance 0..3, a query whose judgements are
all 0, unjudged documents, a query of the run without judgements and a judged query the run
does not rank.  ranx is given the same run with the ties broken beforehand (scores nudged in
trec_eval's order) because its tie order is its own; trec_eval sorts by score descending, then
docno descending.
"""

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np

METRICS = {"ndcg@3": "ndcg_cut_3", "ndcg@10": "ndcg_cut_10", "map@5": "map_cut_5", "map@100": "map_cut_100",
           "recall@3": "recall_3", "recall@10": "recall_10", "precision@3": "P_3", "precision@10": "P_10",
           "hit_rate@1": "success_1", "hit_rate@5": "success_5", "mrr@3": None, "mrr@10": None}


def data():
    rng = np.random.default_rng(20261201)
    qrels, run = {}, {}
    for q in range(12):
        qid = f"q{q:02d}"
        docs = [f"d{j:03d}" for j in rng.choice(60, size=25, replace=False)]
        if q != 11:                                  # q11: in the run, never judged
            judged = docs[:8] + [f"d{j:03d}" for j in rng.choice(60, size=4)]
            qrels[qid] = {d: int(rng.choice([0, 0, 1, 2, 3])) for d in judged}
            if q == 3:                               # judged, nothing relevant
                qrels[qid] = {d: 0 for d in qrels[qid]}
        rng.shuffle(docs)
        run[qid] = {d: float(np.round(rng.uniform(0, 1) * 8) / 8) for d in docs}   # many ties
    qrels["q99"] = {"d001": 1}                       # judged, not in the run
    return qrels, run


def trec_order(scores):
    return sorted(scores, key=lambda d: (-scores[d], tuple(-b for b in d.encode())))


def main():
    import pytrec_eval
    import ranx

    qrels, run = data()
    measures = {"ndcg_cut.3,10", "map_cut.5,100", "recall.3,10", "P.3,10", "success.1,5", "recip_rank"}
    full = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    trec = {name: {q: v[key] for q, v in full.items()} for name, key in METRICS.items() if key}
    for cut in (3, 10):
        cut_run = {q: {d: s[d] for d in trec_order(s)[:cut]} for q, s in run.items()}
        values = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_run)
        trec[f"mrr@{cut}"] = {q: v["recip_rank"] for q, v in values.items()}
    # ranx: the same orders without ties (a strictly decreasing score in trec_eval's order)
    untied = {q: {d: float(len(s) - i) for i, d in enumerate(trec_order(s))} for q, s in run.items()}
    judged_run = {q: s for q, s in untied.items() if q in qrels}
    judged_qrels = {q: j for q, j in qrels.items() if q in judged_run}
    ranx_values = ranx.evaluate(ranx.Qrels(judged_qrels), ranx.Run(judged_run), list(METRICS), return_mean=False)
    order = sorted(judged_run)                       # ranx keeps the queries sorted
    ranx_out = {name: dict(zip(order, map(float, values))) for name, values in ranx_values.items()}
    out = {"versions": {"pytrec_eval-terrier": version("pytrec_eval-terrier"), "ranx": version("ranx"),
                        "numpy": version("numpy")},
           "qrels": qrels, "run": run, "untied_run": untied, "pytrec_eval": trec, "ranx": ranx_out}
    path = Path(__file__).with_name("reference.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
