"""JSON Schema errors as sentences an author can act on, each with the JSON path it is about."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from gm.problems import Problem

_TYPE_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}


def schema_problems(validator: Draft202012Validator, data: Any) -> list[Problem]:
    """Every schema error in `data`, in document order, worded for an author."""
    errors = sorted(validator.iter_errors(data), key=lambda error: [str(part) for part in error.absolute_path])
    return [Problem(error.json_path, describe(error)) for error in errors]


def describe(error: ValidationError) -> str:
    """One sentence for one schema error."""
    kind, expected, found = error.validator, error.validator_value, error.instance
    if "propertyNames" in error.schema_path:  # the error is about a member's name, reported at its object
        if kind == "minLength":
            return "a name must not be empty"
        if kind == "maxLength":
            return f"the name {_shown(found)} is {len(found)} characters long, at most {expected} are allowed"
        return f"the name {_shown(found)}: {error.message}"
    if kind == "required":
        missing = [name for name in expected if isinstance(found, dict) and name not in found]
        return f"'{missing[0] if missing else expected}' is missing"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(found) - set(allowed)) if isinstance(found, dict) else []
        names = ", ".join(f"'{name}'" for name in extra)
        return f"{names} {'is' if len(extra) == 1 else 'are'} not known here; expected only {', '.join(allowed)}"
    if kind == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        named = " or ".join(_TYPE_NAMES.get(str(name), str(name)) for name in kinds)
        return f"expected {named}, found {_shown(found)}"
    if kind == "enum":
        return f"expected one of {', '.join(repr(value) for value in expected)}, found {_shown(found)}"
    if kind == "pattern":
        hint = error.schema.get("description", "")
        return f"{_shown(found)} is not allowed here" + (f": {hint[0].lower()}{hint[1:]}" if hint else "")
    if kind == "minLength":
        return "must not be empty" if expected == 1 else f"must be at least {expected} characters long"
    if kind == "maxLength":
        return f"is {len(found)} characters long, at most {expected} are allowed"
    if kind == "minItems":
        return f"needs at least {expected} {'entry' if expected == 1 else 'entries'}"
    if kind == "maxItems":
        return f"has {len(found)} entries, at most {expected} are allowed"
    if kind == "maxProperties":
        return f"has {len(found)} entries, at most {expected} are allowed"
    if kind == "minimum":
        return f"{found} is too small, the least allowed is {expected}"
    if kind == "maximum":
        return f"{found} is too large, the most allowed is {expected}"
    return str(error.message)


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, bool | type(None)) else str(value).lower().replace("none", "null")
    return text if len(text) <= 40 else text[:39] + "\u2026"
