"""What is wrong with a file an author wrote (dice.json, world.json), told so they can fix it.

A `Problem` is one finding at a JSON path; `ProblemsError` is a file that cannot be used, with every
problem in it. Two kinds of problem are found here: reading the file (`read_json`: a missing file,
bad bytes, a syntax error with line and column, a key repeated in one object) and its JSON Schema
(`SchemaCheck`, each error worded for an author by `describe`); `gm.rules.checks` and `gm.world.definition`
find the rest.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gm._quickschema import compile_schema
from gm._text import unstorable

# A Problem is what a ProblemsError carries, so both live in gm.errors (the bottom layer); they are found here.
from gm.errors import Problem as Problem
from gm.errors import ProblemsError
from gm.errors import Severity as Severity

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

_NAME_LIKE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
_STEP = re.compile(r"\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\.([^.\[]*)")


def member_path(path: str, name: str) -> str:
    """The JSON path of member `name` of the object at `path`, spelt as jsonschema spells it."""
    if _NAME_LIKE.match(name):
        return f"{path}.{name}"
    escaped = name.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


def document_order(problem: Problem) -> list[tuple[int, str]]:
    """Sort key for JSON paths: list indices as numbers, so checks[10] follows checks[9]."""
    steps = _STEP.finditer(problem.path.removeprefix("$"))
    return [(int(step[1]), "") if step[1] is not None else (-1, step[2] or step[3] or "") for step in steps]


# JSON Schema errors as sentences an author can act on.

_TYPE_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}


SCHEMAS = Path(__file__).resolve().parent / "schemas"  # world.json's and dice.json's, shipped as package data


def shipped_schema(name: str) -> dict[str, Any]:
    """The JSON Schema `name` (`dice.schema.json`, `world.schema.json`) as gm ships it in gm/schemas/.

    Read from beside this module: gm installs as files (never as a zip), and `importlib.resources` would
    import zipfile and shutil for nothing, a tenth of `gm check`'s start-up.
    """
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


class SchemaCheck:
    """A JSON Schema's problems in a document: none at once for a valid one, jsonschema's errors for the rest.

    A valid document is recognised by the schema compiled into a plain predicate (`gm._quickschema`), so
    checking one imports no jsonschema, whose import is most of `gm check`'s start-up; a document it
    refuses (or any, for a schema beyond it) is validated by jsonschema, imported then, and each error
    worded by `describe`.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.quick = compile_schema(schema)
        self._validator: Draft202012Validator | None = None

    def problems(self, data: Any) -> list[Problem]:
        """Every schema error in `data`, in document order, worded for an author."""
        if self.quick is not None and self.quick(data):
            return []
        return schema_problems(self.validator(), data)

    def validator(self) -> Draft202012Validator:
        """jsonschema's validator of the schema, made the first time a document needs its words."""
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        return self._validator


def schema_problems(validator: Draft202012Validator, data: Any) -> list[Problem]:
    """Every schema error in `data`, in document order, worded for an author."""
    errors = sorted(validator.iter_errors(data), key=lambda error: [str(part) for part in error.absolute_path])
    errors = [_sheet_branch(error) for error in errors]
    return [Problem(error.json_path, describe(error)) for error in errors]


_SHEET_KEYS = {"value": "#/$defs/bounded", "items": "#/$defs/items", "conditions": "#/$defs/conditions"}


def _sheet_branch(error: ValidationError) -> ValidationError:
    """For a world.json variable (or item) that fits none of its shapes (gm.world.sheet), the error of the shape
    its keys say it means ({"value": ...} a bounded number, an object an item with a count), so the author reads
    what is wrong with that."""
    branches = error.schema.get("anyOf") if error.validator == "anyOf" and isinstance(error.schema, dict) else None
    if not isinstance(branches, list) or not isinstance(error.instance, dict):
        return error
    refs = [branch.get("$ref") if isinstance(branch, dict) else None for branch in branches]
    meant = next((_SHEET_KEYS[key] for key in _SHEET_KEYS if key in error.instance), None)
    if meant is not None and meant in refs:
        place = refs.index(meant)
    else:
        objects = [
            i for i, branch in enumerate(branches) if isinstance(branch, dict) and branch.get("type") == "object"
        ]
        if len(objects) != 1:
            return error
        place = objects[0]
    mine = [sub for sub in error.context or [] if sub.schema_path and sub.schema_path[0] == place]
    return _sheet_branch(max(mine, key=lambda sub: len(sub.absolute_path))) if mine else error


