"""Script steps for a fake judge: an honest one, and one that gives chosen verdicts (see gm.engine.judge).

Each answers in the way the request asks for it: as the forced tool call when the request offers
the judge's tool, else as JSON text (which is what `response_format` and the text mode both read).
"""

from __future__ import annotations

import json
from typing import Any

from gm.engine.judge import FORMAT_NAME
from gm.engine.prompt import JudgeRequest, read_judge_request
from gm.engine.sheet_judge import FORMAT_NAME as SHEET_FORMAT
from gm.engine.sheet_judge import SheetRequest, read_sheet_request
from gm.testing.script import Answer, Request, StepFunction, call, reply


def is_judge_request(request: Request) -> bool:
    """Whether a request is the judge's (so one fake can serve the judge beside other roles)."""
    return _judge_request(request) is not None


def honest_judge(request: Request) -> Answer:
    """A judge step that reads every outcome as told as its roll came out (and, asked by the sheet judge, every
    change the round made as told and none invented: `sheet_judge_answer`)."""
    if _sheet_request(request) is not None:
        return _sheet_answer(request, (), ())
    asked = _judge_request(request)
    if asked is None:
        raise AssertionError("honest_judge was given a request that is not the judge's")
    return _answer(request, [(outcome.character, outcome.result, "") for outcome in asked.outcomes])


def judge_answer(*verdicts: tuple[str, str, str]) -> StepFunction:
    """A judge step giving these (character, told_as, quote) verdicts, whatever the narration says."""

    def step(request: Request) -> Answer:
        return _answer(request, list(verdicts))

    return step


def sheet_judge_answer(untold: tuple[int, ...] = (), invented: tuple[tuple[str, str, str], ...] = ()) -> StepFunction:
    """A sheet judge step (gm.engine.sheet_judge): every listed change told but the numbers in `untold`, and
    these (character, change, quote) changes invented."""

    def step(request: Request) -> Answer:
        return _sheet_answer(request, untold, invented)

    return step


def _sheet_answer(request: Request, untold: tuple[int, ...], invented: tuple[tuple[str, str, str], ...]) -> Answer:
    asked = _sheet_request(request)
    if asked is None:
        raise AssertionError("sheet_judge_answer was given a request that is not the sheet judge's")
    answer = {
        "made": [
            {"number": number, "told": number not in untold, "quote": ""} for number in range(1, len(asked.made) + 1)
        ],
        "invented": [{"character": who, "change": what, "quote": quote} for who, what, quote in invented],
    }
    if any(tool.get("function", {}).get("name") == SHEET_FORMAT for tool in request.get("tools", [])):
        return call(SHEET_FORMAT, answer)
    return reply(json.dumps(answer))


def is_sheet_judge_request(request: Request) -> bool:
    """Whether a request is the sheet judge's."""
    return _sheet_request(request) is not None


def _sheet_request(request: Request) -> SheetRequest | None:
    content = next((m.get("content") for m in request["messages"] if m.get("role") == "user"), "")
    return read_sheet_request(content) if isinstance(content, str) else None


def _answer(request: Request, verdicts: list[tuple[str, str, str]]) -> Answer:
    answer: dict[str, Any] = {
        "outcomes": [{"character": who, "told_as": told, "quote": quote} for who, told, quote in verdicts]
    }
    if any(tool.get("function", {}).get("name") == FORMAT_NAME for tool in request.get("tools", [])):
        return call(FORMAT_NAME, answer)
    return reply(json.dumps(answer))


def _judge_request(request: Request) -> JudgeRequest | None:
    """The judge's request in a request's first user message (a retry adds a note after it)."""
    content = next((m.get("content") for m in request["messages"] if m.get("role") == "user"), "")
    return read_judge_request(content) if isinstance(content, str) else None
