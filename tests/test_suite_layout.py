"""The suite's own layout: its folders mirror gm's packages, and no test module imports another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gm
from tests.support.paths import REPOSITORY

TESTS = REPOSITORY / "tests"
GM = Path(gm.__file__).parent
FOUNDATION = {
    "test_config.py",
    "test_docs.py",
    "test_errors.py",
    "test_front_door.py",
    "test_hosts.py",
    "test_nul.py",
    "test_package_tree.py",
    "test_private_parts.py",
    "test_quickschema.py",
    "test_suite_layout.py",
}  # gm's own top-level modules, and the documentation (test_docs.py)


def all_test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.slow
def test_no_test_module_imports_another() -> None:
    """Shared parts live in tests/support/ (or a folder's conftest.py), so each test module stands alone."""
    offending = {
        str(path.relative_to(TESTS)): sorted(
            name for name in imported_modules(path) if name.split(".")[-1].startswith("test_")
        )
        for path in all_test_modules()
    }
    assert {path: names for path, names in offending.items() if names} == {}


def test_each_folder_is_one_of_gms_packages() -> None:
    """tests/dice holds the tests of gm.dice, and so on: a folder for each package of gm (the editor installs as
    gm.editor); only tests of gm's top-level modules sit in tests/ itself."""
    packages = {path.parent.name for path in GM.glob("*/__init__.py")} | {"editor"}
    folders = {path.parent.relative_to(TESTS) for path in all_test_modules()}
    assert {str(folder) for folder in folders if str(folder) != "."} <= packages
    assert {path.name for path in TESTS.glob("test_*.py")} <= FOUNDATION
