"""Acceptance (issue 13, header rendered as text): a report with one model (no --by) never shows a
Python None to the user. Today the header reads "dimensions: None 6" and the note "model None has
4 groups". Reference: the report's own wording rule (no repr of Python values in user text)."""

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def test_single_model_report_has_no_none(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 6))
    x[10:20] += 1.0
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"grp": [f"g{i // 10}" for i in range(40)],
                             "emb": pa.array(list(x), type=pa.list_(pa.float64()))}), path)
    out = subprocess.run([sys.executable, "-m", "embsql", "report", str(path), "--vector", "emb", "--group",
                          "grp", "--permutations", "0", "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "None" not in out.stdout, [line for line in out.stdout.splitlines() if "None" in line]
