"""The command line and the report file speak the one vocabulary (embsql.vocabulary).

Every flag of every subcommand is a name of vocabulary.NAMES with ``-`` for ``_``; every key a
[report] table (Report.from_mapping) or its [report.retrieval] table takes is a name too.  A name
that is none of them is refused: a flag with exit 2 and one line, a file's key with the CLI's one
error line naming the settings, a Python keyword with Python's own TypeError.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import subprocess
import sys
import textwrap

import pytest
from helpers import ROOT

import embsql
from embsql import vocabulary
from embsql.cli import build_parser, main
from embsql.reporting.build import RETRIEVAL_SETTINGS, SETTINGS, Report


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {"(top level)": parser, **choices}


def names_of(parser: argparse.ArgumentParser) -> list[str]:
    """The vocabulary name of every argument a user may give (help and subcommands aside)."""
    found = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if not action.option_strings:
            found.append(action.dest)                          # a positional: named by its dest (DATA: data)
        for option in action.option_strings:
            assert option.startswith("--"), f"{option}: every flag is a long flag"
            found.append(option[2:].replace("-", "_"))
    return found


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_flag_is_a_name_of_the_vocabulary(command):
    names = names_of(subcommands()[command])
    assert names or command == "sql-path", command        # sql-path takes no arguments
    unknown = [name for name in names if name not in vocabulary.NAMES]
    assert unknown == [], f"embsql {command}: {unknown} are not in embsql.vocabulary.NAMES"


def test_every_setting_of_a_report_file_is_a_name_of_the_vocabulary():
    assert set(SETTINGS) == {f.name for f in dataclasses.fields(Report)} - {"_"}
    assert [key for key in SETTINGS if key not in vocabulary.NAMES] == []
    assert [key for key in RETRIEVAL_SETTINGS if key not in vocabulary.NAMES] == []
    together = {"queries": {"docs"}, "docs": {"queries"}}      # the retrieval tables come as a pair
    for key in SETTINGS:                                       # each one is accepted by from_mapping
        values = {"source": "t", "vector": "v", "group": "g",
                  **{k: getattr(_EXAMPLE, k) for k in {key} | together.get(key, set())}}
        assert getattr(Report.from_mapping(values), key) == getattr(_EXAMPLE, key)
    accepted = Report.from_mapping({"source": "t", "vector": "v", "group": "g",
                                    "retrieval": {key: "x" for key in RETRIEVAL_SETTINGS}})
    assert set(accepted.retrieval) == set(RETRIEVAL_SETTINGS)


_EXAMPLE = Report("t", vector="v", group="g", model="m", sections=("decomposition",), permutations=9, seed=3,
                  replicates=7, level=0.9, queries="q", docs="d", retrieval={"qid": "query"}, qrels="j", title="T",
                  table="lake.t", where="split = 'test'", item="i")


@pytest.mark.parametrize("command", ["report", "sql", "demo"])
@pytest.mark.parametrize("given", [["--by", "model"], ["--by=model"], ["--group-col", "topic"], ["--see", "1"]])
def test_an_unknown_flag_is_one_line_and_exit_2(command, given, capsys):
    """An old spelling (--by), a misspelling or an abbreviation (--see for --seed(s)) is no flag: exit 2,
    one line on stderr naming it, nothing on stdout."""
    with pytest.raises(SystemExit) as stopped:
        main([command, "data.parquet", "--vector", "v", *given])
    assert stopped.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("embsql: error: unrecognized arguments: ") and given[0].split("=")[0] in captured.err


def test_no_old_spelling_is_in_the_help():
    for command in ("report", "sql"):
        text = subprocess.run([sys.executable, "-m", "embsql", command, "--help"], capture_output=True, text=True,
                              cwd=ROOT).stdout
        assert "--model" in text and "--by" not in text and "-col" not in text


def test_by_on_the_command_line_is_one_line_and_exit_2():
    done = subprocess.run([sys.executable, "-m", "embsql", "report", "examples/embeddings.parquet", "--vector",
                           "embedding", "--group", "topic", "--by", "model"], capture_output=True, text=True, cwd=ROOT)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "embsql: error: unrecognized arguments: --by model (see embsql --help)\n"


def test_an_unknown_key_in_a_report_file_is_one_line_naming_the_settings(tmp_path):
    config = tmp_path / "report.toml"
    config.write_text('[report]\nsource = "examples/embeddings.parquet"\nvector = "embedding"\ngroup = "topic"\n'
                      'by = "model"\n')
    done = subprocess.run([sys.executable, "-m", "embsql", "report", "--config", str(config)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"embsql: error: report: unknown setting 'by' in the [report] table of {str(config)!r}; "
                                  "the settings are: source, vector, group, model,")


@pytest.mark.parametrize("values, match", [
    ({"vectr": "v"}, r"unknown setting 'vectr' in the report's settings; the settings are: source, vector, group"),
    ({"by": "m"}, r"^report: unknown setting 'by' in the report's settings; the settings are: source, vector, group"),
    ({"retrieval": {"level": "q"}}, r"unknown setting 'level' in the report's retrieval settings; the settings are: qid,"),
    ({"retrieval": {"model": "m"}}, r"unknown setting 'model' in the report's retrieval settings"),
    ({"retrieval": "qid"}, r"retrieval must be a table of settings"),
])
def test_a_report_refuses_what_is_not_a_setting(values, match):
    with pytest.raises(embsql.InputError, match=match):
        Report.from_mapping({"source": "t", "vector": "v", "group": "g", **values})


def test_report_has_the_settings_of_Report_by_name():
    """embsql.report's parameters are Report's fields, with the same defaults, and nothing else."""
    parameters = inspect.signature(embsql.report).parameters
    fields = {f.name: f for f in dataclasses.fields(Report) if f.name != "_"}
    assert list(parameters) == list(fields)
    assert parameters["source"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name, field in fields.items():
        if name == "source":
            continue
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = None                                     # retrieval: None there, a fresh {} here
        else:
            default = inspect.Parameter.empty                  # vector and group are required
        assert parameters[name].default == default, name
    assert embsql.report("t", vector="v", group="g") == Report("t", vector="v", group="g")


def test_report_refuses_an_unknown_keyword_as_python_does():
    for call in (lambda: embsql.report("t", vector="v", group="g", by="m"),  # type: ignore[call-arg]
                 lambda: Report("t", vector="v", group="g", by="m"),  # type: ignore[call-arg]
                 lambda: embsql.retrieval_layers(embsql.connect(), "q", "d", level="strength")):  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"got an unexpected keyword argument '(by|level)'$"):
            call()
    with pytest.raises(TypeError):
        Report("t", "v", "g")  # type: ignore[misc]   # the columns by name only
    with pytest.raises(embsql.InputError, match=r"^report: unknown setting 'by' in Report\.replace\(\); the settings are"):
        _EXAMPLE.replace(by="m")
    assert not hasattr(_EXAMPLE, "by")


@pytest.mark.slow
def test_mypy_flags_an_old_keyword_of_report(tmp_path):
    """The signature is real: mypy sees ``by=`` as an error before anything runs."""
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent("""
        import embsql
        good = embsql.report("t", vector="v", group="g", model="m", sections=["decomposition"])
        bad = embsql.report("t", vector="v", group="g", by="m")
    """))
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                           "--python-version", "3.11", str(snippet)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "snippet.py:4:" in errors[0], done.stdout
