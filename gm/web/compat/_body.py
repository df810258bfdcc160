"""Reading a chat completion request's body: bounded, parsed in a worker thread, after the API token is checked.

A chat front end sends a chat's whole history with every request, up to 8 MB (`gm.web._limits`). Parsing JSON
holds Python's GIL for as long as one call of the parser lasts, and every request of the server waits on the
event loop meanwhile: an 8 MB body of 180,000 small messages took seconds. So, before the body is parsed:

- the route checks the API token, so a stranger's body costs only its reading;
- the number of JSON values is bounded without parsing: no JSON value outside a string needs more than one
  `,`, `{` or `[` of its own, so counting those bytes (a millisecond for 8 MB) bounds the parser's work.
  Brackets and commas inside a chat's text count too, which only makes the bound stricter;
- the parse runs in a worker thread, calling back for every object, so the event loop gets its turns.

Then `ChatIn` holds at most `MAX_CHAT_MESSAGES` messages; what gm reads of them is `gm.web.compat.messages`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException

MAX_CHAT_MESSAGES = 10_000  # a chat this long is years of play; its older rounds are in gm's memory anyway
MAX_JSON_VALUES = 200_000  # commas and brackets in a body (an 8 MB chat of prose holds far fewer)


class ChatIn(BaseModel):
    """The parts of a chat completion request gm reads; every other field (temperature, top_p, top_k, stop,
    max_tokens, presence_penalty, logit_bias, tools, and the front ends' own) is accepted and not used: the game
    master's model is gm's, with gm's settings."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(max_length=200)
    messages: list[Any] = Field(max_length=MAX_CHAT_MESSAGES)
    stream: bool | None = False
    n: int | None = 1
    stream_options: dict[str, Any] | None = None


def _each_object(value: dict[str, Any]) -> dict[str, Any]:
    """Called by the parser for every object: Python code between objects lets the event loop's thread run."""
    return value


def read_chat(raw: bytes) -> ChatIn:
    """The request in `raw`, or the error its answer is: 413 for too many values, 422 for JSON or a shape
    that is not a chat completion request (as FastAPI would answer them, `gm.web.app`). Run it off the loop."""
    values = raw.count(b",") + raw.count(b"{") + raw.count(b"[")
    if values > MAX_JSON_VALUES:
        raise HTTPException(
            413,
            f"the request holds more than {MAX_JSON_VALUES:,} JSON values; send fewer messages"
            f" (at most {MAX_CHAT_MESSAGES:,}), or start a new chat",
        )
    try:
        data = json.loads(raw, object_hook=_each_object)
    except json.JSONDecodeError as error:
        raise _not_json(error.msg, ("body", error.pos)) from None
    except RecursionError:
        raise _not_json("it is nested too deeply", ("body",)) from None
    except (ValueError, UnicodeDecodeError) as error:
        too_long = f"a number in it has more than {sys.get_int_max_str_digits():,} digits"
        raise _not_json(too_long if "digits" in str(error) else "it cannot be parsed", ("body",)) from None
    try:
        return ChatIn.model_validate(data)
    except ValidationError as error:
        problems = [{**problem, "loc": ("body", *problem["loc"])} for problem in error.errors(include_url=False)]
        raise RequestValidationError(problems) from None


def _not_json(reason: str, where: tuple[str | int, ...]) -> RequestValidationError:
    """The error FastAPI raises for a body that is not JSON: answered as a 422 saying why (`gm.web.app`)."""
    return RequestValidationError([{"type": "json_invalid", "loc": where, "msg": reason, "ctx": {"error": reason}}])
