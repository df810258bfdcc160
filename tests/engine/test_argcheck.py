"""The compiled argument check (gm.engine.tools._argcheck) against jsonschema: the same verdict on every argument dict.

The property: for any instance, the compiled predicate says yes exactly when jsonschema's
Draft 2020-12 validator finds no error and no text in it is one a story cannot store. It is tested
on the tools every sample world offers and on schemas generated from the compiled subset, with
instances drawn near each schema (valid ones, and each way of missing it: a wrong type, a bound
passed by one, 12.0 for 12, True for 1, NaN, a NUL, half a surrogate pair, a missing or an unknown
member) and JSON of any shape. Then `gm.engine.tools.running` itself: with the quick check and without it, every
call ends the same, the same arguments or the same sentence.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from gm.engine.tools._argcheck import compile_schema, depth
from gm.engine.tools.offered import MAX_DEPTH, ArgumentCheck, read_arguments, tool_schemas
from gm.errors import ModelRetry
from gm.problems import json_depth, text_problems
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS

# Each distinct tool schema the sample worlds offer, named by the first world offering it (most worlds offer the
# same roll_dice, which a property test need not try four times over).
TOOLS = list(
    {
        json.dumps(tool["function"]["parameters"], sort_keys=True): (
            world.name,
            tool["function"]["name"],
            tool["function"]["parameters"],
        )
        for world in sorted(SAMPLE_WORLDS.iterdir(), reverse=True)
        for tool in tool_schemas(load_world(world))
    }.values()
)
ODD_TEXTS = ["", "\x00", "a\x00b", "\ud800", "x\udfffy", "\u00e9l\u00e8ve", "Mara "]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
    | st.sampled_from(ODD_TEXTS)
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


def valid(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances valid under `schema` (from the compiled subset), every text storable."""
    kind = schema["type"]
    if kind == "object":
        properties, required = schema.get("properties", {}), set(schema.get("required", []))
        return st.fixed_dictionaries(
            {name: valid(each) for name, each in properties.items() if name in required},
            optional={name: valid(each) for name, each in properties.items() if name not in required},
        )
    if kind == "array":
        return st.lists(valid(schema["items"]), max_size=3)
    if kind == "string":
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
        alphabet = st.characters(codec="utf-8", exclude_characters="\x00")
        texts = st.text(
            alphabet, min_size=shortest, max_size=max(shortest, min(12 if longest is None else longest, 12))
        )
        if longest is not None:  # and as long as it may be
            texts |= st.just("\u00e9" * longest)
        return texts
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        whole = st.integers(None if low is None else math.ceil(low), None if high is None else math.floor(high))
        if kind == "number":
            return whole.filter(lambda n: (low is None or n >= low) and (high is None or n <= high)) | st.floats(
                low, high, allow_nan=False
            )
        return whole | whole.map(float)  # 12.0 is an integer too
    return st.booleans() if kind == "boolean" else st.none()


