"""The package tree is the design: imports run one way, from the surfaces down to the pure core.

Measured from every import grimp finds, lazy ones inside functions and those under `TYPE_CHECKING`
included: they are design dependencies too. The world editor lives in editor/ and installs as
gm.editor; it is read here as the top-level package `editor` and named as installed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]

# Bottom to top. A module may import its own package and any package in a lower layer; packages in one
# layer (a set) are independent of each other.
LAYERS: list[set[str]] = [
    {"gm.errors"},
    {"gm._text", "gm._lru", "gm._asgi", "gm._hosts", "gm.config"},
    {"gm.problems"},
    {"gm.dice"},
    {"gm.rules"},
    {"gm.world"},
    {"gm.transcript"},
    {"gm.store", "gm.models"},
    {"gm.integrity"},
    {"gm.engine"},
    {"gm.rehearsal", "gm.testing"},
    {"gm.editor"},
    {"gm.chat", "gm.web"},
    {"gm.cli"},
]
FRONT_DOOR = "gm"  # gm/__init__.py may name anything (its names are imported lazily, on first use)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """Every gm module (and the editor's, named as installed) with the gm modules it imports."""
    sys.path.insert(0, str(ROOT))  # `editor` as a top-level package, read from its folder
    try:
        built = grimp.build_graph("gm", "editor", include_external_packages=False)
    finally:
        sys.path.remove(str(ROOT))

    def named(module: str) -> str:
        return "gm." + module if module == "editor" or module.startswith("editor.") else module

    return {named(m): {named(t) for t in built.find_modules_directly_imported_by(m)} for m in built.modules}


def _layer(module: str) -> tuple[int, str] | None:
    for index, layer in enumerate(LAYERS):
        for package in layer:
            if module == package or module.startswith(package + "."):
                return index, package
    return None


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    homeless = sorted(m for m in graph if m != FRONT_DOOR and _layer(m) is None and not m.startswith("gm.prompts"))
    assert homeless == [], f"modules in no layer of tests/test_package_tree.py: {homeless}"


def test_imports_run_downward_only(graph: dict[str, set[str]]) -> None:
    upward = []
    for module, imported in graph.items():
        here = _layer(module)
        if here is None:
            continue
        for target in imported:
            there = _layer(target)
            if there is None:
                continue
            if there[0] > here[0] or (there[0] == here[0] and there[1] != here[1]):
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    circles = [sorted(group) for group in _strongly_connected(graph) if len(group) > 1]
    assert circles == []


def test_few_modules_directly_in_gm() -> None:
    direct = sorted(path.name for path in (ROOT / "gm").glob("*.py"))
    assert len(direct) <= 12, direct


# A module over about 400 lines usually holds two ideas. gm/errors.py is the exception by design: every
# public error in one place, its tree in the docstring.
LONG_BY_DESIGN = {"gm/errors.py"}


def test_no_module_much_over_400_lines() -> None:
    long = {
        name: lines
        for folder in ("gm", "editor")
        for path in (ROOT / folder).rglob("*.py")
        if (name := str(path.relative_to(ROOT))) not in LONG_BY_DESIGN
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > 420
    }
    assert long == {}


def _strongly_connected(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's strongly connected components, iteratively (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    yield group
