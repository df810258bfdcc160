"""PostgreSQL's JSON columns read as Python's `json` module reads text, without its guess at the bytes' encoding.

psycopg reads a `json` or `jsonb` value by handing its bytes to `json.loads`, which first works out which of
UTF-8, UTF-16 or UTF-32 they are in (`json.detect_encoding`), then decodes them and parses the text. What a
server sends a client whose encoding is UTF-8 is UTF-8, so gm's loader decodes the bytes as UTF-8 (with
`surrogatepass`, as `json.loads` decodes UTF-8) and parses the text with the same decoder `json.loads` uses, in
one pass (gm.store._json): the same value for every input (tests/store/test_pgjson.py). A round's opening reads
its past rounds' JSON columns (about a hundred values when the memory keeper is behind), a third of the opening's
CPU on PostgreSQL, where SQLite's driver hands SQLAlchemy text: with twenty rounds behind it, an opening took 786
µs of CPU against 897 µs with psycopg's loader (`bench/opening_bench.py`, five runs each, alternating; SQLite 494
µs), before the one pass.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from gm.store._json import DECODER, parsed


def read_json_as_text(engine: Engine) -> None:
    """Have every connection `engine` opens to PostgreSQL read `json` and `jsonb` values with `_text_json()`."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        for name in ("json", "jsonb"):
            dbapi_connection.adapters.register_loader(name, _text_json())


@functools.cache
def _text_json() -> type:
    """The loader (made once: psycopg is imported only where PostgreSQL is used)."""
    from psycopg.adapt import Loader

    class TextJsonLoader(Loader):
        def load(self, data: Any) -> Any:
            return parsed(str(data, "utf-8", "surrogatepass"), DECODER.decode)

    return TextJsonLoader
