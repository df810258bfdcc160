"""gm uses other libraries through their public API only: no private attribute or module of theirs in gm/ or editor/.

A private part (`client._send_request`, `openai._httpx2`, pydantic's `__pydantic_fields_set__`, SQLAlchemy's
`sqlalchemy.orm.base`) may change in any minor release of its library. Read from the source, as a grep would:
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WATCHED = {
    "aiohttp",
    "alembic",
    "fastapi",
    "httpx",
    "httpx2",
    "jinja2",
    "multidict",
    "openai",
    "orjson",
    "psycopg",
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "sqlalchemy",
    "sqlmodel",
    "starlette",
    "tenacity",
    "uvicorn",
    "yarl",
}
# SQLAlchemy's public namespaces (its documented API); its other modules are its own workings.
SQLALCHEMY_PUBLIC = {
    "sqlalchemy",
    "sqlalchemy.dialects.postgresql",
    "sqlalchemy.dialects.sqlite",
    "sqlalchemy.engine",
    "sqlalchemy.event",
    "sqlalchemy.exc",
    "sqlalchemy.orm",
    "sqlalchemy.pool",
    "sqlalchemy.schema",
    "sqlalchemy.sql",
    "sqlalchemy.sql.compiler",  # SQLCompiler, documented among Core's internals as a public class
    "sqlalchemy.sql.expression",
    "sqlalchemy.types",
}
# A private attribute of the standard library that has no public spelling, and why it is used.
ALLOWED = {"_SubParsersAction": "argparse: the type of add_subparsers()'s result, the only way to annotate it"}
# Instance bookkeeping of pydantic and SQLAlchemy that their public API reads and writes (model_fields_set, ...).
INTERNAL_PREFIXES = ("__pydantic", "_sa_")


def sources() -> list[Path]:
    return sorted([*(ROOT / "gm").rglob("*.py"), *(ROOT / "editor").rglob("*.py")])


def defined_in_gm(trees: list[ast.Module]) -> set[str]:
    """Every name gm itself defines: its functions, classes, variables and attributes (its own private ones)."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def private_parts(path: Path, tree: ast.Module, own: set[str]) -> Iterator[str]:
    """Each use of another library's private part in one module, as `file:line: what`."""
    where = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                parts = module.split(".")
                if getattr(node, "level", 0) or parts[0] not in WATCHED:
                    continue
                if any(part.startswith("_") for part in parts):
                    yield f"{where}:{node.lineno}: imports {module}"
                if parts[0] == "sqlalchemy" and module not in SQLALCHEMY_PUBLIC:
                    yield f"{where}:{node.lineno}: imports SQLAlchemy's {module}"
                if isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        if alias.name.startswith("_"):
                            yield f"{where}:{node.lineno}: imports {alias.name} from {module}"
        elif isinstance(node, ast.Attribute):
            name = node.attr
            if name.startswith(INTERNAL_PREFIXES):
                yield f"{where}:{node.lineno}: uses {name}"
            elif name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                on_own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                if not on_own and name not in own and name not in ALLOWED:
                    yield f"{where}:{node.lineno}: uses {ast.unparse(node.value)}.{name}, which gm does not define"
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(INTERNAL_PREFIXES)
        ):
            yield f"{where}:{node.lineno}: names {node.value}"


def found_in(trees: dict[Path, ast.Module]) -> list[str]:
    own = defined_in_gm(list(trees.values()))
    return [use for path, tree in trees.items() for use in private_parts(path, tree, own)]


@cache
def parsed() -> dict[Path, ast.Module]:
    """gm's and the editor's modules, parsed once a test process (each test adds to a copy)."""
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sources()}


@cache
def names_of_gm() -> set[str]:
    return defined_in_gm(list(parsed().values()))


@pytest.mark.slow
def test_gm_and_the_editor_use_no_private_part_of_another_library() -> None:
    assert found_in(parsed()) == []


@pytest.mark.parametrize(
    "code",
    [
        "from openai._httpx2 import request_exceptions",
        "import openai\nsend = openai.AsyncOpenAI()._send_request",
        "from sqlalchemy.orm.base import manager_of_class",
        "from pydantic import _internal",
        "def f(self): object.__setattr__(self, '__pydantic_fields_set__', set())",
        "def f(record): return record._sa_instance_state",
        "def f(compiled): return compiled._bind_processors",
    ],
)
def test_each_kind_of_private_part_is_found(code: str) -> None:
    tree = ast.parse(code)  # as a module of gm's, beside all the others and the names they define
    own = names_of_gm() | defined_in_gm([tree])
    assert list(private_parts(ROOT / "gm" / "example.py", tree, own)) != []
