"""A hostile model (issue 10's guard): every round it spoils ends cleanly, on SQLite and PostgreSQL.

A fake model, served over HTTP to the real openai client, opens each round with one hostile answer -
huge numbers, deep nesting, NUL characters, megabyte strings, junk where JSON belongs - and then
plays honestly. Every round must end in one of three ways: accepted after the hostile part was
refused (a tool error or a referee refusal the model could act on), accepted with the hostile part
neutralised (a finish reason the database could not hold), or failed cleanly with a `GmError`.
Never another exception, never an attempt left `running`, and every model call recorded.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.errors import GmError
from gm.store import Attempt, ModelCall, Store
from gm.testing import Answer, Raw, Request, Step, call, calls, raw, reply, tool_call
from tests.support.rounds import narrate_roll, table, tool_results
from tests.support.worlds import write_world

MB = 1_000_000
DEEP = 100_000
CHECK = {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"}


def written(arguments: str) -> Answer:
    """A roll_check call whose arguments are sent exactly as written (so Python-only JSON can be sent)."""
    return call("roll_check", arguments)


def target(text: str) -> Answer:
    return written(json.dumps(CHECK).replace("12", text))


def completion(message: dict[str, Any], finish_reason: str = "stop") -> Raw:
    """A chat completion sent verbatim, unchecked, for what the response schema would not let the fake send."""
    body = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
    }
    return raw(body)


def deep_object_arguments() -> Raw:
    """Arguments sent as a JSON object (as some servers do) nested 100,000 deep: the response itself is deep."""
    head = '{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, '
    head += '"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": '
    head += '[{"id": "c1", "type": "function", "function": {"name": "roll_check", "arguments": '
    return raw(head + "[" * DEEP + "]" * DEEP + "}}]}}]}")


def narrate(narration: Any, outcomes: Any = ()) -> Answer:
    return call("narrate", {"narration": narration, "outcomes": list(outcomes)})


# name: (the round's first answer, how the round must end: "refused", "neutralised" or "failed")
HOSTILE: dict[str, tuple[Step, str]] = {
    # Huge and strange numbers.
    "target 2**31": (target(str(2**31)), "refused"),
    "target 2**63": (target(str(2**63)), "refused"),
    "target 10**20": (target(str(10**20)), "refused"),
    "target -10**20": (target(str(-(10**20))), "refused"),
    "target 10**400 digits": (target("1" + "0" * 400), "refused"),
    "target 1e300": (target("1e300"), "refused"),
    "target -1e300": (target("-1e300"), "refused"),
    "target 1e400": (target("1e400"), "refused"),
    "target NaN": (target("NaN"), "refused"),
    "target Infinity": (target("Infinity"), "refused"),
    "target 12.5": (target("12.5"), "refused"),
    "target as text": (target('"12"'), "refused"),
    "target true": (target("true"), "refused"),
    "roll id 10**20": (narrate("x", [{"character": "Mara", "result": "failed", "roll": 10**20}]), "refused"),
    "roll id -1": (narrate("x", [{"character": "Mara", "result": "failed", "roll": -1}]), "refused"),
    "roll id 1e300": (
        call("narrate", '{"narration": "x", "outcomes": [{"character": "Mara", "result": "failed", "roll": 1e300}]}'),
        "refused",
    ),
    # Deep nesting.
    "arguments 100,000 [ deep": (written("[" * DEEP + "]" * DEEP), "refused"),
    "arguments 100,000 { deep": (written('{"a": ' * DEEP + "1" + "}" * DEEP), "refused"),
    "a reason 900 deep": (written(json.dumps(CHECK).replace('"the lock"', "[" * 900 + "]" * 900)), "refused"),
    "outcomes 5,000 deep": (
        call("narrate", '{"narration": "x", "outcomes": ' + "[" * 5000 + "]" * 5000 + "}"),
        "refused",
    ),
    "arguments as an object 100,000 deep": (deep_object_arguments(), "failed"),
    # NUL characters.
    "NUL in reason": (call("roll_check", {**CHECK, "reason": "the\x00lock"}), "refused"),
    "NUL in notation": (call("roll_dice", {"notation": "1d6\x00", "reason": "x"}), "refused"),
    "NUL in check": (call("roll_check", {**CHECK, "check": "attempt\x00"}), "refused"),
    "NUL in character": (call("roll_check", {**CHECK, "character": "Mara\x00"}), "refused"),
    "NUL in tool name": (call("roll_\x00check", CHECK), "refused"),
    "NUL in narration": (narrate("The lock\x00 gives."), "refused"),
    "NUL in plain text": (reply("The harbour\x00 is quiet."), "refused"),
    "NUL in a key": (call("roll_check", {**CHECK, "rea\x00son": "x"}), "refused"),
    "NUL in the finish reason": (completion({"content": "The tide turns."}, "stop\x00"), "neutralised"),
    "half a surrogate pair in reason": (written(json.dumps(CHECK).replace("the lock", "\\ud800")), "refused"),
    "half a surrogate pair in narration": (call("narrate", '{"narration": "x\\udfff", "outcomes": []}'), "refused"),
    # Megabyte strings.
    "1 MB reason": (call("roll_check", {**CHECK, "reason": "x" * MB}), "refused"),
    "1 MB notation": (call("roll_dice", {"notation": "1d6+" * (MB // 4), "reason": "x"}), "refused"),
    "1 MB narration": (narrate("The tide. " * (MB // 10)), "refused"),
    "1 MB plain text": (reply("The tide. " * (MB // 10)), "refused"),
    "1 MB tool name": (call("r" * MB, {}), "refused"),
    "1 MB check": (call("roll_check", {**CHECK, "check": "c" * MB}), "refused"),
    "1 MB of junk arguments": (written("{" + "x" * MB), "refused"),
    "1 MB key": (call("roll_check", {**CHECK, "k" * MB: 1}), "refused"),
    "1 MB tool call id": (calls([tool_call("nothing", {}, id="i" * MB)]), "refused"),
    "1 MB finish reason": (completion({"content": "The tide turns."}, "s" * MB), "neutralised"),
    # Shapes that are not what was asked for.
    "arguments a list": (written("[1, 2, 3]"), "refused"),
    "arguments a number": (written("5"), "refused"),
    "arguments null": (written("null"), "refused"),
    "outcomes an object": (call("narrate", {"narration": "x", "outcomes": {"Mara": "failed"}}), "refused"),
    "a hundred tool calls": (
        calls([("roll_dice", {"notation": "1d6", "reason": "x"})] * 100),
        "refused",
    ),  # over MAX_TOOL_CALLS: none runs
    "escape sequences in plain text": (reply("\x1b]0;PWNED\x07\x1b[2J" * 3), "accepted"),
}


def honest(request: Request) -> Step:
    """The rest of each round: narrate a rolled check honestly, else answer in plain text."""
    if any("band" in result for result in tool_results(request)):
        return narrate_roll("The lock gives, or it does not.")(request)
    return reply("The harbour is quiet.")


def script(request: Request) -> Step:
    """The hostile answer opens the round named by the player's text; every later answer is honest."""
    if "tools" not in request:
        return reply("Mara\x00 did something.\x1b[2J " + "y" * 100_000)  # the memory keeper, hostile too
    last = request["messages"][-1]
    if last["role"] == "user" and str(last["content"]).startswith("case: "):
        return HOSTILE[str(last["content"]).removeprefix("case: ")][0]
    return honest(request)


