"""Small helpers the forms share: form values as typed, JSON values as field text, and moving rows."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException


def field_text(value: Any) -> str:
    """A JSON value as the text a form field shows (3.0 as 3; anything odd as its JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def one_line(value: str) -> str:
    """A one-line field as sent: line breaks cannot be typed there, so any that arrive are dropped."""
    return value.replace("\r", "").replace("\n", "")


def text_area(value: str) -> str:
    """A text area as sent: browsers send line breaks as CRLF; the file keeps plain LF."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


def positions(text: str) -> list[int]:
    """The row numbers after a button's verb, as in `remove-band:0:2`; a 400 for anything else."""
    if not text:
        return []
    parts = text.split(":")
    if not all(part.isdigit() and len(part) <= 4 for part in parts):
        raise HTTPException(400, f"The editor does not understand the position {text!r}.")
    return [int(part) for part in parts]


def index_in(items: list[Any], number: int) -> int:
    """`number` when `items` has such a row; a 400 otherwise (the page was out of date)."""
    if number >= len(items):
        raise HTTPException(400, "That row is no longer in the form; reload the page.")
    return number


def change(items: list[Any], how: str, index: int) -> None:
    """Remove the row at `index`, or move it up or down one place (a move past either end does nothing)."""
    if how == "remove":
        del items[index]
    elif how == "up" and index > 0:
        items[index - 1], items[index] = items[index], items[index - 1]
    elif how == "down" and index < len(items) - 1:
        items[index + 1], items[index] = items[index], items[index + 1]
