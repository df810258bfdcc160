"""Reading an author's JSON file: syntax errors and repeated keys become problems with a line and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gm.problems import Problem, ProblemsError

MAX_FILE_BYTES = 1_000_000


class _RepeatedKey(ValueError):
    pass


def read_json(path: Path) -> Any:
    """The parsed content of a JSON file, or `ProblemsError` saying what is wrong and where."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ProblemsError(name, [Problem("$", "the file does not exist")]) from None
    except IsADirectoryError:
        raise ProblemsError(name, [Problem("$", "this is a folder, expected a JSON file")]) from None
    except OSError as error:
        raise ProblemsError(name, [Problem("$", f"the file cannot be read ({error.strerror})")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ProblemsError(name, [Problem("$", f"the file is {len(raw):,} bytes, at most {MAX_FILE_BYTES:,}")])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problem = Problem("$", f"the file is not UTF-8 text (byte {error.start + 1})")
        raise ProblemsError(name, [problem]) from None
    return parse_json(text, name)


def parse_json(text: str, name: str) -> Any:
    """Parse JSON text, refusing repeated keys in one object (JSON would silently keep the last)."""
    try:
        return json.loads(text, object_pairs_hook=_refuse_repeats)
    except json.JSONDecodeError as error:
        problem = Problem("$", f"line {error.lineno}, column {error.colno}: {error.msg.lower()}")
        raise ProblemsError(name, [problem]) from None
    except _RepeatedKey as error:
        raise ProblemsError(name, [Problem("$", str(error))]) from None


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RepeatedKey(f"the key '{key}' appears twice in one object; keep only one")
        result[key] = value
    return result