@pytest.mark.slow
def test_every_round_a_hostile_model_spoils_ends_cleanly(store: Store, tmp_path: Path) -> None:
    """One story plays every case, round after round."""
    endings: dict[str, str] = {}

    async def play() -> str:
        async with table(store, script, script, transport="http") as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            for name in HOSTILE:
                try:
                    result = await played.game.play(story, f"case: {name}")
                except GmError as error:
                    endings[name] = f"failed: {error}"
                else:
                    endings[name] = "refused" if result.refusals else "accepted"
            await played.game.settle()
            return story

    story = asyncio.run(play())  # any exception but a GmError fails the test here
    print(f"\n{len(HOSTILE)} hostile model inputs tried on {store.engine.dialect.name}")
    wrong = {}
    for name, (_, expected) in HOSTILE.items():
        ending = endings[name]
        if expected == "failed":
            ok = ending.startswith("failed: ") and len(ending) < 400
        elif expected == "neutralised":
            ok = ending == "accepted"
        else:
            ok = ending == expected
        if not ok:
            wrong[name] = ending[:300]
    assert wrong == {}

    with store.session() as session:
        attempts = list(session.exec(select(Attempt)))
        recorded = list(session.exec(select(ModelCall).where(ModelCall.purpose == "game_master")))
    assert len(attempts) == len(HOSTILE)
    assert [a.status for a in attempts if a.status not in ("accepted", "failed")] == []  # none left running
    per_attempt = {a.id: sum(1 for c in recorded if c.attempt_id == a.id) for a in attempts}
    answered = [a.id for a in attempts if a.status == "accepted" or "nested too deeply" not in (a.error or "")]
    assert all(per_attempt[attempt] >= 1 for attempt in answered), per_attempt  # each model call is recorded
    assert all("\x00" not in (c.finish_reason or "") and len(c.finish_reason or "") <= 40 for c in recorded)
    memories = store.memories(story)
    assert memories and all("\x00" not in memory.summary for memory in memories)
