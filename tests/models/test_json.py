"""Request bodies and answers as JSON: orjson writes and reads them, with json's bytes and json's failures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gm.errors import ModelUnavailable
from gm.models.client import _encoded
from gm.testing import raw, reply
from tests.support.models import complete, served, settings_for

# What gm's request bodies hold: text of any kind (controls, emoji, quotes), integers, true/false/null,
# and lists and objects of them. Surrogates are left out: no UTF-8 holds them (tested apart).
TEXT = st.text(st.characters(exclude_categories=("Cs",)))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def as_json_writes(value: Any) -> bytes:
    """The body as the openai client (and gm before orjson) wrote it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@settings(max_examples=400, deadline=None)
@given(VALUES)
@pytest.mark.slow
def test_a_body_is_the_bytes_json_writes(value: Any) -> None:
    assert _encoded({"messages": value}) == as_json_writes({"messages": value})


def test_what_orjson_cannot_write_is_written_or_refused_as_json_does() -> None:
    huge = {"seed": 2**80, 3: "a key that is a number"}
    assert _encoded(huge) == as_json_writes(huge)
    with pytest.raises(UnicodeEncodeError):
        _encoded({"content": "half a pair \ud800"})


def test_an_answer_with_text_past_ascii_is_read_whole() -> None:
    text = "Odile s\u2019agenouille \u2014 la serrure c\u00e8de. \U0001f5dd \u2028 end"
    with served([reply(text)]) as fake:
        assert complete(settings_for(fake)).content == text


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"choices": [{"message": {"content": "\xff\xfe broken"}}]}', "codec can't decode"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b'{"choices": [] ', "not JSON"),
        (b"", "not JSON"),
    ],
    ids=["invalid UTF-8", "nested 5,000 deep", "cut short", "empty"],
)
def test_an_answer_orjson_refuses_fails_with_the_reason_json_gives(body: bytes, reason: str) -> None:
    with served([raw(body), reply("the next call works")]) as fake:
        with pytest.raises(ModelUnavailable, match="not a chat completion") as refused:
            complete(settings_for(fake))
        assert reason in str(refused.value)
        assert "\n" not in str(refused.value)
        assert complete(settings_for(fake)).content == "the next call works"
