"""The documentation holds to the code: every schema field is described (the references are generated from
the schemas by docs/hooks/reference.py), every command is in the command line's guide, the README's
test command is CI's, its links lead somewhere, and its quick start and the testing guide's example run.

`mkdocs build --strict` (in the test command) checks the site's own links and navigation.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gm.cli import build_parser
from tests.support.paths import REPOSITORY

README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"


def reference_hook() -> ModuleType:
    """docs/hooks/reference.py, the mkdocs hook that writes the reference pages, loaded from its file."""
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = reference_hook()


@pytest.mark.parametrize("name", sorted(HOOK.SCHEMAS))
def test_every_schema_field_is_described_and_on_its_reference_page(name: str) -> None:
    schema = json.loads(HOOK.SCHEMAS[name].read_text(encoding="utf-8"))
    fields = HOOK.fields(schema)
    assert len(fields) > 10
    undescribed = [f"{where}.{field}" for where, field, definition in fields if not definition.get("description")]
    assert undescribed == [], f"give these fields of {HOOK.SCHEMAS[name].name} a description: {undescribed}"
    page = HOOK.schema_page(name)
    for where, field, definition in fields:
        assert f"| `{field}` |" in page, f"{where}.{field} is missing from the {name} reference"
        assert HOOK._cell(definition["description"]) in page


def test_a_schema_section_lists_its_bounds_and_references() -> None:
    page = HOOK.schema_page("dice-json")
    assert "| `bands` | yes | list of [band](#band), 1 to 20 items |" in page
    assert "| `hit` | no | whole number, 1 to 1,000 |" in page
    assert "Exactly one of `step` or `band` is given." in page


def test_the_command_line_reference_has_every_command() -> None:
    page = HOOK.cli_page()
    guide = (DOCS / "cli.md").read_text(encoding="utf-8")
    for action in build_parser()._actions:  # argparse lists its subparsers nowhere else
        for name in action.choices if isinstance(action, argparse._SubParsersAction) else []:
            assert f"## gm {name}" in page
            assert f"`gm {name}" in guide, f"docs/cli.md does not list gm {name}"
    assert "--judge MODEL|off" in page


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = README.read_text(encoding="utf-8")
    ci = (REPOSITORY / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci.startswith("pip install -e '.[dev]' && ")
    assert ci in readme.splitlines()
    assert "mkdocs build --strict" in ci


def test_the_readme_stays_short_and_its_links_lead_somewhere() -> None:
    readme = README.read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert len(local) > 10
    missing = [link for link in local if not (REPOSITORY / link).exists()]
    assert missing == []


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.fixture
def sample_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding the sample world the examples play, as a checkout does."""
    shutil.copytree(REPOSITORY / "worlds" / "harbour-heist", tmp_path / "worlds" / "harbour-heist")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_example(code: str, capsys: pytest.CaptureFixture[str]) -> str:
    namespace: dict[str, Any] = {"__name__": "__example__"}
    exec(compile(code, "<example>", "exec"), namespace)
    return capsys.readouterr().out


def test_the_readme_library_quick_start_runs(sample_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [quick_start] = [block for block in python_blocks(README) if "RehearsalModel" in block]
    assert all(
        line.startswith("from gm import ") for line in quick_start.splitlines() if " import " in line and "gm" in line
    )
    out = run_example(quick_start, capsys)
    assert "(rehearsal)" in out and "1d20" in out


def test_the_testing_guide_example_runs(sample_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [example] = [block for block in python_blocks(DOCS / "testing.md") if "FunctionModel(every_part)" in block]
    run_example(example, capsys)
    assert (sample_folder / "test-stories.db").exists()
