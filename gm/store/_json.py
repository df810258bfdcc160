"""JSON columns parsed as `json.loads` parses them, without its two passes over the text for surrounding whitespace.

`json.loads(text)` strips whitespace before and after the document with a regular expression each side, then
parses it; what a database hands back for a JSON column has none (PostgreSQL's `jsonb` and SQLite's text as gm
wrote it, by `json.dumps`). So `parsed` parses straight from the first character (`JSONDecoder.raw_decode`) and
takes the result when the document ends where the text does; anything else (whitespace, extra data, an error of
any kind) goes to the full parser, which returns or raises exactly what it would have. About 1 µs less a value;
a round's opening parses about a hundred while the memory keeper is behind, and took 0.86x the CPU on PostgreSQL
and 0.79x on SQLite with twenty unnoted rounds behind it (`python bench/opening_bench.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

DECODER = json.JSONDecoder()  # what `json.loads` parses with when given no options


def parsed(text: str, whole: Callable[[str], Any] = json.loads) -> Any:
    """`text` parsed as `whole` (`json.loads` by default) parses it: the same value, or the same error."""
    try:
        value, end = DECODER.raw_decode(text)
    except Exception:  # leading whitespace, a byte string, or a real error: `whole` says which
        return whole(text)
    return value if end == len(text) else whole(text)
