"""A quick yes for a valid document: a JSON Schema compiled into a plain predicate, with no jsonschema.

Why: `gm check` and `gm odds WORLD CHECK` validate world.json and dice.json against their schemas, and
importing jsonschema (with referencing, attrs, rpds and the metaschemas) is most of what those commands
spend before they answer: as much CPU again as Python's own start. Almost every file a world author
checks in a loop is valid, so `compile_schema` turns a schema into a predicate that answers True exactly
when jsonschema's Draft 2020-12 validator (no format assertions, as gm runs it) finds no error. On False
the caller asks jsonschema for the errors and words them as always (`gm.problems.SchemaCheck`), so which
files are refused, and the sentences saying why, stay jsonschema's. tests/test_quickschema.py compares
the two on the shipped schemas and on schemas generated from the subset, with documents valid and not.

The subset: `type` (a name or a list of names), `enum` and `const` (of strings, numbers, booleans and
null), `properties`, `required`, `additionalProperties` (a boolean or a schema), `propertyNames`,
`minProperties`, `maxProperties`, `items` (one schema), `minItems`, `maxItems`, `minLength`, `maxLength`,
`pattern`, `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `allOf`, `anyOf`, `oneOf`,
`not`, `if`/`then`/`else`, `$ref` to `#/$defs/NAME` (not recursive), and the annotations, OpenAPI's
among them (`example`, `discriminator` and any `x-` keyword, which JSON Schema ignores as unknown keywords:
OpenAI's published schemas use them). A schema with anything else compiles to None: its documents always
go to jsonschema. The predicate descends only as
deep as the schema does, so no nesting of a document can break it. (`gm.engine.tools._argcheck` is the
engine's stricter cousin for tool arguments, which also refuses text a story cannot store.)

>>> accepts = compile_schema({"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}},
...                           "required": ["n"], "additionalProperties": False})
>>> accepts({"n": 3}), accepts({"n": 3.0}), accepts({"n": True}), accepts({"n": 10}), accepts({})
(True, True, False, False, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$schema", "$id", "$defs", "format", "deprecated"}
)
_KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
_OPENAPI_ANNOTATIONS = frozenset({"example", "discriminator"})
_SCALARS = (str, int, float, bool, type(None))


def _unknown(keyword: str) -> bool:
    """Whether `keyword` is neither compiled nor an annotation, so that the schema goes to jsonschema."""
    annotation = keyword in _ANNOTATIONS or keyword in _OPENAPI_ANNOTATIONS or keyword.startswith("x-")
    return not annotation and keyword not in _KEYWORDS


class _Unsupported(Exception):
    """The schema says something this module does not compile."""


def compile_schema(schema: Any) -> Check | None:
    """A predicate true exactly for the documents valid under `schema`; None when the schema uses a keyword
    outside the subset in the module docstring, or a `$ref` this module does not follow."""
    try:
        return _Compiler(schema).compile(schema, ())
    except (_Unsupported, re.error):
        return None


class _Compiler:
    """Compiles one schema, its `$defs` each once (a `$ref` to one is the same predicate)."""

    def __init__(self, root: Any) -> None:
        definitions = root.get("$defs", {}) if isinstance(root, dict) else {}
        if not isinstance(definitions, dict):
            raise _Unsupported
        self.definitions: dict[str, Any] = definitions
        self.compiled: dict[str, Check] = {}

    def compile(self, node: Any, following: tuple[str, ...]) -> Check:
        if node is True:
            return _anything
        if node is False:
            return _nothing
        if not isinstance(node, dict) or any(_unknown(keyword) for keyword in node):
            raise _Unsupported
        checks = [build(self, node, following) for keyword, build in _BUILDERS if keyword in node]
        if "if" in node:
            checks.append(self._condition(node, following))
        if not checks:
            return _anything
        if len(checks) == 1:
            return checks[0]
        every = tuple(checks)
        return lambda value: all(check(value) for check in every)

    def reference(self, node: dict[str, Any], following: tuple[str, ...]) -> Check:
        target = node["$ref"]
        if not isinstance(target, str) or not target.startswith("#/$defs/"):
            raise _Unsupported
        name = target.removeprefix("#/$defs/")
        if name not in self.definitions or "/" in name or "~" in name or name in following:
            raise _Unsupported  # elsewhere, escaped, or recursive: jsonschema follows it
        if name not in self.compiled:
            self.compiled[name] = self.compile(self.definitions[name], (*following, name))
        return self.compiled[name]

    def _condition(self, node: dict[str, Any], following: tuple[str, ...]) -> Check:
        condition = self.compile(node["if"], following)
        then = self.compile(node["then"], following) if "then" in node else _anything
        otherwise = self.compile(node["else"], following) if "else" in node else _anything
        return lambda value: then(value) if condition(value) else otherwise(value)


def _anything(value: Any) -> bool:
    return True


def _nothing(value: Any) -> bool:
    return False


# ---- each keyword, as jsonschema reads it: a keyword about one type passes every value of another ----


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    ),
    "number": _is_number,
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def _type(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    named = node["type"]
    names = named if isinstance(named, list) else [named]
    if not names or any(not isinstance(name, str) or name not in _TYPES for name in names):
        raise _Unsupported
    kinds = tuple(_TYPES[name] for name in names)
    return kinds[0] if len(kinds) == 1 else lambda value: any(kind(value) for kind in kinds)


def _same(value: Any, expected: Any) -> bool:
    """JSON equality of `value` and the scalar `expected`, as jsonschema compares: True is not 1, 1.0 is 1."""
    if isinstance(value, str) or isinstance(expected, str):
        return bool(value == expected)
    if isinstance(value, bool) or isinstance(expected, bool):
        return type(value) is type(expected) and value == expected
    if isinstance(value, list | dict):
        return False
    return bool(value == expected)


def _scalars(values: Any) -> list[Any]:
    if not isinstance(values, list) or any(not isinstance(value, _SCALARS) for value in values):
        raise _Unsupported
    return values


def _enum(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    allowed = _scalars(node["enum"])
    return lambda value: any(_same(value, each) for each in allowed)


def _const(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    [expected] = _scalars([node["const"]])
    return lambda value: _same(value, expected)


def _count(node: dict[str, Any], keyword: str) -> int:
    count = node[keyword]
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _Unsupported
    return count


def _properties(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    properties = node["properties"]
    if not isinstance(properties, dict):
        raise _Unsupported
    members = {name: compiler.compile(member, following) for name, member in properties.items()}

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(member(value[name]) for name, member in members.items() if name in value)

    return check


def _additional(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    known = frozenset(node.get("properties", {}))
    extra = compiler.compile(node["additionalProperties"], following)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        return all(extra(member) for name, member in value.items() if name not in known)

    return check


def _required(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    names = node["required"]
    if not isinstance(names, list) or any(not isinstance(name, str) for name in names):
        raise _Unsupported
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _property_names(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    name_check = compiler.compile(node["propertyNames"], following)
    return lambda value: not isinstance(value, dict) or all(name_check(name) for name in value)


def _sized(
    kind: type[str] | type[list[Any]] | type[dict[str, Any]], keyword: str, at_least: bool
) -> Callable[[_Compiler, dict[str, Any], tuple[str, ...]], Check]:
    def build(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
        bound = _count(node, keyword)
        if at_least:
            return lambda value: not isinstance(value, kind) or len(value) >= bound
        return lambda value: not isinstance(value, kind) or len(value) <= bound

    return build


def _items(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    item = compiler.compile(node["items"], following)
    return lambda value: not isinstance(value, list) or all(item(each) for each in value)


def _pattern(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    if not isinstance(node["pattern"], str):
        raise _Unsupported
    search = re.compile(node["pattern"]).search
    return lambda value: not isinstance(value, str) or search(value) is not None


def _bound(keyword: str) -> Callable[[_Compiler, dict[str, Any], tuple[str, ...]], Check]:
    def build(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
        limit = node[keyword]
        if not _is_number(limit):
            raise _Unsupported
        # Compared as jsonschema compares (a failing comparison refuses), so a NaN passes every bound for both.
        if keyword == "minimum":
            return lambda value: not _is_number(value) or not value < limit
        if keyword == "maximum":
            return lambda value: not _is_number(value) or not value > limit
        if keyword == "exclusiveMinimum":
            return lambda value: not _is_number(value) or not value <= limit
        return lambda value: not _is_number(value) or not value >= limit

    return build


def _branches(compiler: _Compiler, node: dict[str, Any], keyword: str, following: tuple[str, ...]) -> tuple[Check, ...]:
    schemas = node[keyword]
    if not isinstance(schemas, list) or not schemas:
        raise _Unsupported
    return tuple(compiler.compile(schema, following) for schema in schemas)


def _all_of(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    branches = _branches(compiler, node, "allOf", following)
    return lambda value: all(branch(value) for branch in branches)


def _any_of(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    branches = _branches(compiler, node, "anyOf", following)
    return lambda value: any(branch(value) for branch in branches)


def _one_of(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    branches = _branches(compiler, node, "oneOf", following)
    return lambda value: sum(1 for branch in branches if branch(value)) == 1


def _not(compiler: _Compiler, node: dict[str, Any], following: tuple[str, ...]) -> Check:
    refused = compiler.compile(node["not"], following)
    return lambda value: not refused(value)


_BUILDERS: tuple[tuple[str, Callable[[_Compiler, dict[str, Any], tuple[str, ...]], Check]], ...] = (
    ("$ref", _Compiler.reference),
    ("type", _type),
    ("enum", _enum),
    ("const", _const),
    ("required", _required),
    ("minProperties", _sized(dict, "minProperties", at_least=True)),
    ("maxProperties", _sized(dict, "maxProperties", at_least=False)),
    ("minItems", _sized(list, "minItems", at_least=True)),
    ("maxItems", _sized(list, "maxItems", at_least=False)),
    ("minLength", _sized(str, "minLength", at_least=True)),
    ("maxLength", _sized(str, "maxLength", at_least=False)),
    ("pattern", _pattern),
    ("minimum", _bound("minimum")),
    ("maximum", _bound("maximum")),
    ("exclusiveMinimum", _bound("exclusiveMinimum")),
    ("exclusiveMaximum", _bound("exclusiveMaximum")),
    ("properties", _properties),
    ("additionalProperties", _additional),
    ("propertyNames", _property_names),
    ("items", _items),
    ("allOf", _all_of),
    ("anyOf", _any_of),
    ("oneOf", _one_of),
    ("not", _not),
)
