"""The compiled schema check (gm._quickschema) against jsonschema: the same verdict on every document.

The property: for any document, the compiled predicate says yes exactly when jsonschema's Draft
2020-12 validator finds no error. It is tested on the schemas gm ships (world.json and dice.json),
with the sample worlds' files changed in every way a hand can change them (a member dropped, a value
replaced by any JSON, an unknown member, a bound passed by one), and on schemas generated from the
compiled subset with documents of any shape.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gm._quickschema import compile_schema
from gm.problems import SchemaCheck
from gm.rules.validation import dice_schema
from gm.testing._openai_schemas import _with_nullable
from gm.world.definition import world_schema
from tests.support.paths import FRONT_END_FIXTURES, OPENAI_SCHEMAS, SAMPLE_WORLDS

SHIPPED = {"world.json": world_schema(), "dice.json": dice_schema()}
SAMPLES = [
    (name, json.loads((world / name).read_text(encoding="utf-8")))
    for world in sorted(SAMPLE_WORLDS.iterdir())
    for name in SHIPPED
    if (world / name).exists()
]
# OpenAI's published schemas, as the fake model reads them (gm.testing), and what real front ends sent and got.
OPENAI = {
    kind: _with_nullable(json.loads((OPENAI_SCHEMAS / f"chat-completion-{kind}.schema.json").read_text()))
    for kind in ("request", "response")
}
ANSWERS = [
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1796332654,
        "model": "gm/harbour",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "The lock gives.", "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
    },
    {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1796332655,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "roll", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
    },
]


def sent() -> list[tuple[str, Any]]:
    """Each request body in the front ends' fixtures (their tools put back in place), and answers in both shapes."""
    found: list[tuple[str, Any]] = [("response", answer) for answer in ANSWERS]
    for fixture in sorted(FRONT_END_FIXTURES.glob("*.json")):
        recorded = json.loads(fixture.read_text(encoding="utf-8"))
        for exchange in recorded["requests"]:
            body = exchange["body"]
            found.append(("request", {**body, "tools": recorded["tools"]} if body.get("tools") == "$tools" else body))
    return found


SENT = sent()
EDGES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    12.0,
    0.5,
    math.nan,
    2**70,
    "",
    "a",
    "Odile",
    "x" * 41,
    "\x00",
    [],
    {},
    [1],
    {"a": 1},
]
SCALARS = st.sampled_from(EDGES) | st.integers(-(10**10), 10**10) | st.text(max_size=5) | st.floats()
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def jsonschema_says(schema: dict[str, Any], document: Any) -> bool:
    return not any(Draft202012Validator(schema).iter_errors(document))


def test_the_shipped_schemas_compile() -> None:
    """A keyword outside the subset would send every world to jsonschema: slower, but never wrong."""
    for name, schema in SHIPPED.items():
        assert compile_schema(schema) is not None, f"{name}'s schema uses a keyword gm._quickschema does not compile"


def test_the_sample_worlds_pass_both_ways() -> None:
    assert len(SAMPLES) >= 7
    for name, document in SAMPLES:
        accepts = compile_schema(SHIPPED[name])
        assert accepts is not None and accepts(document) and jsonschema_says(SHIPPED[name], document)


def paths(document: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `document`: each member of an object and item of a list, at any depth."""
    found = [here]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, (*here, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths(value, (*here, index))
    return found


@st.composite
def changed(
    draw: st.DrawFn,
    samples: list[tuple[str, Any]] = SAMPLES,
    added: tuple[str, ...] = ("modifer", "notes", "label", "min", "x"),
) -> tuple[str, Any]:
    """A sample document with one to three changes a hand could make (by default a sample world's file)."""
    name, original = draw(st.sampled_from(samples))
    document = json.loads(json.dumps(original))
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(paths(document)))
        if not place:
            document = draw(ANY_JSON)
            continue
        parent = document
        for step in place[:-1]:
            parent = parent[step]
        how = draw(st.sampled_from(["drop", "replace", "add", "nudge"]))
        if how == "drop":
            del parent[place[-1]]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(added))] = draw(ANY_JSON)
        elif how == "nudge" and isinstance(parent[place[-1]], int | str) and not isinstance(parent[place[-1]], bool):
            value = parent[place[-1]]
            parent[place[-1]] = value + draw(st.sampled_from([-1, 1, 10**6])) if isinstance(value, int) else value * 50
        else:
            parent[place[-1]] = draw(ANY_JSON)
    return name, document


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=changed())
@pytest.mark.slow
def test_the_check_agrees_with_jsonschema_on_changed_worlds(case: tuple[str, Any]) -> None:
    name, document = case
    accepts = compile_schema(SHIPPED[name])
    assert accepts is not None
    assert accepts(document) == jsonschema_says(SHIPPED[name], document)


def test_openais_schemas_compile_and_what_front_ends_sent_passes_both_ways() -> None:
    """The fake model's quick yes (gm.testing) holds for OpenAI's schemas, OpenAPI's annotations and all."""
    assert {kind for kind, _ in SENT} == {"request", "response"} and len(SENT) >= 50
    for kind, document in SENT:
        accepts = compile_schema(OPENAI[kind])
        assert accepts is not None and accepts(document) and jsonschema_says(OPENAI[kind], document)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=changed(SENT, ("role", "content", "type", "tool_calls", "name", "x-gm")))
@pytest.mark.slow
def test_the_check_agrees_with_jsonschema_on_changed_chat_requests_and_answers(case: tuple[str, Any]) -> None:
    kind, document = case
    accepts = compile_schema(OPENAI[kind])
    assert accepts is not None
    assert accepts(document) == jsonschema_says(OPENAI[kind], document)