def text_problems(data: Any) -> list[Problem]:
    """Every string (value or member name) in `data` that a story cannot store: a NUL or half a surrogate pair.

    PostgreSQL's text cannot hold U+0000, so such a file is refused here rather than by the database
    when a story starts from it (see `gm._text`). The walk is a loop, not recursion, so no nesting breaks it.
    """
    problems: list[Problem] = []
    pending: list[tuple[str, Any]] = [("$", data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if reason := unstorable(value):
                problems.append(Problem(path, f"the text {reason}, which a story cannot store; remove it"))
        elif isinstance(value, dict):
            for name, member in value.items():
                if reason := unstorable(name):
                    problems.append(Problem(path, f"the name {_shown(name)} {reason}; rename it"))
                    continue
                pending.append((member_path(path, name), member))
        elif isinstance(value, list):
            pending.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return sorted(problems, key=document_order)


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
        # jsonschema raises one error per missing member and names it only in its message: name each one once.
        missing = [name for name in expected if isinstance(found, dict) and name not in found]
        this_one = [name for name in missing if error.message.startswith(f"{name!r} is a required property")]
        return f"'{(this_one or missing or [expected])[0]}' is missing"
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(found) - set(allowed)) if isinstance(found, dict) else []
        names = ", ".join(_shown(name) for name in extra)  # quoted and cut short: a name may be anything
        known = f"{names} {'is' if len(extra) == 1 else 'are'} not known here"
        guesses = [f"'{close[0]}'" for name in extra if (close := _close_names(name, allowed))]
        guess = f"; did you mean {' or '.join(guesses)}?" if guesses else ""
        return f"{known}{guess} (expected only {', '.join(allowed)})"
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
    if kind == "anyOf" and any(isinstance(b, dict) and b.get("$ref") in _SHEET_KEYS.values() for b in expected):
        return (
            "expected a number or text (fixed for the story), or a sheet entry: a bounded number "
            '{"value": ...}, items {"items": [...]} or conditions {"conditions": {...}}; found ' + _shown(found)
        )
    if kind == "oneOf" and isinstance(found, dict) and "face" in error.schema.get("properties", {}):
        return "a natural needs either 'step' (bands to move) or 'band' (where to send the roll), not both"
    if kind == "not":
        if found == 0 and error.relative_path and error.relative_path[-1] == "step":
            return "a step of 0 moves nothing; use 1 to step up or -1 to step down"
        return f"{_shown(found)} is not allowed here"
    if kind == "minimum":
        return f"{found} is too small, the least allowed is {expected}"
    if kind == "maximum":
        return f"{found} is too large, the most allowed is {expected}"
    return str(error.message)


def _close_names(name: str, allowed: list[str]) -> list[str]:
    """The known name an unknown `name` was probably meant to be (a typo, or a case or separator slip)."""
    folded = {known.casefold().replace("-", "_"): known for known in allowed}
    same = folded.get(name.casefold().replace("-", "_").replace(" ", "_"))
    if same is not None:
        return [same]
    return difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)


def _shown(value: Any) -> str:
    if isinstance(value, str) and len(value) > 40:
        value = value[:40]  # the repr of a megabyte of text is not worth making to show 40 characters of it
    text = repr(value) if not isinstance(value, bool | type(None)) else str(value).lower().replace("none", "null")
    return text if len(text) <= 40 else text[:39] + "\u2026"


def shown(value: Any) -> str:
    """A value as a message quotes it: its JSON-like repr, cut to 40 characters, control characters escaped."""
    return _shown(value)


def json_depth(value: Any) -> int:
    """How deeply parsed JSON nests (a scalar is 0, `[]` is 1), found by a loop so no depth can break it."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            pending.extend((member, depth + 1) for member in item.values())
        elif isinstance(item, list):
            pending.extend((member, depth + 1) for member in item)
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
    return deepest


# Reading an author's JSON file.

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 32  # world files nest 5 deep; deeper is refused before anything walks the data recursively
NOT_REGULAR = "this is not a regular file (a FIFO, a device or a socket), expected a JSON file"


class _RepeatedKey(ValueError):
    pass


class _NotARegularFile(OSError):
    """A path that names a FIFO, a device or a socket where a file was expected."""


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` + 1 of them (so a caller can tell it is too long).

    The file is opened without blocking and checked before it is read, so a FIFO or a device named like
    a world file is refused (an `OSError`, EINVAL) instead of waited on; a folder is `IsADirectoryError`.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise _NotARegularFile(errno.EINVAL, NOT_REGULAR, str(path))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_json(path: Path) -> Any:
    """The parsed content of a JSON file, or `ProblemsError` saying what is wrong and where."""
    name = str(path)
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        raise ProblemsError(name, [Problem("$", "the file does not exist")]) from None
    except IsADirectoryError:
        raise ProblemsError(name, [Problem("$", "this is a folder, expected a JSON file")]) from None
    except _NotARegularFile:
        raise ProblemsError(name, [Problem("$", NOT_REGULAR)]) from None
    except OSError as error:
        raise ProblemsError(name, [Problem("$", f"the file cannot be read ({error.strerror})")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ProblemsError(name, [Problem("$", f"the file is over {MAX_FILE_BYTES:,} bytes")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problem = Problem("$", f"the file is not UTF-8 text (byte {error.start + 1})")
        raise ProblemsError(name, [problem]) from None
    return parse_json(text, name)


def parse_json(text: str, name: str) -> Any:
    """Parse JSON text, refusing repeated keys in one object (JSON would silently keep the last) and
    nesting deeper than `MAX_DEPTH` (which would break whatever walks the data next)."""
    too_deep = Problem("$", f"the JSON is nested more than {MAX_DEPTH} deep; a world file needs 5 at most")
    try:
        data = json.loads(text, object_pairs_hook=_refuse_repeats)
    except json.JSONDecodeError as error:
        problem = Problem("$", f"line {error.lineno}, column {error.colno}: {error.msg.lower()}")
        raise ProblemsError(name, [problem]) from None
    except _RepeatedKey as error:
        raise ProblemsError(name, [Problem("$", str(error))]) from None
    except RecursionError:  # nested thousands deep: the parser gives up before the depth is measured
        raise ProblemsError(name, [too_deep]) from None
    if json_depth(data) > MAX_DEPTH:
        raise ProblemsError(name, [too_deep])
    return data


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RepeatedKey(f"the key '{key}' appears twice in one object; keep only one")
        result[key] = value
    return result
