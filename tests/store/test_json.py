"""JSON columns parsed in one pass (gm.store._json): the very value or error `json.loads` gives, on any text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import JSON, text

from gm.store import Store, _json
from gm.store._json import DECODER, parsed

# What a database may hand back, and what it should not: whitespace either side (PostgreSQL's `json` keeps the
# text as written), extra data, a byte-order mark, bytes, nothing, a bare word, and nesting too deep to parse.
EDGES = [
    '{"a": [1, 2.5, null, true, false]}',
    '  {"a": 1}',
    '{"a": 1}\n',
    "\t[1]\r\n",
    "1 2",
    '{"a": 1}{"b": 2}',
    "[1,]",
    "\ufeff[1]",
    "",
    " ",
    "nul",
    "NaN",
    "-Infinity",
    "1e400",
    "-0.0",
    "123456789012345678901234567890",
    '"\\ud800"',
    '"caf\u00e9 \U0001d11e"',
    "[" * 100_000 + "]" * 100_000,
]


def outcome(parse: Any, text: Any) -> tuple[str, str]:
    """What `parse` makes of `text`: its value's repr (-0.0 is not 0.0, 1 is not 1.0), or its error's type and text."""
    try:
        return ("value", repr(parse(text)))
    except Exception as error:  # a RecursionError too: whichever it is, both must give it
        return (type(error).__name__, str(error))


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_an_edge_parses_as_json_loads_parses_it(text: str) -> None:
    assert outcome(parsed, text) == outcome(json.loads, text)
    assert outcome(lambda t: parsed(t, DECODER.decode), text) == outcome(DECODER.decode, text)


def test_bytes_parse_as_json_loads_parses_them() -> None:
    for data in (b'{"a": 1}', '{"\u00e9": 1}'.encode("utf-16"), b"\xef\xbb\xbf[1]", b"\xff"):
        assert outcome(parsed, data) == outcome(json.loads, data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(
    value=json_values,
    before=st.sampled_from(["", " ", "\n\t"]),
    after=st.sampled_from(["", " ", "\r\n", " 1", "x", "]"]),
    indent=st.sampled_from([None, 2]),
)
def test_any_document_parses_as_json_loads_parses_it(value: Any, before: str, after: str, indent: int | None) -> None:
    text = before + json.dumps(value, indent=indent) + after
    assert outcome(parsed, text) == outcome(json.loads, text)


@given(st.text(alphabet=st.sampled_from('{}[]":,0123456789.eE-+ tfnrulas\\'), max_size=30))
def test_any_text_parses_as_json_loads_parses_it(text: str) -> None:
    assert outcome(parsed, text) == outcome(json.loads, text)


@pytest.mark.parametrize("database_url", ["sqlite", "postgres"], indirect=True)
def test_the_stores_json_columns_are_parsed_by_it(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class Watched(json.JSONDecoder):
        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            seen.append(s)
            return super().raw_decode(s, idx)

    monkeypatch.setattr(_json, "DECODER", Watched())
    value = "CAST(:d AS jsonb)" if store.engine.dialect.name == "postgresql" else ":d"
    with store.reading() as connection:
        read = connection.execute(text(f"SELECT {value} AS v").columns(v=JSON), {"d": '{"a": [1]}'}).scalar_one()
    assert read == {"a": [1]}
    assert seen == ['{"a": [1]}']
