"""gm's errors live in one module, whose docstring draws every one of them where it sits in the tree."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import gm
import gm.editor
from gm import errors
from gm.errors import GmError, Problem, ProblemsError, UsageError

NODE = re.compile(r"^(?P<lead>[ │├└─]*?)(?P<name>[A-Z]\w+)(?:\s|$)")
SIGNAL = re.compile(r"^ {4}(?P<name>[A-Z]\w+)\s+\((?P<module>gm[\w.]*)\)")


def gm_modules() -> Iterator[ModuleType]:
    """Every module of the installed package, the editor's too (`__main__` would run the command line)."""
    for package in (gm, gm.editor):
        yield package
        for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not found.name.endswith("__main__"):
                yield importlib.import_module(found.name)


def drawn_tree(docstring: str) -> dict[str, str | None]:
    """Each class the docstring's tree draws, with the class drawn above it (None for the root)."""
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in docstring.splitlines():
        if not line.startswith("    ") or not ("── " in line or line.strip().startswith("GmError")):
            continue
        found = NODE.match(line[4:])
        assert found, f"a tree line without a class name: {line!r}"
        depth = len(found["lead"]) // 4
        del path[depth:]
        assert len(path) == depth, f"{found['name']} is drawn below nothing"
        parents[found["name"]] = path[-1] if path else None
        path.append(found["name"])
    return parents


def listed_signals(docstring: str) -> dict[str, str]:
    """The signals (and the test author's error) the docstring lists after the tree, with their modules."""
    after_tree = docstring.split("Signals are control flow", 1)[1]
    return {found["name"]: found["module"] for line in after_tree.splitlines() if (found := SIGNAL.match(line))}


def gm_errors() -> set[type[GmError]]:
    """Every subclass of GmError in gm, once every module is imported."""
    for _ in gm_modules():
        pass
    found: set[type[GmError]] = set()
    waiting: list[type[GmError]] = [GmError]
    while waiting:
        cls = waiting.pop()
        if cls not in found:
            found.add(cls)
            waiting += cls.__subclasses__()
    return found


def public_parent(cls: type[BaseException]) -> str | None:
    """The class a reader would draw `cls` under: its first GmError base, looking through private helpers."""
    for base in cls.__bases__:
        if issubclass(base, GmError):
            return public_parent(base) if base.__name__.startswith("_") else base.__name__
    return None


def test_the_tree_draws_every_gm_error_under_the_class_it_derives_from() -> None:
    assert errors.__doc__ is not None
    drawn = drawn_tree(errors.__doc__)
    found = {cls.__name__: public_parent(cls) for cls in gm_errors() if not cls.__name__.startswith("_")}
    assert sorted(set(found) - set(drawn)) == [], "GmError subclasses missing from gm.errors' docstring tree"
    assert sorted(set(drawn) - set(found)) == [], "the docstring tree draws classes that do not exist"
    assert {name: drawn[name] for name in found} == found


def test_every_gm_error_is_defined_in_gm_errors() -> None:
    elsewhere = sorted(f"{cls.__module__}.{cls.__name__}" for cls in gm_errors() if cls.__module__ != "gm.errors")
    assert elsewhere == []


def test_every_public_exception_in_gm_is_in_gm_errors_or_listed_there_as_a_signal() -> None:
    assert errors.__doc__ is not None
    listed = listed_signals(errors.__doc__)
    assert {"ModelRetry", "LeaseBusy", "FacesNeeded", "ScriptError"} <= set(listed)
    for name, module in listed.items():
        assert inspect.isclass(getattr(importlib.import_module(module), name, None)), f"{module}.{name}"
    strays = []
    for module in gm_modules():
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == module.__name__
            if not (defined_here and issubclass(value, BaseException)) or name.startswith("_"):
                continue
            # A listed signal's kinds, defined beside it, are that signal.
            listed_as = [base.__name__ for base in value.__mro__ if listed.get(base.__name__) == module.__name__]
            if module.__name__ != "gm.errors" and not listed_as:
                strays.append(f"{module.__name__}.{name}")
    assert strays == [], "exception classes outside gm.errors that its docstring does not list"


def test_gm_errors_is_the_bottom_layer_and_imports_nothing_of_gm() -> None:
    assert errors.__file__ is not None
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module or "" if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert [name for name in imported if name == "gm" or name.startswith("gm.")] == []


@pytest.mark.parametrize(
    ("docstring", "problem"),
    [
        ("    GmError   root\n    ├── UsageError   x\n    │   └── Lost   y\n", None),
        ("    GmError   root\n        └── Orphan   x\n", "drawn below nothing"),
    ],
)
def test_the_tree_reader_reads_depth_from_the_drawing(docstring: str, problem: str | None) -> None:
    if problem is None:
        assert drawn_tree(docstring) == {"GmError": None, "UsageError": "GmError", "Lost": "UsageError"}
    else:
        with pytest.raises(AssertionError, match=problem):
            drawn_tree(docstring)


def test_the_errors_page_draws_the_tree_of_the_docstring() -> None:
    assert errors.__doc__ is not None
    page = (Path(__file__).resolve().parent.parent / "docs" / "errors.md").read_text(encoding="utf-8")
    drawn = page.split("## The tree", 1)[1].split("```\n", 2)[1]
    tree = errors.__doc__.split("\n\n")[1] + "\n"
    assert drawn == tree, "docs/errors.md's tree differs from gm.errors' docstring: copy the docstring's"
    assert page.split("## Signals are not errors", 1)[1].strip() in errors.__doc__


def test_a_file_that_cannot_be_used_is_a_usage_error() -> None:
    error = ProblemsError("world.json", [Problem("$.title", "'title' is missing")])
    assert isinstance(error, UsageError) and isinstance(error, ValueError)
    assert str(error) == "world.json: $.title: 'title' is missing"
