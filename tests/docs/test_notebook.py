"""A notebook run headless on a real IPython kernel (nbclient + ipykernel), the way a user works.

What a cell shows is what the kernel sends: a report or a table as the last expression of a cell
is one execute_result carrying text/html (and text/plain), with no stream output; print() gives
the text report; result.plot() shows its figures as PNG images with no %matplotlib magic.

Set EMBSQL_SCREENSHOT_DIR to keep the executed notebook rendered to HTML (notebook.html) there.
"""

import base64
import importlib.util
import os
from pathlib import Path

import pytest
from helpers import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
if importlib.util.find_spec("ipykernel") is None:
    pytest.skip("ipykernel is not installed (pip install '.[test]')", allow_module_level=True)

pytestmark = pytest.mark.slow   # a kernel runs the notebook once for the module (seconds)

EXAMPLE = ROOT / "examples" / "embeddings.parquet"

CELLS = [
    # 0: the report runs (a few permutations: p-values in the summary, quickly)
    "import embsql\n"
    "con = embsql.connect()\n"
    f"result = embsql.report({str(EXAMPLE)!r}, vector='embedding', group='topic', model='model',\n"
    "                       permutations=99).run(con)",
    "result",                                                                  # 1
    "print(result)",                                                           # 2
    "text = str(result)\nlen(text)",                                          # 3
    "result.plot()",                                                           # 4
    f"embsql.anova(con, {str(EXAMPLE)!r}, group='topic', vector='embedding', model='model')",  # 5
    "import pandas as pd\n"                                                    # 6: a DataFrame as the source
    f"df = pd.read_parquet({str(EXAMPLE)!r})\n"
    "embsql.anova(con, df[df.model == 'mini-384'], group='topic', vector='embedding').r2",
]


@pytest.fixture(scope="module")
def executed():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    env = dict(os.environ)
    # the kernel imports the embsql this test imported (the checkout, or the installed wheel in CI)
    import embsql

    here = str(Path(embsql.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    previous = os.environ.copy()
    os.environ.update(env)          # the kernel inherits the environment: embsql from this checkout
    try:
        client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                                         resources={"metadata": {"path": str(ROOT)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(previous)
    if os.environ.get("EMBSQL_SCREENSHOT_DIR"):
        from nbconvert import HTMLExporter

        body, _ = HTMLExporter().from_notebook_node(notebook)
        target = Path(os.environ["EMBSQL_SCREENSHOT_DIR"]) / "notebook.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    return notebook


def _outputs(notebook, cell):
    return notebook.cells[cell].outputs


def test_running_the_report_prints_nothing_into_the_notebook(executed):
    outputs = _outputs(executed, 0)
    assert [o for o in outputs if o.output_type != "stream" or o.name != "stderr"] == [], outputs


def test_a_report_as_last_expression_is_one_html_output(executed):
    outputs = _outputs(executed, 1)
    assert len(outputs) == 1, [o.output_type for o in outputs]
    (output,) = outputs
    assert output.output_type == "execute_result"
    html = output.data["text/html"]
    assert html.startswith('<div class="embsql-report">') and "<img" in html
    assert "separates the topic groups more than" in html          # the verdict comes first
    assert html.index('id="verdict"') < html.index('id="summary"')


def test_print_and_str_give_the_text_report(executed):
    (printed,) = _outputs(executed, 2)
    assert printed.output_type == "stream" and printed.name == "stdout"
    assert "Summary" in printed.text and "p_value" in printed.text and "<div" not in printed.text
    assert len(printed.text.splitlines()) > 40
    (lines,) = _outputs(executed, 3)
    assert int(lines.data["text/plain"]) == len(printed.text) - 1          # print adds one newline


def test_plot_displays_its_figures_as_images(executed):
    outputs = _outputs(executed, 4)
    assert len(outputs) == 1
    data = outputs[0].data
    assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert data["text/html"].count('<img alt=') >= 3            # every figure, not only the first
    assert "Figure size" not in data["text/plain"]


def test_a_result_table_is_one_html_output(executed):
    outputs = _outputs(executed, 5)
    assert len(outputs) == 1 and outputs[0].output_type == "execute_result"
    assert "<table" in outputs[0].data["text/html"] and "mini-384" in outputs[0].data["text/html"]


def test_a_dataframe_is_a_source(executed):
    (output,) = _outputs(executed, 6)
    assert 0.2 < float(output.data["text/plain"]) < 0.4