def off(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that miss `schema` in one way at its top (or just pass, by JSON Schema's letter)."""
    kind = schema["type"]
    choices: list[st.SearchStrategy[Any]] = [ANY_JSON, st.sampled_from(ODD_TEXTS)]
    if kind == "string":
        for each in schema.get("enum", []):
            choices.append(st.sampled_from([each.upper(), f" {each}", each + "\x00", each[:-1]]))
        for bound in ("minLength", "maxLength"):
            if bound in schema:
                length = schema[bound]
                choices.append(st.sampled_from(["a" * max(0, length - 1), "a" * (length + 1), "a" * length]))
                choices.append(st.sampled_from(["\x00" * length, "\ud800" * length]))
    if kind in ("integer", "number"):
        choices.append(st.sampled_from([0.5, 12.0, -3.0, math.nan, math.inf, -math.inf, True, False, "1"]))
        for bound in ("minimum", "maximum"):
            if bound in schema:
                edges = [schema[bound] + step for step in (-1, -0.5, 0, 0.5, 1)]
                choices.append(st.sampled_from(edges + [float(edge) for edge in edges]))
    return st.one_of(*choices)


def near(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances near `schema`: valid ones, and valid ones with one part off (a member missing, one more, or
    one member, item or value just off), so a check that gets one part wrong is caught on that part."""
    kind = schema["type"]
    choices = [valid(schema), off(schema)]
    if kind == "object":
        properties, required = schema.get("properties", {}), schema.get("required", [])
        whole = valid(schema)
        if required:
            choices.append(st.tuples(whole, st.sampled_from(required)).map(lambda got: _without(*got)))
        extra = st.sampled_from(["extra", "", "\x00", "Check", "\ud800"])
        choices.append(st.tuples(whole, extra, ANY_JSON).map(lambda got: {**got[0], got[1]: got[2]}))
        for name, each in properties.items():
            choices.append(st.tuples(whole, near(each)).map(lambda got, name=name: {**got[0], name: got[1]}))
    if kind == "array":
        item = schema["items"]
        choices.append(
            st.tuples(st.lists(valid(item), max_size=2), near(item), st.lists(valid(item), max_size=2)).map(
                lambda got: [*got[0], got[1], *got[2]]
            )
        )
    return st.one_of(*choices)


def _satisfiable(schema: dict[str, Any]) -> bool:
    """Whether some instance meets a generated leaf schema (`valid` draws only from those)."""
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength", math.inf)
    if any(not shortest <= len(each) <= longest for each in schema.get("enum", ["x" * shortest])):
        return False
    low, high = schema.get("minimum", -100), schema.get("maximum", 100)
    return math.ceil(low) <= math.floor(high) if schema["type"] == "integer" else low <= high


def _without(instance: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in instance.items() if key != name}


def jsonschema_says(schema: dict[str, Any], instance: Any) -> bool:
    """The verdict the compiled check must give: valid for jsonschema, and every text storable."""
    return Draft202012Validator(schema).is_valid(instance) and not text_problems(instance)


@pytest.mark.slow
@pytest.mark.parametrize(("world", "tool", "schema"), TOOLS, ids=[f"{world}-{tool}" for world, tool, _ in TOOLS])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_check_agrees_with_jsonschema_on_every_offered_tool(
    world: str, tool: str, schema: dict[str, Any], data: st.DataObject
) -> None:
    accepts = compile_schema(schema)
    assert accepts is not None, f"{world}'s {tool} schema is beyond the compiled subset: every call would be slow"
    instance = data.draw(near(schema))
    assert accepts(instance) == jsonschema_says(schema, instance)


@pytest.mark.slow
@pytest.mark.parametrize(("world", "tool", "schema"), TOOLS, ids=[f"{world}-{tool}" for world, tool, _ in TOOLS])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_tool_call_ends_the_same_with_the_quick_check_and_without_it(
    world: str, tool: str, schema: dict[str, Any], data: st.DataObject
) -> None:
    validator = Draft202012Validator(schema)
    quick, slow = ArgumentCheck(validator, compile_schema(schema, MAX_DEPTH)), ArgumentCheck(validator, None)
    instance = data.draw(near(schema))

    def ending(check: ArgumentCheck) -> Any:
        try:
            return "accepted", read_arguments(tool, instance, check)
        except ModelRetry as refused:
            return "refused", str(refused)

    assert ending(quick) == ending(slow)


# Schemas drawn from the compiled subset, so the compiler is tested beyond the schemas gm writes today.
NAMES = st.sampled_from(["a", "b", "check", "reason", "n"])
LEAF_SCHEMAS = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "enum": st.lists(st.sampled_from(["x", "y", "Mara", "\u00e9"]), min_size=1, max_size=3, unique=True),
            "maxLength": st.integers(0, 5),
            "minLength": st.integers(0, 3),
            "description": st.just("Said to the model."),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": st.integers(-5, 5) | st.just(0.5), "maximum": st.integers(-5, 5) | st.just(2.5)},
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["boolean", "null"])}),
).filter(lambda schema: _satisfiable(schema))
SCHEMAS = st.recursive(
    LEAF_SCHEMAS,
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.dictionaries(NAMES, inner, max_size=3).flatmap(
            lambda properties: st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "properties": st.just(properties),
                    "required": st.lists(st.sampled_from(sorted(properties) or ["a"]), max_size=2, unique=True),
                    "additionalProperties": st.just(False),
                }
            )
        ),
    ),
    max_leaves=6,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data(), schema=LEAF_SCHEMAS)
def test_the_check_agrees_with_jsonschema_on_generated_values(data: st.DataObject, schema: dict[str, Any]) -> None:
    accepts = compile_schema(schema)
    assert accepts is not None
    instance = data.draw(near(schema))
    assert accepts(instance) == jsonschema_says(schema, instance)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), schema=SCHEMAS)
def test_the_check_agrees_with_jsonschema_on_generated_schemas(data: st.DataObject, schema: dict[str, Any]) -> None:
    accepts = compile_schema(schema)
    assert accepts is not None
    instance = data.draw(near(schema))
    assert accepts(instance) == jsonschema_says(schema, instance)
    if accepts(instance):  # so a caller bounding depth may ask the check first (gm.engine.tools.running)
        assert json_depth(instance) <= depth(schema)
    assert (compile_schema(schema, deepest=depth(schema)) is None, compile_schema(schema, depth(schema) - 1)) == (
        False,
        None,
    )


def test_arguments_too_deep_are_refused_as_too_deep_with_the_quick_check_or_without() -> None:
    [(_, _, narrate)] = [entry for entry in TOOLS if entry[0] == "ward-nine" and entry[1] == "narrate"]
    validator = Draft202012Validator(narrate)
    deep: Any = "x"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    asked = {"narration": "Told.", "outcomes": [{"character": deep, "result": "failed"}]}
    for check in (ArgumentCheck(validator, compile_schema(narrate, MAX_DEPTH)), ArgumentCheck(validator, None)):
        with pytest.raises(ModelRetry, match=f"nested more than {MAX_DEPTH} deep"):
            read_arguments("narrate", asked, check)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {}},  # additional members allowed: their texts would go unread
        {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
        {"type": ["string", "null"]},
        {"type": "string", "pattern": "^a"},
        {"type": "string", "format": "date"},
        {"anyOf": [{"type": "string"}]},
        {"type": "array"},  # items of any depth
        {"type": "integer", "multipleOf": 2},
        {"type": "string", "enum": [1, "a"]},
        {"type": "object", "properties": {"a": True}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"const": 1}}, "additionalProperties": False},
        True,
    ],
)
def test_a_schema_beyond_the_subset_compiles_to_none(schema: Any) -> None:
    assert compile_schema(schema) is None


def test_the_tools_own_check_is_used_and_refusals_keep_their_sentences() -> None:
    [(_, _, roll_check)] = [entry for entry in TOOLS if entry[0] == "ward-nine" and entry[1] == "roll_check"]
    check = ArgumentCheck(Draft202012Validator(roll_check), compile_schema(roll_check, MAX_DEPTH))
    name = roll_check["properties"]["character"]["enum"][0]
    key = roll_check["properties"]["check"]["enum"][0]
    asked = {"check": key, "character": name, "reason": "a try"}
    assert read_arguments("roll_check", asked, check) is asked
    with pytest.raises(ModelRetry, match=r"^roll_check: arguments: 'check' is a required property|roll_check: "):
        read_arguments("roll_check", {"character": name, "reason": "a try"}, check)
    with pytest.raises(ModelRetry, match="NUL"):
        read_arguments("roll_check", {**asked, "reason": "a\x00try"}, check)
