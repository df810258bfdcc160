"""PostgreSQL's JSON columns read by gm's loader (gm.store._pgjson): the very values `json.loads` reads from the text.

PostgreSQL only (CI sets GM_TEST_POSTGRES_URL): SQLite's driver hands SQLAlchemy text, which it parses with `json`.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from gm.store import Store

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)

# Each as a client would write it: nesting, every JSON type, an integer past 64 bits, a float past a double's
# range, accents and a character beyond the BMP, and escapes (a lone surrogate is `json`'s, not `jsonb`'s).
DOCUMENTS = [
    '{"a": [1, 2.5, null, true, false], "b": {"c": "d"}}',
    "123456789012345678901234567890",
    "1e400",
    "-0.0",
    '"café ✓ 𝄞"',
    '"tab\\there \\u00e9 \\"quoted\\""',
    "[]",
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_a_json_value_reads_as_json_loads_reads_its_text(store: Store, document: str) -> None:
    with store.reading() as connection:
        as_json, as_jsonb, jsonb_text = connection.execute(
            text("SELECT CAST(:d AS json), CAST(:d AS jsonb), CAST(CAST(:d AS jsonb) AS text)"), {"d": document}
        ).one()
    assert repr(as_json) == repr(json.loads(document))  # repr: -0.0 is not 0.0, and a float is not an int
    assert repr(as_jsonb) == repr(json.loads(jsonb_text))


def test_a_lone_surrogate_escape_in_json_reads_as_json_loads_reads_it(store: Store) -> None:
    with store.reading() as connection:
        value = connection.execute(text("SELECT CAST(:d AS json)"), {"d": '"\\ud800 and \\udfff"'}).scalar_one()
    assert value == json.loads('"\\ud800 and \\udfff"')


def test_the_stores_connections_read_json_with_gms_loader(store: Store) -> None:
    from psycopg import pq

    with store.reading() as connection:
        adapters = connection.connection.driver_connection.adapters  # type: ignore[union-attr]
        for name in ("json", "jsonb"):
            loader = adapters.get_loader(adapters.types[name].oid, pq.Format.TEXT)
            assert loader is not None and loader.__module__ == "gm.store._pgjson", name
