"""OpenAI's published JSON Schemas as validators, and their errors as one readable line (for gm.testing)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import ValidationError

from gm._quickschema import compile_schema


class Validator:
    """One of OpenAI's published schemas: jsonschema's validator, for the errors, and a quick yes for a valid
    document (gm._quickschema), which the fake model asks of every request: jsonschema took a few milliseconds
    of CPU a request against OpenAI's 50 KB schema, the predicate about a fifteenth of that."""

    def __init__(self, schema: Any) -> None:
        validator_class = validators.validator_for(schema)
        validator_class.check_schema(schema)
        self.full = validator_class(schema)
        self.accepts = compile_schema(schema) if validator_class is validators.Draft202012Validator else None

    def iter_errors(self, value: Any) -> Iterator[ValidationError]:
        """jsonschema's errors in `value`, none when the quick predicate finds it valid."""
        if self.accepts is not None and self.accepts(value):
            return iter(())
        errors: Iterator[ValidationError] = self.full.iter_errors(value)
        return errors


def load_validator(path: Path | str) -> Validator:
    """A validator for one of OpenAI's published schemas, with OpenAPI's `nullable` honoured."""
    resolved = Path(path).resolve()
    return _cached_validator(str(resolved), resolved.stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _cached_validator(path: str, mtime_ns: int) -> Validator:
    """The validator for one version of a schema file, built once: building takes tens of milliseconds."""
    return Validator(_with_nullable(json.loads(Path(path).read_text(encoding="utf-8"))))


def explain(error: ValidationError) -> str:
    """One line for a schema error; for a failed oneOf/anyOf, the reason from the branch that fits best."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        # A branch failing an enum (such as a message's role) is about another kind of thing altogether.
        fitting = [errors for errors in branches.values() if not any(sub.validator == "enum" for sub in errors)]
        if not fitting:
            enums = [sub for errors in branches.values() for sub in errors if sub.validator == "enum"]
            if all(sub.path == enums[0].path for sub in enums):
                allowed = [value for sub in enums for value in sub.validator_value]
                return f"{enums[0].json_path}: {enums[0].instance!r} is not one of {allowed!r}"
        else:
            sizes = sorted(len(errors) for errors in fitting)
            if len(sizes) == 1 or sizes[0] < sizes[1]:  # one branch fits clearly best
                return explain(min(fitting, key=len)[0])
    return f"{error.json_path}: {error.message}"


def problems(validator: Any, value: Any) -> str:
    """The first few schema errors in `value`, one line; empty when valid or when there is no validator."""
    errors = list(validator.iter_errors(value)) if validator is not None else []
    return "; ".join(explain(error) for error in errors[:3])


def _with_nullable(node: Any) -> Any:
    """The schema with OpenAPI 3.0's `nullable: true`, which JSON Schema ignores, turned into `anyOf [..., null]`."""
    if isinstance(node, list):
        return [_with_nullable(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _with_nullable(value) for key, value in node.items()}
    if isinstance(converted.get("nullable"), bool) and converted.pop("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted
