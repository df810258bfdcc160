"""A quick yes for a tool call's valid arguments: a tool's JSON Schema compiled into a plain predicate.

Why: jsonschema walks a schema through generic keyword functions, building an error iterator at
every level, which made validating a call's arguments a third of a tool call's own work on the
database thread. Almost every call a model makes is valid, so `compile_schema` turns a schema into
a predicate that answers True exactly when jsonschema (Draft 2020-12, no format assertions) finds
no error in the arguments and every text in them can be stored (`gm._text.unstorable`). On False
the caller asks jsonschema for the errors and words the first one as before (`gm.engine.tools.running`), so which
calls are refused, and the sentences saying why, stay jsonschema's. tests/engine/test_argcheck.py
compares the two on generated arguments, valid and not.

Only the keywords gm's tool schemas use are compiled: `type` (one of object, array, string,
integer, number, boolean, null; every schema names one), `properties`, `required`,
`additionalProperties: false`, `items` (a schema), `enum` (of strings), `minLength`, `maxLength`,
`minimum`, `maximum`, and the annotations `description`, `title`, `default`, `examples` and
`$comment`. A schema with anything else compiles to None: its arguments always go to jsonschema.
The predicate descends only as deep as the schema does, so no nesting of the arguments can break it,
and an instance it accepts nests no deeper than the schema (`depth`).

>>> accepts = compile_schema({"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}},
...                           "required": ["n"], "additionalProperties": False})
>>> accepts({"n": 3}), accepts({"n": 3.0}), accepts({"n": True}), accepts({"n": 10}), accepts({})
(True, True, False, False, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gm._text import unstorable

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
_KEYWORDS = {  # what each type may say besides `type` and the annotations
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items"}),
    "string": frozenset({"enum", "minLength", "maxLength"}),
    "integer": frozenset({"minimum", "maximum"}),
    "number": frozenset({"minimum", "maximum"}),
    "boolean": frozenset(),
    "null": frozenset(),
}


class _Unsupported(Exception):
    """The schema says something this module does not compile."""


def compile_schema(schema: Any, deepest: int | None = None) -> Check | None:
    """A predicate true exactly for the instances valid under `schema` whose texts are storable; None when
    the schema uses a keyword outside the subset in the module docstring, or lets a valid instance nest
    more than `deepest` deep (so a caller bounding depth may ask the predicate first)."""
    try:
        accepts = _compile(schema)
    except _Unsupported:
        return None
    return accepts if deepest is None or depth(schema) <= deepest else None


def depth(schema: dict[str, Any]) -> int:
    """How deeply a valid instance of a compiled schema can nest, counted as `gm.problems.json_depth` counts."""
    if schema["type"] == "object":
        return 1 + max((depth(member) for member in schema.get("properties", {}).values()), default=0)
    if schema["type"] == "array":
        return 1 + depth(schema["items"])
    return 0


def _compile(schema: Any) -> Check:
    if not isinstance(schema, dict):
        raise _Unsupported  # a boolean schema, or no schema at all
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _KEYWORDS:
        raise _Unsupported
    if set(schema) - _ANNOTATIONS - {"type"} - _KEYWORDS[kind]:
        raise _Unsupported
    if kind == "object":
        return _object(schema)
    if kind == "array":
        return _array(schema)
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return _is_bool
    return _is_null


def _object(schema: dict[str, Any]) -> Check:
    if schema.get("additionalProperties", True) is not False:
        raise _Unsupported  # members the schema does not name would go unchecked (and their texts unread)
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        raise _Unsupported
    if any(not isinstance(name, str) or unstorable(name) for name in [*properties, *required]):
        raise _Unsupported
    members = {name: _compile(member) for name, member in properties.items()}
    needed = tuple(required)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for name in needed:
            if name not in value:
                return False
        for name, member in value.items():
            accepts = members.get(name) if isinstance(name, str) else None
            if accepts is None or not accepts(member):
                return False
        return True

    return check


def _array(schema: dict[str, Any]) -> Check:
    if "items" not in schema:
        raise _Unsupported  # items of any kind and depth: not this module's business
    item = _compile(schema["items"])

    def check(value: Any) -> bool:
        return isinstance(value, list) and all(map(item, value))

    return check


def _string(schema: dict[str, Any]) -> Check:
    enum = schema.get("enum")
    if enum is not None and (not isinstance(enum, list) or any(not isinstance(each, str) for each in enum)):
        raise _Unsupported
    members = frozenset(enum) if enum is not None else None
    shortest, longest = _bound(schema, "minLength") or 0, _bound(schema, "maxLength")

    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return False
        if members is not None and value not in members:
            return False
        if len(value) < shortest or (longest is not None and len(value) > longest):
            return False
        return unstorable(value) is None

    return check


def _bound(schema: dict[str, Any], keyword: str) -> int | None:
    value = schema.get(keyword)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise _Unsupported
    return value


def _number(schema: dict[str, Any], *, integer: bool) -> Check:
    low, high = schema.get("minimum"), schema.get("maximum")
    for bound in (low, high):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
            raise _Unsupported

    def check(value: Any) -> bool:
        if isinstance(value, bool):
            return False  # True is an int to Python, not to JSON Schema
        if isinstance(value, float):
            if integer and not value.is_integer():  # 12.0 is an integer to JSON Schema; NaN and infinity are not
                return False
        elif not isinstance(value, int):
            return False
        # Compared as jsonschema compares, so a NaN (which a server's JSON may carry) is in bounds for both.
        return not ((low is not None and value < low) or (high is not None and value > high))

    return check


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_null(value: Any) -> bool:
    return value is None