KEYWORDS = st.sampled_from(
    [
        {"type": "integer"},
        {"type": ["number", "string"]},
        {"type": "object"},
        {"enum": ["a", 1, None, True]},
        {"const": 0},
        {"minLength": 1, "maxLength": 3},
        {"pattern": "^[a-z]+$"},
        {"minimum": -1, "maximum": 1},
        {"exclusiveMinimum": 0},
        {"exclusiveMaximum": 1.5},
        {"minItems": 1, "maxItems": 2},
        {"minProperties": 1, "maxProperties": 2},
        {"required": ["a"]},
        {"propertyNames": {"maxLength": 1}},
    ]
)


def schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({"properties": st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)}).flatmap(
            lambda node: st.fixed_dictionaries(
                {"additionalProperties": st.booleans() | inner}, optional={"required": st.just(["a"])}
            ).map(lambda more: {**node, **more})
        ),
        st.fixed_dictionaries({"items": inner}),
        st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"not": inner}),
        st.fixed_dictionaries({"if": inner, "then": inner}, optional={"else": inner}),
        st.tuples(KEYWORDS, inner).map(lambda pair: {**pair[0], "allOf": [pair[1]]}),
    )


GENERATED = st.recursive(KEYWORDS | st.booleans(), schemas, max_leaves=6)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=GENERATED, document=ANY_JSON, defined=st.booleans())
@pytest.mark.slow
def test_the_check_agrees_with_jsonschema_on_generated_schemas(schema: Any, document: Any, defined: bool) -> None:
    if defined:  # the same schema reached through a $ref
        schema = {"$defs": {"node": schema}, "$ref": "#/$defs/node"}
    accepts = compile_schema(schema)
    assert accepts is not None
    assert accepts(document) == jsonschema_says(schema if isinstance(schema, dict) else {"allOf": [schema]}, document)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"node": {"items": {"$ref": "#/$defs/node"}}}, "$ref": "#/$defs/node"},  # recursive
        {"$ref": "other.json"},
        {"patternProperties": {"^a": {"type": "string"}}},
        {"multipleOf": 2},
        {"uniqueItems": True},
        {"items": [{"type": "string"}]},
        {"enum": [[1]]},
        {"pattern": "(?<!"},
        {"type": "whole"},
    ],
)
def test_a_schema_beyond_the_subset_compiles_to_none(schema: Any) -> None:
    assert compile_schema(schema) is None


def test_nesting_as_deep_as_anyone_likes_cannot_break_it() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    accepts = compile_schema(world_schema())
    assert accepts is not None
    assert accepts({"title": deep}) is False


def test_a_valid_document_needs_no_jsonschema_and_an_invalid_one_gets_its_words() -> None:
    checked = SchemaCheck(dice_schema())
    dice = next(document for name, document in SAMPLES if name == "dice.json")
    assert checked.problems(dice) == [] and checked._validator is None
    [problem] = checked.problems({"checks": [], "notes": 1})
    assert problem.message.startswith("'notes' is not known here") and checked._validator is not None


POOL = [
    *EDGES,
    0.0,
    1.0,
    1.5,
    2,
    -2,
    "ab",
    "abc",
    "abcd",
    "A",
    [1, 2],
    [1, 2, 3],
    ["a"],
    {"a": "x"},
    {"a": 1, "b": 2},
    {"a": 1, "b": 2, "c": 3},
    {"ab": 1},
    {"b": 1},
]
EACH_KEYWORD = [
    {"type": "integer"},
    {"type": "number"},
    {"type": "null"},
    {"type": "boolean"},
    {"type": ["array", "object"]},
    {"enum": [True]},
    {"enum": [1]},
    {"enum": ["a", None]},
    {"const": 1.0},
    {"const": False},
    {"minLength": 2},
    {"maxLength": 2},
    {"pattern": "b"},
    {"pattern": "^a$"},
    {"minimum": 0},
    {"maximum": 1},
    {"exclusiveMinimum": 0},
    {"exclusiveMaximum": 1},
    {"minItems": 2},
    {"maxItems": 1},
    {"minProperties": 2},
    {"maxProperties": 1},
    {"required": ["a", "b"]},
    {"propertyNames": {"maxLength": 1}},
    {"properties": {"a": {"type": "string"}}},
    {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
    {"additionalProperties": {"type": "integer"}},
    {"items": {"type": "integer"}},
    {"allOf": [{"type": "integer"}, {"minimum": 0}]},
    {"anyOf": [{"type": "string"}, {"maximum": 0}]},
    {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
    {"not": {"const": 0}},
    {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}},
    {"if": {"minimum": 1}, "then": {"maximum": 1.5}},
    {"if": {"type": "object"}, "else": {"type": "string"}},
    {"then": {"type": "string"}},  # without `if`, `then` says nothing
]


@pytest.mark.parametrize("schema", EACH_KEYWORD, ids=lambda schema: json.dumps(schema))
def test_each_keyword_agrees_with_jsonschema_on_every_value(schema: dict[str, Any]) -> None:
    accepts = compile_schema(schema)
    assert accepts is not None
    verdicts = {repr(value): (accepts(value), jsonschema_says(schema, value)) for value in POOL}
    assert {value: both for value, both in verdicts.items() if both[0] != both[1]} == {}
    assert {True, False} <= {both[1] for both in verdicts.values()} or schema == {"then": {"type": "string"}}
